import Foundation

/// A writer of Apple's binary property list format (`bplist00`), the container of
/// every `NSKeyedArchiver` archive; the counterpart of ``BinaryPropertyList``.
///
/// The output follows CoreFoundation's `CFBinaryPlistWrite` so that archives come
/// out the way Apple writes them:
///
/// * objects are laid out depth first: a dictionary, then its keys, then its values
///   (each value followed by its own children); an array, then its elements;
/// * strings, numbers, dates and data are written once and shared by every
///   reference to an equal value (strings compare by UTF-16 code units, not by
///   Swift's canonical equivalence; reals by bit pattern);
/// * integers take 1, 2, 4 or 8 bytes (negative ones always 8), reals 8 bytes,
///   strings are ASCII when every character is, UTF-16 big-endian otherwise;
/// * keyed-archive references (``PropertyListValue/uid(_:)``) take 1, 2 or 4 bytes;
/// * offsets and object references use the fewest of 1, 2, 4 or 8 bytes that hold
///   the offset table's position and the object count.
///
/// Dictionaries in ``PropertyListValue`` have no order, so the caller decides the
/// order of each dictionary's keys (``keyOrder``); CoreFoundation writes them in
/// hash-table order, which readers never depend on.
///
/// ```swift
/// let top: PropertyListValue = .dictionary(["root": .uid(1)])
/// let data = BinaryPropertyListWriter().write(top)
/// try BinaryPropertyList.parse(data) == top   // true
/// ```
struct BinaryPropertyListWriter {
    /// Orders the keys of one dictionary (the default sorts them).
    var keyOrder: ([String]) -> [String] = { $0.sorted() }

    /// The object uniquing key: scalar values equal in CoreFoundation's sense.
    private enum ScalarKey: Hashable {
        case bool(Bool)
        case int(Int64)
        case real(UInt64)
        case date(UInt64)
        case data(Data)
        case string([UInt16])
    }

    /// An object flattened into the object table: a scalar, or a collection whose
    /// elements are object-table indexes.
    private enum Flat {
        case scalar(PropertyListValue)
        case array([Int])
        case set([Int])
        case dictionary(keys: [Int], values: [Int])
    }

    /// Serializes `value` as a binary property list.
    func write(_ value: PropertyListValue) -> Data {
        var table: [Flat] = []
        var unique: [ScalarKey: Int] = [:]
        let top = flatten(value, into: &table, unique: &unique)

        var output: [UInt8] = Array("bplist00".utf8)
        let referenceSize = Self.byteCount(UInt64(table.count))
        var offsets: [Int] = []
        offsets.reserveCapacity(table.count)
        for object in table {
            offsets.append(output.count)
            switch object {
            case .scalar(let scalar):
                Self.appendScalar(scalar, to: &output)
            case .array(let elements):
                Self.appendMarker(0xA0, count: elements.count, to: &output)
                for element in elements { Self.appendSized(UInt64(element), size: referenceSize, to: &output) }
            case .set(let elements):
                Self.appendMarker(0xC0, count: elements.count, to: &output)
                for element in elements { Self.appendSized(UInt64(element), size: referenceSize, to: &output) }
            case .dictionary(let keys, let values):
                Self.appendMarker(0xD0, count: keys.count, to: &output)
                for key in keys { Self.appendSized(UInt64(key), size: referenceSize, to: &output) }
                for value in values { Self.appendSized(UInt64(value), size: referenceSize, to: &output) }
            }
        }
        let tableOffset = output.count
        let offsetSize = Self.byteCount(UInt64(tableOffset))
        for offset in offsets { Self.appendSized(UInt64(offset), size: offsetSize, to: &output) }
        // Trailer: 5 unused bytes, sort version, offset size, reference size, object
        // count, top object, offset table position.
        output.append(contentsOf: [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
        Self.appendSized(UInt64(table.count), size: 8, to: &output)
        Self.appendSized(UInt64(top), size: 8, to: &output)
        Self.appendSized(UInt64(tableOffset), size: 8, to: &output)
        return Data(output)
    }

    /// Appends `value` and its children to the object table, depth first, and
    /// returns its index.
    private func flatten(_ value: PropertyListValue, into table: inout [Flat], unique: inout [ScalarKey: Int]) -> Int {
        let key: ScalarKey?
        switch value {
        case .bool(let flag): key = .bool(flag)
        case .int(let number): key = .int(number)
        case .real(let number): key = .real(number.bitPattern)
        case .date(let date): key = .date(date.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let data): key = .data(data)
        case .string(let string): key = .string(Array(string.utf16))
        case .null, .uid, .array, .set, .dictionary: key = nil
        }
        if let key, let existing = unique[key] { return existing }
        let index = table.count
        switch value {
        case .array(let elements), .set(let elements):
            let isSet: Bool
            if case .set = value { isSet = true } else { isSet = false }
            table.append(.array([]))
            var references: [Int] = []
            references.reserveCapacity(elements.count)
            for element in elements { references.append(flatten(element, into: &table, unique: &unique)) }
            table[index] = isSet ? .set(references) : .array(references)
        case .dictionary(let dictionary):
            table.append(.array([]))
            let keys = keyOrder(Array(dictionary.keys))
            var keyReferences: [Int] = []
            var valueReferences: [Int] = []
            for name in keys { keyReferences.append(flatten(.string(name), into: &table, unique: &unique)) }
            for name in keys { valueReferences.append(flatten(dictionary[name] ?? .null, into: &table, unique: &unique)) }
            table[index] = .dictionary(keys: keyReferences, values: valueReferences)
        default:
            table.append(.scalar(value))
            if let key { unique[key] = index }
        }
        return index
    }

    private static func appendScalar(_ value: PropertyListValue, to output: inout [UInt8]) {
        switch value {
        case .null: output.append(0x00)
        case .bool(let flag): output.append(flag ? 0x09 : 0x08)
        case .int(let number): appendInteger(number, to: &output)
        case .real(let number):
            output.append(0x23)
            appendSized(number.bitPattern, size: 8, to: &output)
        case .date(let date):
            output.append(0x33)
            appendSized(date.timeIntervalSinceReferenceDate.bitPattern, size: 8, to: &output)
        case .data(let data):
            appendMarker(0x40, count: data.count, to: &output)
            output.append(contentsOf: data)
        case .string(let string):
            if string.utf8.allSatisfy({ $0 < 0x80 }) {
                appendMarker(0x50, count: string.utf8.count, to: &output)
                output.append(contentsOf: string.utf8)
            } else {
                let units = Array(string.utf16)
                appendMarker(0x60, count: units.count, to: &output)
                for unit in units { output.append(UInt8(unit >> 8)); output.append(UInt8(unit & 0xff)) }
            }
        case .uid(let uid):
            let value = UInt64(max(0, uid))
            let size = value <= 0xff ? 1 : value <= 0xffff ? 2 : 4
            output.append(0x80 | UInt8(size - 1))
            appendSized(value, size: size, to: &output)
        case .array, .set, .dictionary:
            preconditionFailure("collections are flattened before writing")
        }
    }

    /// An integer object: 1, 2, 4 or 8 bytes, negative numbers always 8.
    private static func appendInteger(_ number: Int64, to output: inout [UInt8]) {
        let value = UInt64(bitPattern: number)
        let size = number < 0 ? 8 : byteCount(value)
        let exponent: UInt8 = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3
        output.append(0x10 | exponent)
        appendSized(value, size: size, to: &output)
    }

    /// A collection or string marker whose low nibble holds the count, or 0xF
    /// followed by an integer object when the count is 15 or more.
    private static func appendMarker(_ marker: UInt8, count: Int, to output: inout [UInt8]) {
        if count < 15 {
            output.append(marker | UInt8(count))
        } else {
            output.append(marker | 0x0f)
            appendInteger(Int64(count), to: &output)
        }
    }

    private static func appendSized(_ value: UInt64, size: Int, to output: inout [UInt8]) {
        for shift in stride(from: (size - 1) * 8, through: 0, by: -8) {
            output.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// The fewest of 1, 2, 4 or 8 bytes that hold `value` (CoreFoundation's `_byteCount`).
    static func byteCount(_ value: UInt64) -> Int {
        if value <= 0xff { return 1 }
        if value <= 0xffff { return 2 }
        if value <= 0xffff_ffff { return 4 }
        return 8
    }
}
