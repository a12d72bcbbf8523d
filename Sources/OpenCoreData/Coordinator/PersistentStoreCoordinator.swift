import Foundation
import OpenCoreDataPredicates
import Synchronization

/// Connects contexts to persistent stores through one model
/// (`NSPersistentStoreCoordinator`).
///
/// The coordinator owns the stores, routes each entity to the store of its
/// configuration, hands out permanent object IDs, and keeps the row cache that
/// every context on it shares: a fault fires from the cache before going to a store.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .inMemory)
///
/// let context = ManagedObjectContext(concurrencyType: .mainQueue)
/// context.persistentStoreCoordinator = coordinator
/// ```
///
/// A coordinator is `Sendable`: every context, on any queue, may use it. Creating
/// one makes its model immutable.
public final class PersistentStoreCoordinator: Sendable {
    /// The model, frozen.
    public let managedObjectModel: ManagedObjectModel

    private struct State {
        var stores: [any PersistentStore] = []
        /// The stores by the identity of their interned identifier (`ManagedObjectID.StoreName`):
        /// an object ID finds its store without comparing identifier strings.
        var storesByName: [(name: ObjectIdentifier, store: any PersistentStore)] = []
        var rowCache: [ManagedObjectID: CachedRow] = [:]
    }

    private struct CachedRow {
        var row: RowSnapshot
        var references: Int
    }

    private let state = Lock(State())
    /// Moves on whenever rows change through this coordinator (saves, batch
    /// requests, rows learnt to be newer): faults holding rows fetched before
    /// then fire from the row cache or the store instead.
    let rowGeneration = Atomic<Int>(0)
    /// The contexts that merge the saves made through this coordinator.
    let mergeTargets = Lock<[ObjectIdentifier: WeakContext]>([:])

    /// A coordinator for `model`. The model is validated and becomes immutable; an
    /// invalid model is a programming error reported here with every problem (it
    /// stops the program). For a model read from a file (a `.mom`, an
    /// `.xcdatamodeld`, a store's model cache) use ``validated(managedObjectModel:)``,
    /// which throws instead.
    ///
    /// - Parameter managedObjectModel: The model of the stores the coordinator
    ///   opens.
    public init(managedObjectModel: ManagedObjectModel) {
        do {
            try managedObjectModel.freeze()
        } catch {
            preconditionFailure("OpenCoreData: the managed object model is invalid: \(error)")
        }
        self.managedObjectModel = managedObjectModel
        ManagedObjectClasses.remember(managedObjectModel)
    }

    /// A coordinator for `model`, throwing when the model is invalid (error 134060
    /// listing every problem): the path for models read from files, which must
    /// never stop the program.
    ///
    /// ```swift
    /// let model = try SQLiteStore.storedModel(at: storeURL)
    /// let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
    /// ```
    ///
    /// - Parameter managedObjectModel: The model of the stores the coordinator
    ///   opens; it is validated and becomes immutable.
    /// - Returns: A coordinator with no stores.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the model is invalid, every problem listed.
    public static func validated(managedObjectModel: ManagedObjectModel) throws -> PersistentStoreCoordinator {
        try managedObjectModel.freeze()
        return PersistentStoreCoordinator(managedObjectModel: managedObjectModel)
    }

    // MARK: Stores

    /// The stores, in the order they were added.
    public var persistentStores: [any PersistentStore] { state.withLock { $0.stores } }

    /// Adds a store of `type` holding the entities of `configuration` (nil: all).
    ///
    /// - Parameters:
    ///   - type: ``PersistentStoreType/sqlite`` or ``PersistentStoreType/inMemory``.
    ///   - configuration: The model configuration whose entities the store holds;
    ///     nil for all entities.
    ///   - url: The store's file; required for an SQLite store, which is created
    ///     when it does not exist.
    ///   - options: Core Data's store options, such as
    ///     `NSReadOnlyPersistentStoreOption` and SQLite pragmas.
    /// - Returns: The store, added to ``persistentStores``.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/persistentStoreOpen``
    ///   (134080) for an unknown configuration, an SQLite store without URL or
    ///   an invalid option; ``CoreDataError/Code/persistentStoreInvalidType``
    ///   (134000) for an unknown type;
    ///   ``CoreDataError/Code/persistentStoreIncompatibleVersionHash`` (134100)
    ///   when the store was made with another model and
    ///   `NSMigratePersistentStoresAutomaticallyOption` is not "1"; with it, the
    ///   migration's errors: 134130 (no source model: neither the versions of the
    ///   model's bundle nor the store's model cache match the store), 134140 (no
    ///   mapping: inference is off, `NSInferMappingModelAutomaticallyOption`, or
    ///   impossible), 134110 (the migration failed; the store is unchanged);
    ///   ``CoreDataError/Code/persistentStoreIncompatibleSchema`` (134020) when
    ///   its tables do not match the model; a file error (256-260) or
    ///   ``CoreDataError/Code/sqlite`` (134180) when the file cannot be read.
    @discardableResult
    public func addPersistentStore(type: PersistentStoreType, configuration: String? = nil, at url: URL? = nil,
                                   options: [String: String] = [:]) throws -> any PersistentStore {
        guard managedObjectModel.entities(forConfigurationName: configuration) != nil else {
            throw CoreDataError(.persistentStoreOpen, "The model has no configuration named '\(configuration ?? "")'")
        }
        let store: any PersistentStore
        switch type {
        case .inMemory:
            store = InMemoryStore(model: managedObjectModel, configurationName: configuration,
                                  readOnly: options["NSReadOnlyPersistentStoreOption"] == "1")
        case .sqlite:
            guard let url else {
                throw CoreDataError(.persistentStoreOpen, "A SQLite store needs a file URL")
            }
            // Core Data's automatic migration (NSMigratePersistentStoresAutomaticallyOption;
            // PersistentStoreDescription turns it on by default).
            if SQLiteStore.Option.isOn(options[PersistentStoreDescription.OptionKey.migrateAutomatically]),
               !SQLiteStore.Option.isOn(options[PersistentStoreDescription.OptionKey.readOnly]) {
                try StoreMigrator.migrateIfNeeded(
                    storeAt: url, to: managedObjectModel, configurationName: configuration,
                    infers: SQLiteStore.Option.isOn(options[PersistentStoreDescription.OptionKey.inferMappingModelAutomatically]))
            }
            store = try SQLiteStore(url: url, model: managedObjectModel, configurationName: configuration, options: options)
        default:
            guard let factory = PersistentStoreCoordinator.registeredStoreTypes.withLock({ $0[type] }) else {
                throw CoreDataError(.persistentStoreInvalidType, "Unknown store type '\(type.rawValue)'")
            }
            store = try factory(PersistentStoreRequest(model: managedObjectModel, configurationName: configuration,
                                                       url: url, options: options))
        }
        add(store)
        if let sqlite = store as? SQLiteStore { sqlite.remoteChanges?.start(store: sqlite, coordinator: self) }
        return store
    }

    /// Adds the store a description describes (`addPersistentStore(with:)`): its
    /// type, configuration, URL and options, and its staged migration, which runs
    /// first when the description migrates automatically.
    ///
    /// ```swift
    /// var description = PersistentStoreDescription(url: storeURL)
    /// description.stagedMigrationManager = try StagedMigrationManager(stages)
    /// try coordinator.addPersistentStore(with: description)
    /// ```
    ///
    /// - Parameter description: The store's description.
    /// - Returns: The store, added to ``persistentStores``.
    /// - Throws: The errors of ``addPersistentStore(type:configuration:at:options:)``;
    ///   those of the staged migration (134110, 134504 for a model reference that
    ///   cannot be resolved, 134506 for a stage that would migrate backwards).
    @discardableResult
    public func addPersistentStore(with description: PersistentStoreDescription) throws -> any PersistentStore {
        if let staged = description.stagedMigrationManager, description.type == .sqlite, let url = description.url,
           description.shouldMigrateStoreAutomatically, !description.isReadOnly, FileManager.default.fileExists(atPath: url.path) {
            try staged.migrate(storeAt: url, to: managedObjectModel, configurationName: description.configuration)
        }
        return try addPersistentStore(type: description.type, configuration: description.configuration, at: description.url,
                                      options: description.options)
    }

    /// Adds a store you created (a custom store).
    ///
    /// - Parameter store: The store to add after the others.
    public func add(_ store: any PersistentStore) {
        let name = ObjectIdentifier(ManagedObjectID.StoreName.named(store.identifier))
        state.withLock { state in
            state.stores.append(store)
            state.storesByName.append((name, store))
        }
        store.didAdd(to: self)
    }

    /// Removes a store; its objects can no longer be fetched or saved.
    ///
    /// - Parameter store: A store of this coordinator.
    public func remove(_ store: any PersistentStore) {
        store.willRemove(from: self)
        if let sqlite = store as? SQLiteStore {
            sqlite.remoteChanges?.stop()
            sqlite.releaseHeldRead()
        }
        state.withLock { state in
            state.stores.removeAll { $0 === store }
            state.storesByName.removeAll { $0.store === store }
            state.rowCache = state.rowCache.filter { $0.key.storeIdentifier != store.identifier }
        }
    }

    /// The store with identifier `identifier`.
    ///
    /// - Parameter identifier: The store's identifier (its store UUID for an
    ///   SQLite store).
    /// - Returns: The store, or nil when none of the coordinator's stores has it.
    public func persistentStore(withIdentifier identifier: String) -> (any PersistentStore)? {
        state.withLock { $0.stores.first { $0.identifier == identifier } }
    }

    /// The store new objects of `entity` go to: the first whose configuration
    /// includes the entity.
    ///
    /// - Parameter entity: An entity of the coordinator's model.
    /// - Returns: The store, or nil when no store holds the entity.
    public func store(for entity: EntityDescription) -> (any PersistentStore)? {
        let stores = persistentStores
        return stores.first { store in
            guard let members = managedObjectModel.entities(forConfigurationName: store.configurationName) else { return false }
            return members.contains { $0.name == entity.name }
        }
    }

    /// The store holding the object `id`.
    func store(for id: ManagedObjectID) -> (any PersistentStore)? {
        guard let name = id.storeIdentity else { return store(for: id.entity) }
        let found = state.withLock { state -> (any PersistentStore)? in
            for entry in state.storesByName where entry.name == name { return entry.store }
            return nil
        }
        // A custom store whose identifier changed since it was added is found by name.
        return found ?? id.storeIdentifier.flatMap(persistentStore(withIdentifier:))
    }

    /// The object ID a Core Data URI names (`x-coredata://<store>/<Entity>/p<pk>`), or
    /// nil when no store or entity matches.
    ///
    /// - Parameter uri: An object ID's URI representation.
    /// - Returns: The ID, or nil for a temporary ID's URI, or one naming a store
    ///   or entity this coordinator does not have.
    public func managedObjectID(forURIRepresentation uri: URL) -> ManagedObjectID? {
        guard let parts = ManagedObjectID.parse(uri: uri), case .permanent(let pk) = parts.key,
              let entity = managedObjectModel.entitiesByName[parts.entity],
              persistentStore(withIdentifier: parts.store) != nil else { return nil }
        return ManagedObjectID(entity: entity, storeIdentifier: parts.store, primaryKey: pk)
    }

    // MARK: Rows and the row cache

    /// Fetches rows from every store that holds the entity, caching them.
    func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] {
        let stores = storesHolding(fetch.entity)
        // One store (the common case): its array as it is (appending would copy
        // every row, retaining and releasing each of its values).
        if stores.count == 1 { return try stores[0].fetchRows(fetch) }
        var rows: [RowSnapshot] = []
        for store in stores { rows += try store.fetchRows(fetch) }
        // With several stores the context asks without offset and limit and sorts
        // the merged objects itself.
        return rows
    }

    func count(_ fetch: StoreFetch) throws -> Int {
        try storesHolding(fetch.entity).reduce(0) { $0 + (try $1.count(fetch)) }
    }

    func storesHolding(_ entity: EntityDescription) -> [any PersistentStore] {
        persistentStores.filter { store in
            managedObjectModel.entities(forConfigurationName: store.configurationName)?.contains { $0.name == entity.name } ?? false
        }
    }

    /// The row of `id`: from the row cache, else from its store.
    func row(for id: ManagedObjectID) throws -> RowSnapshot? {
        if let cached = state.withLock({ $0.rowCache[id]?.row }) { return cached }
        guard let store = store(for: id) else { return nil }
        return try store.row(for: id)
    }

    /// Records that an object holds `row`: the cache keeps it while any object does.
    func retainRow(_ row: RowSnapshot) {
        state.withLock { state in
            // One hash lookup, the entry changed in place.
            if let index = state.rowCache.index(forKey: row.objectID) {
                if row.version >= state.rowCache.values[index].row.version { state.rowCache.values[index].row = row }
                state.rowCache.values[index].references += 1
            } else {
                state.rowCache[row.objectID] = CachedRow(row: row, references: 1)
            }
        }
    }

    /// Makes room in the row cache for `count` more rows (before a fetch registers them).
    func reserveRowCacheCapacity(_ count: Int) {
        state.withLock { state in
            // Grown geometrically (see `fetchObjects`), never rehashed to an exact fit.
            guard state.rowCache.capacity - state.rowCache.count < count else { return }
            state.rowCache.reserveCapacity(Swift.max(state.rowCache.count + count, state.rowCache.capacity * 2))
        }
    }

    /// Releases a row retained with ``retainRow(_:)``.
    func releaseRow(_ id: ManagedObjectID) {
        state.withLock { state in
            guard let index = state.rowCache.index(forKey: id) else { return }
            if state.rowCache.values[index].references > 1 {
                state.rowCache.values[index].references -= 1
            } else {
                state.rowCache.remove(at: index)
            }
        }
    }

    /// Empties the row cache: after a batch request changed rows behind every
    /// context's back, faults fire from the stores again.
    func forgetCachedRows() {
        rowGeneration.add(1, ordering: .releasing)
        state.withLock { $0.rowCache.removeAll() }
    }

    /// Replaces a cached row with a newer version read from the store (after an
    /// optimistic locking conflict, or another coordinator's save).
    func updateCachedRow(_ row: RowSnapshot) {
        rowGeneration.add(1, ordering: .releasing)
        state.withLock { state in
            guard var entry = state.rowCache[row.objectID], entry.row.version < row.version else { return }
            entry.row = row
            state.rowCache[row.objectID] = entry
        }
    }

    /// The number of rows in the row cache.
    public var rowCacheCount: Int { state.withLock { $0.rowCache.count } }

    func relatedObjectIDs(of id: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        guard let store = store(for: id) else { return [] }
        return try store.relatedObjectIDs(of: id, relationship: relationship)
    }

    /// The destination rows of a to-many relationship for each of `ids` (all in one
    /// store) in one read, when the store can (see
    /// ``PersistentStore/relatedRows(of:relationship:)``).
    func relatedRows(of ids: [ManagedObjectID], relationship: RelationshipDescription) throws -> [[RowSnapshot]]? {
        guard let first = ids.first else { return [] }
        guard let store = store(for: first) else { return nil }
        if ids.count > 1, !ids.allSatisfy({ $0.storeIdentifier == first.storeIdentifier }) { return nil }
        return try store.relatedRows(of: ids, relationship: relationship)
    }

    func newObjectIDs(for entity: EntityDescription, count: Int) throws -> [ManagedObjectID] {
        guard let store = store(for: entity) else {
            throw CoreDataError(.persistentStoreSave, "No persistent store holds entity '\(entity.name)'", entityName: entity.name)
        }
        return try store.newObjectIDs(for: entity, count: count)
    }

    /// Applies the changes of one save to the stores, then refreshes the row cache.
    func save(_ changes: SaveChanges) throws {
        var byStore: [String: SaveChanges] = [:]
        func key(_ id: ManagedObjectID) -> String { id.storeIdentifier ?? "" }
        let first = changes.inserted.first?.objectID ?? changes.updated.first?.objectID ?? changes.deleted.first?.0
        if let first, let only = first.storeIdentity, changes.allInStore(only) {
            // One store (the common case): no regrouping, row by row, by store.
            byStore[key(first)] = changes
        } else {
            byStore = Self.grouped(changes, by: key)
        }
        var changedBehind: [ManagedObjectID] = []
        for (identifier, storeChanges) in byStore.sorted(by: { $0.key < $1.key }) {
            guard let store = persistentStore(withIdentifier: identifier) else {
                throw CoreDataError(.persistentStoreSave, "No persistent store with identifier '\(identifier)'")
            }
            // Rows may have changed even if a later store fails: faults must not
            // trust rows fetched before.
            defer { rowGeneration.add(1, ordering: .releasing) }
            try store.save(storeChanges)
            if let triggered = store as? any ChangesRowsBehindSaves { changedBehind += triggered.takeRowsChangedBehindSave() }
        }
        state.withLock { state in
            guard !state.rowCache.isEmpty else { return }
            // Rows a store's triggers changed are read again.
            defer { for id in changedBehind { state.rowCache[id] = nil } }
            for row in changes.updated {
                // Another save may have cached a newer version meanwhile.
                guard var entry = state.rowCache[row.objectID], entry.row.version <= row.version else { continue }
                entry.row = row
                entry.row.version = row.version + 1
                state.rowCache[row.objectID] = entry
            }
            for (id, _) in changes.deleted { state.rowCache[id] = nil }
        }
    }

    /// The changes of one save, by store identifier.
    private static func grouped(_ changes: SaveChanges, by key: (ManagedObjectID) -> String) -> [String: SaveChanges] {
        var byStore: [String: SaveChanges] = [:]
        var empty = SaveChanges()
        empty.transactionAuthor = changes.transactionAuthor
        empty.contextName = changes.contextName
        for row in changes.inserted { byStore[key(row.objectID), default: empty].inserted.append(row) }
        for row in changes.updated {
            byStore[key(row.objectID), default: empty].updated.append(row)
            byStore[key(row.objectID)]?.changedProperties[row.objectID] = changes.changedProperties[row.objectID]
        }
        for entry in changes.deleted { byStore[key(entry.0), default: empty].deleted.append(entry) }
        return byStore
    }
}
