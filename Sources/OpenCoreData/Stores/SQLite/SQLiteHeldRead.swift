import Dispatch
import GRDB
import GRDBSQLite
import OpenCoreDataCSupport
import Synchronization

/// Keeps the read transaction of a SQLite store's connection open from one
/// single-statement read to the next, for as long as the database has not changed.
///
/// A statement run on its own is a read transaction of its own: SQLite takes a read
/// lock on the write-ahead log's shared memory (two `fcntl` calls and an `fstat`)
/// and checks the log's index before the first row, then gives the lock back after
/// the last. Firing one to-many fault after another (a traversal) paid that for
/// every fault, a noticeable part of such a traversal's time. A loop written
/// against SQLite's C API does not, because it runs every child query while the
/// parents' statement is still open.
///
/// The store's connection therefore keeps one small statement stepped (its read
/// transaction stays open) between reads, and starts a read by checking that the
/// database has not changed since the hold began: SQLite's own test, a comparison
/// of the write-ahead log's index header in shared memory (both copies, recorded
/// before the hold began, so that a commit racing the start is seen as a change).
/// A change, or any write or multi-statement read on the connection, gives the hold
/// up first; so does a timer once the connection has been idle for a few
/// milliseconds, so that an idle store never keeps the log from being checkpointed.
/// Stores not in WAL mode (whose readers block writers) never hold.
///
/// Every method is called on the store's database queue, the idle timer's too:
/// a connection is used by one thread at a time, and the statement the hold keeps
/// is the connection's. The timer holds the queue weakly and goes through it
/// (``attach(_:)``); a store gone meanwhile leaves it nothing to do. The store
/// closes the hold in its `deinit`, on the queue, so that its connection closes
/// there, at once.
final class SQLiteHeldRead: Sendable {
    /// The write-ahead log's index header: 48 bytes, twice (SQLite writes the
    /// second copy, then the first; a reader compares them).
    struct IndexHeader: Equatable {
        var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                    UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

        /// Reads both copies from shared memory, word by word with atomic loads
        /// (SQLite's writers change them while this reads: see
        /// `ocd_load_shared_word`). The copies are compared, so a torn read is
        /// seen as unsettled or as a change.
        init(_ memory: UnsafeRawPointer) {
            func word(_ offset: Int) -> UInt64 { UInt64(ocd_load_shared_word(memory + offset)) }
            words = (word(0), word(8), word(16), word(24), word(32), word(40),
                     word(48), word(56), word(64), word(72), word(80), word(88))
        }

        /// Both copies equal and initialized (`isInit`, byte 12 of each copy).
        var isSettled: Bool {
            words.0 == words.6 && words.1 == words.7 && words.2 == words.8 && words.3 == words.9
                && words.4 == words.10 && words.5 == words.11 && (words.1 >> 32) & 0xFF != 0
        }

        static func == (lhs: IndexHeader, rhs: IndexHeader) -> Bool {
            lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2
                && lhs.words.3 == rhs.words.3 && lhs.words.4 == rhs.words.4 && lhs.words.5 == rhs.words.5
                && lhs.words.6 == rhs.words.6 && lhs.words.7 == rhs.words.7 && lhs.words.8 == rhs.words.8
                && lhs.words.9 == rhs.words.9 && lhs.words.10 == rhs.words.10 && lhs.words.11 == rhs.words.11
        }
    }

    private struct State {
        /// Nil until the first read asks; false when the connection cannot hold
        /// (not in WAL mode, or no shared memory to read the header from).
        var canHold: Bool?
        /// The statement kept stepped while holding: it reads `Z_METADATA`'s one row.
        nonisolated(unsafe) var statement: Statement?  // unsafe: used under the lock, on the connection's queue
        /// The header when the hold began (before it began).
        var header: IndexHeader?
        /// The shared memory's first region, where the header lies (valid while the
        /// connection is open and in WAL mode).
        nonisolated(unsafe) var sharedMemory: UnsafeRawPointer?  // unsafe: read with atomic loads only (IndexHeader)
        /// Reads since the idle timer last looked.
        var reads = 0
        /// A single-statement read is running on the connection.
        var isReading = false
        var isTimerScheduled = false
        /// The store went away: nothing holds again.
        var isClosed = false
        var idleRelease = DispatchTimeInterval.milliseconds(2)
        /// How many holds began and how many were given up because the database
        /// had changed (for tests).
        var holdsBegun = 0
        var holdsInvalidated = 0
        /// The store's database queue, for the idle timer.
        weak var queue: DatabaseQueue?
    }

    private let state = Lock(State())

    /// How long the connection may stay idle before the hold is given up (tests set
    /// it longer, to look at a hold between reads).
    var idleRelease: DispatchTimeInterval {
        get { state.withLock { $0.idleRelease } }
        set { state.withLock { $0.idleRelease = newValue } }
    }

    /// The store's database queue: the idle timer gives the hold up through it.
    func attach(_ queue: DatabaseQueue) {
        state.withLock { $0.queue = queue }
    }

    /// Before a single-statement read on `db` (the store's connection, on its
    /// queue): the read then runs in a read transaction whose snapshot is current.
    /// ``finishRead()`` must follow.
    func prepareRead(_ db: Database) {
        let scheduleTimer = state.withLock { state -> Bool in
            state.reads &+= 1
            state.isReading = true
            if let header = state.header, let memory = state.sharedMemory {
                if IndexHeader(memory) == header { return false }
                // Changed since the hold began: give the old snapshot up.
                state.holdsInvalidated += 1
                Self.end(&state)
            }
            if state.canHold == nil { state.canHold = Self.canHold(db) }
            guard state.canHold == true, !state.isClosed else { return false }
            begin(&state, db)
            guard state.header != nil, !state.isTimerScheduled else { return false }
            state.isTimerScheduled = true
            return true
        }
        if scheduleTimer { scheduleIdleCheck() }
    }

    /// After the read ``prepareRead(_:)`` began.
    func finishRead() {
        state.withLock { $0.isReading = false }
    }

    /// Gives the hold up (before a write, a multi-statement read, or when the store
    /// leaves its coordinator). Called on the connection's queue.
    func release(_ db: Database) {
        state.withLock { Self.end(&$0) }
    }

    /// Gives the hold up for good and finalizes its statement (the store's `deinit`:
    /// the connection, closed next, then closes at once).
    func close() {
        state.withLock { state in
            Self.end(&state)
            state.statement = nil
            state.isClosed = true
        }
    }

    /// Whether a hold is open, and how many began and were invalidated (for tests).
    var statistics: (isHolding: Bool, begun: Int, invalidated: Int) {
        state.withLock { ($0.header != nil, $0.holdsBegun, $0.holdsInvalidated) }
    }

    private func begin(_ state: inout State, _ db: Database) {
        guard let memory = Self.sharedMemory(db) else { return }
        let header = IndexHeader(memory)
        guard header.isSettled else { return }
        do {
            let statement: Statement
            if let kept = state.statement {
                statement = kept
            } else {
                statement = try db.makeStatement(sql: "SELECT Z_VERSION FROM Z_METADATA")
                state.statement = statement
            }
            guard sqlite3_step(statement.sqliteStatement) == SQLITE_ROW else {
                sqlite3_reset(statement.sqliteStatement)
                return
            }
        } catch {
            state.canHold = false
            return
        }
        state.sharedMemory = memory
        state.header = header
        state.holdsBegun += 1
    }

    private static func end(_ state: inout State) {
        guard state.header != nil else { return }
        if let statement = state.statement { sqlite3_reset(statement.sqliteStatement) }
        state.header = nil
        state.sharedMemory = nil
    }

    /// Looks again after `idleRelease`: no read since the last look (and none
    /// running) gives the hold up.
    private func scheduleIdleCheck() {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + idleRelease) { [weak self] in
            guard let self else { return }
            guard let queue = self.state.withLock({ $0.queue }) else { return }
            // On the connection's queue: nothing else uses the connection meanwhile.
            let again = queue.unsafeReentrantWrite { _ in self.checkIdle() }
            if again { self.scheduleIdleCheck() }
        }
    }

    /// Gives the hold up if no read ran since the last look; whether to look again.
    private func checkIdle() -> Bool {
        state.withLock { state -> Bool in
            if state.header != nil, state.reads != 0 || state.isReading {
                state.reads = 0
                return true
            }
            // The connection is idle: the hold goes.
            Self.end(&state)
            state.reads = 0
            state.isTimerScheduled = false
            return false
        }
    }

    /// Whether `db` is in WAL mode (asked once: a store's journal mode is set when
    /// it is created or opened).
    private static func canHold(_ db: Database) -> Bool {
        guard let mode = try? String.fetchOne(db, sql: "PRAGMA journal_mode") else { return false }
        return mode.lowercased() == "wal" && sharedMemory(db) != nil
    }

    /// The first region of the connection's shared memory (the WAL index), already
    /// mapped by SQLite: nil when it is not.
    private static func sharedMemory(_ db: Database) -> UnsafeRawPointer? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(db.sqliteConnection, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
              let file, let methods = file.pointee.pMethods, methods.pointee.iVersion >= 2,
              let map = methods.pointee.xShmMap else { return nil }
        var region: UnsafeMutableRawPointer?
        // Not extending: a region SQLite has not mapped yet stays unmapped (nil).
        guard map(file, 0, 32768, 0, &region) == SQLITE_OK, let region else { return nil }
        return UnsafeRawPointer(region)
    }
}
