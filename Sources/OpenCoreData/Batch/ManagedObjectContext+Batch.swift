import Foundation
import OpenCoreDataPredicates

extension ManagedObjectContext {
    /// Runs a batch insert in the store (`execute(_:)`): no object is created in
    /// any context. Merge the returned IDs into live contexts if they need them.
    ///
    /// - Parameter request: The entity and the values of the new objects.
    /// - Returns: What the request's ``BatchInsertRequest/resultType`` asks for:
    ///   success, the number of objects inserted, or their IDs.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/coreData`` (134060) when
    ///   the context has no coordinator or the model has no such entity;
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   for a key that is not an attribute;
    ///   ``CoreDataError/Code/persistentStoreSave`` (134030) when no store holds
    ///   the entity or the store is read-only;
    ///   ``CoreDataError/Code/managedObjectValidation`` (1550) for a value of the
    ///   wrong type; any error the store reports while writing.
    @discardableResult
    public func execute(_ request: BatchInsertRequest) throws -> PersistentStoreResult {
        assertOnQueue()
        let entity = try batchEntity(request.entityName)
        var rows: [[Int: AttributeValue]] = []
        func add(_ values: [String: Any]) throws {
            var row: [Int: AttributeValue] = [:]
            for (key, value) in values {
                guard let index = entity.propertyIndex(named: key),
                      let attribute = entity.allProperties[index] as? AttributeDescription else {
                    throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                        "A batch insert of '\(entity.name)' can only set attributes, not '\(key)'",
                                        entityName: entity.name, key: key)
                }
                row[index] = ManagedObject.attributeValue(from: value, for: attribute)
            }
            rows.append(row)
        }
        if let objects = request.objectsToInsert {
            for values in objects { try add(values) }
        } else if let handler = request.dictionaryHandler {
            while true {
                var values: [String: Any] = [:]
                if handler(&values) { break }
                try add(values)
            }
        } else if let handler = request.managedObjectHandler {
            let type = ManagedObjectClasses.type(for: entity)
            while true {
                let object = type.init(entity: entity, insertInto: nil)
                if handler(object) { break }
                var row: [Int: AttributeValue] = [:]
                for (index, value) in (object.storage ?? []).enumerated() where entity.allProperties[index] is AttributeDescription {
                    if case .attribute(let attribute) = value { row[index] = attribute }
                }
                rows.append(row)
            }
        }
        guard let store = persistentStoreCoordinator?.store(for: entity) else {
            throw CoreDataError(.persistentStoreSave, "No persistent store holds entity '\(entity.name)'", entityName: entity.name)
        }
        return try store.execute(.insert(entity: entity, rows: rows), resultType: request.resultType)
    }

    /// Runs a batch update in the store (`execute(_:)`): objects registered in
    /// contexts keep their old values until refreshed (merge the returned IDs with
    /// ``mergeChanges(fromRemoteContextSave:into:)``).
    ///
    /// - Parameter request: The entity, predicate and new values.
    /// - Returns: What the request's ``BatchUpdateRequest/resultType`` asks for:
    ///   success, the number of objects updated, or their IDs.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/coreData`` (134060) when
    ///   the context has no coordinator or the model has no such entity;
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   for a key that is not a stored attribute;
    ///   ``CoreDataError/Code/persistentStoreSave`` (134030) when a store is
    ///   read-only; any error the store reports while writing.
    @discardableResult
    public func execute(_ request: BatchUpdateRequest) throws -> PersistentStoreResult {
        assertOnQueue()
        let entity = try batchEntity(request.entityName)
        var values: [Int: CoreExpression] = [:]
        for (key, value) in request.propertiesToUpdate ?? [:] {
            guard let index = entity.propertyIndex(named: key),
                  let attribute = entity.allProperties[index] as? AttributeDescription, !attribute.isTransient else {
                throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                    "A batch update of '\(entity.name)' can only change stored attributes, not '\(key)'",
                                    entityName: entity.name, key: key)
            }
            if let expression = value as? CoreExpression {
                values[index] = expression
            } else {
                values[index] = .constant(ManagedObject.attributeValue(from: value, for: attribute))
            }
        }
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = request.predicate
        fetch.includesSubentities = request.includesSubentities
        return try runBatch(.update(fetch, values: values), entity: entity, resultType: request.resultType)
    }

    /// Runs a batch delete in the store (`execute(_:)`), delete rules included.
    /// Contexts keep the deleted objects until you merge the returned IDs with
    /// ``mergeChanges(fromRemoteContextSave:into:)``.
    ///
    /// - Parameter request: The entity and predicate, or the object IDs.
    /// - Returns: What the request's ``BatchDeleteRequest/resultType`` asks for:
    ///   success, the number of objects deleted, or their IDs (cascaded deletes
    ///   included).
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/coreData`` (134060) when
    ///   the context has no coordinator or the model has no such entity;
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   for IDs of several entities or a temporary ID;
    ///   ``CoreDataError/Code/validationRelationshipDeniedDelete`` (1600) when a
    ///   deny relationship has destinations;
    ///   ``CoreDataError/Code/persistentStoreSave`` (134030) when the delete
    ///   would break a mandatory inverse or a store is read-only; any error the
    ///   store reports while writing.
    @discardableResult
    public func execute(_ request: BatchDeleteRequest) throws -> PersistentStoreResult {
        assertOnQueue()
        if let ids = request.objectIDs {
            guard let first = ids.first else { return PersistentStoreResult(request.resultType, []) }
            if let other = ids.first(where: { $0.entity.rootEntity !== first.entity.rootEntity }) {
                throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                    "A batch delete by IDs needs objects of one entity: \(first.entityName) and \(other.entityName) are mixed",
                                    entityName: other.entityName)
            }
            if let temporary = ids.first(where: \.isTemporaryID) {
                throw CoreDataError(.persistentStoreUnsupportedRequestType, "Can't batch delete \(temporary): its ID is temporary",
                                    objectDescription: temporary.description)
            }
            return try runBatch(.deleteObjects(ids), entity: first.entity, resultType: request.resultType)
        }
        let entity = try batchEntity(request.entityName ?? "")
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = request.predicate
        fetch.includesSubentities = request.includesSubentities
        return try runBatch(.delete(fetch), entity: entity, resultType: request.resultType)
    }

    private func batchEntity(_ name: String) throws -> EntityDescription {
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        guard let entity = coordinator.managedObjectModel.entitiesByName[name] else {
            throw CoreDataError(.coreData, "The model has no entity named '\(name)'", entityName: name)
        }
        return entity
    }

    /// Runs a batch request on every store holding the entity, each store asked
    /// only for what `resultType` needs (a store reads the changed rows' IDs only
    /// for ``BatchRequestResultType/objectIDs``); the row cache is emptied so that
    /// faults fire with the new values.
    private func runBatch(_ request: StoreBatchRequest, entity: EntityDescription,
                          resultType: BatchRequestResultType) throws -> PersistentStoreResult {
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        var ids: [ManagedObjectID] = []
        var count = 0
        func add(_ result: PersistentStoreResult) {
            ids += result.objectIDs ?? []
            count += result.count ?? 0
        }
        let stores = coordinator.storesHolding(entity)
        // Persistent history records the batch under this context's author and name.
        try HistoryAttribution.$current.withValue(HistoryAttribution(author: transactionAuthor, contextName: name)) {
            if case .deleteObjects(let all) = request {
                for store in stores {
                    // One store holding them all (the usual case): no copy of the IDs.
                    let identifier = store.identifier
                    let mine = stores.count == 1 && all.allSatisfy({ $0.storeIdentifier == identifier })
                        ? all : all.filter { $0.storeIdentifier == identifier }
                    if !mine.isEmpty { add(try store.execute(.deleteObjects(mine), resultType: resultType)) }
                }
            } else {
                for store in stores { add(try store.execute(request, resultType: resultType)) }
            }
        }
        coordinator.forgetCachedRows()
        return resultType == .objectIDs ? PersistentStoreResult(resultType, ids) : PersistentStoreResult(resultType, count: count)
    }
}

/// The keys of the dictionary given to
/// ``ManagedObjectContext/mergeChanges(fromRemoteContextSave:into:)``
/// (`NSInsertedObjectsKey`, `NSUpdatedObjectsKey`, `NSDeletedObjectsKey` and the
/// `...ObjectIDsKey` variants, which mean the same here).
public enum RemoteChangeKey {
    /// The IDs of inserted objects (`NSInsertedObjectsKey`).
    public static let inserted = "inserted"
    /// The IDs of updated objects (`NSUpdatedObjectsKey`).
    public static let updated = "updated"
    /// The IDs of deleted objects (`NSDeletedObjectsKey`).
    public static let deleted = "deleted"
    /// The IDs of inserted objects (`NSInsertedObjectIDsKey`).
    public static let insertedObjectIDs = "inserted_objectIDs"
    /// The IDs of updated objects (`NSUpdatedObjectIDsKey`).
    public static let updatedObjectIDs = "updated_objectIDs"
    /// The IDs of deleted objects (`NSDeletedObjectIDsKey`).
    public static let deletedObjectIDs = "deleted_objectIDs"
}

extension ManagedObjectContext {
    /// Merges changes made behind the contexts' back (a batch request, another
    /// coordinator, another process) into live contexts
    /// (`mergeChanges(fromRemoteContextSave:into:)`), on each context's queue,
    /// exactly as ``mergeChanges(from:)`` merges another context's save:
    /// registered objects that were updated are refreshed (their unsaved changes
    /// kept on top), deleted ones are removed from the context and from the
    /// relationships of the others, inserted ones are announced; observers see all
    /// of it in the next ``objectsDidChangeNotification``.
    ///
    /// ```swift
    /// let result = try context.execute(deleteRequest)   // resultType = .objectIDs
    /// ManagedObjectContext.mergeChanges(
    ///     fromRemoteContextSave: [RemoteChangeKey.deleted: result.objectIDs ?? []],
    ///     into: [context, otherContext])
    /// ```
    ///
    /// - Parameters:
    ///   - changes: The IDs of the inserted, updated and deleted objects, by the
    ///     keys of ``RemoteChangeKey``.
    ///   - contexts: The contexts to merge into; each merges on its own queue,
    ///     and the call waits for them.
    public static func mergeChanges(fromRemoteContextSave changes: [String: [ManagedObjectID]], into contexts: [ManagedObjectContext]) {
        func ids(_ key: String, _ idsKey: String) -> Set<ManagedObjectID> {
            Set((changes[key] ?? []) + (changes[idsKey] ?? []))
        }
        // The same merge as a save of another context, given by IDs.
        let summary = ContextSaveSummary(insertedObjectIDs: ids(RemoteChangeKey.inserted, RemoteChangeKey.insertedObjectIDs),
                                         updatedObjectIDs: ids(RemoteChangeKey.updated, RemoteChangeKey.updatedObjectIDs),
                                         deletedObjectIDs: ids(RemoteChangeKey.deleted, RemoteChangeKey.deletedObjectIDs))
        for context in contexts {
            // The rows changed behind the row cache's back: faults read them anew.
            context.persistentStoreCoordinator?.forgetCachedRows()
            context.performAndWait { context.mergeChanges(from: summary) }
        }
    }
}
