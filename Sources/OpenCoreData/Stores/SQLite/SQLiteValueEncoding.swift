import Foundation
import GRDB
import OpenCoreDataPredicates

/// How attribute values are stored in the columns of a Core Data SQLite store, and
/// read back.
///
/// | Attribute type | Column | Stored as |
/// |---|---|---|
/// | Integer 16/32/64 | `INTEGER` | INTEGER |
/// | Boolean | `INTEGER` | INTEGER 0 or 1 |
/// | Double, Float | `FLOAT` | REAL |
/// | Decimal | `DECIMAL` | REAL (see below) |
/// | String | `VARCHAR` | TEXT |
/// | Date | `TIMESTAMP` | REAL seconds since 2001-01-01 00:00:00 UTC |
/// | UUID | `BLOB` | 16 bytes, `uuid_t` order |
/// | URI | `VARCHAR` | TEXT, the URL's `absoluteString` |
/// | Binary | `BLOB` | the raw bytes |
///
/// Decimal: the format notes leave the storage of `DECIMAL` columns unverified;
/// Core Data is widely reported to lose `NSDecimalNumber` precision in SQLite
/// stores, which points at REAL, so decimals are written as REAL (an integral
/// decimal that fits in 64 bits as INTEGER, which the column's NUMERIC affinity
/// would produce anyway) and read back from INTEGER, REAL or TEXT.
///
/// Transformable attributes and external binary storage are encoded by the store
/// before and after this layer; here their values pass as BLOB or TEXT.
///
/// Reading is tolerant: a column may hold another storage class than the one its
/// type writes (an INTEGER in a FLOAT column, a REAL in a TIMESTAMP column, text
/// numbers...). Values are converted when that makes sense and become `.null`
/// otherwise; decoding never traps.
///
/// ```swift
/// SQLiteValueEncoding.databaseValue(.date(Date(timeIntervalSinceReferenceDate: 10)), as: .date)
/// // 10.0
/// SQLiteValueEncoding.attributeValue(DatabaseValue(value: 3)!, as: .double)
/// // .double(3.0)
/// ```
package enum SQLiteValueEncoding {

    // MARK: Writing

    /// The database value storing `value` in a column of an attribute of type
    /// `type`, or `nil` when the value cannot be stored as that type (a string for
    /// a Date attribute, say). `.null` is always `NULL`.
    package static func databaseValue(_ value: AttributeValue, as type: AttributeType) -> DatabaseValue? {
        if case .null = value { return .null }
        switch type {
        case .integer16, .integer32, .integer64:
            switch value {
            case .int(let i): return i.databaseValue
            case .bool(let b): return (b ? 1 : 0 as Int64).databaseValue
            case .double, .decimal:
                return value.int64Value.map { $0.databaseValue }
            default: return nil
            }
        case .boolean:
            guard value.isNumber, let b = value.boolValue else { return nil }
            return (b ? 1 : 0 as Int64).databaseValue
        case .double, .float:
            guard value.isNumber, let d = value.doubleValue else { return nil }
            return d.databaseValue
        case .decimal:
            return numericDatabaseValue(value)
        case .string:
            if case .string(let s) = value { return s.databaseValue }
            return nil
        case .date:
            if case .date(let d) = value { return d.timeIntervalSinceReferenceDate.databaseValue }
            return nil
        case .uuid:
            if case .uuid(let u) = value { return uuidBytes(u).databaseValue }
            return nil
        case .uri:
            if case .uri(let url) = value { return url.absoluteString.databaseValue }
            return nil
        case .binaryData:
            if case .data(let d) = value { return d.databaseValue }
            return nil
        case .transformable, .objectID, .composite, .undefined:
            return databaseValue(value)
        }
    }

    /// The database value for a value by its own kind: numbers as INTEGER or REAL
    /// (Booleans as 0/1, decimals as `numericDatabaseValue`), strings as TEXT, dates
    /// as REAL reference-date seconds, UUIDs as 16 bytes, URLs as their absolute
    /// string, data as BLOB. Arrays and dictionaries have no column form: `nil`.
    package static func databaseValue(_ value: AttributeValue) -> DatabaseValue? {
        switch value {
        case .null: return .null
        case .bool(let b): return (b ? 1 : 0 as Int64).databaseValue
        case .int(let i): return i.databaseValue
        case .double(let d): return d.databaseValue
        case .decimal: return numericDatabaseValue(value)
        case .string(let s): return s.databaseValue
        case .date(let d): return d.timeIntervalSinceReferenceDate.databaseValue
        case .data(let d): return d.databaseValue
        case .uuid(let u): return uuidBytes(u).databaseValue
        case .uri(let url): return url.absoluteString.databaseValue
        case .array, .dictionary: return nil
        }
    }

    /// A number as SQLite compares it: integers (and Booleans, and integral
    /// decimals that fit) as INTEGER, everything else as REAL.
    static func numericDatabaseValue(_ value: AttributeValue) -> DatabaseValue? {
        switch value {
        case .int(let i): return i.databaseValue
        case .bool(let b): return (b ? 1 : 0 as Int64).databaseValue
        case .double(let d): return d.databaseValue
        case .decimal(let d):
            if !d.isNaN, let i = Int64(d.description) { return i.databaseValue }
            return NSDecimalNumber(decimal: d).doubleValue.databaseValue
        default: return nil
        }
    }

    /// The 16 bytes of a UUID in `uuid_t` order.
    static func uuidBytes(_ uuid: UUID) -> Data {
        withUnsafeBytes(of: uuid.uuid) { Data($0) }
    }

    // MARK: Reading

    /// The attribute value a column of an attribute of type `type` holds. Never
    /// traps: values that cannot be understood become `.null`.
    package static func attributeValue(_ dbValue: DatabaseValue, as type: AttributeType) -> AttributeValue {
        let storage = dbValue.storage
        if case .null = storage { return .null }
        switch type {
        case .integer16, .integer32, .integer64:
            switch storage {
            case .int64(let i): return .int(i)
            case .double(let d): return integer(from: d)
            case .string(let s): return number(from: s).map(integer(from:)) ?? .null
            default: return .null
            }
        case .boolean:
            switch storage {
            case .int64(let i): return .bool(i != 0)
            case .double(let d): return d.isNaN ? .null : .bool(d != 0)
            case .string(let s): return number(from: s).map { .bool($0 != 0) } ?? .null
            default: return .null
            }
        case .double, .float:
            switch storage {
            case .int64(let i): return .double(Double(i))
            case .double(let d): return .double(d)
            case .string(let s): return number(from: s).map { .double($0) } ?? .null
            default: return .null
            }
        case .decimal:
            switch storage {
            case .int64(let i): return .decimal(Decimal(i))
            case .double(let d): return decimal(from: d)
            case .string(let s):
                return Decimal(string: s.trimmingCharacters(in: .whitespaces), locale: Locale(identifier: "en_US_POSIX"))
                    .map { .decimal($0) } ?? .null
            default: return .null
            }
        case .string:
            switch storage {
            case .string(let s): return .string(s)
            case .int64(let i): return .string(String(i))
            case .double(let d): return .string(String(d))
            case .blob(let data): return String(data: data, encoding: .utf8).map { .string($0) } ?? .null
            case .null: return .null
            }
        case .date:
            switch storage {
            case .int64(let i): return .date(Date(timeIntervalSinceReferenceDate: TimeInterval(i)))
            case .double(let d): return d.isFinite ? .date(Date(timeIntervalSinceReferenceDate: d)) : .null
            case .string(let s):
                return number(from: s).map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .null
            default: return .null
            }
        case .uuid:
            switch storage {
            case .blob(let data) where data.count == 16:
                let b = Array(data)
                return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                         b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
            case .string(let s): return UUID(uuidString: s).map { .uuid($0) } ?? .null
            default: return .null
            }
        case .uri:
            switch storage {
            case .string(let s): return URL(string: s).map { .uri($0) } ?? .null
            case .blob(let data):
                return String(data: data, encoding: .utf8).flatMap { URL(string: $0) }.map { .uri($0) } ?? .null
            default: return .null
            }
        case .binaryData:
            switch storage {
            case .blob(let data): return .data(data)
            case .string(let s): return .data(Data(s.utf8))
            default: return .null
            }
        case .transformable, .objectID, .composite, .undefined:
            return attributeValue(dbValue)
        }
    }

    /// A database value by its storage class: INTEGER as `.int`, REAL as `.double`,
    /// TEXT as `.string`, BLOB as `.data`.
    package static func attributeValue(_ dbValue: DatabaseValue) -> AttributeValue {
        switch dbValue.storage {
        case .null: return .null
        case .int64(let i): return .int(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .blob(let data): return .data(data)
        }
    }

    private static func integer(from d: Double) -> AttributeValue {
        guard d.isFinite, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else { return .null }
        return .int(Int64(d.rounded(.towardZero)))
    }

    private static func decimal(from d: Double) -> AttributeValue {
        guard d.isFinite else { return .null }
        // The shortest text that reads back as the same double: 0.1 stays 0.1.
        return Decimal(string: "\(d)", locale: Locale(identifier: "en_US_POSIX")).map { .decimal($0) } ?? .null
    }

    private static func number(from text: String) -> Double? {
        Double(text.trimmingCharacters(in: .whitespaces))
    }
}
