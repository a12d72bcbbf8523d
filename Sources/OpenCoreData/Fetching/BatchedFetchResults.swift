import Foundation
import OpenCoreDataPredicates

/// The results of a fetch with a ``FetchRequest/fetchBatchSize``: a lazy
/// random-access collection that holds the IDs of every matching object and loads
/// the objects a batch at a time, when an element of the batch is first read
/// (Core Data's batch-faulting array).
///
/// ```swift
/// let request = FetchRequest<Mood>(entityName: "Mood")
/// request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
/// request.fetchBatchSize = 20
/// let moods = try context.fetchInBatches(request)
/// moods.count          // every match, from one ID query
/// moods[0].rating      // loads moods[0..<20] with one query
/// moods[25]            // loads moods[20..<40]
/// ```
///
/// The collection keeps the objects of the batches it has loaded alive, like Core
/// Data's array does; objects not yet touched are just IDs. Unsaved inserts,
/// updates and deletes of the context are taken into account when the IDs are
/// fetched (with `includesPendingChanges`, the default).
public struct BatchedFetchResults<Result>: RandomAccessCollection {
    final class Storage {
        let context: ManagedObjectContext
        let ids: [ManagedObjectID]
        let batchSize: Int
        /// The loaded batches, by batch number (nil: not loaded yet).
        var batches: [[ManagedObject]?]
        var loadedBatchCount = 0
        let entity: EntityDescription
        /// The most batches one read loads (the store's read-ahead; 1: none).
        let readAheadLimit: Int
        /// The batches the last read loaded, and the last of them.
        var window = 0
        var lastLoadedBatch = -2

        init(context: ManagedObjectContext, ids: [ManagedObjectID], batchSize: Int, entity: EntityDescription, readAheadRows: Int) {
            self.context = context
            self.ids = ids
            self.batchSize = batchSize
            self.entity = entity
            self.batches = Array(repeating: nil, count: (ids.count + batchSize - 1) / batchSize)
            self.readAheadLimit = Swift.max(1, readAheadRows / batchSize)
        }

        func object(at index: Int) -> ManagedObject {
            let batch = index / batchSize
            if let objects = batches[batch] { return objects[index - batch * batchSize] }
            // Reading on from the last loaded batch doubles the read (up to the
            // store's read-ahead); any other batch is read alone.
            window = batch == lastLoadedBatch + 1 ? Swift.min(readAheadLimit, Swift.max(1, window * 2)) : 1
            let end = windowEnd(from: batch, batches: window)
            // Reading in order, with a store that reads ahead: the read after this
            // one (the next batches, twice as many) is announced to the store
            // first, so that its server finds those rows while this read's are
            // converted.
            if readAheadLimit > 1, window > 1 || batch == 0, end < batches.count {
                let next = windowEnd(from: end, batches: Swift.min(readAheadLimit, window * 2))
                if next > end { context.prepareBatch(Array(ids[end * batchSize..<Swift.min(ids.count, next * batchSize)]), entity: entity) }
            }
            let first = batch * batchSize
            // Read in order: the objects of the batches to come will be
            // registered too (the collection keeps them), so the registry is
            // sized for them once (up to 100,000 more) rather than grown read
            // after read.
            if window > 1 { context.reserveRegistry(Swift.min(ids.count - first, 100_000)) }
            let objects = context.loadBatch(Array(ids[first..<Swift.min(ids.count, end * batchSize)]), entity: entity)
            for loaded in batch..<end {
                let start = (loaded - batch) * batchSize
                batches[loaded] = Array(objects[start..<Swift.min(objects.count, start + batchSize)])
            }
            loadedBatchCount += end - batch
            lastLoadedBatch = end - 1
            return objects[index - first]
        }

        /// The end of a read from `batch` of at most `count` batches not loaded yet.
        private func windowEnd(from batch: Int, batches count: Int) -> Int {
            var end = batch + 1
            while end < batches.count, end - batch < count, batches[end] == nil { end += 1 }
            return end
        }
    }

    let storage: Storage

    /// The IDs of the results, in order.
    public var objectIDs: [ManagedObjectID] { storage.ids }
    /// The number of batches loaded so far.
    public var loadedBatchCount: Int { storage.loadedBatchCount }

    public var startIndex: Int { 0 }
    public var endIndex: Int { storage.ids.count }

    /// The result at `position`, loading its batch if it is not loaded yet.
    ///
    /// - Parameter position: A valid index of the collection.
    public subscript(position: Int) -> Result {
        let object = storage.object(at: position)
        guard let result = object as? Result else {
            preconditionFailure("OpenCoreData: \(object.entity.name) objects are \(type(of: object)), not \(Result.self)")
        }
        return result
    }
}

extension ManagedObjectContext {
    /// Runs a fetch request lazily (`fetch(_:)` with a `fetchBatchSize`): one query
    /// for the IDs of the matching objects, then one per batch of
    /// ``FetchRequest/fetchBatchSize`` objects as they are read. A batch size of 0
    /// loads everything in one batch.
    ///
    /// ```swift
    /// request.fetchBatchSize = 50
    /// let ratings = try context.fetchInBatches(request).map(\.rating)   // 50 at a time
    /// ```
    ///
    /// Throws when `Result` is not the class of the entity's objects, as
    /// ``fetch(_:)`` does.
    ///
    /// - Parameter request: The request; its ``FetchRequest/fetchBatchSize`` sets
    ///   the batches.
    /// - Returns: A collection holding the matching objects' IDs, loading the
    ///   objects as they are read.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the request has no entity, names one the model lacks, or
    ///   an entity's objects are not of type `Result`; any error the store reports
    ///   while reading the IDs.
    public func fetchInBatches<Result>(_ request: FetchRequest<Result>) throws -> BatchedFetchResults<Result> {
        assertOnQueue()
        if let type = Result.self as? ManagedObject.Type { ManagedObjectClasses.register(type) }
        let entity = try resolveEntity(request)
        // Every object the collection can hold must be a Result: checked here, so
        // that reading an element never fails.
        for member in request.includesSubentities ? entity.selfAndDescendants : [entity] where !member.isAbstract {
            let expected = ManagedObjectClasses.type(for: member)
            guard expected is Result.Type else {
                throw CoreDataError(.coreData, "The fetch of '\(member.name)' returns \(expected) objects, not \(Result.self): register the class with ManagedObjectClasses.register or set the entity's class name",
                                    entityName: member.name)
            }
        }
        let idRequest = FetchRequest<ManagedObjectID>(entity: entity)
        idRequest.predicate = request.predicate
        idRequest.sortDescriptors = request.sortDescriptors
        idRequest.fetchLimit = request.fetchLimit
        idRequest.fetchOffset = request.fetchOffset
        idRequest.includesSubentities = request.includesSubentities
        idRequest.includesPendingChanges = request.includesPendingChanges
        let ids = try storedObjectIDs(idRequest, batchSize: max(0, request.fetchBatchSize)) ?? fetch(idRequest)
        let size = request.fetchBatchSize > 0 ? request.fetchBatchSize : max(ids.count, 1)
        let readAhead = ids.first.flatMap { persistentStoreCoordinator?.store(for: $0) }?.batchReadAheadRows ?? 0
        return BatchedFetchResults(storage: .init(context: self, ids: ids, batchSize: size, entity: entity, readAheadRows: readAhead))
    }

    /// The objects of `ids`, in order, registered with their values: the rows of
    /// those not loaded yet come from one store query. Each ID is looked up in the
    /// registry once; rows are matched to their positions by primary key, and
    /// checked against the whole ID.
    func loadBatch(_ ids: [ManagedObjectID], entity: EntityDescription) -> [ManagedObject] {
        var objects = ids.map { registry[$0] }
        var missing: [ManagedObjectID] = []
        missing.reserveCapacity(ids.count)
        for (position, id) in ids.enumerated() where id.primaryKey != nil && objects[position]?.isFault ?? true {
            missing.append(id)
        }
        if !missing.isEmpty {
            var rows = (try? batchRows(missing, entity: entity)) ?? []
            if registry.capacity - registry.count < rows.count {
                registry.reserveCapacity(Swift.max(registry.count + rows.count, registry.capacity * 2))
            }
            var positions = BatchPositions(ids)
            for index in rows.indices {
                let id = rows[index].objectID
                guard let position = positions.position(of: id) else { continue }
                // Loaded at once: the object holds its row (its values taken from
                // the batch's rows), the row cache is not involved.
                let object = objects[position] ?? makeFault(id, row: nil)
                if object.isFault {
                    load(taking: rows[index].takeValues(), version: rows[index].version, into: object)
                    object.awakeFromFetch()
                }
                objects[position] = object
            }
        }
        // IDs without a row (deleted since the IDs were fetched) are faults.
        return zip(ids, objects).map { id, object in object ?? self.object(with: id) }
    }

    /// Makes room in the registry for `additional` more objects.
    func reserveRegistry(_ additional: Int) {
        if registry.capacity - registry.count < additional { registry.reserveCapacity(registry.count + additional) }
    }

    /// Tells the store that the rows of `ids` not loaded yet are the next ones
    /// ``loadBatch(_:entity:)`` reads (see ``PersistentStore/prepareRows(for:of:)``).
    func prepareBatch(_ ids: [ManagedObjectID], entity: EntityDescription) {
        let missing = ids.filter { $0.primaryKey != nil && registry[$0]?.isFault ?? true }
        if let store = batchStore(for: missing) { store.prepareRows(for: missing, of: entity) }
    }

    /// Finds the position of each row read for a batch among the batch's IDs (the
    /// whole ID: an entity kept in two stores has the same keys in both).
    ///
    /// The stores return a batch's rows in the order of its IDs, or close to it
    /// (SQLite in their order, PostgreSQL in key order), but may return them in
    /// any order. Each row is first compared with the ID after the last match
    /// (one comparison a row when the orders agree); when that is not it, a
    /// small batch is searched forward from there (a batch's length at worst),
    /// a large one through a dictionary made once, at its first such row.
    private struct BatchPositions {
        let ids: [ManagedObjectID]
        var dictionary: [ManagedObjectID: Int]?
        var next = 0

        init(_ ids: [ManagedObjectID]) {
            self.ids = ids
        }

        mutating func position(of id: ManagedObjectID) -> Int? {
            guard !ids.isEmpty else { return nil }
            if next < ids.count, ids[next] == id {
                next += 1
                return next - 1
            }
            if ids.count > 64 {
                if dictionary == nil {
                    dictionary = Dictionary(ids.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
                }
                guard let position = dictionary?[id] else { return nil }
                next = position + 1
                return position
            }
            for step in 0..<ids.count {
                let position = (next + step) % ids.count
                if ids[position] == id {
                    next = position + 1
                    return position
                }
            }
            return nil
        }
    }

    /// The rows of `ids`: one read by primary key when the context reads the store
    /// directly and the store can, else a fetch with a `SELF IN` predicate.
    private func batchRows(_ ids: [ManagedObjectID], entity: EntityDescription) throws -> [RowSnapshot] {
        if let store = batchStore(for: ids), let rows = try store.rows(for: ids, of: entity) {
            return rows
        }
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = ManagedObjectContext.objectsPredicate(ids)
        return try sourceRows(fetch)
    }

    /// The store to read the rows of `ids` from by key: when the context reads
    /// the store directly and every ID is of one store. Up to 500 keys (or the
    /// store's read-ahead, which it reads in one go): a statement per batch size
    /// stays cached, far below SQLite's limit on bound parameters.
    private func batchStore(for ids: [ManagedObjectID]) -> (any PersistentStore)? {
        guard sharesRowCache, let coordinator = persistentStoreCoordinator, let first = ids.first,
              let store = coordinator.store(for: first), ids.count <= max(500, store.batchReadAheadRows),
              ids.allSatisfy({ $0.storeIdentifier == first.storeIdentifier }) else { return nil }
        return store
    }
}
