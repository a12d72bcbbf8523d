import Foundation
import OpenCoreData
import OpenCoreDataPredicates

/// How the store dump writes attribute values, and reads them back by the
/// attribute's type.
///
/// | attribute type              | written as                                        |
/// |-----------------------------|---------------------------------------------------|
/// | integers                    | a JSON integer                                    |
/// | double, float               | a number; `"nan"`, `"inf"`, `"-inf"` as strings   |
/// | decimal                     | a string (`"1.50"`), exact                        |
/// | string                      | a string                                          |
/// | boolean                     | `true` / `false`                                  |
/// | date                        | ISO 8601 with milliseconds when that is exact, else seconds since 2001-01-01 (Core Data's own number) |
/// | binary data                 | base64                                            |
/// | UUID, URI                   | a string                                          |
/// | transformable, composite, undefined | a JSON tree whose objects `{"$date": ...}`, `{"$data": ...}`, `{"$uuid": ...}`, `{"$url": ...}`, `{"$decimal": ...}`, `{"$double": ...}` stand for values JSON has no literal for |
///
/// `null` is no value. In CSV the same forms are the cells' text; an empty cell is
/// no value and `""` an empty string.
enum DumpValues {
    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: Writing

    static func json(_ value: AttributeValue, type: AttributeType) -> DumpJSON {
        isTree(type) ? tree(value) : scalar(value)
    }

    /// Whether values of `type` are written as tagged JSON trees.
    static func isTree(_ type: AttributeType) -> Bool {
        switch type {
        case .transformable, .composite, .undefined, .objectID: return true
        default: return false
        }
    }

    /// A scalar attribute's value.
    static func scalar(_ value: AttributeValue) -> DumpJSON {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return d.isFinite ? .double(d) : .string(nonFinite(d))
        case .decimal(let d): return .string(d.description)
        case .string(let s): return .string(s)
        case .date(let d): return date(d)
        case .data(let d): return .string(d.base64EncodedString())
        case .uuid(let u): return .string(u.uuidString)
        case .uri(let u): return .string(u.absoluteString)
        case .array, .dictionary: return tree(value)
        }
    }

    /// A value of a tree (transformable, composite): tagged where JSON has no literal.
    static func tree(_ value: AttributeValue) -> DumpJSON {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .object(["$double": d.isFinite ? .double(d) : .string(nonFinite(d))])
        case .decimal(let d): return .object(["$decimal": .string(d.description)])
        case .string(let s): return .string(s)
        case .date(let d): return .object(["$date": date(d)])
        case .data(let d): return .object(["$data": .string(d.base64EncodedString())])
        case .uuid(let u): return .object(["$uuid": .string(u.uuidString)])
        case .uri(let u): return .object(["$url": .string(u.absoluteString)])
        case .array(let values): return .array(values.map(tree))
        case .dictionary(let members): return .object(members.mapValues(tree))
        }
    }

    private static func nonFinite(_ d: Double) -> String {
        d.isNaN ? "nan" : (d > 0 ? "inf" : "-inf")
    }

    /// ISO 8601 formatters (not thread-safe: one pair, used under the lock).
    private static let formatters = Lock<(fractional: ISO8601DateFormatter, plain: ISO8601DateFormatter)>({
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (fractional, ISO8601DateFormatter())
    }())

    /// ISO 8601 in UTC with milliseconds (`2024-05-01T12:00:00.250Z`) when that
    /// says the date exactly (its seconds since 2001 are a whole number of
    /// milliseconds, `k / 1000`) and its year is 1900 to 9999; else the exact number
    /// of seconds since 2001-01-01. Written and read here with the C library's UTC
    /// calendar (proleptic Gregorian), both ways alike.
    static func date(_ date: Date) -> DumpJSON {
        let seconds = date.timeIntervalSinceReferenceDate
        let scaled = (seconds * 1000).rounded()
        guard scaled.magnitude < 1e15, Double(Int64(scaled)) / 1000 == seconds else { return .double(seconds) }
        let milliseconds = Int64(scaled)
        let whole = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = milliseconds - whole * 1000
        var unix = time_t(whole + 978_307_200)
        var parts = tm()
        guard gmtime_r(&unix, &parts) != nil, parts.tm_year >= 0, parts.tm_year <= 8099 else { return .double(seconds) }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let millis = String(1000 + fraction).dropFirst()
        return .string("\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z")
    }

    /// A date as ``date(_:)`` writes it (read back exactly), or any other ISO 8601
    /// date Foundation reads.
    static func parseISO(_ text: String) -> Date? {
        let utf8 = Array(text.utf8)
        if utf8.count == 24, utf8[4] == UInt8(ascii: "-"), utf8[7] == UInt8(ascii: "-"), utf8[10] == UInt8(ascii: "T"),
           utf8[13] == UInt8(ascii: ":"), utf8[16] == UInt8(ascii: ":"), utf8[19] == UInt8(ascii: "."), utf8[23] == UInt8(ascii: "Z") {
            func number(_ range: Range<Int>) -> Int32? {
                var value: Int32 = 0
                for index in range {
                    let digit = utf8[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int32(digit)
                }
                return value
            }
            if let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
               let minute = number(14..<16), let second = number(17..<19), let millis = number(20..<23),
               (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 {
                var parts = tm()
                parts.tm_year = year - 1900
                parts.tm_mon = month - 1
                parts.tm_mday = day
                parts.tm_hour = hour
                parts.tm_min = minute
                parts.tm_sec = second
                let unix = timegm(&parts)
                let whole = Int64(unix) - 978_307_200
                return Date(timeIntervalSinceReferenceDate: Double(whole * 1000 + Int64(millis)) / 1000)
            }
        }
        return formatters.withLock { $0.fractional.date(from: text) ?? $0.plain.date(from: text) }
    }

    /// The CSV cell of a value (nil: an empty cell, no value).
    static func cell(_ json: DumpJSON) -> String? {
        switch json {
        case .null: return nil
        case .string(let s): return s
        case .bool, .int, .double, .array, .object: return json.text
        }
    }

    // MARK: Reading

    /// The attribute value of `json` for an attribute of `type`.
    static func attributeValue(_ json: DumpJSON, type: AttributeType) throws -> AttributeValue {
        if json == .null { return .null }
        switch type {
        case .integer16, .integer32, .integer64:
            guard case .int(let i) = json else { throw Invalid(description: "\(json.text) is not an integer") }
            let range: ClosedRange<Int64> = type == .integer16 ? -32768...32767
                : type == .integer32 ? Int64(Int32.min)...Int64(Int32.max) : Int64.min...Int64.max
            guard range.contains(i) else { throw Invalid(description: "\(i) is out of range for \(type.xcodeName)") }
            return .int(i)
        case .double, .float:
            switch json {
            case .int(let i): return .double(Double(i))
            case .double(let d): return .double(d)
            case .string("nan"): return .double(.nan)
            case .string("inf"): return .double(.infinity)
            case .string("-inf"): return .double(-.infinity)
            default: throw Invalid(description: "\(json.text) is not a number")
            }
        case .decimal:
            switch json {
            case .string(let s):
                guard let d = Decimal(string: s, locale: Locale(identifier: "en_US_POSIX")) else { throw Invalid(description: "\(json.text) is not a decimal") }
                return .decimal(d)
            case .int(let i): return .decimal(Decimal(i))
            case .double(let d): return .decimal(Decimal(d))
            default: throw Invalid(description: "\(json.text) is not a decimal")
            }
        case .string:
            guard case .string(let s) = json else { throw Invalid(description: "\(json.text) is not a string") }
            return .string(s)
        case .boolean:
            switch json {
            case .bool(let b): return .bool(b)
            case .int(0): return .bool(false)
            case .int(1): return .bool(true)
            default: throw Invalid(description: "\(json.text) is not a Boolean")
            }
        case .date:
            return .date(try date(json))
        case .binaryData:
            guard case .string(let s) = json, let data = Data(base64Encoded: s) else { throw Invalid(description: "\(json.text) is not base64 data") }
            return .data(data)
        case .uuid:
            guard case .string(let s) = json, let uuid = UUID(uuidString: s) else { throw Invalid(description: "\(json.text) is not a UUID") }
            return .uuid(uuid)
        case .uri:
            guard case .string(let s) = json, let url = URL(string: s) else { throw Invalid(description: "\(json.text) is not a URI") }
            return .uri(url)
        case .transformable, .composite, .undefined, .objectID:
            return try treeValue(json, depth: 0)
        }
    }

    static func date(_ json: DumpJSON) throws -> Date {
        switch json {
        case .string(let s):
            guard let date = parseISO(s) else { throw Invalid(description: "\(json.text) is not an ISO 8601 date") }
            return date
        case .int(let i): return Date(timeIntervalSinceReferenceDate: Double(i))
        case .double(let d): return Date(timeIntervalSinceReferenceDate: d)
        default: throw Invalid(description: "\(json.text) is not a date")
        }
    }

    static func treeValue(_ json: DumpJSON, depth: Int) throws -> AttributeValue {
        switch json {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let values): return .array(try values.map { try treeValue($0, depth: depth + 1) })
        case .object(let members):
            if members.count == 1, let (key, value) = members.first, key.hasPrefix("$") {
                switch key {
                case "$double": return try attributeValue(value, type: .double)
                case "$decimal": return try attributeValue(value, type: .decimal)
                case "$date": return .date(try date(value))
                case "$data": return try attributeValue(value, type: .binaryData)
                case "$uuid": return try attributeValue(value, type: .uuid)
                case "$url": return try attributeValue(value, type: .uri)
                default: break
                }
            }
            return .dictionary(try members.mapValues { try treeValue($0, depth: depth + 1) })
        }
    }

    /// The JSON form of a CSV cell for a property: the cell's text read back into
    /// what the JSON dump would have written.
    static func json(cell: String?, for property: PropertyDescription) throws -> DumpJSON {
        guard let cell else { return .null }
        if let relationship = property as? RelationshipDescription {
            if relationship.isToMany {
                return .array(cell.split(separator: " ").map { .string(String($0)) })
            }
            return .string(cell)
        }
        guard let attribute = property as? AttributeDescription else { return .null }
        switch attribute.attributeType {
        case .string, .binaryData, .uuid, .uri, .decimal:
            return .string(cell)
        case .date:
            return Double(cell).map { .double($0) } ?? .string(cell)
        case .double, .float:
            if ["nan", "inf", "-inf"].contains(cell) { return .string(cell) }
            return try DumpJSON.parse(cell)
        default:
            return try DumpJSON.parse(cell)
        }
    }
}
