import GRDB
import GRDBSQLite

extension Statement {
    /// Binds `arguments` (checked by GRDB), then steps through the result rows with
    /// SQLite's C API, calling `body` with the statement standing on each row; the
    /// statement is left reset.
    ///
    /// A GRDB row cursor costs, per row, three reference-count operations (the
    /// cursor's shared `Row` handed out and released) and a step wrapped in
    /// generic error handling — a real share of what a fetch spends on a row
    /// beyond SQLite itself. The store's readers take each column from the C
    /// API anyway (``SQLiteRowReader``), so the cursor's `Row` went unused.
    ///
    /// ```swift
    /// let prepared = try db.cachedStatement(sql: statement.sql)
    /// try prepared.forEachRow(arguments: statement.statementArguments) { sqliteStatement in
    ///     keys.append(sqlite3_column_int64(sqliteStatement, 0))
    /// }
    /// ```
    ///
    /// A failing step throws the connection's `DatabaseError` (with the statement's
    /// SQL), as GRDB's cursor would.
    @inline(__always)
    func forEachRow(arguments: StatementArguments, _ body: (SQLiteStatement) throws -> Void) throws {
        try setArguments(arguments)
        let sqliteStatement = self.sqliteStatement
        defer { sqlite3_reset(sqliteStatement) }
        while true {
            let code = sqlite3_step(sqliteStatement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                    message: String(cString: sqlite3_errmsg(sqlite3_db_handle(sqliteStatement))), sql: sql)
            }
            try body(sqliteStatement)
        }
    }
}
