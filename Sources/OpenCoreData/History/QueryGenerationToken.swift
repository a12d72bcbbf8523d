import Foundation
import GRDB

/// A query generation (`NSQueryGenerationToken`): the state of a coordinator's
/// SQLite stores at one moment, which a context can be pinned to.
///
/// A pinned context reads — fetches, counts, faults, to-many relationships —
/// as the stores were when its generation began, whatever other contexts,
/// coordinators or processes save meanwhile. It moves to the newest generation
/// when it saves, when it is reset, or when you set ``current`` again.
///
/// ```swift
/// try context.setQueryGenerationFrom(.current)   // pin at the next read
/// let moods = try context.fetch(request)          // the generation begins here
/// // … another process saves …
/// try context.count(for: request)                 // still the count of then
/// try context.setQueryGenerationFrom(.current)   // move on
/// ```
///
/// Tokens are `Sendable`: give one context's ``ManagedObjectContext/queryGenerationToken``
/// to another to have both read the same generation. A generation lives while a
/// context or token holds it.
///
/// SQLite stores support generations (as in Core Data), and so does the
/// PostgreSQL store. On SQLite a generation is a read transaction held open on a
/// connection of its own: the store must use WAL journaling (every store
/// OpenCoreData creates does), which lets writers go on while the generation reads
/// its snapshot. On PostgreSQL it is a `REPEATABLE READ` transaction held open on
/// a connection of its own.
public struct QueryGenerationToken: Sendable, Hashable {
    /// The current generation: a context given it pins itself to the newest
    /// generation when it next reads.
    public static let current = QueryGenerationToken(generation: nil)

    let generation: QueryGeneration?

    /// Whether this is ``current`` rather than a pinned generation.
    public var isCurrent: Bool { generation == nil }

    public static func == (lhs: QueryGenerationToken, rhs: QueryGenerationToken) -> Bool {
        lhs.generation === rhs.generation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(generation.map(ObjectIdentifier.init))
    }
}

/// A store that can hold its state at one moment for a query generation (the
/// SQLite and PostgreSQL stores).
package protocol QueryGenerationStore: PersistentStore {
    /// Begins a snapshot of the store: reads through it see the store as it is now.
    func beginQueryGeneration() throws -> any StoreGenerationSnapshot
}

/// A store's state held at one moment: the reads a pinned context makes.
package protocol StoreGenerationSnapshot: AnyObject, Sendable {
    func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot]
    func count(_ fetch: StoreFetch) throws -> Int
    func row(for objectID: ManagedObjectID) throws -> RowSnapshot?
    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID]
    func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]]
}

/// One generation: a snapshot of each store of a coordinator.
final class QueryGeneration: Sendable {
    let snapshots: [String: any StoreGenerationSnapshot]

    init(stores: [any PersistentStore]) throws {
        var snapshots: [String: any StoreGenerationSnapshot] = [:]
        for store in stores {
            guard let generational = store as? any QueryGenerationStore else { throw QueryGeneration.unsupported(store) }
            snapshots[generational.identifier] = try generational.beginQueryGeneration()
        }
        self.snapshots = snapshots
    }

    static func unsupported(_ store: any PersistentStore) -> CoreDataError {
        CoreDataError(.persistentStoreUnsupportedRequestType,
                      "Query generations are supported only by SQLite and PostgreSQL stores; store \(store.identifier) is \(store.type.rawValue)",
                      url: store.url)
    }

    /// The snapshot to read `store` from; nil for a store added after the generation began.
    func snapshot(for store: any PersistentStore) -> (any StoreGenerationSnapshot)? {
        snapshots[store.identifier]
    }
}

/// A SQLite store's generation: its reads in the store's held read transaction.
final class SQLiteGenerationSnapshot: StoreGenerationSnapshot {
    let store: SQLiteStore
    let snapshot: SQLiteStoreSnapshot

    init(store: SQLiteStore) throws {
        self.store = store
        snapshot = try SQLiteStoreSnapshot(store: store)
    }

    func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] { try store.fetchRows(fetch, in: snapshot) }
    func count(_ fetch: StoreFetch) throws -> Int { try store.count(fetch, in: snapshot) }
    func row(for objectID: ManagedObjectID) throws -> RowSnapshot? { try store.row(for: objectID, in: snapshot) }
    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        try store.relatedObjectIDs(of: objectID, relationship: relationship, in: snapshot)
    }
    func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        try store.fetchDictionaries(request, in: snapshot)
    }
}

extension SQLiteStore: QueryGenerationStore {
    package func beginQueryGeneration() throws -> any StoreGenerationSnapshot { try SQLiteGenerationSnapshot(store: self) }
}

/// A read transaction held open on a store file: the store as it was when the
/// transaction began.
final class SQLiteStoreSnapshot: Sendable {
    private let queue: DatabaseQueue

    init(store: SQLiteStore) throws {
        guard let url = store.url else { throw QueryGeneration.unsupported(store) }
        var configuration = Configuration.readOnlyLook("OpenCoreData.QueryGeneration")
        // The transaction stays open between reads on purpose: it is the generation.
        configuration.allowsUnsafeTransactions = true
        configuration.prepareDatabase { db in SQLiteFunctions.registerFunctions(db) }
        do {
            queue = try DatabaseQueue(path: url.path, configuration: configuration)
            try queue.inDatabase { db in
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode")?.lowercased()
                guard mode == "wal" else {
                    throw CoreDataError(.persistentStoreOperation,
                                        "Query generations need a store in WAL journal mode; \(url.path) uses \(mode ?? "?")", url: url)
                }
                try db.execute(sql: "BEGIN DEFERRED TRANSACTION")
                // The first read fixes the snapshot.
                _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Z_PRIMARYKEY")
            }
        } catch let error as CoreDataError {
            throw error
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "starting a query generation")
        }
    }

    deinit {
        try? queue.inDatabase { db in try db.execute(sql: "ROLLBACK") }
        try? queue.close()
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.inDatabase(body)
    }
}

/// Where a context stands with query generations.
enum QueryGenerationState {
    /// Not using generations: reads see the latest saves.
    case unpinned
    /// Pin to the newest generation at the next read.
    case current
    /// Pinned.
    case pinned(QueryGeneration)
}

extension ManagedObjectContext {
    /// The generation the context is pinned to, or nil when it does not use query
    /// generations (`queryGenerationToken`). A context set to ``QueryGenerationToken/current``
    /// pins itself when this is read.
    public var queryGenerationToken: QueryGenerationToken? {
        switch queryGenerationState {
        case .unpinned: return nil
        case .pinned(let generation): return QueryGenerationToken(generation: generation)
        case .current: return (try? readGeneration()).map { QueryGenerationToken(generation: $0) } ?? .current
        }
    }

    /// Pins the context to a generation (`setQueryGenerationFrom(_:)`):
    /// ``QueryGenerationToken/current`` for the newest (taken at the next read),
    /// another context's token to share its generation, nil to stop using
    /// generations. Registered objects keep their values until they are refreshed
    /// or refetched.
    ///
    /// ```swift
    /// try context.setQueryGenerationFrom(.current)
    /// let other = ManagedObjectContext(concurrencyType: .privateQueue)
    /// other.persistentStoreCoordinator = coordinator
    /// try other.setQueryGenerationFrom(context.queryGenerationToken)
    /// ```
    ///
    /// - Parameter token: ``QueryGenerationToken/current``, another context's
    ///   ``queryGenerationToken``, or nil to stop using generations.
    /// - Throws: ``CoreDataError``:
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   when a store of the coordinator supports no generations (SQLite and
    ///   PostgreSQL stores do), or the token
    ///   belongs to other stores; ``CoreDataError/Code/coreData`` (134060) when
    ///   the context has no coordinator.
    public func setQueryGenerationFrom(_ token: QueryGenerationToken?) throws {
        assertOnQueue()
        guard let token else {
            queryGenerationState = .unpinned
            return
        }
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        let stores = coordinator.persistentStores
        if let store = stores.first(where: { !($0 is any QueryGenerationStore) }) { throw QueryGeneration.unsupported(store) }
        guard let generation = token.generation else {
            queryGenerationState = .current
            return
        }
        let identifiers = Set(stores.map(\.identifier))
        guard !generation.snapshots.isEmpty, generation.snapshots.keys.allSatisfy(identifiers.contains) else {
            throw CoreDataError(.persistentStoreUnsupportedRequestType, "The query generation token belongs to other stores than this context's")
        }
        queryGenerationState = .pinned(generation)
    }

    /// The generation reads go to (pinning now when set to current), or nil.
    func readGeneration() throws -> QueryGeneration? {
        switch queryGenerationState {
        case .unpinned: return nil
        case .pinned(let generation): return generation
        case .current:
            guard let coordinator = persistentStoreCoordinator else { return nil }
            let generation = try QueryGeneration(stores: coordinator.persistentStores)
            queryGenerationState = .pinned(generation)
            return generation
        }
    }

    /// Whether rows this context reads may go into the coordinator's shared row
    /// cache (not when they come from a pinned generation).
    var sharesRowCache: Bool {
        guard parent == nil else { return false }   // a child's rows hold its parent's unsaved state
        if case .unpinned = queryGenerationState { return true }
        return false
    }

    /// Moves a pinned context to the newest generation (after a save or reset).
    func advanceQueryGeneration() {
        if case .pinned = queryGenerationState { queryGenerationState = .current }
    }

    /// The objects of a to-many relationship, read in the context's generation.
    func relatedObjectIDs(of id: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        guard let coordinator = persistentStoreCoordinator else { return [] }
        return try coordinator.relatedObjectIDs(of: id, relationship: relationship, generation: try readGeneration())
    }
}

extension PersistentStoreCoordinator {
    func fetchRows(_ fetch: StoreFetch, generation: QueryGeneration?) throws -> [RowSnapshot] {
        guard let generation else { return try fetchRows(fetch) }
        func rows(in store: any PersistentStore) throws -> [RowSnapshot] {
            if let snapshot = generation.snapshot(for: store) { return try snapshot.fetchRows(fetch) }
            return try store.fetchRows(fetch)
        }
        let stores = storesHolding(fetch.entity)
        if stores.count == 1 { return try rows(in: stores[0]) }
        var all: [RowSnapshot] = []
        for store in stores { all += try rows(in: store) }
        return all
    }

    func count(_ fetch: StoreFetch, generation: QueryGeneration?) throws -> Int {
        guard let generation else { return try count(fetch) }
        return try storesHolding(fetch.entity).reduce(0) { total, store in
            if let snapshot = generation.snapshot(for: store) { return total + (try snapshot.count(fetch)) }
            return total + (try store.count(fetch))
        }
    }

    /// The row of `id` in a generation (never from the shared row cache), else as ``row(for:)``.
    func row(for id: ManagedObjectID, generation: QueryGeneration?) throws -> RowSnapshot? {
        guard let generation else { return try row(for: id) }
        guard let store = store(for: id) else { return nil }
        if let snapshot = generation.snapshot(for: store) { return try snapshot.row(for: id) }
        return try store.row(for: id)
    }

    func relatedObjectIDs(of id: ManagedObjectID, relationship: RelationshipDescription, generation: QueryGeneration?) throws -> [ManagedObjectID] {
        guard let generation else { return try relatedObjectIDs(of: id, relationship: relationship) }
        guard let store = store(for: id) else { return [] }
        if let snapshot = generation.snapshot(for: store) {
            return try snapshot.relatedObjectIDs(of: id, relationship: relationship)
        }
        return try store.relatedObjectIDs(of: id, relationship: relationship)
    }
}

extension SQLiteStore {
    public func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] { try fetchRows(fetch, in: nil) }
    public func count(_ fetch: StoreFetch) throws -> Int { try count(fetch, in: nil) }
    public func row(for objectID: ManagedObjectID) throws -> RowSnapshot? { try row(for: objectID, in: nil) }
    public func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        try relatedObjectIDs(of: objectID, relationship: relationship, in: nil)
    }
    public func relatedRows(of objectIDs: [ManagedObjectID], relationship: RelationshipDescription) throws -> [[RowSnapshot]]? {
        try relatedRows(of: objectIDs, relationship: relationship, in: nil)
    }
    public func rows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) throws -> [RowSnapshot]? {
        try rows(for: objectIDs, of: entity, in: nil)
    }
}

extension PersistentStoreCoordinator {
    /// The row of `id` from its store (or the generation's snapshot), bypassing the row cache.
    func storeRow(for id: ManagedObjectID, generation: QueryGeneration?) throws -> RowSnapshot? {
        guard let store = store(for: id) else { return nil }
        if let snapshot = generation?.snapshot(for: store) { return try snapshot.row(for: id) }
        return try store.row(for: id)
    }
}
