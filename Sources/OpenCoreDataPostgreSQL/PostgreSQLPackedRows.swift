import Foundation
import NIOCore
import OpenCoreData
import PostgresNIO

/// Many result rows sent as one: `SELECT array_agg(a), array_agg(b), ... FROM ...`
/// answers with a single row holding an array per column, in PostgreSQL's
/// binary format, and this reads it back as cells, row by row.
///
/// The store's fetches of object IDs in no particular order (the first query of
/// a batched fetch, a fetch of IDs) are sent this way. Each row of a plain
/// statement is a message that the connection's event loop decodes and hands
/// over as a `PostgresRow`, whose cells are then copied out one by one: for a
/// row of one key, that handling is nearly all the work. A packed statement is
/// one message, and its cells are read straight from its bytes. (Rows of many
/// columns gain nothing: the server's work building and sending the arrays
/// outweighs what the client saves.)
///
/// ```swift
/// let sql = "SELECT " + PostgreSQLPackedRows.aggregates(["t0.Z_PK", "t0.ZNAME"]) + " FROM ZPERSON t0"
/// var rows = try PostgreSQLPackedRows(row)     // the statement's one row
/// while var cells = rows.next() {
///     let key = cells.next()                   // a PostgresCell per column
///     ...
/// }
/// ```
///
/// Bytes that do not follow the format (which a server never sends) are a
/// thrown error, never a trap.
struct PostgreSQLPackedRows {
    /// The select list packing `columns` (SQL expressions): one array per
    /// column. Every aggregate of one query level takes the same rows in the
    /// same order, so the arrays' elements line up by row.
    static func aggregates(_ columns: [String]) -> String {
        columns.map { "array_agg(" + $0 + ")" }.joined(separator: ", ")
    }

    /// Whether a server error means the rows did not fit one value (an array is
    /// at most 1 GB), so that they must be read as plain rows instead: a
    /// program limit (SQLSTATE class 54), out of memory (53200), or the
    /// allocator's refusal of a larger request (XX000).
    static func isTooLarge(_ error: any Error) -> Bool {
        guard let state = PostgreSQLErrors.sqlState(error) else { return false }
        return state.hasPrefix("54") || state == "53200" || state == "XX000"
    }

    /// Each column's unread elements, and the elements' type.
    fileprivate final class Columns {
        var buffers: [ByteBuffer] = []
        var types: [PostgresDataType] = []
    }
    private let columns = Columns()
    private var remaining = 0
    /// The number of rows not read yet.
    var count: Int { remaining }

    /// The rows of a packed statement's one row, given as its cells (none when
    /// no row matched: every array is then `NULL`).
    init<Row: Sequence<PostgresCell>>(_ row: Row) throws {
        var count: Int?
        for cell in row {
            guard var bytes = cell.bytes else {
                guard count ?? 0 == 0 else { throw Self.malformed("NULL column") }
                count = 0
                continue
            }
            guard cell.format == .binary, let dimensions = bytes.readInteger(as: Int32.self),
                  bytes.readInteger(as: Int32.self) != nil, let type = bytes.readInteger(as: UInt32.self) else {
                throw Self.malformed("array header")
            }
            let length: Int
            switch dimensions {
            case 0:
                length = 0
            case 1:
                guard let found = bytes.readInteger(as: Int32.self), found >= 0, bytes.readInteger(as: Int32.self) != nil else {
                    throw Self.malformed("array dimension")
                }
                length = Int(found)
            default:
                throw Self.malformed("\(dimensions)-dimensional array")
            }
            guard count ?? length == length else { throw Self.malformed("column of \(length) values among columns of \(count ?? 0)") }
            count = length
            columns.buffers.append(bytes)
            columns.types.append(PostgresDataType(type))
        }
        remaining = count ?? 0
        if remaining == 0 { columns.buffers = [] }
    }

    /// Every row left of a packed statement of one `int8` column (keys), read
    /// straight from the array's bytes; nil, reading nothing, when the rows are
    /// not that (several columns, another type, a `NULL` or malformed element).
    mutating func int64Column() -> [Int64]? {
        guard columns.buffers.count == 1, columns.types[0] == .int8 else { return remaining == 0 ? [] : nil }
        var bytes = columns.buffers[0]
        var values: [Int64] = []
        values.reserveCapacity(remaining)
        for _ in 0..<remaining {
            guard let (length, value) = bytes.readMultipleIntegers(as: (Int32, Int64).self), length == 8 else { return nil }
            values.append(value)
        }
        columns.buffers[0] = bytes
        remaining = 0
        return values
    }

    /// The cells of the next row; nil after the last one.
    mutating func next() -> Cells? {
        guard remaining > 0 else { return nil }
        remaining -= 1
        return Cells(columns: columns)
    }

    /// The cells of one row, in column order (an iterator: each cell is read
    /// as it is asked for). ``isMalformed`` tells whether it stopped early on
    /// bytes that do not follow the format.
    struct Cells: IteratorProtocol {
        fileprivate let columns: Columns
        private var index = 0
        private(set) var isMalformed = false

        fileprivate init(columns: Columns) {
            self.columns = columns
        }

        mutating func next() -> PostgresCell? {
            guard index < columns.buffers.count, !isMalformed else { return nil }
            guard let length = columns.buffers[index].readInteger(as: Int32.self) else { return malformed() }
            let bytes: ByteBuffer?
            if length == -1 {
                bytes = nil
            } else {
                guard length >= 0, let slice = columns.buffers[index].readSlice(length: Int(length)) else { return malformed() }
                bytes = slice
            }
            defer { index += 1 }
            return PostgresCell(bytes: bytes, dataType: columns.types[index], format: .binary, columnName: "", columnIndex: index)
        }

        /// Reads the cells the caller left, so that the next row starts at its own.
        mutating func finish() {
            while next() != nil {}
        }

        private mutating func malformed() -> PostgresCell? {
            isMalformed = true
            return nil
        }
    }

    static func malformed(_ part: String) -> CoreDataError {
        CoreDataError(.persistentStoreOperation, "The PostgreSQL server sent a malformed \(part) in packed rows")
    }
}
