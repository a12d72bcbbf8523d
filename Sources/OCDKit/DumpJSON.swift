import Foundation

/// A JSON value as the store dump writes and reads it: integers kept apart from
/// other numbers, object members in the order written.
///
/// The dump has its own small reader and writer so that what it writes reads back
/// exactly: a `Double` is written in Swift's shortest round-trip form and read back
/// as the same `Double`, an integer as an `Int64`, and object keys come out sorted
/// so that two dumps of the same store are the same bytes.
enum DumpJSON: Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([DumpJSON])
    case object([String: DumpJSON])

    // MARK: Writing

    /// The value as one line of JSON (no newline in it), keys sorted.
    var text: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the value's JSON, as UTF-8, to `out`.
    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            // Non-finite numbers have no JSON form: callers write them as strings.
            out.append(contentsOf: (d.isFinite ? d.description : "null").utf8)
        case .string(let s): DumpJSON.writeString(s, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                DumpJSON.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                members[key]?.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: runs of bytes that need no escape are copied as they are.
    /// Escaped: the quote, the backslash, control characters, and U+2028/U+2029
    /// (line separators to some JSON Lines readers).
    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            var runStart = 0, index = 0
            func escape(_ text: String, skipping count: Int) {
                out.append(contentsOf: bytes[runStart..<index])
                out.append(contentsOf: text.utf8)
                index += count
                runStart = index
            }
            while index < bytes.count {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""): escape("\\\"", skipping: 1)
                case UInt8(ascii: "\\"): escape("\\\\", skipping: 1)
                case UInt8(ascii: "\n"): escape("\\n", skipping: 1)
                case UInt8(ascii: "\r"): escape("\\r", skipping: 1)
                case UInt8(ascii: "\t"): escape("\\t", skipping: 1)
                case 0..<0x20: escape("\\u" + String(format: "%04x", Int(byte)), skipping: 1)
                case 0xE2 where index + 2 < bytes.count && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9):
                    escape(bytes[index + 2] == 0xA8 ? "\\u2028" : "\\u2029", skipping: 3)
                default: index += 1
                }
            }
            out.append(contentsOf: bytes[runStart..<bytes.count])
        }
        out.append(UInt8(ascii: "\""))
    }

    // MARK: Reading

    /// An error reading JSON, with the byte offset where it was found.
    struct SyntaxError: Error, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "invalid JSON at character \(offset + 1): \(reason)" }
    }

    /// Reads one JSON value, which must be all of `text` (whitespace aside).
    static func parse(_ text: String) throws -> DumpJSON {
        var parser = Parser(bytes: Array(text.utf8))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        func error(_ reason: String) -> SyntaxError { SyntaxError(offset: index, reason: reason) }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String, _ value: DumpJSON) throws -> DumpJSON {
            let utf8 = Array(literal.utf8)
            guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
                throw error("expected \(literal)")
            }
            index += utf8.count
            return value
        }

        mutating func value(depth: Int) throws -> DumpJSON {
            // Nesting is bounded: a file must not exhaust the stack.
            guard depth < 512 else { throw error("nested more than 512 levels") }
            guard index < bytes.count else { throw error("unexpected end of line") }
            switch bytes[index] {
            case UInt8(ascii: "n"): return try expect("null", .null)
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var values: [DumpJSON] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                while true {
                    skipSpace()
                    values.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw error("unterminated array") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                    throw error("expected , or ] in an array")
                }
            case UInt8(ascii: "{"):
                index += 1
                var members: [String: DumpJSON] = [:]
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                    let key = try string()
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected :") }
                    index += 1
                    skipSpace()
                    members[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard index < bytes.count else { throw error("unterminated object") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                    throw error("expected , or } in an object")
                }
            default:
                return try number()
            }
        }

        mutating func number() throws -> DumpJSON {
            let start = index
            var isInteger = true
            while index < bytes.count {
                let byte = bytes[index]
                if (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") {
                    index += 1
                } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    isInteger = false
                    index += 1
                } else {
                    break
                }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let int = Int64(text) { return .int(int) }
            guard !text.isEmpty, let double = Double(text), double.isFinite else {
                index = start
                throw error(text.isEmpty ? "expected a value" : "invalid number \(text)")
            }
            return .double(double)
        }

        mutating func string() throws -> String {
            index += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var runStart = index
            func flush(_ parser: Parser, upTo end: Int, into scalars: inout String.UnicodeScalarView) {
                scalars.append(contentsOf: String(decoding: parser.bytes[runStart..<end], as: UTF8.self).unicodeScalars)
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    flush(self, upTo: index, into: &scalars)
                    index += 1
                    return String(scalars)
                }
                if byte < 0x20 { throw error("a control character in a string") }
                if byte != UInt8(ascii: "\\") { index += 1; continue }
                flush(self, upTo: index, into: &scalars)
                index += 1
                guard index < bytes.count else { break }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count,
                       bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("an unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("an invalid \\u escape") }
                    scalars.append(scalar)
                default:
                    throw error("an invalid escape")
                }
                runStart = index
            }
            throw error("unterminated string")
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count,
                  let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                throw error("an invalid \\u escape")
            }
            index += 4
            return code
        }
    }
}
