import Foundation
import Logging
import OpenCoreData
import PostgresNIO

/// The rows of a batched fetch read in key order through one server-side cursor:
/// a fetch read in order with ``ManagedObjectContext/fetchInBatches(_:)`` then
/// costs the server one statement, as reading every row at once does, rather
/// than one read by keys per window of batches.
///
/// When a batched fetch in no order asks for its IDs (``StoreFetch/fetchBatchSize``),
/// the store reads them on a connection of its own, in a transaction that then
/// declares a cursor over the fetch's full rows in key order (the order of the
/// IDs) and asks for its first rows, a window ahead:
///
/// ```sql
/// BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY
/// SELECT array_agg(s.Z_PK) FROM (SELECT t0.Z_PK FROM ZPERSON t0 WHERE ...) s
/// SELECT set_config('idle_in_transaction_session_timeout', '10000', true),
///        set_config('cursor_tuple_fraction', '1', true)
/// DECLARE ocd_rows NO SCROLL CURSOR FOR SELECT t0.Z_PK, t0.Z_OPT, ... WHERE ... ORDER BY t0.Z_PK
/// FETCH 2000 FROM ocd_rows
/// FETCH 2000 FROM ocd_rows
/// ```
///
/// The statements are sent at once and run in order: the keys come back while
/// the server sorts the rows, and both see one snapshot. Each read of a
/// window's rows (``PersistentStore/rows(for:of:)``) takes them from the cursor
/// as they arrive (``take(_:_:)``), and a further `FETCH` is sent as one ends,
/// so that at most two are held in memory. Rows of keys the read does not ask
/// for are passed over (objects the context holds already); a key with no row
/// in the cursor is read by key.
///
/// The cursor serves a read only while no change to the store's rows was
/// counted since it was declared (the rule of the reads sent ahead: its rows
/// are those of that moment), and only a read that goes on in order from the
/// last one it served, passing over at most one `FETCH` of rows
/// (``serves(_:changeCount:)``). Any other read, and any failure of the cursor,
/// falls back to reading by key: the cursor is a way to read rows sooner,
/// never the only one. The transaction ends when the cursor is used up,
/// replaced, stale, passed by a jump ahead, or idle for ten seconds (the
/// server's timeout).
struct PostgreSQLRowCursor: Sendable {
    /// The cursor's name on its connection (one cursor per connection).
    static let name = "ocd_rows"
    /// How long the server keeps the cursor's transaction while nobody reads:
    /// a snapshot held open holds back the server's cleanup of old rows.
    static let idleTimeoutMilliseconds = 10_000

    /// Tells the pool's cursors apart.
    let number: Int
    /// The fetch's entity.
    let entity: EntityDescription
    /// The statement's columns after `Z_PK`, the entity and `Z_OPT` (for
    /// ``PostgreSQLRowReader``), and its one entity number, if any.
    let columns: [SQLFetchColumn]
    let entityNumber: Int?
    let connection: PostgresConnection
    let logger: Logger
    /// The pool's change count when the cursor was declared.
    let changeCount: Int
    /// The answer to the statement run in the cursor's transaction before it
    /// is declared (the fetch's keys: the same snapshot as its rows).
    let firstAnswer: EventLoopFuture<PostgresQueryResult>
    /// The rows each `FETCH` asks for.
    let fetchSize: Int
    /// The fetch's keys in order, once its IDs are read (empty before: the cursor
    /// serves nothing).
    var keys: [Int64] = []
    /// The position in `keys` after the last key a read asked for.
    private var nextIndex = 0
    /// The `FETCH`es sent and not taken to their end, oldest first, with the
    /// rows taken from each.
    private var fetches: [(handoff: PostgreSQLRowHandoff, taken: Int)] = []
    /// The rows of the oldest `FETCH` received and not taken yet.
    private var buffered: [PostgresRow] = []
    private var bufferIndex = 0
    /// Whether a `FETCH` came back short: the cursor has no more rows.
    private var isExhausted = false
    /// The snapshot of the row read last, when no read took it yet.
    private var pending: RowSnapshot?

    /// Declares the cursor over `sql` (parameters numbered, bound to
    /// `bindings`) on `connection` and asks for its first two windows of rows;
    /// returns at once.
    init(number: Int, entity: EntityDescription, first: PostgresQuery, sql: String, bindings: PostgresBindings,
         columns: [SQLFetchColumn], entityNumber: Int?, connection: PostgresConnection,
         logger: Logger, changeCount: Int, fetchSize: Int) {
        self.number = number
        self.entity = entity
        self.columns = columns
        self.entityNumber = entityNumber
        self.connection = connection
        self.logger = logger
        self.changeCount = changeCount
        self.fetchSize = max(1, fetchSize)
        // Sent one after the other without waiting: the connection runs them in
        // order, and a failure of one fails the FETCHes after it (the
        // transaction is aborted), which the reads then fall back from.
        // The first statement right after BEGIN (the caller waits for its
        // answer); then the cursor's settings, in one statement: the planner
        // plans a cursor for its first rows by default (an index scan in key
        // order that visits every row to filter them, say), and this one is
        // read to its end.
        _ = PostgreSQLSession.send(PostgresQuery(unsafeSQL: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"), on: connection, logger: logger)
        firstAnswer = PostgreSQLSession.send(first, on: connection, logger: logger)
        let settings = "SELECT set_config('idle_in_transaction_session_timeout', '\(Self.idleTimeoutMilliseconds)', true), "
            + "set_config('cursor_tuple_fraction', '1', true)"
        _ = PostgreSQLSession.send(PostgresQuery(unsafeSQL: settings), on: connection, logger: logger)
        _ = PostgreSQLSession.send(PostgresQuery(unsafeSQL: "DECLARE \(Self.name) NO SCROLL CURSOR FOR " + sql, binds: bindings),
                                   on: connection, logger: logger)
        fetches = [(sendFetch(), 0), (sendFetch(), 0)]
    }

    private func sendFetch() -> PostgreSQLRowHandoff {
        PostgreSQLSession(connection: connection, logger: logger)
            .start(numbered: "FETCH \(fetchSize) FROM \(Self.name)", bindings: PostgresBindings())
    }

    /// Whether the cursor can serve a read of `keys` (ascending) with the pool's
    /// change count now `changeCount`: nothing changed since it was declared, and
    /// the read goes on in order from the last one, at most one `FETCH` of rows
    /// further on.
    func serves(_ keys: [Int64], changeCount: Int) -> Bool {
        guard changeCount == self.changeCount, let first = keys.first, let index = position(of: first) else { return false }
        return index >= nextIndex && index - nextIndex <= fetchSize
    }

    /// Whether a read of `keys` (ascending) jumps ahead in this cursor's fetch
    /// beyond what it would pass over: the cursor then has no use left.
    func isPassed(by keys: [Int64]) -> Bool {
        guard let first = keys.first, let index = position(of: first) else { return false }
        return index - nextIndex > fetchSize
    }

    /// Whether the cursor can serve no more: every row taken, or a read asked for
    /// the fetch's last key.
    var isUsedUp: Bool {
        (isExhausted && fetches.isEmpty && bufferIndex == buffered.count && pending == nil) || (!keys.isEmpty && nextIndex >= keys.count)
    }

    /// The rows of `keys` (ascending), in order, made snapshots by `convert`:
    /// for each key its row's snapshot, or nil when the cursor has no row of it.
    /// Rows of other keys before them are passed over.
    mutating func take(_ keys: [Int64], _ convert: (PostgresRow) throws -> RowSnapshot?) throws -> [RowSnapshot?] {
        var found = [RowSnapshot?](repeating: nil, count: keys.count)
        var index = 0
        while index < keys.count {
            if pending == nil {
                guard let row = try nextRow() else { break }
                // A row of no known entity is passed over.
                pending = try convert(row)
                continue
            }
            guard let snapshot = pending else { continue }
            let key = snapshot.objectID.primaryKey ?? .min
            if key < keys[index] {
                pending = nil
            } else if key == keys[index] {
                found[index] = snapshot
                pending = nil
                index += 1
            } else {
                // No row of this key: the row is another's, further on.
                index += 1
            }
        }
        if let last = keys.last, let position = position(of: last) { nextIndex = max(nextIndex, position + 1) }
        return found
    }

    /// The next row; nil when the cursor has no more. Waits for the oldest
    /// `FETCH`'s rows; when it ends full, sends the next one.
    private mutating func nextRow() throws -> PostgresRow? {
        while bufferIndex == buffered.count {
            guard !fetches.isEmpty else { return nil }
            if let rows = fetches[0].handoff.next() {
                buffered = rows
                bufferIndex = 0
                fetches[0].taken += rows.count
                continue
            }
            let ended = fetches.removeFirst()
            try ended.handoff.result?.get()
            if ended.taken < fetchSize { isExhausted = true }
            if !isExhausted { fetches.append((sendFetch(), 0)) }
        }
        defer { bufferIndex += 1 }
        return buffered[bufferIndex]
    }

    /// The position of `key` in ``keys`` (ascending), by bisection.
    private func position(of key: Int64) -> Int? {
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
        return low < keys.count && keys[low] == key ? low : nil
    }
}
