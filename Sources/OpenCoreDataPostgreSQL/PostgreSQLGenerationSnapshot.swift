import Foundation
import GRDB
import OpenCoreData
import PostgresNIO

/// A query generation of a PostgreSQL store: a `REPEATABLE READ` transaction held
/// open on a connection of its own, which every read of a pinned context goes
/// through. PostgreSQL keeps the rows the snapshot sees while it lives (other
/// servers' saves go on); the transaction ends and the connection closes when the
/// last context or token holding the generation lets it go.
///
/// ```swift
/// try context.setQueryGenerationFrom(.current)   // pinned at the next read
/// let count = try context.count(for: request)     // the snapshot begins here
/// // … other servers save …
/// try context.count(for: request)                 // the same count
/// ```
final class PostgreSQLGenerationSnapshot: StoreGenerationSnapshot {
    let store: PostgreSQLStore
    /// The connection holding the transaction, used by one reader at a time.
    private let connection: PostgresConnection
    private let lock = NSLock()

    init(store: PostgreSQLStore) throws {
        self.store = store
        connection = try store.pool.open()
        let session = PostgreSQLSession(connection: connection, logger: store.pool.logger)
        do {
            try session.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            // The first statement fixes the snapshot.
            try session.query("SELECT COUNT(*) FROM Z_PRIMARYKEY")
        } catch {
            PostgreSQLConnectionPool.close(connection)
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOperation, doing: "starting a query generation", url: store.url)
        }
    }

    deinit {
        _ = try? PostgreSQLSession(connection: connection, logger: store.pool.logger).execute("ROLLBACK")
        PostgreSQLConnectionPool.close(connection)
    }

    /// Runs `body` with a session on the held transaction.
    func withSession<T>(_ body: (PostgreSQLSession) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        let session = PostgreSQLSession(connection: connection, logger: store.pool.logger)
        session.holdsSnapshot = true
        return try body(session)
    }

    func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] { try store.fetchRows(fetch, in: self) }
    func count(_ fetch: StoreFetch) throws -> Int { try store.count(fetch, in: self) }
    func row(for objectID: ManagedObjectID) throws -> RowSnapshot? { try store.rows(for: [objectID], of: objectID.entity, in: self)?.first }
    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        try store.relatedObjectIDs(of: objectID, relationship: relationship, in: self)
    }
    func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        try store.fetchDictionaries(request, in: self)
    }
}

extension PostgreSQLStore: QueryGenerationStore {
    package func beginQueryGeneration() throws -> any StoreGenerationSnapshot { try PostgreSQLGenerationSnapshot(store: self) }

    /// Runs a read with a session of the pool, or with a query generation's held
    /// session; errors become Core Data's, naming `action`.
    func reading<T>(_ action: @autoclosure () -> String, in snapshot: PostgreSQLGenerationSnapshot?,
                    _ body: (PostgreSQLSession) throws -> T) throws -> T {
        guard let snapshot else { return try withSession(action(), body) }
        do {
            return try snapshot.withSession { session in
                // A failed statement would abort the snapshot's transaction: each
                // read is undone alone.
                try session.execute("SAVEPOINT ocd_read")
                do {
                    let result = try body(session)
                    try session.execute("RELEASE SAVEPOINT ocd_read")
                    return result
                } catch {
                    _ = try? session.execute("ROLLBACK TO SAVEPOINT ocd_read")
                    throw error
                }
            }
        } catch {
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOperation, doing: action(), url: url)
        }
    }
}
