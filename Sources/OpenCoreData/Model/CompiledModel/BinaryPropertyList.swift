import Foundation

/// A value of a binary property list, as ``BinaryPropertyList`` parses it.
///
/// Unlike Foundation's `PropertyListSerialization`, keyed-archive object references
/// (`CF$UID`) stay distinct as ``uid(_:)``, which is what a keyed-archive decoder
/// needs.
///
/// ```swift
/// let value = try BinaryPropertyList.parse(data)
/// if case .dictionary(let top) = value, case .uid(let root)? = top["root"] { print(root) }
/// ```
indirect enum PropertyListValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case real(Double)
    case date(Date)
    case data(Data)
    case string(String)
    /// A keyed-archive object reference (`CF$UID`): an index into `$objects`.
    case uid(Int)
    case array([PropertyListValue])
    case set([PropertyListValue])
    /// A dictionary; keys are strings in every archive Core Data writes.
    case dictionary([String: PropertyListValue])

    /// The value as a dictionary, if it is one.
    var dictionaryValue: [String: PropertyListValue]? {
        if case .dictionary(let dictionary) = self { return dictionary }
        return nil
    }

    /// The value as a string, if it is one.
    var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// A short description for error messages.
    var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a Boolean"
        case .int: return "an integer"
        case .real: return "a real"
        case .date: return "a date"
        case .data: return "data"
        case .string: return "a string"
        case .uid: return "an object reference"
        case .array: return "an array"
        case .set: return "a set"
        case .dictionary: return "a dictionary"
        }
    }
}

/// A parser for Apple's binary property list format (`bplist00`), the container of
/// every `.mom` file and `Z_MODELCACHE` blob.
///
/// Every offset, count and reference is checked, references that loop back into the
/// object being parsed are rejected, nesting is limited, and any malformed input
/// throws a ``BinaryPropertyList/Failure``.
///
/// ```swift
/// let root = try BinaryPropertyList.parse(Data(contentsOf: momURL))
/// ```
struct BinaryPropertyList {
    /// Why the data is not a readable binary property list.
    struct Failure: Error, CustomStringConvertible, Sendable {
        var description: String
    }

    /// The deepest nesting of arrays and dictionaries accepted.
    static let maximumDepth = 512

    private let bytes: [UInt8]
    private let offsetTable: Int
    private let offsetSize: Int
    private let referenceSize: Int
    private let objectCount: Int
    private var cache: [Int: PropertyListValue] = [:]
    private var inProgress: Set<Int> = []

    /// Whether `data` starts like a binary property list.
    static func isBinaryPropertyList(_ data: Data) -> Bool {
        data.starts(with: Array("bplist0".utf8))
    }

    /// Parses a whole binary property list and returns its top object.
    static func parse(_ data: Data) throws -> PropertyListValue {
        var parser = try BinaryPropertyList(bytes: [UInt8](data))
        return try parser.topObject()
    }

    private let top: Int

    private init(bytes: [UInt8]) throws {
        self.bytes = bytes
        guard bytes.count >= 8 + 32, bytes[0..<6].elementsEqual(Array("bplist".utf8)) else {
            throw Failure(description: "not a binary property list (no bplist header)")
        }
        guard bytes[6] == UInt8(ascii: "0") else {
            throw Failure(description: "unsupported binary property list version '\(String(decoding: bytes[6..<8], as: UTF8.self))'")
        }
        let trailer = bytes.count - 32
        offsetSize = Int(bytes[trailer + 6])
        referenceSize = Int(bytes[trailer + 7])
        let count = BinaryPropertyList.bigEndian(bytes[(trailer + 8)..<(trailer + 16)])
        let top = BinaryPropertyList.bigEndian(bytes[(trailer + 16)..<(trailer + 24)])
        let table = BinaryPropertyList.bigEndian(bytes[(trailer + 24)..<(trailer + 32)])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
            throw Failure(description: "invalid trailer: offset size \(offsetSize), reference size \(referenceSize)")
        }
        guard count >= 1, count <= UInt64(bytes.count), top < count, table >= 8, table < UInt64(trailer) else {
            throw Failure(description: "invalid trailer: \(count) objects, top object \(top), offset table at \(table)")
        }
        objectCount = Int(count)
        self.top = Int(top)
        offsetTable = Int(table)
        let (tableBytes, overflow) = objectCount.multipliedReportingOverflow(by: offsetSize)
        guard !overflow, tableBytes <= trailer - offsetTable else {
            throw Failure(description: "the offset table of \(objectCount) entries runs past the end of the data")
        }
    }

    private static func bigEndian(_ slice: ArraySlice<UInt8>) -> UInt64 {
        var value: UInt64 = 0
        for byte in slice { value = value << 8 | UInt64(byte) }
        return value
    }

    private mutating func topObject() throws -> PropertyListValue {
        try object(top, depth: 0)
    }

    private func offset(of index: Int) throws -> Int {
        guard index >= 0, index < objectCount else {
            throw Failure(description: "object reference \(index) is out of range (\(objectCount) objects)")
        }
        let start = offsetTable + index * offsetSize
        let value = BinaryPropertyList.bigEndian(bytes[start..<(start + offsetSize)])
        guard value >= 8, value < UInt64(offsetTable) else {
            throw Failure(description: "object \(index) has an invalid offset \(value)")
        }
        return Int(value)
    }

    private func readBytes(_ start: Int, _ count: Int, _ what: String) throws -> ArraySlice<UInt8> {
        guard count >= 0, start >= 0, start <= offsetTable, count <= offsetTable - start else {
            throw Failure(description: "\(what) at offset \(start) (\(count) bytes) runs past the object data")
        }
        return bytes[start..<(start + count)]
    }

    /// Reads a count: the low nibble of a marker, or a following integer object when
    /// the nibble is 0xF. Returns the count and the offset after it.
    private func count(at offset: Int, marker: UInt8) throws -> (Int, Int) {
        let nibble = Int(marker & 0x0f)
        if nibble != 0x0f { return (nibble, offset + 1) }
        let intMarker = try readBytes(offset + 1, 1, "count marker")
        guard let intByte = intMarker.first, intByte & 0xf0 == 0x10 else {
            throw Failure(description: "object at offset \(offset) has an invalid count marker")
        }
        let size = 1 << Int(intByte & 0x0f)
        guard size <= 8 else { throw Failure(description: "object at offset \(offset) has a \(size)-byte count") }
        let value = BinaryPropertyList.bigEndian(try readBytes(offset + 2, size, "count"))
        guard value <= UInt64(bytes.count) else {
            throw Failure(description: "object at offset \(offset) claims \(value) elements, more than the data can hold")
        }
        return (Int(value), offset + 2 + size)
    }

    private mutating func object(_ index: Int, depth: Int) throws -> PropertyListValue {
        if let cached = cache[index] { return cached }
        guard depth < BinaryPropertyList.maximumDepth else {
            throw Failure(description: "objects are nested more than \(BinaryPropertyList.maximumDepth) deep")
        }
        guard inProgress.insert(index).inserted else {
            throw Failure(description: "object \(index) contains itself")
        }
        defer { inProgress.remove(index) }
        let value = try parseObject(index, depth: depth)
        cache[index] = value
        return value
    }

    private mutating func parseObject(_ index: Int, depth: Int) throws -> PropertyListValue {
        let start = try offset(of: index)
        guard let marker = try readBytes(start, 1, "object marker").first else {
            throw Failure(description: "object \(index) is missing")
        }
        let low = Int(marker & 0x0f)
        switch marker >> 4 {
        case 0x0:
            switch marker {
            case 0x00: return .null
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            default: throw Failure(description: "object \(index) has an unknown marker 0x\(String(marker, radix: 16))")
            }
        case 0x1:
            let size = 1 << low
            guard size <= 16 else { throw Failure(description: "object \(index) is a \(size)-byte integer") }
            let raw = try readBytes(start + 1, size, "integer")
            // 16-byte integers hold 64-bit unsigned values in their low half.
            let value = BinaryPropertyList.bigEndian(raw.suffix(min(size, 8)))
            return .int(Int64(truncatingIfNeeded: value))
        case 0x2:
            let size = 1 << low
            let raw = try readBytes(start + 1, size, "real")
            switch size {
            case 4: return .real(Double(Float(bitPattern: UInt32(truncatingIfNeeded: BinaryPropertyList.bigEndian(raw)))))
            case 8: return .real(Double(bitPattern: BinaryPropertyList.bigEndian(raw)))
            default: throw Failure(description: "object \(index) is a \(size)-byte real")
            }
        case 0x3:
            guard marker == 0x33 else { throw Failure(description: "object \(index) has an invalid date marker") }
            let raw = try readBytes(start + 1, 8, "date")
            return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: BinaryPropertyList.bigEndian(raw))))
        case 0x4:
            let (length, dataStart) = try count(at: start, marker: marker)
            return .data(Data(try readBytes(dataStart, length, "data")))
        case 0x5:
            let (length, dataStart) = try count(at: start, marker: marker)
            let raw = try readBytes(dataStart, length, "ASCII string")
            return .string(String(decoding: raw, as: UTF8.self))
        case 0x6:
            let (length, dataStart) = try count(at: start, marker: marker)
            let (byteCount, overflow) = length.multipliedReportingOverflow(by: 2)
            guard !overflow else { throw Failure(description: "object \(index): string too long") }
            let raw = try readBytes(dataStart, byteCount, "UTF-16 string")
            var units: [UInt16] = []
            units.reserveCapacity(length)
            var position = raw.startIndex
            while position < raw.endIndex {
                units.append(UInt16(raw[position]) << 8 | UInt16(raw[position + 1]))
                position += 2
            }
            return .string(String(decoding: units, as: UTF16.self))
        case 0x8:
            let raw = try readBytes(start + 1, low + 1, "UID")
            guard low < 8 else { throw Failure(description: "object \(index) is a \(low + 1)-byte UID") }
            let value = BinaryPropertyList.bigEndian(raw)
            guard value <= UInt64(Int32.max) else { throw Failure(description: "object \(index) is an out-of-range UID \(value)") }
            return .uid(Int(value))
        case 0xA, 0xC:
            let (length, referencesStart) = try count(at: start, marker: marker)
            let references = try readReferences(referencesStart, length)
            var elements: [PropertyListValue] = []
            elements.reserveCapacity(length)
            for reference in references { elements.append(try object(reference, depth: depth + 1)) }
            return marker >> 4 == 0xA ? .array(elements) : .set(elements)
        case 0xD:
            let (length, referencesStart) = try count(at: start, marker: marker)
            let (doubled, overflow) = length.multipliedReportingOverflow(by: 2)
            guard !overflow else { throw Failure(description: "object \(index): dictionary too large") }
            let references = try readReferences(referencesStart, doubled)
            var dictionary: [String: PropertyListValue] = [:]
            dictionary.reserveCapacity(length)
            for position in 0..<length {
                let key = try object(references[position], depth: depth + 1)
                guard case .string(let name) = key else {
                    throw Failure(description: "dictionary object \(index) has a key that is \(key.kindDescription), not a string")
                }
                dictionary[name] = try object(references[length + position], depth: depth + 1)
            }
            return .dictionary(dictionary)
        default:
            throw Failure(description: "object \(index) has an unknown marker 0x\(String(marker, radix: 16))")
        }
    }

    private func readReferences(_ start: Int, _ count: Int) throws -> [Int] {
        let (byteCount, overflow) = count.multipliedReportingOverflow(by: referenceSize)
        guard !overflow else { throw Failure(description: "too many object references at offset \(start)") }
        let raw = try readBytes(start, byteCount, "object references")
        var references: [Int] = []
        references.reserveCapacity(count)
        var position = raw.startIndex
        while position < raw.endIndex {
            let value = BinaryPropertyList.bigEndian(raw[position..<(position + referenceSize)])
            guard value < UInt64(objectCount) else {
                throw Failure(description: "object reference \(value) at offset \(position) is out of range (\(objectCount) objects)")
            }
            references.append(Int(value))
            position += referenceSize
        }
        return references
    }
}
