import Foundation
import OpenCoreDataPredicates

extension ManagedObjectContext {
    /// Commits every unsaved change to the persistent stores, in one transaction per
    /// store.
    ///
    /// The save applies pending delete rules, calls `willSave()` on each changed
    /// object, validates every inserted, updated and deleted object, and only then
    /// writes. If anything fails — validation (all failures gathered in one error,
    /// ``CoreDataError/Code/validationMultipleErrors`` when several), an optimistic
    /// locking conflict (``CoreDataError/Code/managedObjectMerge``) the
    /// ``mergePolicy`` does not resolve, the store — the error is thrown and
    /// neither the store nor the context has changed: the changes are still there
    /// to fix or roll back.
    ///
    /// ```swift
    /// do {
    ///     try context.save()
    /// } catch {
    ///     context.rollback()
    /// }
    /// ```
    ///
    /// - Throws: ``CoreDataError``: a validation code (1550-1690, or
    ///   ``CoreDataError/Code/validationMultipleErrors`` gathering several);
    ///   ``CoreDataError/Code/managedObjectMerge`` (133020) or
    ///   ``CoreDataError/Code/managedObjectConstraintMerge`` (133021) for conflicts
    ///   the merge policy leaves; ``CoreDataError/Code/persistentStoreSave``
    ///   (134030) when the context has no coordinator; any error the store
    ///   reports while writing.
    public func save() throws {
        assertOnQueue()
        try saveResolvingConflicts()
        // The new objects saved, which the context no longer holds as inserted:
        // those nobody else holds go now, in the order they were made.
        registry.dropUnreferencedListed()
    }

    /// One attempt at saving (``save()`` resolves conflicts and tries again).
    func saveOnce() throws {
        processPendingChanges()
        guard hasChanges else { return }
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.persistentStoreSave, "The context has no persistent store coordinator")
        }
        NotificationCenter.default.post(name: ManagedObjectContext.willSaveNotification, object: self)

        // One pass over the changed objects calls `willSave()` and sorts them; it
        // is done again only if the calls changed what the context holds (each
        // pass over many objects is paid in cache misses).
        let versionBeforeWillSave = changeSetVersion
        var sorting = SaveSorting(changedObjectsOf: self, callingWillSave: true)
        processPendingChanges()
        if changeSetVersion != versionBeforeWillSave { sorting = SaveSorting(changedObjectsOf: self, callingWillSave: false) }
        let inserted = sorting.inserted, deleted = sorting.deleted, updated = sorting.updated
        let forgotten = sorting.forgotten, hasRelationships = sorting.hasRelationships
        let versionAfterSorting = changeSetVersion

        // Without relationships to re-key, a new object's row is its values as they
        // are: each is taken as the object is validated (one pass over the objects
        // less), under its temporary ID, replaced below. Validation is user code:
        // if it changed any object or the sets, the rows are taken again.
        let takesRowsEarly = !hasRelationships && !hasChildren.load(ordering: .relaxed)
        var earlyRows: [RowSnapshot] = []
        if takesRowsEarly {
            earlyRows.reserveCapacity(inserted.count)
            try validate(inserted: inserted, updated: updated, deleted: deleted) { object in
                earlyRows.append(RowSnapshot(objectID: object.objectID, version: 1, rowValues: stored(object.storage ?? RowValues(), of: object.entity)))
            }
        } else {
            try validate(inserted: inserted, updated: updated, deleted: deleted)
        }
        // (A change to an object records it in the event's sets.)
        let earlyRowsHold = takesRowsEarly && eventInserted.isEmpty && eventUpdated.isEmpty && eventDeleted.isEmpty
            && changeSetVersion == versionAfterSorting

        // Permanent IDs for new objects, per entity, aligned with `inserted`.
        // (A child context keeps temporary IDs: its parent gets them.)
        var newIDs = [ManagedObjectID?](repeating: nil, count: inserted.count)
        if parent == nil {
            for group in sorting.temporaryByEntity {
                let ids = try coordinator.newObjectIDs(for: group.entity, count: group.indexes.count)
                for (index, id) in zip(group.indexes, ids) { newIDs[index] = id }
            }
        }
        // Relationship values name objects by ID: new objects' temporary IDs become
        // permanent, forgotten objects drop out. Without relationships in the save,
        // values are stored as they are.
        var mapping: [ManagedObjectID: ManagedObjectID] = [:]
        if hasRelationships || hasChildren.load(ordering: .relaxed) {
            mapping.reserveCapacity(inserted.count)
            for (object, id) in zip(inserted, newIDs) { if let id { mapping[object.objectID] = id } }
        }
        let forgottenIDs = Set(forgotten.map(\.objectID))
        func remapped(_ values: RowValues) -> RowValues {
            guard hasRelationships else { return values }
            return values.mapValues { value in
                switch value {
                case .toOne(let id?): return .toOne(mapping[id] ?? id)
                case .toMany(let ids?): return .toMany(ids.map { mapping[$0] ?? $0 }.filter { !forgottenIDs.contains($0) })
                default: return value
                }
            }
        }

        var changes = SaveChanges()
        changes.transactionAuthor = transactionAuthor
        changes.contextName = name
        if earlyRowsHold {
            swap(&changes.inserted, &earlyRows)
            changes.inserted.withUnsafeMutableBufferPointer { rows in
                for (index, newID) in newIDs.enumerated() { if let newID { rows[index].objectID = newID } }
            }
        } else {
            changes.inserted.reserveCapacity(inserted.count)
            for (object, newID) in zip(inserted, newIDs) {
                changes.inserted.append(RowSnapshot(objectID: newID ?? object.objectID, version: 1,
                                                    rowValues: stored(remapped(object.storage ?? RowValues()), of: object.entity)))
            }
        }
        // Objects whose only changes are transient write no row: their version stays.
        var rowWritten = [Bool](repeating: false, count: updated.count)
        for (position, object) in updated.enumerated() {
            var changedIndexes = object.changedIndexes().filter { !object.entity.allProperties[$0].isTransient }
            guard !changedIndexes.isEmpty else { continue }
            // A derived attribute of the row is written with every change of it.
            for derivation in object.entity.ownRowDerivations where !changedIndexes.contains(derivation.index) {
                changedIndexes.append(derivation.index)
            }
            rowWritten[position] = true
            changes.updated.append(RowSnapshot(objectID: object.objectID, version: object.committedVersion ?? 0,
                                               rowValues: stored(remapped(object.storage ?? RowValues()), of: object.entity)))
            changes.changedProperties[object.objectID] = changedIndexes
        }
        for object in deleted {
            changes.deleted.append((object.objectID, object.committedVersion ?? 0))
        }

        if let parent {
            try parent.performAndWait { () throws -> Void in try parent.applyChildSave(changes) }
        } else {
            try coordinator.save(changes)
            if hasChildren.load(ordering: .relaxed) { savedTemporaryIDs.merge(mapping) { _, new in new } }
        }
        advanceQueryGeneration()

        // The store has the changes: bring the context in step.
        let setsUnchanged = changeSetVersion == versionAfterSorting
        for object in forgotten { unregister(object); object.insertedFlag = false; object.eventStart = nil }
        if hasRelationships {
            for object in inserted + deleted + updated {
                if let storage = object.storage { object.storage = remapped(storage) }
            }
        }
        let version: Int64 = parent == nil ? 1 : 0
        // One pass over each kind of object (each pass over many objects is paid in
        // cache misses); the IDs for the notifications are gathered on the way.
        var insertedIDs: [ManagedObjectID] = []
        insertedIDs.reserveCapacity(inserted.count)
        // When the saved objects are all the change sets hold (the usual case), the
        // sets are emptied at once: removing keys one by one from a large set
        // shifts their neighbors back, rehashing each. The saved objects came from
        // `strong`, distinct, after the sets' last change: if nothing else
        // (validation is user code) changed the sets since, equal counts mean
        // equal sets.
        // (Forgotten objects have just left them.)
        let emptiesSets = !retainsRegisteredObjects && setsUnchanged
            && strong.count == inserted.count + updated.count + deleted.count
            && insertedObjectsByID.count == inserted.count && deletedObjectsByID.count == deleted.count
        // The notification's sets of inserted and deleted objects are then the
        // context's own.
        var insertedSet: Set<ManagedObject>?, deletedSet: Set<ManagedObject>?
        if emptiesSets {
            insertedSet = insertedObjectsByID
            deletedSet = deletedObjectsByID
            strong = []
            insertedObjectsByID = []
            deletedObjectsByID = []
        }
        registry.beginRekeying()
        inserted.withUnsafeBufferPointer { objects in
            for index in objects.indices {
                Prefetching.object(of: objects, at: index + Prefetching.distance)
                let object = objects[index]
                object.eventStart = nil
                if !emptiesSets { insertedObjectsByID.remove(object) }
                if let newID = newIDs[index] {
                    // (A key the store just handed out: no object is registered under it.)
                    registry.rekey(object, to: newID, fresh: true)
                }
                object.insertedFlag = false
                // The object holds its committed row; the coordinator's row cache
                // learns it only if the object turns into a fault and fires again.
                object.commitCurrentValues(version: version)
                if !retainsRegisteredObjects && !emptiesSets { strong.remove(object) }
                insertedIDs.append(object.objectID)
            }
        }
        registry.pruneTemporaries()
        for (position, object) in updated.enumerated() {
            object.eventStart = nil
            object.commitCurrentValues(version: (object.committedVersion ?? 0) + (rowWritten[position] ? version : 0))
            if !retainsRegisteredObjects && !emptiesSets { strong.remove(object) }
        }
        for object in deleted {
            object.eventStart = nil
            if emptiesSets {
                registry.unregister(object)
                if object.managedObjectContext === self { object.managedObjectContext = nil }
            } else {
                unregister(object)
            }
            object.deletedFlag = false
            // The coordinator dropped the row from its cache with the save.
            if parent == nil { object.rowCacheOwner = nil }
        }
        // (Objects of the base class have no `didSave()` of their own.)
        if !sorting.allPlain {
            for object in inserted { object.didSave() }
            for object in updated { object.didSave() }
            for object in deleted { object.didSave() }
        }

        // Saved objects nobody else holds are freed at the end of the save. The
        // notification's sets are released first (in this scope), so that the
        // last references are the sorted arrays': the objects are then freed in
        // the order they lie in memory, not in a set's hash order (a cache miss
        // per object, and freed blocks merged with neighbors out of the cache,
        // once a save outgrows the caches).
        do {
            let summary = ContextSaveSummary(
                insertedObjectIDs: Set(insertedIDs),
                updatedObjectIDs: Set(updated.map(\.objectID)),
                deletedObjectIDs: Set(deleted.map(\.objectID)),
                contextName: name, transactionAuthor: transactionAuthor)
            publish(summary, inserted: insertedSet.take() ?? Set(inserted), updated: Set(updated), deleted: deletedSet.take() ?? Set(deleted))
            notifySynchronousObservers(ObservedContextChange(kind: .didSave))
        }
        withExtendedLifetime((sorting, inserted, updated, deleted)) {}
    }

    /// Transient properties are not stored: their slots are saved as nil.
    private func stored(_ values: RowValues, of entity: EntityDescription) -> RowValues {
        let derivations = entity.ownRowDerivations
        if entity.frozenHasTransients == false && derivations.isEmpty { return values }
        var values = values
        if entity.frozenHasTransients != false {
            for (index, property) in entity.allProperties.enumerated() where index < values.count && property.isTransient {
                values[index] = .attribute(.null)
            }
        }
        // Derived attributes of the object's own row, computed as Core Data
        // computes them on save (the object reads them once refreshed).
        let now = Date()
        for derivation in derivations where derivation.index < values.count {
            var source = AttributeValue.null
            if let sourceIndex = derivation.sourceIndex, sourceIndex < values.count, case .attribute(let value) = values[sourceIndex] {
                source = value
            }
            values[derivation.index] = .attribute(derivation.form.ownRowValue(source: source, now: now))
        }
        return values
    }

    /// Gives new objects permanent IDs now, before they are saved
    /// (`obtainPermanentIDs(for:)`).
    ///
    /// - Parameter objects: The objects to give permanent IDs; those that have
    ///   one already, or belong to another context, are left alone.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the context has no coordinator; any error the store
    ///   reports while making the IDs.
    public func obtainPermanentIDs(for objects: [ManagedObject]) throws {
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        let temporary = objects.filter { $0.objectID.isTemporaryID && $0.managedObjectContext === self }
        var mapping: [ManagedObjectID: ManagedObjectID] = [:]
        for group in Dictionary(grouping: temporary, by: { ObjectIdentifier($0.entity) }).values {
            guard let first = group.first else { continue }
            let ids = try coordinator.newObjectIDs(for: first.entity, count: group.count)
            for (object, id) in zip(group, ids) { mapping[object.objectID] = id }
        }
        rekey(temporary, mapping: mapping)
    }

    /// Gives new objects the permanent IDs of rows their store does not hold yet,
    /// chosen by the caller: what copying a store with its primary keys needs, so
    /// that the copy's object URIs are the original's (`ocd store load` does this).
    ///
    /// ```swift
    /// // The store of `coordinator` has the UUID of the store the URI comes from.
    /// let id = try #require(coordinator.managedObjectID(forURIRepresentation: uri))
    /// let mood = ManagedObject(entity: id.entity, insertInto: context)
    /// try context.assignObjectIDs([id], to: [mood])
    /// try context.save()                       // the row's Z_PK is the URI's key
    /// ```
    ///
    /// The store reserves the keys: the keys it hands out to other new objects
    /// afterwards are greater. An ID whose row exists already makes the save fail
    /// (the store refuses the duplicate key), not overwrite the row.
    ///
    /// - Parameters:
    ///   - objectIDs: Permanent IDs of this context's coordinator's stores, one per
    ///     object, each of the entity of its object; no object of this context may
    ///     be registered under one of them.
    ///   - objects: Objects inserted into this context and not saved yet (they
    ///     have temporary IDs).
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the counts differ, an object is not a new object of this
    ///   context, an ID is temporary, of another entity, of no store of the
    ///   coordinator, or already registered; with code
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   when the store cannot reserve keys.
    public func assignObjectIDs(_ objectIDs: [ManagedObjectID], to objects: [ManagedObject]) throws {
        assertOnQueue()
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        guard objectIDs.count == objects.count else {
            throw CoreDataError(.coreData, "assignObjectIDs: \(objectIDs.count) IDs for \(objects.count) objects")
        }
        var byStore: [ObjectIdentifier: (store: any PersistentStore, ids: [ManagedObjectID])] = [:]
        var seen = Set<ManagedObjectID>()
        for (id, object) in zip(objectIDs, objects) {
            guard object.managedObjectContext === self, object.objectID.isTemporaryID, object.isInserted else {
                throw CoreDataError(.coreData, "assignObjectIDs: \(object.objectID) is not a new object of this context",
                                    entityName: object.entity.name)
            }
            guard !id.isTemporaryID, id.entity.name == object.entity.name else {
                throw CoreDataError(.coreData, "assignObjectIDs: \(id) is not a permanent ID of entity \(object.entity.name)",
                                    entityName: object.entity.name)
            }
            guard let identifier = id.storeIdentifier, let store = coordinator.persistentStore(withIdentifier: identifier) else {
                throw CoreDataError(.coreData, "assignObjectIDs: no store of the coordinator holds \(id)", entityName: id.entity.name)
            }
            guard registeredObject(for: id) == nil, seen.insert(id).inserted else {
                throw CoreDataError(.coreData, "assignObjectIDs: an object is registered under \(id) already", entityName: id.entity.name)
            }
            byStore[ObjectIdentifier(store), default: (store, [])].ids.append(id)
        }
        for (store, ids) in byStore.values { try store.reserveObjectIDs(ids) }
        var mapping: [ManagedObjectID: ManagedObjectID] = [:]
        for (id, object) in zip(objectIDs, objects) {
            // The store's own ID for the key (its scope), equal to `id`.
            mapping[object.objectID] = id
        }
        rekey(objects, mapping: mapping)
    }

    /// Re-keys `objects` to the IDs `mapping` gives their current ones, and the
    /// references every registered object holds to them.
    private func rekey(_ objects: [ManagedObject], mapping: [ManagedObjectID: ManagedObjectID]) {
        registry.beginRekeying()
        for object in objects {
            guard let newID = mapping[object.objectID] else { continue }
            registry.rekey(object, to: newID, fresh: true)
        }
        registry.pruneTemporaries()
        for object in registry.objects {
            guard let storage = object.storage else { continue }
            object.storage = storage.mapValues { value in
                switch value {
                case .toOne(let id?): return .toOne(mapping[id] ?? id)
                case .toMany(let ids?): return .toMany(ids.map { mapping[$0] ?? $0 })
                default: return value
                }
            }
        }
    }

    // MARK: Discarding changes

    /// Discards every unsaved change: new objects are forgotten, deleted ones
    /// restored, updated ones get their saved values back; the undo stack is
    /// cleared.
    public func rollback() {
        assertOnQueue()
        let changedObjects = Array(strong)
        for object in changedObjects {
            if object.insertedFlag {
                object.insertedFlag = false
                object.deletedFlag = false
                unregister(object)
                continue
            }
            object.deletedFlag = false
            if let committed = object.committedRow?.values { object.storage = committed }
            object.eventStart = nil
            if !retainsRegisteredObjects { strong.remove(object) }
        }
        endEvent()
        insertedObjectsByID = []
        deletedObjectsByID = []
        pendingDeletes = []
        eventInserted = []
        eventUpdated = []
        eventDeleted = []
        undoManager?.removeAllActions()
        notifySynchronousObservers(ObservedContextChange(kind: .reloaded))
    }

    /// Forgets every registered object: they become invalid and the context is as
    /// new (unsaved changes are lost). Clears the undo stack.
    public func reset() {
        assertOnQueue()
        let invalidated = Set(registry.objects)
        for object in invalidated {
            object.managedObjectContext = nil
            object.eventStart = nil
            object.insertedFlag = false
            object.deletedFlag = false
        }
        registry.removeAll()
        strong = []
        insertedObjectsByID = []
        deletedObjectsByID = []
        pendingDeletes = []
        eventInserted = []
        eventUpdated = []
        eventDeleted = []
        eventRefreshed = []
        endEvent()
        undoManager?.removeAllActions()
        advanceQueryGeneration()
        NotificationCenter.default.post(name: ManagedObjectContext.objectsDidChangeNotification, object: self, userInfo: [
            NotificationKey.invalidatedObjects: invalidated,
            NotificationKey.invalidatedAllObjects: true,
        ])
        notifySynchronousObservers(ObservedContextChange(kind: .reloaded))
    }

    /// Refreshes an object from the store (`refresh(_:mergeChanges:)`). Without
    /// merging, unsaved changes are discarded and the object turns back into a
    /// fault; with merging, it gets the latest stored values with its own unsaved
    /// changes applied on top.
    ///
    /// - Parameters:
    ///   - object: An object registered in this context; inserted objects are
    ///     left alone.
    ///   - mergeChanges: Whether the object's unsaved changes are kept over the
    ///     stored values.
    public func refresh(_ object: ManagedObject, mergeChanges: Bool) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.insertedFlag else { return }
        eventRefreshed.insert(object)
        // A refreshed fault reads its row anew when it fires.
        object.faultRow = nil
        if !mergeChanges || !object.hasChanges {
            guard !object.isFault else { return }
            object.willTurnIntoFault()
            object.storage = nil
            object.committed = nil
            object.eventStart = nil
            object.deletedFlag = false
            deletedObjectsByID.remove(object)
            if !retainsRegisteredObjects { strong.remove(object) }
            object.didTurnIntoFault()
            return
        }
        let local = object.changedIndexes()
        guard persistentStoreCoordinator != nil, let storage = object.storage,
              let row = (try? freshRow(for: object.objectID)) ?? nil else { return }
        var merged = row.rowValues.mapValues { value -> SnapshotValue in
            if case .toMany = value { return .toMany(nil) }
            return value
        }
        for index in local where index < merged.count { merged[index] = storage[index] }
        object.committed = RowSnapshot(objectID: row.objectID, version: row.version, rowValues: row.rowValues.mapValues { value in
            if case .toMany = value { return .toMany(nil) }
            return value
        })
        object.storage = merged
    }

    /// Refreshes every registered object, keeping unsaved changes.
    public func refreshAllObjects() {
        for object in registry.objects { refresh(object, mergeChanges: true) }
    }
}

/// A save's changed objects, sorted by what the save does with them.
struct SaveSorting {
    var inserted: [ManagedObject] = []
    var updated: [ManagedObject] = []
    var deleted: [ManagedObject] = []
    /// Inserted and deleted before the save: never stored, just dropped.
    var forgotten: [ManagedObject] = []
    /// Whether any of the objects' entities has relationships.
    var hasRelationships = false
    /// Whether every object is of the base class (no lifecycle hook of its own).
    var allPlain = true
    /// New objects needing permanent IDs, by entity (indexes into `inserted`).
    var temporaryByEntity: [(entity: EntityDescription, indexes: [Int])] = []

    /// Sorts the objects of `context` that have changes, calling `willSave()` on
    /// each first when `callingWillSave`.
    ///
    /// The changed objects are those of the context's `strong` set (every object
    /// with changes is there). When they are most of the registered objects (an
    /// import), they are walked in the registry's slot order instead of the set's
    /// hash order: that is the order they were made in and lie in memory, where
    /// hash order costs a cache miss per object once a save outgrows the caches.
    init(changedObjectsOf context: ManagedObjectContext, callingWillSave: Bool) {
        let strong = context.strong
        if 2 * strong.count >= context.registry.slotsInUse {
            let version = context.changeSetVersion
            self.init(count: strong.count, callingWillSave: callingWillSave) { visit in
                context.registry.forEachRegistered { object in
                    if object.hasChanges { visit(object) }
                }
            }
            // (Unless `willSave()` changed objects: then the save sorts them again.)
            assert(context.changeSetVersion != version
                   || inserted.count + updated.count + deleted.count + forgotten.count == strong.count { $0.hasChanges },
                   "a changed object missing from the registry, or one with changes missing from `strong`")
        } else {
            self.init(count: strong.count, callingWillSave: callingWillSave) { visit in
                for object in strong where object.hasChanges { visit(object) }
            }
        }
    }

    /// Sorts the objects `walk` visits (each once), calling `willSave()` on each
    /// first when `callingWillSave`; `count` is at least their number.
    private init(count: Int, callingWillSave: Bool, walk: ((ManagedObject) -> Void) -> Void) {
        inserted.reserveCapacity(count)
        // Each new object's creation number (its temporary ID's), by position in
        // `inserted`: a set gives its objects in hash order (and a registry slot
        // handed out again breaks the slots' order), and new objects are put back
        // in the order they were made (below).
        var creation: [(number: UInt64, position: Int32)] = []
        creation.reserveCapacity(count)
        var inCreationOrder = true
        // Changed and deleted objects by primary key, the same way: fetched objects
        // lie in memory roughly in key order, and SQLite updates and deletes rows
        // in key order along its B-tree.
        var updatedOrder: [(number: UInt64, position: Int32)] = []
        var deletedOrder: [(number: UInt64, position: Int32)] = []
        var updatedInOrder = true
        var deletedInOrder = true
        func note(_ number: UInt64, at position: Int, in order: inout [(number: UInt64, position: Int32)], sorted: inout Bool) {
            if let last = order.last, last.number > number { sorted = false }
            order.append((number, Int32(truncatingIfNeeded: position)))
        }
        func primaryKey(_ object: ManagedObject) -> UInt64 {
            if case .permanent(let key) = object.objectID.key { return UInt64(bitPattern: key) }
            return .max
        }
        walk { object in
            if callingWillSave { object.willSave() }
            if object.insertedFlag {
                if object.deletedFlag {
                    forgotten.append(object)
                } else {
                    let number: UInt64
                    if case .temporary(let made) = object.objectID.key { number = made } else { number = .max }
                    note(number, at: inserted.count, in: &creation, sorted: &inCreationOrder)
                    inserted.append(object)
                }
            } else if object.deletedFlag {
                note(primaryKey(object), at: deleted.count, in: &deletedOrder, sorted: &deletedInOrder)
                deleted.append(object)
            } else {
                note(primaryKey(object), at: updated.count, in: &updatedOrder, sorted: &updatedInOrder)
                updated.append(object)
            }
            if !hasRelationships && !object.entity.relationshipsByName.isEmpty { hasRelationships = true }
            if allPlain && type(of: object) != ManagedObject.self { allPlain = false }
        }
        // New objects in the order they were made: they get their primary keys in
        // that order, and every later pass of the save (validation, rows, writes,
        // re-keying, freeing) walks them as they lie in memory, one after the
        // other, instead of jumping about it in hash order (a cache miss per
        // object and per pass once a save outgrows the caches). Positions are
        // sorted, not the objects (moving an object retains and releases it).
        if !inCreationOrder { SaveSorting.sort(&inserted, by: &creation) }
        if !updatedInOrder { SaveSorting.sort(&updated, by: &updatedOrder) }
        if !deletedInOrder { SaveSorting.sort(&deleted, by: &deletedOrder) }
        var lastGroup = -1
        for position in inserted.indices where creation[position].number != .max {
            let object = inserted[position]
            if lastGroup < 0 || temporaryByEntity[lastGroup].entity !== object.entity {
                lastGroup = temporaryByEntity.firstIndex { $0.entity === object.entity }
                    ?? { temporaryByEntity.append((object.entity, [])); return temporaryByEntity.count - 1 }()
            }
            temporaryByEntity[lastGroup].indexes.append(position)
        }
    }

    /// Sorts `objects` by the numbers in `order` (each with the position of its
    /// object), moving the objects, not copying them. `order` ends up sorted, its
    /// positions used up (see ``permute(_:taking:)``).
    static func sort(_ objects: inout [ManagedObject], by order: inout [(number: UInt64, position: Int32)]) {
        order.sort { $0.number < $1.number }
        permute(&objects, taking: &order)
    }

    /// Reorders `objects` so that the object at each position `i` is the one that
    /// was at `order[i].position`, in place: the references are moved, cycle by
    /// cycle, never copied (no retain, no release). `order`'s positions are used
    /// up (set to -1) as it goes.
    static func permute(_ objects: inout [ManagedObject], taking order: inout [(number: UInt64, position: Int32)]) {
        precondition(objects.count == order.count)
        objects.withUnsafeMutableBufferPointer { objects in
            guard let base = objects.baseAddress else { return }
            for start in objects.indices where order[start].position >= 0 {
                let first = (base + start).move()
                var current = start
                var source = Int(order[current].position)
                while source != start {
                    (base + current).moveInitialize(from: base + source, count: 1)
                    order[current].position = -1
                    current = source
                    source = Int(order[current].position)
                }
                (base + current).initialize(to: first)
                order[current].position = -1
            }
        }
    }
}
