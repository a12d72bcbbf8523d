import Foundation
import OpenCoreDataPredicates

extension ManagedObjectContext {
    // MARK: Where a context reads and writes: its parent or the coordinator

    /// The row of `id` as this context's source has it: the parent context's
    /// object (with the parent's unsaved changes), or the coordinator's row.
    func sourceRow(for id: ManagedObjectID) throws -> RowSnapshot? {
        if let parent { return try parent.performAndWait { () throws -> RowSnapshot? in try parent.rowForChild(id) } }
        return try persistentStoreCoordinator?.row(for: id, generation: try readGeneration())
    }

    /// The row of `id` as stored now, bypassing caches (a child asks its parent).
    func freshRow(for id: ManagedObjectID) throws -> RowSnapshot? {
        if parent != nil { return try sourceRow(for: id) }
        return try persistentStoreCoordinator?.storeRow(for: id, generation: try readGeneration())
    }

    /// The rows a fetch matches in this context's source.
    func sourceRows(_ fetch: StoreFetch) throws -> [RowSnapshot] {
        if let parent { return try parent.performAndWait { () throws -> [RowSnapshot] in try parent.rowsForChild(fetch) } }
        guard let coordinator = persistentStoreCoordinator else { return [] }
        // Read before the rows: faults made from them trust them only while no save
        // has changed any row since (see `makeFault`).
        rowGenerationAtFetch = coordinator.rowGeneration.load(ordering: .acquiring)
        return try coordinator.fetchRows(fetch, generation: try readGeneration())
    }

    /// The number of rows a fetch matches in this context's source.
    func sourceCount(_ fetch: StoreFetch) throws -> Int {
        if let parent {
            return try parent.performAndWait { () throws -> Int in
                let request = FetchRequest<ManagedObject>(entity: fetch.entity)
                request.predicate = fetch.predicate
                request.includesSubentities = fetch.includesSubentities
                return try parent.count(for: request)
            }
        }
        return try persistentStoreCoordinator?.count(fetch, generation: try readGeneration()) ?? 0
    }

    /// The destinations of a to-many relationship in this context's source.
    func sourceRelatedObjectIDs(of id: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        if let parent {
            return parent.performAndWait { parent.relatedIDsForChild(of: id, relationship: relationship) }
        }
        return try relatedObjectIDs(of: id, relationship: relationship)
    }

    // MARK: A parent serving its children (on the parent's queue)

    /// The parent's object for an ID a child uses: temporary IDs of objects the
    /// parent saved since are followed to their permanent IDs.
    func objectForChild(_ id: ManagedObjectID) -> ManagedObject? {
        if let object = registry[id] { return object }
        if let saved = savedTemporaryIDs[id] { return object(with: saved) }
        return id.isTemporaryID ? nil : object(with: id)
    }

    func rowForChild(_ id: ManagedObjectID) throws -> RowSnapshot? {
        guard let object = objectForChild(id), !object.deletedFlag else { return nil }
        if object.isFault {
            guard try sourceRow(for: object.objectID) != nil else { return nil }
            fireFault(object)
        }
        return RowSnapshot(objectID: id, version: object.committed?.version ?? 0, rowValues: object.storage ?? RowValues())
    }

    func rowsForChild(_ fetch: StoreFetch) throws -> [RowSnapshot] {
        let request = FetchRequest<ManagedObject>(entity: fetch.entity)
        request.predicate = fetch.predicate
        request.sortDescriptors = fetch.sortDescriptors
        request.includesSubentities = fetch.includesSubentities
        request.fetchOffset = fetch.fetchOffset
        request.fetchLimit = fetch.fetchLimit
        request.returnsObjectsAsFaults = false
        return try fetchObjects(request).map { object in
            fireFault(object)
            return RowSnapshot(objectID: object.objectID, version: object.committed?.version ?? 0, rowValues: object.storage ?? RowValues())
        }
    }

    func relatedIDsForChild(of id: ManagedObjectID, relationship: RelationshipDescription) -> [ManagedObjectID] {
        guard let object = objectForChild(id), let index = object.entity.propertyIndex(named: relationship.name) else { return [] }
        return relatedObjects(of: object, index: index).map(\.objectID)
    }

    /// Takes in a child's save as changes of this context: new objects (with the
    /// child's IDs), changed properties, deletions — undoable and reported like
    /// changes made here.
    func applyChildSave(_ changes: SaveChanges) throws {
        func remap(_ value: SnapshotValue) -> SnapshotValue {
            guard !savedTemporaryIDs.isEmpty else { return value }
            switch value {
            case .toOne(let id?): return .toOne(savedTemporaryIDs[id] ?? id)
            case .toMany(let ids?): return .toMany(ids.map { savedTemporaryIDs[$0] ?? $0 })
            default: return value
            }
        }
        for row in changes.inserted {
            let type = ManagedObjectClasses.type(for: row.objectID.entity)
            let object = type.init(entity: row.objectID.entity, insertInto: nil)
            object.objectID = row.objectID
            object.storage = RowValues(row.rowValues.map(remap))
            object.insertedFlag = true
            register(object)
            strong.insert(object)
            insertedObjectsByID.insert(object)
            eventInserted.insert(object)
            registerUndo { context in context.uninsert(object) }
        }
        for row in changes.updated {
            guard let object = objectForChild(row.objectID) else { continue }
            fireFault(object)
            for index in changes.changedProperties[row.objectID] ?? [] where index < row.rowValues.count {
                object.setSlot(index, remap(row.rowValues[index]))
            }
        }
        for (id, _) in changes.deleted {
            if let object = objectForChild(id) { delete(object) }
        }
        processPendingChanges()
    }
}
