import Foundation
import GRDB
import Logging
import Synchronization

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
    /// The level in effect (0: off): the one of ``withOutput(level:to:_:)`` while
    /// it runs, else the launch setting.
    public static var level: Int {
        let override = overrideLevel.load(ordering: .relaxed)
        return override >= 0 ? override : launchLevel
    }

    /// The level of the environment or launch arguments.
    static let launchLevel: Int = {
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

    /// A temporary level and destination (``withOutput(level:to:_:)``).
    private struct Override {
        var level: Int
        var output: @Sendable (String) -> Void
    }
    private static let override = Lock<Override?>(nil)

    /// Runs `body` with SQL debug output at `level`, written to `output` as lines
    /// like `CoreData: sql: SELECT ...` instead of the log — for tools and demos
    /// that show the SQL of a few statements.
    ///
    /// ```swift
    /// try SQLDebug.withOutput(level: 1, to: { print($0) }) {
    ///     _ = try context.count(for: request)
    /// }
    /// ```
    ///
    /// The setting is process-wide while `body` runs: statements of every SQLite
    /// store are shown, whichever thread runs them.
    public static func withOutput<T>(level: Int, to output: @escaping @Sendable (String) -> Void,
                                     _ body: () throws -> T) rethrows -> T {
        override.withLock { $0 = Override(level: max(0, min(level, 4)), output: output) }
        overrideLevel.store(max(0, min(level, 4)), ordering: .relaxed)
        defer {
            overrideLevel.store(-1, ordering: .relaxed)
            override.withLock { $0 = nil }
        }
        return try body()
    }

    /// The level of ``withOutput(level:to:_:)`` while it runs, else -1: read by
    /// every statement's trace callback, so an atomic rather than the lock.
    private static let overrideLevel = Atomic(-1)

    static func log(_ kind: String, _ message: @autoclosure () -> String) {
        if let output = override.withLock({ $0?.output }) {
            output("CoreData: \(kind): \(message())")
        } else {
            logger.info("\(kind): \(message())")
        }
    }

    /// Installs statement tracing on a connection: a callback per statement that
    /// returns at once while the level is 0.
    static func install(on db: Database) {
        db.trace(options: .statement) { event in
            let level = SQLDebug.level
            guard level > 0, case .statement(let statement) = event else { return }
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
