import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates

/// The two forms of a store dump.
enum DumpFormat: String, CaseIterable, Sendable {
    /// One JSON object a line: a header line, then one line per object.
    case jsonl
    /// A folder: `store.json` (the header) and one `<Entity>.csv` per entity.
    case csv
}

/// What a dump says about its store before its objects: the store's UUID (part of
/// every object URI in it) and the number of objects of each entity.
struct DumpHeader {
    static let formatName = "ocd-store-dump"
    var storeUUID: String
    var counts: [String: Int]

    var json: DumpJSON {
        .object(["format": .string(Self.formatName), "version": .int(1), "storeUUID": .string(storeUUID),
                 "entities": .object(counts.mapValues { .int(Int64($0)) })])
    }

    init(storeUUID: String, counts: [String: Int]) {
        self.storeUUID = storeUUID
        self.counts = counts
    }

    init(_ json: DumpJSON) throws {
        guard case .object(let members) = json, members["format"] == .string(Self.formatName) else {
            throw DumpValues.Invalid(description: "not a store dump (its header has no \"format\": \"\(Self.formatName)\")")
        }
        guard members["version"] == .int(1) else { throw DumpValues.Invalid(description: "dump version \(members["version"]?.text ?? "?") is not 1") }
        guard case .string(let uuid)? = members["storeUUID"] else { throw DumpValues.Invalid(description: "the header has no storeUUID") }
        storeUUID = uuid
        counts = [:]
        if case .object(let entities)? = members["entities"] {
            for (name, count) in entities { if case .int(let n) = count { counts[name] = Int(n) } }
        }
    }

    var total: Int { counts.values.reduce(0, +) }
}

/// One object of a dump: its entity, its URI in the dumped store, and its stored
/// properties (attributes by value, relationships by object URI).
struct DumpRecord {
    var entity: String
    var uri: String
    var values: [String: DumpJSON]
    /// Values the store could not give (an external data file not copied with
    /// it), by attribute: what is missing. Written as `"missing"` beside `values`
    /// (where such a value is null); nothing reads it back.
    var missing: [String: String] = [:]

    var json: DumpJSON {
        var members: [String: DumpJSON] = ["entity": .string(entity), "uri": .string(uri), "values": .object(values)]
        if !missing.isEmpty { members["missing"] = .object(missing.mapValues { .string($0) }) }
        return .object(members)
    }

    init(entity: String, uri: String, values: [String: DumpJSON]) {
        self.entity = entity
        self.uri = uri
        self.values = values
    }

    init(_ json: DumpJSON) throws {
        guard case .object(let members) = json, case .string(let entity)? = members["entity"],
              case .string(let uri)? = members["uri"] else {
            throw DumpValues.Invalid(description: "an object line needs \"entity\" and \"uri\" strings")
        }
        self.entity = entity
        self.uri = uri
        if case .object(let values)? = members["values"] {
            self.values = values
        } else if members["values"] == nil {
            self.values = [:]
        } else {
            throw DumpValues.Invalid(description: "\"values\" is not an object")
        }
    }
}

/// The properties a dump holds for an entity: stored attributes and relationships
/// (no transients, no fetched properties), by name.
func dumpedProperties(of entity: EntityDescription) -> [PropertyDescription] {
    entity.allProperties
        .filter { ($0 is AttributeDescription || $0 is RelationshipDescription) && !$0.isTransient }
        .sorted { $0.name < $1.name }
}

// MARK: - Output

/// Buffered lines to a file, to standard output, or to the test sink.
final class DumpOutput {
    private let handle: FileHandle?
    private var buffer: [UInt8] = []

    /// `path` nil: standard output (or the sink of ``CommandOutput`` in tests).
    init(path: String?) throws {
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CommandFailure("cannot create \(path)")
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        } else {
            handle = CommandOutput.sink == nil ? FileHandle.standardOutput : nil
        }
        buffer.reserveCapacity(1 << 20)
    }

    func write(line: String) throws {
        guard handle != nil else { emit(line); return }
        buffer.append(contentsOf: line.utf8)
        buffer.append(0x0A)
        if buffer.count >= 1 << 20 { try flush() }
    }

    /// One JSON value, one line.
    func write(json: DumpJSON) throws {
        guard handle != nil else { emit(json.text); return }
        json.write(to: &buffer)
        buffer.append(0x0A)
        if buffer.count >= 1 << 20 { try flush() }
    }

    func flush() throws {
        guard let handle, !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    func close() throws {
        try flush()
        if let handle, handle !== FileHandle.standardOutput { try handle.close() }
    }
}

/// A progress bar on standard error when it is a terminal: `[#####.....] 52% 5200/10000 objects`.
final class DumpProgress {
    private let total: Int
    private let label: String
    private let enabled: Bool
    private var done = 0
    private var lastDraw = Date.distantPast

    init(total: Int, label: String) {
        self.total = total
        self.label = label
        enabled = isatty(STDERR_FILENO) != 0 && CommandOutput.sink == nil
    }

    func advance(_ count: Int = 1) {
        done += count
        guard enabled, Date().timeIntervalSince(lastDraw) > 0.1 else { return }
        draw()
    }

    private func draw() {
        lastDraw = Date()
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let width = 30
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(Int(fraction * 100))% \(done)/\(total) \(label)".utf8))
    }

    func finish() {
        guard enabled else { return }
        draw()
        FileHandle.standardError.write(Data("\n".utf8))
    }
}

// MARK: - CSV

enum CSV {
    /// One CSV field: nil is an empty field (no value); a string with a comma, a
    /// quote, a line break, leading or trailing spaces, or no characters is quoted.
    static func field(_ value: String?) -> String {
        guard let value else { return "" }
        if value.isEmpty || value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
            || value.first == " " || value.last == " " {
            return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return value
    }

    static func row(_ values: [String?]) -> String {
        values.map(field).joined(separator: ",")
    }

    /// Splits one record (which may span lines) into fields; nil for an empty,
    /// unquoted field. Returns nil when the record's quotes are not closed yet.
    static func fields(_ record: String) -> [String?]? {
        var fields: [String?] = []
        var current = ""
        var quoted = false, inQuotes = false, afterQuote = false
        var iterator = record.makeIterator()
        while let character = iterator.next() {
            if inQuotes {
                if character == "\"" { inQuotes = false; afterQuote = true } else { current.append(character) }
                continue
            }
            switch character {
            case "\"":
                if afterQuote { current.append("\""); inQuotes = true; afterQuote = false } else { quoted = true; inQuotes = true }
            case ",":
                fields.append(current.isEmpty && !quoted ? nil : current)
                current = ""; quoted = false; afterQuote = false
            default:
                current.append(character)
                afterQuote = false
            }
        }
        if inQuotes { return nil }
        fields.append(current.isEmpty && !quoted ? nil : current)
        return fields
    }
}

/// Lines of a file, read as they come (constant memory).
final class LineReader {
    private let file: UnsafeMutablePointer<FILE>
    private(set) var lineNumber = 0

    init(path: String) throws {
        guard let file = fopen(path, "r") else { throw CommandFailure("cannot read \(path)") }
        self.file = file
    }

    deinit { fclose(file) }

    /// The next line without its line break, or nil at the end.
    func next() -> String? {
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        let length = getline(&line, &capacity, file)
        guard length >= 0, let line else { return nil }
        lineNumber += 1
        var count = length
        let bytes = UnsafeRawPointer(line).assumingMemoryBound(to: UInt8.self)
        while count > 0, bytes[count - 1] == 0x0A || bytes[count - 1] == 0x0D { count -= 1 }
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// The next CSV record (which may span lines) and the number of its first line.
    func nextRecord() -> (line: Int, fields: [String?])? {
        guard var text = next() else { return nil }
        let first = lineNumber
        while true {
            if let fields = CSV.fields(text) { return (first, fields) }
            guard let more = next() else { return (first, CSV.fields(text + "\"") ?? []) }
            text += "\n" + more
        }
    }
}
