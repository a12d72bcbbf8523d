import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A small, read-only XML element tree built with `XMLParser`, with external
/// entities never resolved and limits on depth and size, so a hostile file cannot
/// exhaust memory or reach the network or file system.
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

    /// Parses `data`; `url` only names the file in errors.
    static func parse(_ data: Data, url: URL) throws -> XMLElementNode {
        if data.count > 64 * 1024 * 1024 {
            throw CoreDataError(.fileReadCorruptFile, "\(url.path): the model file is larger than 64 MB", url: url)
        }
        // Xcode writes model and mapping files in UTF-8. Other bytes are refused
        // here: Foundation's XMLParser stops the process on a name that is not
        // valid UTF-8.
        func refuse(at offset: Int, _ reason: String) -> CoreDataError {
            let line = data.prefix(offset).reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            return CoreDataError(.fileReadCorruptFile, "\(url.path): line \(line), byte \(offset): \(reason)", url: url)
        }
        if let offset = firstInvalidUTF8(data) { throw refuse(at: offset, "not UTF-8") }
        // A processing instruction with no data (`<?name?>`) makes XMLParser read
        // a null pointer. Xcode writes none: it is refused here.
        if let offset = firstProcessingInstructionWithoutData(data) {
            throw refuse(at: offset, "a processing instruction without data")
        }
        let delegate = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        parser.delegate = delegate
        let ok = parser.parse()
        if let failure = delegate.failure {
            throw CoreDataError(.fileReadCorruptFile, "\(url.path): \(failure)", url: url)
        }
        guard ok, let root = delegate.root else {
            let code = (parser.parserError as NSError?)?.code
            let reason = "not well-formed XML, or it uses an entity that is not allowed in a model file"
                + (code.map { " (XMLParser error \($0))" } ?? "")
            throw CoreDataError(.fileReadCorruptFile,
                                "\(url.path): line \(parser.lineNumber), column \(parser.columnNumber): \(reason)", url: url)
        }
        return root
    }

    /// The offset of the first `<?name?>` (a processing instruction whose target
    /// is followed by no space and no data) outside comments and CDATA sections,
    /// or nil when there is none.
    static func firstProcessingInstructionWithoutData(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        func starts(_ prefix: StaticString, at index: Int) -> Bool {
            let count = prefix.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            return prefix.withUTF8Buffer { prefix in
                prefix.indices.allSatisfy { bytes[index + $0] == prefix[$0] }
            }
        }
        func skip(past terminator: StaticString, from index: Int) -> Int {
            var index = index
            while index < bytes.count, !starts(terminator, at: index) { index += 1 }
            return index + terminator.utf8CodeUnitCount
        }
        var index = 0
        while index + 1 < bytes.count {
            // Only markup can start with `<`: everything else is passed over at once.
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            if starts("<!--", at: index) {
                index = skip(past: "-->", from: index + 4)
            } else if starts("<![CDATA[", at: index) {
                index = skip(past: "]]>", from: index + 9)
            } else if starts("<?", at: index) {
                var end = index + 2
                while end < bytes.count, !starts("?>", at: end) {
                    if [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end]) { break }
                    end += 1
                }
                if starts("?>", at: end) { return index }
                index = skip(past: "?>", from: end)
            } else {
                index += 1
            }
        }
        return nil
    }

    /// The offset of the first byte that is not part of a valid UTF-8 sequence,
    /// or nil when all of `data` is valid UTF-8.
    static func firstInvalidUTF8(_ data: Data) -> Int? {
        var iterator = data.makeIterator()
        var decoder = UTF8()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }
}

private final class TreeBuilder: NSObject, XMLParserDelegate {
    var stack: [XMLElementNode] = []
    var root: XMLElementNode?
    var failure: String?
    var elementCount = 0

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
        elementCount += 1
        if stack.count > 64 {
            failure = "line \(parser.lineNumber): elements nested deeper than 64 levels"
            parser.abortParsing()
            return
        }
        if elementCount > 1_000_000 {
            failure = "more than 1,000,000 elements"
            parser.abortParsing()
            return
        }
        stack.append(XMLElementNode(name: elementName, attributes: attributeDict, children: [], line: parser.lineNumber))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
        guard let node = stack.popLast() else { return }
        if stack.isEmpty {
            root = node
        } else {
            stack[stack.count - 1].children.append(node)
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard !stack.isEmpty else { return }
        stack[stack.count - 1].text += string
    }

    func parser(_ parser: XMLParser, foundExternalEntityDeclarationWithName name: String, publicID: String?, systemID: String?) {
        failure = "line \(parser.lineNumber): external entity '\(name)' is not allowed in a model file"
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        failure = "line \(parser.lineNumber): entity declaration '\(name)' is not allowed in a model file"
        parser.abortParsing()
    }
}
