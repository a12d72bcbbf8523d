import Foundation
import OpenCoreDataPredicates

extension ManagedObjectContext {
    // MARK: Relationships

    /// The objects of the to-many relationship at `index` of `object`, firing the
    /// relationship fault with one store request if needed.
    func relatedObjects(of object: ManagedObject, index: Int) -> [ManagedObject] {
        guard let value = object.slot(index) else { return [] }
        switch value {
        case .toOne(let id):
            return id.map { [self.object(with: $0)] } ?? []
        case .toMany(let ids?):
            if let members = prefetchedMembers(of: object, index: index, ids: ids) { return members }
            return ids.map { self.object(with: $0) }
        case .toMany(nil):
            guard let relationship = object.entity.allProperties[index] as? RelationshipDescription else { return [] }
            let loaded = sourceRelatedObjects(of: object.objectID, relationship: relationship)
            let ids = loaded?.map(\.objectID) ?? (try? sourceRelatedObjectIDs(of: object.objectID, relationship: relationship)) ?? []
            fillToManyFault(of: object, at: index, with: ids)
            return loaded ?? ids.map { self.object(with: $0) }
        case .attribute:
            return []
        }
    }

    /// The destinations of a to-many fault read with their rows in one query (when
    /// the store can and this context shares the coordinator's row cache): objects
    /// not registered yet become faults whose rows wait in the row cache, so firing
    /// them costs no further query. Nil: ask for the IDs instead.
    func sourceRelatedObjects(of id: ManagedObjectID, relationship: RelationshipDescription) -> [ManagedObject]? {
        guard sharesRowCache, let coordinator = persistentStoreCoordinator else { return nil }
        // Read before the rows, as for a fetch: the faults trust their rows only
        // while no save has changed any row since (see `makeFault`).
        let generation = coordinator.rowGeneration.load(ordering: .acquiring)
        guard var rows = (try? coordinator.relatedRows(of: [id], relationship: relationship))??.first else { return nil }
        rowGenerationAtFetch = generation
        var objects: [ManagedObject] = []
        objects.reserveCapacity(rows.count)
        var unregistered = UnregisteredDestinations(of: relationship, in: registry)
        // The class of the rows' entity, found once for a run of rows of one entity
        // (by the entity's address: no reference count touched per row).
        var classEntity: EntityDescription?
        var objectClass: ManagedObject.Type = ManagedObject.self
        for index in rows.indices {
            let id = rows[index].objectID
            let isNew = unregistered.next(in: registry)
            if !isNew, let registered = registry[id] {
                if registered.isFault, registered.rowCacheOwner == nil {
                    coordinator.retainRow(rows[index])
                    registered.rowCacheOwner = coordinator
                }
                objects.append(registered)
            } else {
                if classEntity.map({ !id.hasEntity($0) }) ?? true {
                    classEntity = id.entity
                    objectClass = ManagedObjectClasses.type(for: id.entity)
                }
                // The new fault takes the row's values.
                objects.append(makeFault(id, rowValues: rows[index].takeValues(), version: rows[index].version, type: objectClass,
                                         unregistered: isNew))
            }
        }
        return objects
    }

    /// The objects prefetching filled the to-many relationship at `index` of
    /// `object` with, when they still stand for its value `ids` (see
    /// `ManagedObject.PrefetchedMembers`): no registry lookup per member. Nil otherwise.
    func prefetchedMembers(of object: ManagedObject, index: Int, ids: [ManagedObjectID]) -> [ManagedObject]? {
        guard !object.prefetchedMembers.isEmpty,
              let entry = object.prefetchedMembers.first(where: { $0.index == index }),
              entry.stand(for: ids, generation: registry.generation) else { return nil }
        return entry.objects
    }

    /// Gives the to-many fault at `index` of `object` its members: the relationship
    /// is loaded, and stays unchanged (its committed value is the same).
    func fillToManyFault(of object: ManagedObject, at index: Int, with ids: [ManagedObjectID]) {
        object.writeLoadedValue(.toMany(ids), at: index)
        if object.eventNumber == eventNumber, object.eventStart != nil { object.eventStart?[index] = .toMany(ids) }
    }

    /// Makes `destination`'s inverse of `relationship` include `source`.
    func addInverse(of relationship: RelationshipDescription, to destination: ManagedObject, pointingTo source: ManagedObject) {
        guard let inverse = relationship.inverseRelationship,
              let index = destination.entity.propertyIndex(named: inverse.name) else { return }
        if inverse.isToMany {
            var ids = relatedObjects(of: destination, index: index).map(\.objectID)
            guard !ids.contains(source.objectID) else { return }
            ids.append(source.objectID)
            destination.setSlot(index, .toMany(ids))
        } else {
            // The destination pointed elsewhere: that object loses the destination.
            if case .toOne(let previous?)? = destination.slot(index), previous != source.objectID {
                let previousObject = object(with: previous)
                if let forward = previousObject.entity.propertyIndex(named: relationship.name) {
                    let remaining = relatedObjects(of: previousObject, index: forward).filter { $0 !== destination }
                    previousObject.setSlot(forward, relationship.isToMany ? .toMany(remaining.map(\.objectID)) : .toOne(nil))
                }
            }
            destination.setSlot(index, .toOne(source.objectID))
        }
    }

    /// Removes `source` from `destination`'s inverse of `relationship`.
    func removeInverse(of relationship: RelationshipDescription, from destination: ManagedObject, pointingTo source: ManagedObject) {
        guard let inverse = relationship.inverseRelationship,
              let index = destination.entity.propertyIndex(named: inverse.name) else { return }
        if inverse.isToMany {
            let ids = relatedObjects(of: destination, index: index).map(\.objectID)
            guard ids.contains(source.objectID) else { return }
            destination.setSlot(index, .toMany(ids.filter { $0 != source.objectID }))
        } else if case .toOne(source.objectID)? = destination.slot(index) {
            destination.setSlot(index, .toOne(nil))
        }
    }

    // MARK: Processing pending changes

    /// Ends the current event: applies the delete rules of objects deleted since the
    /// last call (cascade deletes, nullified inverses), closes the undo group of the
    /// event, and posts ``objectsDidChangeNotification`` with what changed.
    public func processPendingChanges() {
        assertOnQueue()
        guard !isProcessingChanges else { return }
        isProcessingChanges = true
        defer { isProcessingChanges = false }
        propagateDeletes()
        _ = undoManager?.endEventGroup()
        postObjectsDidChange()
    }

    func propagateDeletes() {
        while !pendingDeletes.isEmpty {
            let batch = pendingDeletes
            pendingDeletes = []
            for object in batch where object.deletedFlag {
                object.prepareForDeletion()
                for (index, property) in object.entity.allProperties.enumerated() {
                    guard let relationship = property as? RelationshipDescription else { continue }
                    let related = relatedObjects(of: object, index: index)
                    switch relationship.deleteRule {
                    case .cascade:
                        for destination in related where !destination.deletedFlag { delete(destination) }
                        for destination in related { removeInverse(of: relationship, from: destination, pointingTo: object) }
                    case .nullify:
                        for destination in related { removeInverse(of: relationship, from: destination, pointingTo: object) }
                    case .deny, .noAction:
                        break
                    }
                }
                if object.insertedFlag {
                    // A new object that is deleted is simply forgotten at the save.
                    insertedObjectsByID.remove(object)
                    // Inserted in this event too: nobody saw it. Inserted earlier:
                    // observers are told it is gone.
                    if eventInserted.remove(object) != nil { eventDeleted.remove(object) }
                }
            }
        }
    }

    func postObjectsDidChange() {
        // The event's sets are the notification's (no copies).
        let inserted = eventInserted
        let deleted = eventDeleted
        let updated = eventUpdated.filter { !$0.insertedFlag && !$0.deletedFlag }
        let refreshed = eventRefreshed
        // Objects inserted in an earlier event and changed in this one: not in the
        // notification's updated set (as the context's `updatedObjects`), but
        // synchronous observers need them.
        let observed = synchronousObservers.isEmpty ? nil : observedChange(inserted: inserted, deleted: deleted, refreshed: refreshed)
        eventInserted = []
        eventUpdated = []
        eventDeleted = []
        eventRefreshed = []
        endEvent()
        if let observed { notifySynchronousObservers(observed) }
        guard !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty || !refreshed.isEmpty else { return }
        NotificationCenter.default.post(name: ManagedObjectContext.objectsDidChangeNotification, object: self, userInfo: UserInfoTemplate.objectsDidChange.userInfo(
            inserted, updated, deleted, refreshed))
        guard !changeObservers.isEmpty else { return }
        let summary = ContextChangeSummary(insertedObjectIDs: Set(inserted.map(\.objectID)),
                                           updatedObjectIDs: Set(updated.map(\.objectID)),
                                           deletedObjectIDs: Set(deleted.map(\.objectID)),
                                           refreshedObjectIDs: Set(refreshed.map(\.objectID)))
        for continuation in changeObservers.values { continuation.yield(summary) }
    }
}
