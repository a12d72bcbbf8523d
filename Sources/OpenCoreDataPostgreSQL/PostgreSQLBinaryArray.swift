import Foundation
import GRDB
import NIOCore
import PostgresNIO

/// A column of values sent as one PostgreSQL array parameter, in the binary
/// format: what lets one `INSERT ... SELECT ... FROM unnest($1, $2, ...)` write
/// thousands of rows with one parameter per column.
///
/// ```swift
/// guard let keys = PostgreSQLBinaryArray(column: keyValues, type: "BIGINT") else { ... }
/// var bindings = PostgresBindings()
/// bindings.append(keys)   // $1: BIGINT[]
/// ```
///
/// A column is made only when every value has the exact representation of the
/// column's type (integers for `BIGINT`, numbers for `DOUBLE PRECISION`, text for
/// `TEXT`, bytes for `BYTEA`, text or integers for `NUMERIC`, sent as text and cast
/// by the statement); otherwise the initializer fails and the caller writes the
/// rows another way, so a value is never converted differently than a bound
/// scalar would be.
struct PostgreSQLBinaryArray: PostgresDynamicTypeEncodable {
    let psqlType: PostgresDataType
    var psqlFormat: PostgresFormat { .binary }
    /// The elements' type.
    let elementType: PostgresDataType
    /// The SQL type the statement casts the elements to, when they travel as text.
    let cast: String?
    /// Each element: its length (-1 for `NULL`) and its bytes.
    private let elements: ByteBuffer
    private let count: Int
    private let hasNull: Bool

    init?(column values: [DatabaseValue], type: String) {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(values.count * 12)
        var hasNull = false
        func bytes(_ write: (inout ByteBuffer) -> Void) {
            let start = buffer.writerIndex
            buffer.writeInteger(Int32(0))
            write(&buffer)
            buffer.setInteger(Int32(buffer.writerIndex - start - 4), at: start)
        }
        switch type {
        case "BIGINT":
            (psqlType, elementType, cast) = (.int8Array, .int8, nil)
        case "DOUBLE PRECISION":
            (psqlType, elementType, cast) = (.float8Array, .float8, nil)
        case "TEXT":
            (psqlType, elementType, cast) = (.textArray, .text, nil)
        case "BYTEA":
            (psqlType, elementType, cast) = (.byteaArray, .bytea, nil)
        case "NUMERIC":
            (psqlType, elementType, cast) = (.textArray, .text, "NUMERIC")
        default:
            return nil
        }
        for value in values {
            switch (value.storage, type) {
            case (.null, _):
                buffer.writeInteger(Int32(-1))
                hasNull = true
            case (.int64(let int), "BIGINT"):
                bytes { $0.writeInteger(int) }
            case (.double(let double), "DOUBLE PRECISION"):
                bytes { $0.writeInteger(double.bitPattern) }
            case (.int64(let int), "DOUBLE PRECISION") where abs(int) <= 1 << 53:
                bytes { $0.writeInteger(Double(int).bitPattern) }
            case (.string(let text), "TEXT"), (.string(let text), "NUMERIC"):
                bytes { $0.writeString(text) }
            case (.int64(let int), "NUMERIC"):
                bytes { $0.writeString(String(int)) }
            case (.blob(let data), "BYTEA"):
                bytes { $0.writeBytes(data) }
            default:
                return nil
            }
        }
        elements = buffer
        count = values.count
        self.hasNull = hasNull
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        // One dimension, whether there is a NULL, the element type; the dimension's
        // length and lower bound; the elements.
        byteBuffer.writeInteger(Int32(1))
        byteBuffer.writeInteger(Int32(hasNull ? 1 : 0))
        byteBuffer.writeInteger(elementType.rawValue)
        byteBuffer.writeInteger(Int32(count))
        byteBuffer.writeInteger(Int32(1))
        byteBuffer.writeImmutableBuffer(elements)
    }
}

extension PostgreSQLBinaryArray {
    /// The parameter's SQL type in a statement (`$1::int8[]`).
    var parameterType: String {
        switch elementType {
        case .int8: "int8[]"
        case .float8: "float8[]"
        case .bytea: "bytea[]"
        default: "text[]"
        }
    }

    /// An element of the array, named `alias` in `unnest(...) AS v(alias, ...)`,
    /// as a value of the column's type.
    func element(_ alias: String) -> String {
        cast.map { "\(alias)::\($0)" } ?? alias
    }

    /// One array per column of `matrix` (a column's values, `types[i]` its SQL
    /// type), or nil when a column cannot travel as an array.
    static func columns(_ matrix: [[DatabaseValue]], types: [String]) -> [PostgreSQLBinaryArray]? {
        var arrays: [PostgreSQLBinaryArray] = []
        arrays.reserveCapacity(matrix.count)
        for (values, type) in zip(matrix, types) {
            guard let array = PostgreSQLBinaryArray(column: values, type: type) else { return nil }
            arrays.append(array)
        }
        return arrays
    }
}
