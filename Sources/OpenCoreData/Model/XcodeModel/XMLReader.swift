import Foundation

/// A non-validating XML 1.0 reader in Swift, for the XML files Core Data's tools
/// write: Xcode's model files (`contents`), mapping models (`xcmapping.xml`, an XML
/// store) and the property lists inside them.
///
/// It reads the whole document at once into an `XMLElementNode` tree and never
/// reaches outside the bytes it is given: external entities are never resolved,
/// and entity declarations are refused (a model file has none), so a hostile file
/// can neither expand into gigabytes nor read the file system or the network.
/// Depth and element count are bounded, and the tree is built without recursion.
///
/// What it accepts is well-formed XML 1.0 in UTF-8 (or US-ASCII or ISO-8859-1 when
/// the XML declaration says so): the declaration, comments, processing
/// instructions and a document type declaration (whose internal subset is passed
/// over) are read and dropped; elements keep their attributes, their line, and
/// their character data (text, character and predefined entity references, CDATA
/// sections), with line ends normalized as XML prescribes. Anything else (a tag
/// left open, an attribute given twice, a reference to an undeclared entity, a
/// control character) is an error naming the line and column.
///
/// ```swift
/// let root = try XMLReader(data).document()
/// for entity in root.children(named: "entity") { print(entity["name"] ?? "?") }
/// ```
///
/// Foundation's `XMLParser` was used before: on Linux it wraps libxml2 through
/// C callbacks that stop the process on input it should refuse, which is why this
/// reader exists.
struct XMLReader {
    /// What the reader refuses to read, and where.
    struct Failure: Error, Equatable {
        var line: Int
        var column: Int
        var reason: String
    }

    /// How deeply elements may nest.
    static let maximumDepth = 64
    /// How many elements a document may hold.
    static let maximumElementCount = 1_000_000

    private let bytes: [UInt8]
    private var index = 0
    /// Line bookkeeping: the line of `lineCursor`, and where that line starts.
    private var lineCursor = 0
    private var line = 1
    private var lineStart = 0

    /// A reader of `data`, whose encoding comes from its XML declaration.
    init(_ data: Data) throws(Failure) {
        var bytes = [UInt8](data)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        let declared = Self.declaredEncoding(bytes)
        switch declared?.lowercased() {
        case nil, "utf-8", "utf8", "us-ascii", "ascii":
            break
        case "iso-8859-1", "latin1", "iso_8859-1", "latin-1":
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
            bytes = Array(String(scalars).utf8)
        default:
            throw Failure(line: 1, column: 1, reason: "the encoding '\(declared ?? "")' is not supported (UTF-8 is what Xcode writes)")
        }
        self.bytes = bytes
        if let offset = Self.firstInvalidUTF8(bytes) {
            var reader = self
            throw reader.failure(at: offset, "not UTF-8")
        }
    }

    // MARK: The document

    /// Reads the document and returns its root element.
    mutating func document() throws(Failure) -> XMLElementNode {
        try prolog()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else {
            throw failure("expected the document's root element")
        }
        let root = try elements()
        try miscellany()
        if index < bytes.count { throw failure("content after the root element") }
        return root
    }

    /// The XML declaration, comments, processing instructions and the document
    /// type declaration before the root element.
    private mutating func prolog() throws(Failure) {
        if starts("<?xml") && index + 5 < bytes.count && Self.isSpace(bytes[index + 5]) {
            try skip(past: "?>", what: "the XML declaration")
        }
        try miscellany()
        if starts("<!DOCTYPE") {
            try documentType()
            try miscellany()
        }
    }

    /// Whitespace, comments and processing instructions.
    private mutating func miscellany() throws(Failure) {
        while true {
            skipSpaces()
            if starts("<!--") {
                try comment()
            } else if starts("<?") {
                try processingInstruction()
            } else {
                return
            }
        }
    }

    /// `<!DOCTYPE name ExternalID? [internal subset]? >`: passed over. The internal
    /// subset may declare elements and attribute lists; an entity declaration is
    /// refused, as no model file has one and expanding them is how hostile files
    /// grow.
    private mutating func documentType() throws(Failure) {
        let start = index
        index += 9
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: ">"):
                index += 1
                return
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                try quoted()
            case UInt8(ascii: "["):
                index += 1
                try internalSubset()
            default:
                index += 1
            }
        }
        throw failure(at: start, "a document type declaration that does not end")
    }

    private mutating func internalSubset() throws(Failure) {
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            } else if starts("<!--") {
                try comment()
            } else if starts("<?") {
                try processingInstruction()
            } else if starts("<!ENTITY") {
                let name = entityDeclarationName()
                throw failure("entity declaration '\(name)' is not allowed in a model file")
            } else if bytes[index] == UInt8(ascii: "%") {
                throw failure("a parameter entity reference is not allowed in a model file")
            } else if starts("<!") {
                // <!ELEMENT …>, <!ATTLIST …>, <!NOTATION …>: quoted strings may hold '>'.
                index += 2
                while index < bytes.count, bytes[index] != UInt8(ascii: ">") {
                    if bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") {
                        try quoted()
                    } else {
                        index += 1
                    }
                }
                guard index < bytes.count else { break }
                index += 1
            } else if Self.isSpace(bytes[index]) {
                index += 1
            } else {
                throw failure("unexpected content in the document type declaration")
            }
        }
        throw failure("a document type declaration that does not end")
    }

    private mutating func entityDeclarationName() -> String {
        var cursor = index + 8
        while cursor < bytes.count, Self.isSpace(bytes[cursor]) || bytes[cursor] == UInt8(ascii: "%") { cursor += 1 }
        let start = cursor
        while cursor < bytes.count, Self.isNameByte(bytes[cursor], first: cursor == start) { cursor += 1 }
        return String(decoding: bytes[start..<cursor], as: UTF8.self)
    }

    // MARK: Elements

    /// The root element and everything inside it, built with an explicit stack.
    private mutating func elements() throws(Failure) -> XMLElementNode {
        var stack: [XMLElementNode] = []
        var elementCount = 0
        while true {
            guard index < bytes.count else {
                throw failure("the element <\(stack.last?.name ?? "")> is not closed")
            }
            if bytes[index] != UInt8(ascii: "<") {
                try characterData(into: &stack)
            } else if starts("</") {
                let start = index
                index += 2
                let name = try self.name()
                skipSpaces()
                try expect(">")
                guard let node = stack.popLast() else { throw failure(at: start, "a closing tag </\(name)> with no element open") }
                guard node.name == name else {
                    throw failure(at: start, "the closing tag </\(name)> does not match <\(node.name)> (line \(node.line))")
                }
                if stack.isEmpty { return node }
                stack[stack.count - 1].children.append(node)
            } else if starts("<!--") {
                try comment()
            } else if starts("<![CDATA[") {
                let start = index + 9
                try skip(past: "]]>", what: "a CDATA section")
                guard !stack.isEmpty else { throw failure(at: start, "character data outside the root element") }
                stack[stack.count - 1].text += Self.normalizedLineEnds(bytes[start..<(index - 3)])
            } else if starts("<?") {
                try processingInstruction()
            } else if starts("<!") {
                throw failure("a declaration inside an element")
            } else {
                let start = index
                index += 1
                let name = try self.name()
                elementCount += 1
                if stack.count >= Self.maximumDepth {
                    throw failure(at: start, "elements nested deeper than \(Self.maximumDepth) levels")
                }
                if elementCount > Self.maximumElementCount {
                    throw failure(at: start, "more than 1,000,000 elements")
                }
                let attributes = try self.attributes(of: name)
                let node = XMLElementNode(name: name, attributes: attributes, children: [], line: lineNumber(at: start))
                if starts("/>") {
                    index += 2
                    if stack.isEmpty { return node }
                    stack[stack.count - 1].children.append(node)
                } else {
                    try expect(">")
                    stack.append(node)
                }
            }
        }
    }

    /// `name="value"` pairs up to the end of a start tag.
    private mutating func attributes(of element: String) throws(Failure) -> [String: String] {
        var attributes: [String: String] = [:]
        while true {
            let hadSpace = skipSpaces()
            guard index < bytes.count else { throw failure("the tag <\(element)> does not end") }
            if bytes[index] == UInt8(ascii: ">") || starts("/>") { return attributes }
            guard hadSpace else { throw failure("expected a space before an attribute of <\(element)>") }
            let start = index
            let name = try self.name()
            skipSpaces()
            try expect("=")
            skipSpaces()
            let value = try attributeValue()
            if attributes.updateValue(value, forKey: name) != nil {
                throw failure(at: start, "the attribute '\(name)' is given twice in <\(element)>")
            }
        }
    }

    /// A quoted attribute value, with references replaced and whitespace
    /// characters made spaces, as XML's attribute value normalization prescribes.
    private mutating func attributeValue() throws(Failure) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
            throw failure("expected a quoted attribute value")
        }
        let quote = bytes[index]
        let start = index
        index += 1
        var value: [UInt8] = []
        while index < bytes.count, bytes[index] != quote {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "<"):
                throw failure("'<' inside an attribute value")
            case UInt8(ascii: "&"):
                value += try reference()
            case 0x0D:
                value.append(0x20)
                index += (index + 1 < bytes.count && bytes[index + 1] == 0x0A) ? 2 : 1
            case 0x09, 0x0A:
                value.append(0x20)
                index += 1
            default:
                try checkCharacter(byte)
                value.append(byte)
                index += 1
            }
        }
        guard index < bytes.count else { throw failure(at: start, "an attribute value that does not end") }
        index += 1
        return String(decoding: value, as: UTF8.self)
    }

    /// Text up to the next `<`, appended to the open element.
    private mutating func characterData(into stack: inout [XMLElementNode]) throws(Failure) {
        let start = index
        var text: [UInt8] = []
        while index < bytes.count, bytes[index] != UInt8(ascii: "<") {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "&"):
                text += try reference()
            case 0x0D:
                text.append(0x0A)
                index += (index + 1 < bytes.count && bytes[index + 1] == 0x0A) ? 2 : 1
            default:
                try checkCharacter(byte)
                text.append(byte)
                index += 1
            }
        }
        guard !stack.isEmpty else { throw failure(at: start, "character data outside the root element") }
        stack[stack.count - 1].text += String(decoding: text, as: UTF8.self)
    }

    /// `&name;` or `&#…;` at `index`: the UTF-8 bytes it stands for.
    private mutating func reference() throws(Failure) -> [UInt8] {
        let start = index
        index += 1
        var cursor = index
        while cursor < bytes.count, cursor - index < 32, bytes[cursor] != UInt8(ascii: ";") { cursor += 1 }
        guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: ";") else {
            throw failure(at: start, "'&' that does not start a reference (write &amp;)")
        }
        let body = String(decoding: bytes[index..<cursor], as: UTF8.self)
        index = cursor + 1
        switch body {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default: break
        }
        if body.hasPrefix("#") {
            let digits = body.dropFirst()
            let value = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            guard let value, !digits.isEmpty, !digits.hasPrefix("+"), !digits.hasPrefix("-"),
                  let scalar = Unicode.Scalar(value), Self.isCharacter(scalar) else {
                throw failure(at: start, "the character reference &\(body); is not a character XML allows")
            }
            return Array(String(Character(scalar)).utf8)
        }
        throw failure(at: start, "the entity &\(body); is not declared (only &lt; &gt; &amp; &quot; &apos; are)")
    }

    // MARK: Markup passed over

    private mutating func comment() throws(Failure) {
        try skip(past: "-->", what: "a comment")
    }

    private mutating func processingInstruction() throws(Failure) {
        let start = index
        index += 2
        let target = try name()
        if target.lowercased() == "xml" {
            throw failure(at: start, "an XML declaration that is not at the start of the file")
        }
        if !starts("?>") && !(index < bytes.count && Self.isSpace(bytes[index])) {
            throw failure("expected a space after the processing instruction's target")
        }
        try skip(past: "?>", what: "a processing instruction")
    }

    /// A quoted string in a declaration.
    private mutating func quoted() throws(Failure) {
        let quote = bytes[index]
        let start = index
        index += 1
        while index < bytes.count, bytes[index] != quote { index += 1 }
        guard index < bytes.count else { throw failure(at: start, "a quoted string that does not end") }
        index += 1
    }

    // MARK: Lexical pieces

    /// An XML name at `index`.
    private mutating func name() throws(Failure) -> String {
        let start = index
        while index < bytes.count, Self.isNameByte(bytes[index], first: index == start) { index += 1 }
        guard index > start else { throw failure("expected a name") }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// Name characters: ASCII letters, digits, `_ : - .`, and every character
    /// beyond ASCII (the document is valid UTF-8, so those bytes are whole
    /// characters).
    private static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "_"), UInt8(ascii: ":"), 0x80...0xFF:
            return true
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
            return !first
        default:
            return false
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Whether XML 1.0 allows `scalar` in a document.
    private static func isCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    /// Control characters other than tab and line ends are not XML characters.
    private mutating func checkCharacter(_ byte: UInt8) throws(Failure) {
        if byte < 0x20 && !Self.isSpace(byte) {
            throw failure("the control character 0x\(String(byte, radix: 16, uppercase: true)) is not allowed in XML")
        }
    }

    @discardableResult
    private mutating func skipSpaces() -> Bool {
        let start = index
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
        return index > start
    }

    private func starts(_ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return prefix.withUTF8Buffer { prefix in
            prefix.indices.allSatisfy { bytes[index + $0] == prefix[$0] }
        }
    }

    private mutating func expect(_ byte: Unicode.Scalar) throws(Failure) {
        guard index < bytes.count, bytes[index] == UInt8(byte.value) else {
            throw failure("expected '\(byte)'")
        }
        index += 1
    }

    /// Moves past the next `terminator`, checking the characters passed over.
    private mutating func skip(past terminator: StaticString, what: String) throws(Failure) {
        let start = index
        while index < bytes.count, !starts(terminator) {
            try checkCharacter(bytes[index])
            index += 1
        }
        guard index < bytes.count else { throw failure(at: start, "\(what) that does not end") }
        index += terminator.utf8CodeUnitCount
    }

    private static func normalizedLineEnds(_ slice: ArraySlice<UInt8>) -> String {
        guard slice.contains(0x0D) else { return String(decoding: slice, as: UTF8.self) }
        var text: [UInt8] = []
        var previous: UInt8 = 0
        for byte in slice {
            if byte == 0x0A && previous == 0x0D { previous = byte; continue }
            text.append(byte == 0x0D ? 0x0A : byte)
            previous = byte
        }
        return String(decoding: text, as: UTF8.self)
    }

    // MARK: Positions and failures

    /// The line `offset` is on; offsets asked for only grow, so each byte is
    /// counted once.
    private mutating func lineNumber(at offset: Int) -> Int {
        if offset < lineCursor { (lineCursor, line, lineStart) = (0, 1, 0) }
        while lineCursor < offset && lineCursor < bytes.count {
            if bytes[lineCursor] == 0x0A {
                line += 1
                lineStart = lineCursor + 1
            }
            lineCursor += 1
        }
        return line
    }

    private mutating func failure(_ reason: String) -> Failure {
        failure(at: index, reason)
    }

    private mutating func failure(at offset: Int, _ reason: String) -> Failure {
        let line = lineNumber(at: offset)
        return Failure(line: line, column: offset - lineStart + 1, reason: reason)
    }

    /// The encoding the XML declaration names, if it names one.
    static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        guard bytes.starts(with: Array("<?xml".utf8)) else { return nil }
        let head = bytes.prefix(200)
        guard let end = head.firstIndex(of: UInt8(ascii: ">")) else { return nil }
        let declaration = String(decoding: head[..<end], as: UTF8.self)
        guard let range = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\t" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix { $0 != quote })
    }

    /// The offset of the first byte that is not part of a valid UTF-8 sequence,
    /// or nil when all of `bytes` is valid UTF-8.
    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int? {
        var iterator = bytes.makeIterator()
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
