import Foundation

/// A small, read-only XML element: what `XMLReader` builds from a model or
/// mapping file.
struct XMLElementNode {
    var name: String
    var attributes: [String: String]
    var children: [XMLElementNode]
    /// The element's own text (character data directly inside it).
    var text: String = ""
    /// The line the element starts on, for error messages.
    var line: Int

    func children(named name: String) -> [XMLElementNode] { children.filter { $0.name == name } }
    func child(named name: String) -> XMLElementNode? { children.first { $0.name == name } }
    subscript(attribute: String) -> String? { attributes[attribute] }

    /// Parses `data` with `XMLReader`; `url` only names the file in errors.
    static func parse(_ data: Data, url: URL) throws -> XMLElementNode {
        if data.count > 64 * 1024 * 1024 {
            throw CoreDataError(.fileReadCorruptFile, "\(url.path): the model file is larger than 64 MB", url: url)
        }
        do {
            var reader = try XMLReader(data)
            return try reader.document()
        } catch {
            throw CoreDataError(.fileReadCorruptFile,
                                "\(url.path): line \(error.line), column \(error.column): \(error.reason)", url: url)
        }
    }
}
