import Foundation
import GRDB
import NIOCore
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

/// Values between the store and PostgreSQL.
///
/// The store keeps Core Data's encoding of every attribute (what the SQLite
/// store writes, see `SQLiteValueEncoding`): integers and Booleans as integers,
/// doubles, floats and dates (seconds since 2001-01-01 UTC) as `DOUBLE PRECISION`,
/// decimals as `NUMERIC`, strings and URIs as `TEXT`, UUIDs (16 bytes), binary
/// data and transformable values as `BYTEA`. One value encoding serves both
/// stores: a predicate binds the same values, and a store moves between SQLite
/// and PostgreSQL value for value.
///
/// Reading never traps: a column of an unexpected type is read as text when it
/// can be, else as `NULL`.
enum PostgreSQLValues {
    /// `arguments` bound in order (`$1`, `$2`...).
    static func bindings(_ arguments: [DatabaseValue]) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments { bind(argument, into: &bindings) }
        return bindings
    }

    /// Appends `value` to `bindings` with the PostgreSQL type of its storage class.
    static func bind(_ value: DatabaseValue, into bindings: inout PostgresBindings) {
        switch value.storage {
        case .null: bindings.appendNull()
        case .int64(let int): bindings.append(int)
        case .double(let double): bindings.append(double)
        case .string(let string): bindings.append(string)
        case .blob(let data): bindings.append(ByteBuffer(bytes: data))
        }
    }

    /// The value of a result cell, by its storage class: integers (and Booleans)
    /// as INTEGER, floating-point numbers as REAL, `NUMERIC` as its text (read
    /// back exactly by a decimal attribute), text as TEXT, `BYTEA` as BLOB.
    static func databaseValue(_ cell: PostgresCell) -> DatabaseValue {
        guard let bytes = cell.bytes else { return .null }
        // The common types in PostgreSQL's binary format, read straight from the
        // bytes (big-endian integers and IEEE 754 bit patterns, UTF-8 text);
        // anything else, or any other length, through postgres-nio's decoding.
        if cell.format == .binary {
            switch (cell.dataType, bytes.readableBytes) {
            case (.int8, 8): return bytes.getInteger(at: bytes.readerIndex, as: Int64.self).map { $0.databaseValue } ?? .null
            case (.int4, 4): return bytes.getInteger(at: bytes.readerIndex, as: Int32.self).map { Int64($0).databaseValue } ?? .null
            case (.int2, 2): return bytes.getInteger(at: bytes.readerIndex, as: Int16.self).map { Int64($0).databaseValue } ?? .null
            case (.float8, 8):
                return bytes.getInteger(at: bytes.readerIndex, as: UInt64.self).map { Double(bitPattern: $0).databaseValue } ?? .null
            case (.bool, 1): return (bytes.getInteger(at: bytes.readerIndex, as: UInt8.self) == 0 ? 0 as Int64 : 1).databaseValue
            case (.text, _), (.varchar, _), (.name, _):
                return bytes.getString(at: bytes.readerIndex, length: bytes.readableBytes).map { $0.databaseValue } ?? .null
            case (.bytea, _): return Data(bytes.readableBytesView).databaseValue
            default: break
            }
        }
        do {
            switch cell.dataType {
            case .int2: return Int64(try cell.decode(Int16.self)).databaseValue
            case .int4: return Int64(try cell.decode(Int32.self)).databaseValue
            case .int8: return try cell.decode(Int64.self).databaseValue
            case .float4: return Double(try cell.decode(Float.self)).databaseValue
            case .float8: return try cell.decode(Double.self).databaseValue
            case .numeric: return try cell.decode(Decimal.self).description.databaseValue
            case .bool: return (try cell.decode(Bool.self) ? 1 : 0 as Int64).databaseValue
            case .bytea: return Data(buffer: try cell.decode(ByteBuffer.self)).databaseValue
            case .uuid: return try cell.decode(UUID.self).uuidString.databaseValue
            default: return try cell.decode(String.self).databaseValue
            }
        } catch {
            return .null
        }
    }

    /// A cell of a column the store created, read straight from its bytes as an
    /// attribute of `type` (not transformable): the value ``databaseValue(_:)``
    /// then `SQLiteValueEncoding.attributeValue(_:as:)` give, without the
    /// intermediate value. Nil when the cell needs that general path (another
    /// column type, text format, a conversion between storage classes).
    static func attributeValue(_ cell: PostgresCell, as type: AttributeType) -> AttributeValue? {
        guard let bytes = cell.bytes else { return .null }
        guard cell.format == .binary else { return nil }
        switch (cell.dataType, bytes.readableBytes) {
        case (.int8, 8):
            guard let integer = bytes.getInteger(at: bytes.readerIndex, as: Int64.self) else { return nil }
            switch type {
            case .integer16, .integer32, .integer64: return .int(integer)
            case .boolean: return .bool(integer != 0)
            default: return nil
            }
        case (.float8, 8):
            guard let bits = bytes.getInteger(at: bytes.readerIndex, as: UInt64.self) else { return nil }
            let double = Double(bitPattern: bits)
            switch type {
            case .double, .float: return .double(double)
            case .date: return double.isFinite ? .date(Date(timeIntervalSinceReferenceDate: double)) : .null
            default: return nil
            }
        case (.text, _), (.varchar, _):
            guard type == .string else { return nil }
            return bytes.getString(at: bytes.readerIndex, length: bytes.readableBytes).map { .string($0) }
        default:
            return nil
        }
    }

    /// The integer of a cell (0 for `NULL` or a non-integer).
    static func int64(_ cell: PostgresCell) -> Int64 {
        switch databaseValue(cell).storage {
        case .int64(let value): return value
        case .double(let value) where value.isFinite && abs(value) < 9.2e18: return Int64(value)
        case .string(let text): return Int64(text) ?? 0
        default: return 0
        }
    }
}

extension PostgresRow {
    /// The integer in column `index` (0 for `NULL`).
    func int64(_ index: Int) -> Int64 {
        PostgreSQLValues.int64(makeRandomAccess()[index])
    }
}

/// Store errors from PostgreSQL's, with Core Data's codes.
enum PostgreSQLErrors {
    /// The server's message (and SQLSTATE) of a postgres-nio error, or the error.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let message = info[.message] ?? "error"
                let state = info[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                let detail = info[.detail].map { ": \($0)" } ?? ""
                return message + detail + state
            }
            return "\(error.code)"
        }
        return "\(error)"
    }

    /// The SQLSTATE of a server error.
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// `error` as a Core Data error: already one, as it is; a uniqueness violation
    /// (23505) 133021; a lock or statement timeout (55P03, 57014) 134090; anything
    /// else `code`, with the server's message and what the store was `doing`.
    static func coreDataError(_ error: any Error, code: CoreDataError.Code, doing: String, url: URL?) -> CoreDataError {
        if let error = error as? CoreDataError { return error }
        let message = "PostgreSQL store error \(doing): \(describe(error))"
        switch sqlState(error) {
        case "23505": return CoreDataError(.managedObjectConstraintMerge, message, url: url)
        case "55P03", "57014": return CoreDataError(.persistentStoreTimeout, message, url: url)
        // A number out of its column's range (an integer overflowing in arithmetic).
        case "22003": return CoreDataError(.managedObjectValidation, message, url: url)
        default: return CoreDataError(code, message, url: url)
        }
    }
}
