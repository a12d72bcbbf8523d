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
        for statement in readAhead.withLock({ $0.pending }) { PostgreSQLConnectionPool.close(statement.connection) }
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
        if available.wait(timeout: .now()) != .success {
            // Statements read ahead hold connections nobody may come for: ended
            // before waiting for one.
            endReadAhead()
            available.wait()
        }
        defer { available.signal() }
        let connection = try idle.withLock { $0.connections.popLast() } ?? open()
        return try use(PostgreSQLSession(connection: connection, logger: logger, pool: self), body)
    }

    /// Runs `body` with a session whose connection holds one of the pool's
    /// places, then gives the connection back (closed instead when its use
    /// failed on the wire).
    private func use<T>(_ session: PostgreSQLSession, _ body: (PostgreSQLSession) throws -> T) throws -> T {
        let connection = session.connection
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

    // MARK: Reading ahead

    /// A statement sent before its rows are asked for (see ``startReadAhead(numbered:keys:bindings:)``).
    private struct ReadAhead: Sendable {
        let sql: String
        let keys: [Int64]
        let connection: PostgresConnection
        let handoff: PostgreSQLRowHandoff
        /// The pool's ``changeCount`` when it was sent.
        let changeCount: Int
    }

    /// The statements read ahead, oldest first (at most ``readAheadLimit``), and
    /// the number of changes to the store's rows seen so far: a statement sent
    /// before the last change may have read rows it changed, and is not used.
    private let readAhead = Lock<(pending: [ReadAhead], changeCount: Int, sent: Int, taken: Int)>(([], 0, 0, 0))

    /// The statements read ahead so far, those whose rows were used, and the
    /// changes counted (for tests).
    var readAheadCounts: (sent: Int, taken: Int, changes: Int) {
        readAhead.withLock { ($0.sent, $0.taken, $0.changeCount) }
    }

    /// The most statements read ahead at once: the read a caller is about to
    /// take, and the one after it, which the server finds while the caller
    /// converts the first.
    static let readAheadLimit = 2

    /// Sends `sql` (the read of rows by key, `keys` its argument) on a connection
    /// of the pool and returns at once: the server finds the rows while the caller
    /// goes on, and ``withReadAhead(numbered:keys:_:)`` with the same statement
    /// takes them. Nothing is sent when every connection is in use; the oldest
    /// statement read ahead is ended when ``readAheadLimit`` are.
    func startReadAhead(numbered sql: String, keys: [Int64], bindings: PostgresBindings) {
        // Read before the statement is sent: a change counted after it may
        // predate the statement's snapshot, never the other way round.
        let (oldest, changeCount) = readAhead.withLock { state -> (ReadAhead?, Int) in
            (state.pending.count >= Self.readAheadLimit ? state.pending.removeFirst() : nil, state.changeCount)
        }
        if let oldest { finish(oldest) }
        guard available.wait(timeout: .now()) == .success else { return }
        guard let connection = idle.withLock({ $0.connections.popLast() }) ?? (try? open()) else {
            available.signal()
            return
        }
        let session = PostgreSQLSession(connection: connection, logger: logger)
        let statement = ReadAhead(sql: sql, keys: keys, connection: connection,
                                  handoff: session.start(numbered: sql, bindings: bindings), changeCount: changeCount)
        let surplus = readAhead.withLock { state -> [ReadAhead] in
            state.pending.append(statement)
            state.sent += 1
            // Other threads started some at the same moment: the newest stay.
            let extra = max(0, state.pending.count - Self.readAheadLimit)
            defer { state.pending.removeFirst(extra) }
            return Array(state.pending.prefix(extra))
        }
        for statement in surplus { finish(statement) }
    }

    /// Runs `body` with the rows of the statement read ahead that is `sql` with
    /// `keys`, when there is one sent after the last change to the store's rows;
    /// nil when there is none. Statements read ahead before it, never taken, are
    /// ended; those after it stay (a read ahead of the next one).
    func withReadAhead<T>(numbered sql: String, keys: [Int64],
                          _ body: (PostgreSQLSession, PostgreSQLRowHandoff) throws -> T) throws -> T? {
        let (taken, passed, isCurrent) = readAhead.withLock { state -> (ReadAhead?, [ReadAhead], Bool) in
            guard let index = state.pending.firstIndex(where: { $0.sql == sql && $0.keys == keys }) else { return (nil, [], false) }
            defer { state.pending.removeFirst(index + 1) }
            let taken = state.pending[index]
            let isCurrent = taken.changeCount == state.changeCount
            if isCurrent { state.taken += 1 }
            return (taken, Array(state.pending[..<index]), isCurrent)
        }
        for statement in passed { finish(statement) }
        guard let taken else { return nil }
        guard isCurrent else {
            finish(taken)
            return nil
        }
        defer { available.signal() }
        return try use(PostgreSQLSession(connection: taken.connection, logger: logger)) { session in
            try body(session, taken.handoff)
        }
    }

    /// Counts a change to the store's rows (a save here committed, another
    /// server's announced): the statements read ahead before it are not used.
    func invalidateReadAhead() {
        readAhead.withLock { $0.changeCount += 1 }
    }

    /// Ends the statements read ahead: their rows are read and dropped.
    func endReadAhead() {
        let taken = readAhead.withLock { state -> [ReadAhead] in
            defer { state.pending = [] }
            return state.pending
        }
        for statement in taken { finish(statement) }
    }

    /// Waits for a statement read ahead to end, drops its rows, and gives its
    /// connection back.
    private func finish(_ statement: ReadAhead) {
        defer { available.signal() }
        _ = try? use(PostgreSQLSession(connection: statement.connection, logger: logger)) { session in
            try session.forEachRow(of: statement.handoff) { _ in }
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

    /// The pool told of each commit (statements it read ahead may predate it).
    private weak var pool: PostgreSQLConnectionPool?

    init(connection: PostgresConnection, logger: Logger, pool: PostgreSQLConnectionPool? = nil) {
        self.connection = connection
        self.logger = logger
        self.pool = pool
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

    /// Sends `sql`, whose parameters are already numbered (`$1`...), and returns
    /// at once: the event loop queues its rows in the handoff as they arrive,
    /// for ``forEachRow(of:_:)``.
    func start(numbered sql: String, bindings: PostgresBindings) -> PostgreSQLRowHandoff {
        let handoff = PostgreSQLRowHandoff()
        let query = PostgresQuery(unsafeSQL: sql, binds: bindings)
        connection.query(query, logger: logger) { row in try handoff.deliver(row) }
            .whenComplete { handoff.finish($0.map { _ in }) }
        return handoff
    }

    /// Calls `body` on this thread with the rows of a statement this session
    /// sent (``start(numbered:bindings:)``) as they arrive, a run of rows at a
    /// time: this thread converts rows while the event loop is still decoding the
    /// next ones off the wire (collecting every row first, then converting, does
    /// the two one after the other). An error `body` throws cancels the statement
    /// and is rethrown once the connection is idle again.
    func forEachRow(of handoff: PostgreSQLRowHandoff, _ body: ([PostgresRow]) throws -> Void) throws {
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
        // Rows read ahead before the commit may predate it (counted whatever the
        // outcome: a COMMIT that failed on the wire may have committed).
        defer { pool?.invalidateReadAhead() }
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
