import Foundation
import GRDBSQLite

/// A connection to the system SQLite through its C API: the physical limit every
/// peer is measured against. WAL and `synchronous=NORMAL` are set on every
/// connection, like the other peers.
final class RawConnection {
    let db: OpaquePointer

    init(path: String) throws {
        var handle: OpaquePointer?
        let rc = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard rc == SQLITE_OK, let handle else {
            if let handle { sqlite3_close_v2(handle) }
            throw BenchmarkError("sqlite3_open_v2(\(path)) failed: \(rc)")
        }
        db = handle
        let mode = try text("PRAGMA journal_mode=WAL")
        guard mode.lowercased() == "wal" else { throw BenchmarkError("journal_mode is \(mode), not wal") }
        try execute("PRAGMA synchronous=NORMAL")
    }

    deinit { sqlite3_close_v2(db) }

    var errorMessage: String { String(cString: sqlite3_errmsg(db)) }

    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw BenchmarkError("\(sql): \(rc) \(errorMessage)") }
    }

    func prepare(_ sql: String) throws -> OpaquePointer {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw BenchmarkError("prepare \(sql): \(rc) \(errorMessage)") }
        return statement
    }

    /// The first column of the first row of `sql`, as text.
    func text(_ sql: String) throws -> String {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else {
            throw BenchmarkError("\(sql): no row (\(errorMessage))")
        }
        return String(cString: text)
    }

    /// The integer columns of the first row of `sql`.
    func integers(_ sql: String) throws -> [Int] {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw BenchmarkError("\(sql): no row (\(errorMessage))") }
        return (0..<sqlite3_column_count(statement)).map { Int(sqlite3_column_int64(statement, $0)) }
    }
}

/// The system SQLite's version, from `sqlite_version()`.
func sqliteVersion() throws -> String {
    guard let version = sqlite3_libversion() else { throw BenchmarkError("no sqlite3_libversion()") }
    var handle: OpaquePointer?
    guard sqlite3_open(":memory:", &handle) == SQLITE_OK, let handle else { throw BenchmarkError("can't open :memory:") }
    defer { sqlite3_close_v2(handle) }
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(handle, "SELECT sqlite_version()", -1, &statement, nil) == SQLITE_OK, let statement else {
        throw BenchmarkError("can't prepare SELECT sqlite_version()")
    }
    defer { sqlite3_finalize(statement) }
    guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else {
        throw BenchmarkError("no sqlite_version()")
    }
    let fromSQL = String(cString: text)
    // The library linked here is the one GRDB (and so OpenCoreData) uses: the same symbols.
    guard fromSQL == String(cString: version) else { throw BenchmarkError("sqlite_version() \(fromSQL) != sqlite3_libversion()") }
    return fromSQL
}

/// The columns of the `Person` entity in Core Data's layout (one table, `Z` names).
enum PersonTable {
    static let table = "ZPERSON"
    /// Every column the framework reads for a person: what a raw SELECT reads too.
    static let selectAll = "SELECT Z_PK, Z_ENT, Z_OPT, ZNAME, ZAGE, ZSCORE, ZEMAIL, ZJOINED FROM ZPERSON"
}

/// Checks what a W1 run wrote, outside the timer: every row, every attribute.
func writtenChecksum(path: String) throws -> Checksum {
    let connection = try RawConnection(path: path)
    let statement = try connection.prepare(PersonTable.selectAll)
    defer { sqlite3_finalize(statement) }
    var c = Checksum()
    while sqlite3_step(statement) == SQLITE_ROW { rawAddPerson(statement, to: &c) }
    return c
}

@inline(__always)
func rawByteSum(_ statement: OpaquePointer, _ column: Int32) -> Int {
    guard let text = sqlite3_column_text(statement, column) else { return 0 }
    let count = Int(sqlite3_column_bytes(statement, column))
    var sum = 0
    for index in 0..<count { sum &+= Int(text[index]) }
    return sum
}

/// The raw peer's helpers: names and emails written into reused buffers, no
/// allocation per row.
final class RawPersonWriter {
    let name = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
    let email = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
    deinit { name.deallocate(); email.deallocate() }

    static let insertSQL = "INSERT INTO ZPERSON (Z_PK, Z_ENT, Z_OPT, ZNAME, ZAGE, ZSCORE, ZEMAIL, ZJOINED) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"

    /// Binds person `i` to a prepared `insertSQL` statement.
    func bind(_ i: Int, entityNumber: Int, to insert: OpaquePointer) {
        let nameLength = writeDecimal(i, into: name, at: writeBytes("name ", into: name, at: 0))
        let emailLength = writeBytes("@example.com", into: email, at: writeDecimal(i, into: email, at: writeBytes("user ", into: email, at: 0)))
        sqlite3_bind_int64(insert, 1, Int64(i + 1))
        sqlite3_bind_int64(insert, 2, Int64(entityNumber))
        sqlite3_bind_int64(insert, 3, 1)
        sqlite3_bind_text(insert, 4, name, Int32(nameLength), nil)  // SQLITE_STATIC
        sqlite3_bind_int64(insert, 5, Int64(PersonData.age(i)))
        sqlite3_bind_double(insert, 6, PersonData.score(i))
        sqlite3_bind_text(insert, 7, email, Int32(emailLength), nil)
        sqlite3_bind_double(insert, 8, PersonData.joined(i))
    }
}

extension RawConnection {
    /// Steps a statement that returns no row.
    func stepDone(_ statement: OpaquePointer) throws {
        guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchmarkError("step: \(errorMessage)") }
        sqlite3_reset(statement)
    }

    /// The `Z_ENT` of an entity in a Core Data store.
    func entityNumber(_ name: String) throws -> Int {
        try integers("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = '\(name)'")[0]
    }
}

/// Adds the row of a `PersonTable.selectAll` statement to a checksum.
@inline(__always)
func rawAddPerson(_ statement: OpaquePointer, to c: inout Checksum) {
    c.rows += 1
    c.ages += Int(sqlite3_column_int64(statement, 4))
    c.scores2 += Int(sqlite3_column_double(statement, 5) * 2)
    c.joined += Int(sqlite3_column_double(statement, 7))
    c.textBytes &+= rawByteSum(statement, 3) &+ rawByteSum(statement, 6)
}
