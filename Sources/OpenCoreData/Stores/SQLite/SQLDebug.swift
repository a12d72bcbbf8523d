import Foundation
import GRDB
import Logging

/// SQL debug output like Core Data's `-com.apple.CoreData.SQLDebug`.
///
/// Set the environment variable `OPENCOREDATA_SQL_DEBUG` to a level from 1 to 4, or
/// pass the launch argument `-com.apple.CoreData.SQLDebug N`:
///
/// - 1: each statement (`CoreData: sql: SELECT ...`) and, for fetches, the time and
///   row count (`CoreData: annotation: total fetch execution time: 0.0012s for 20 rows.`);
/// - 2: also the statements with their bound values (`CoreData: details: ...`);
/// - 3: also the transaction boundaries;
/// - 4: also `EXPLAIN QUERY PLAN` for each fetch.
///
/// ```sh
/// OPENCOREDATA_SQL_DEBUG=1 swift run ocd demo
/// swift run ocd demo -com.apple.CoreData.SQLDebug 4
/// ```
///
/// Messages go through swift-log (logger label `CoreData`), to standard error by
/// default.
public enum SQLDebug {
    /// The level in effect (0: off).
    public static let level: Int = {
        let arguments = CommandLine.arguments
        if let index = arguments.firstIndex(of: "-com.apple.CoreData.SQLDebug"), index + 1 < arguments.count,
           let level = Int(arguments[index + 1]) {
            return max(0, min(level, 4))
        }
        if let value = ProcessInfo.processInfo.environment["OPENCOREDATA_SQL_DEBUG"], let level = Int(value) {
            return max(0, min(level, 4))
        }
        return 0
    }()

    static let logger = Logger(label: "CoreData")

    static func log(_ kind: String, _ message: @autoclosure () -> String) {
        logger.info("\(kind): \(message())")
    }

    /// Installs statement tracing on a connection when debugging is on.
    static func install(on db: Database) {
        guard level > 0 else { return }
        db.trace(options: .statement) { event in
            guard case .statement(let statement) = event else { return }
            let sql = statement.sql
            let bookkeeping = ["BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA"].contains { sql.hasPrefix($0) }
                || sql.contains("sqlite_master")
            if level < 3, bookkeeping { return }
            log("sql", sql)
            if level >= 2 { log("details", statement.expandedSQL) }
        }
    }

    /// Annotates a fetch with its time and row count, and at level 4 its query plan.
    static func annotateFetch(_ db: Database, sql: String, arguments: StatementArguments, seconds: Double, rows: Int) {
        guard level > 0 else { return }
        log("annotation", "sql connection fetch time: \(String(format: "%.4f", seconds))s")
        log("annotation", "total fetch execution time: \(String(format: "%.4f", seconds))s for \(rows) rows.")
        if level >= 4, let plan = try? Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments) {
            for row in plan {
                let detail: String = row["detail"] ?? ""
                log("details", "\(row["id"] ?? 0) \(row["parent"] ?? 0) \(row["notused"] ?? 0) \(detail)")
            }
        }
    }
}
