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
        // Connections holding places of the pool: their places are given back
        // (a semaphore must not go away below its initial value).
        let held = readAhead.withLock { $0.pending.map(\.connection) } + cursors.withLock { $0.idle.map(\.connection) }
        for connection in held {
            PostgreSQLConnectionPool.close(connection)
            available.signal()
        }
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
        let connection = try takeIdle() ?? open()
        return try use(PostgreSQLSession(connection: connection, logger: logger, pool: self), body)
    }

    /// An idle connection still open (those the server closed meanwhile, an
    /// idle-session timeout or a restart, are dropped).
    private func takeIdle() -> PostgresConnection? {
        while let connection = idle.withLock({ $0.connections.popLast() }) {
            if !connection.isClosed { return connection }
            PostgreSQLConnectionPool.close(connection)
        }
        return nil
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
        guard let connection = takeIdle() ?? (try? open()) else {
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

    /// Ends the statements read ahead, and the cursors: their rows are read and
    /// dropped.
    func endReadAhead() {
        let taken = readAhead.withLock { state -> [ReadAhead] in
            defer { state.pending = [] }
            return state.pending
        }
        for statement in taken { finish(statement) }
        let cursors = cursors.withLock { state -> [PostgreSQLRowCursor] in
            defer { state.idle = [] }
            return state.idle
        }
        for cursor in cursors { finish(cursor) }
    }

    /// Waits for a statement read ahead to end, drops its rows, and gives its
    /// connection back.
    private func finish(_ statement: ReadAhead) {
        defer { available.signal() }
        _ = try? use(PostgreSQLSession(connection: statement.connection, logger: logger)) { session in
            try session.forEachRow(of: statement.handoff) { _ in }
        }
    }

    // MARK: Cursors

    /// The cursors not in use by a read, the number of the next one, and the
    /// cursors declared and the reads they served so far (for tests).
    private let cursors = Lock<(idle: [PostgreSQLRowCursor], next: Int, declared: Int, served: Int, ended: Int)>(([], 1, 0, 0, 0))

    /// The cursors declared so far, the reads they served, and the cursors
    /// ended (for tests).
    var cursorCounts: (declared: Int, served: Int, ended: Int) {
        cursors.withLock { ($0.declared, $0.served, $0.ended) }
    }

    /// The most cursors open at once: the batched fetch read last.
    static let cursorLimit = 1

    /// Declares a ``PostgreSQLRowCursor`` over `sql` (the full rows of a batched
    /// fetch of `entity` in key order) on a connection of the pool, after
    /// `first` in its transaction, and returns at once its number and `first`'s
    /// answer; nil when the pool cannot spare a connection (it has one only, or
    /// every one is in use). The cursor declared before it is ended
    /// (``cursorLimit``).
    func declareCursor(entity: EntityDescription, first: PostgresQuery, sql: String, bindings: PostgresBindings,
                       columns: [SQLFetchColumn], entityNumber: Int?,
                       fetchSize: Int) -> (Int, EventLoopFuture<PostgresQueryResult>)? {
        guard size > 1 else { return nil }
        let older = cursors.withLock { state -> [PostgreSQLRowCursor] in
            let extra = max(0, state.idle.count - (Self.cursorLimit - 1))
            defer { state.idle.removeFirst(extra) }
            return Array(state.idle.prefix(extra))
        }
        for cursor in older { finish(cursor) }
        // Read before the cursor is declared: a change counted after it may
        // predate the cursor's snapshot, never the other way round.
        let changeCount = readAhead.withLock { $0.changeCount }
        guard available.wait(timeout: .now()) == .success else { return nil }
        guard let connection = takeIdle() ?? (try? open()) else {
            available.signal()
            return nil
        }
        let number = cursors.withLock { state -> Int in
            defer { state.next += 1 }
            return state.next
        }
        let cursor = PostgreSQLRowCursor(number: number, entity: entity, first: first, sql: sql, bindings: bindings, columns: columns,
                                         entityNumber: entityNumber, connection: connection, logger: logger,
                                         changeCount: changeCount, fetchSize: fetchSize)
        cursors.withLock { state in
            state.idle.append(cursor)
            state.declared += 1
        }
        return (number, cursor.firstAnswer)
    }

    /// Gives cursor `number` the keys of its fetch, in order, once they are read.
    func setCursorKeys(_ number: Int, _ keys: [Int64]) {
        cursors.withLock { state in
            if let index = state.idle.firstIndex(where: { $0.number == number }) { state.idle[index].keys = keys }
        }
    }

    /// Ends cursor `number` (its fetch's IDs could not be read).
    func endCursor(_ number: Int) {
        let ended = cursors.withLock { state -> PostgreSQLRowCursor? in
            guard let index = state.idle.firstIndex(where: { $0.number == number }) else { return nil }
            return state.idle.remove(at: index)
        }
        if let ended { finish(ended) }
    }

    /// Whether a cursor of `entity` would serve a read of `keys` now (see
    /// ``PostgreSQLRowCursor/serves(_:changeCount:)``).
    func cursorServes(_ entity: EntityDescription, keys: [Int64]) -> Bool {
        let changeCount = readAhead.withLock { $0.changeCount }
        return cursors.withLock { state in
            state.idle.contains { $0.entity === entity && $0.serves(keys, changeCount: changeCount) }
        }
    }

    /// Runs `body` with a cursor of `entity` that serves a read of `keys` (see
    /// ``PostgreSQLRowCursor/serves(_:changeCount:)``); nil when none does, or
    /// when the cursor failed (it is then ended, and the caller reads by key).
    /// Cursors declared before the last change counted, and the cursor of
    /// `entity` the read jumps ahead in, are ended.
    func withCursor<T>(of entity: EntityDescription, keys: [Int64], _ body: (inout PostgreSQLRowCursor) throws -> T) -> T? {
        let changeCount = readAhead.withLock { $0.changeCount }
        let (found, stale) = cursors.withLock { state -> (PostgreSQLRowCursor?, [PostgreSQLRowCursor]) in
            func isStale(_ cursor: PostgreSQLRowCursor) -> Bool {
                cursor.changeCount != changeCount || (cursor.entity === entity && cursor.isPassed(by: keys))
            }
            let stale = state.idle.filter(isStale)
            state.idle.removeAll(where: isStale)
            guard let index = state.idle.firstIndex(where: { $0.entity === entity && $0.serves(keys, changeCount: changeCount) }) else {
                return (nil, stale)
            }
            return (state.idle.remove(at: index), stale)
        }
        for cursor in stale { finish(cursor) }
        guard var cursor = found else { return nil }
        let result: T
        do {
            result = try body(&cursor)
        } catch {
            finish(cursor)
            return nil
        }
        if cursor.isUsedUp {
            finish(cursor)
        } else {
            let surplus = cursors.withLock { state -> [PostgreSQLRowCursor] in
                state.idle.append(cursor)
                // Another fetch declared one meanwhile: the newest stay.
                let extra = max(0, state.idle.count - Self.cursorLimit)
                defer { state.idle.removeFirst(extra) }
                return Array(state.idle.prefix(extra))
            }
            for cursor in surplus { finish(cursor) }
        }
        cursors.withLock { $0.served += 1 }
        return result
    }

    /// Ends a cursor's transaction and gives its connection back, without
    /// waiting: the `ROLLBACK` runs after the `FETCH`es still running (whose rows
    /// are dropped), and the connection is closed instead when it fails (the
    /// server ended the idle transaction, say).
    private func finish(_ cursor: PostgreSQLRowCursor) {
        cursors.withLock { $0.ended += 1 }
        let connection = cursor.connection
        PostgreSQLSession.send(PostgresQuery(unsafeSQL: "ROLLBACK"), on: connection, logger: logger).whenComplete { result in
            switch result {
            case .success: self.idle.withLock { $0.connections.append(connection) }
            case .failure: PostgreSQLConnectionPool.close(connection)
            }
            self.available.signal()
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
        Self.send(query, on: connection, logger: logger) { row in try handoff.deliver(row) }
            .whenComplete { handoff.finish($0.map { _ in }) }
        return handoff
    }

    /// Sends `query` on `connection` from the connection's event loop, failing at
    /// once when the connection is closed. postgres-nio drops a statement written
    /// to a closed connection without ever answering it, and the check does not
    /// race the connection's closing only on its event loop.
    static func send(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger,
                     onRow: @escaping @Sendable (PostgresRow) throws -> Void) -> EventLoopFuture<PostgresQueryMetadata> {
        connection.eventLoop.flatSubmit {
            guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(PostgreSQLConnectionClosed()) }
            return connection.query(query, logger: logger, onRow)
        }
    }

    /// ``send(_:on:logger:onRow:)`` with the rows collected.
    static func send(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) -> EventLoopFuture<PostgresQueryResult> {
        connection.eventLoop.flatSubmit {
            guard !connection.isClosed else { return connection.eventLoop.makeFailedFuture(PostgreSQLConnectionClosed()) }
            return connection.query(query, logger: logger)
        }
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
        try failing { try Self.send(query, on: connection, logger: logger).wait() }
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

/// The connection closed before a statement could be sent on it.
struct PostgreSQLConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection to the server is closed" }
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
