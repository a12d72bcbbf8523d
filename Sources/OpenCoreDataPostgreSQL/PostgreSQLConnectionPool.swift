import Foundation
import GRDB
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import OpenCoreData
import PostgresNIO

/// The connections of one PostgreSQL store: at most `size` open at once, each
/// set to the store's schema (`search_path`) and statement timeout when it
/// opens, handed to one caller at a time.
///
/// Stores are synchronous (contexts call them on their own queues), postgres-nio
/// is not: a call sends its statement and waits for the answer on the caller's
/// thread, never on an event loop's.
///
/// ```swift
/// let pool = try PostgreSQLConnectionPool(location: location, size: 4)
/// let count = try pool.withSession { try $0.query("SELECT COUNT(*) FROM ZMOOD").first?.int64(0) }
/// ```
final class PostgreSQLConnectionPool: Sendable {
    let location: PostgreSQLLocation
    private let size: Int
    let logger: Logger
    private let group: any EventLoopGroup
    private let available: DispatchSemaphore
    /// Idle connections, and the ID of the next one opened.
    private let idle = Lock<(connections: [PostgresConnection], nextID: Int)>(([], 1))

    init(location: PostgreSQLLocation, size: Int) {
        self.location = location
        self.size = max(1, size)
        self.available = DispatchSemaphore(value: max(1, size))
        var logger = Logger(label: "OpenCoreData.PostgreSQLStore")
        logger.logLevel = .critical
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup.singleton
    }

    deinit {
        let connections = idle.withLock { state -> [PostgresConnection] in
            defer { state.connections = [] }
            return state.connections
        }
        for connection in connections { PostgreSQLConnectionPool.close(connection) }
    }

    /// Closes `connection` without waiting (a store may go away on any thread, an
    /// event loop's included), keeping it alive until it is closed: postgres-nio
    /// requires a connection to be closed before it is released.
    static func close(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Runs `body` with a connection of the pool (opened when none is idle),
    /// waiting while `size` are in use. A connection whose use failed on the wire
    /// is closed rather than handed out again.
    func withSession<T>(_ body: (PostgreSQLSession) throws -> T) throws -> T {
        available.wait()
        defer { available.signal() }
        let connection = try idle.withLock { $0.connections.popLast() } ?? open()
        let session = PostgreSQLSession(connection: connection, logger: logger)
        do {
            let result = try body(session)
            idle.withLock { $0.connections.append(connection) }
            return result
        } catch {
            if connection.isClosed || session.isBroken {
                PostgreSQLConnectionPool.close(connection)
            } else {
                idle.withLock { $0.connections.append(connection) }
            }
            throw error
        }
    }

    /// A new connection set up for the store: the schema first in the search
    /// path, the statement timeout. Used by the pool and by the store's listener.
    func open() throws -> PostgresConnection {
        let id = idle.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection.connect(on: group.next(), configuration: try location.connectionConfiguration(),
                                                        id: id, logger: logger).wait()
        } catch {
            throw CoreDataError(.persistentStoreOpen, "Can't connect to \(location.description): \(PostgreSQLErrors.describe(error))")
        }
        let session = PostgreSQLSession(connection: connection, logger: logger)
        do {
            try session.execute("SET search_path TO \(PostgreSQLIdentifier.quoted(location.schema)), pg_catalog")
            if let timeout = location.statementTimeoutMilliseconds {
                try session.execute("SET statement_timeout = \(timeout)")
            }
        } catch {
            PostgreSQLConnectionPool.close(connection)
            throw error
        }
        return connection
    }
}

/// One connection in use by one caller: statements with `?` placeholders, bound
/// values, transactions.
final class PostgreSQLSession {
    let connection: PostgresConnection
    let logger: Logger
    /// Whether the connection failed on the wire (it is then not reused).
    private(set) var isBroken = false
    /// Whether the session holds a query generation's transaction (statements
    /// that must commit, such as creating a collation, go through another).
    var holdsSnapshot = false

    init(connection: PostgresConnection, logger: Logger) {
        self.connection = connection
        self.logger = logger
    }

    /// The rows of `sql`, its `?` placeholders bound to `arguments` in order.
    @discardableResult
    func query(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> [PostgresRow] {
        try run(sql, arguments).rows
    }

    /// Runs `sql` and returns the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [DatabaseValue] = []) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    /// The rows of `sql`, whose parameters are already numbered (`$1`...), with
    /// `bindings`.
    func query(numbered sql: String, bindings: PostgresBindings) throws -> [PostgresRow] {
        try run(PostgresQuery(unsafeSQL: sql, binds: bindings)).rows
    }

    /// Runs `sql`, whose parameters are already numbered (`$1`...), with
    /// `bindings`, and returns the number of rows it changed.
    @discardableResult
    func execute(numbered sql: String, bindings: PostgresBindings) throws -> Int {
        try run(PostgresQuery(unsafeSQL: sql, binds: bindings)).metadata.rows ?? 0
    }

    /// Runs `sql`, whose parameters are already numbered (`$1`...), and calls
    /// `body` on this thread with the rows as they arrive, a run of rows at a
    /// time: this thread converts rows while the event loop is still decoding the
    /// next ones off the wire (collecting every row first, then converting, does
    /// the two one after the other). An error `body` throws cancels the statement
    /// and is rethrown once the connection is idle again.
    func forEachRow(numbered sql: String, bindings: PostgresBindings, _ body: ([PostgresRow]) throws -> Void) throws {
        let handoff = PostgreSQLRowHandoff()
        let query = PostgresQuery(unsafeSQL: sql, binds: bindings)
        connection.query(query, logger: logger) { row in try handoff.deliver(row) }
            .whenComplete { handoff.finish($0.map { _ in }) }
        var failure: (any Error)?
        while let rows = handoff.next() {
            guard failure == nil else { continue }
            do {
                try body(rows)
            } catch {
                // The event loop stops the statement at its next row.
                failure = error
                handoff.cancel()
            }
        }
        if let failure {
            isBroken = true
            throw failure
        }
        try failing { try handoff.result?.get() }
    }

    private func run(_ sql: String, _ arguments: [DatabaseValue]) throws -> PostgresQueryResult {
        try run(PostgresQuery(unsafeSQL: PostgreSQLPlaceholders.numbered(sql), binds: PostgreSQLValues.bindings(arguments)))
    }

    private func run(_ query: PostgresQuery) throws -> PostgresQueryResult {
        try failing { try connection.query(query, logger: logger).wait() }
    }

    /// Runs `body`, marking the session broken when it fails other than by the
    /// server's answer (the connection is then not reused).
    private func failing<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as PSQLError {
            if error.serverInfo == nil { isBroken = true }
            throw error
        } catch {
            isBroken = true
            throw error
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when
    /// it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }
}

/// Numbering of `?` placeholders (`$1`, `$2`...), as PostgreSQL wants them; the
/// `?` inside quoted strings and identifiers are left alone.
enum PostgreSQLPlaceholders {
    static func numbered(_ sql: String) -> String {
        guard sql.utf8.contains(UInt8(ascii: "?")) else { return sql }
        var result = ""
        result.reserveCapacity(sql.utf8.count + 16)
        var number = 0
        var quote: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
                result.append(character)
            } else if character == "'" || character == "\"" {
                quote = character
                result.append(character)
            } else if character == "?" {
                number += 1
                result += "$\(number)"
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// Identifiers built from names the store does not control (a schema name from
/// an option): always double-quoted, inner quotes doubled.
enum PostgreSQLIdentifier {
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
