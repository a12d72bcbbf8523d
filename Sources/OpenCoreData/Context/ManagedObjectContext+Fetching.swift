import Foundation
import OpenCoreDataPredicates

extension ManagedObjectContext {
    /// Runs a fetch request (`fetch(_:)`): the matching objects, one per record,
    /// as faults unless the request says otherwise. With `includesPendingChanges`
    /// (the default), unsaved inserts, updates and deletes of this context are
    /// taken into account: filtered and sorted like stored objects.
    ///
    /// ```swift
    /// let request = FetchRequest<Mood>(entityName: "Mood")
    /// request.predicate = try CorePredicate(format: "country.numericISO3166Code == %d", 276)
    /// let moods = try context.fetch(request)
    /// ```
    ///
    /// - Parameter request: The request: entity, predicate, sort, limits and
    ///   result type.
    /// - Returns: The matching results, of the request's result type (objects,
    ///   object IDs, dictionaries, or a single count).
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the request has no entity, names one the model lacks,
    ///   the context has no coordinator, or a result is not of type `Result`;
    ///   any error the store reports while reading.
    public func fetch<Result>(_ request: FetchRequest<Result>) throws -> [Result] {
        if let type = Result.self as? ManagedObject.Type { ManagedObjectClasses.register(type) }
        switch request.resultType {
        case .count:
            return [try count(for: request)].compactMap { $0 as? Result }
        case .dictionary:
            return try fetchDictionaries(request).compactMap { $0 as? Result }
        default:
            break
        }
        if request.resultType == .managedObjectID, let ids = try storedObjectIDs(request) {
            return ids.compactMap { $0 as? Result }
        }
        // Prefetching reads the objects' relationships: they are loaded with the
        // fetch rather than made faults and fired at once.
        let prefetching = !request.relationshipKeyPathsForPrefetching.isEmpty
        let objects = try fetchObjects(request, asFaults: request.returnsObjectsAsFaults && !prefetching)
        if prefetching {
            try prefetch(request.relationshipKeyPathsForPrefetching, for: objects)
        }
        switch request.resultType {
        case .managedObjectID:
            return objects.compactMap { $0.objectID as? Result }
        case .count, .dictionary:
            return []
        case .managedObject:
            // Plain managed objects, the common untyped request: no per-object cast.
            if Result.self == ManagedObject.self { return unsafeBitCast(objects, to: [Result].self) }
            return try objects.map { object in
                guard let result = object as? Result else {
                    throw CoreDataError(.coreData, "The fetch of '\(object.entity.name)' returned \(type(of: object)) objects, not \(Result.self): register the class with ManagedObjectClasses.register or set the entity's class name",
                                        entityName: object.entity.name)
                }
                return result
            }
        }
    }

    /// The number of objects a request would return (`count(for:)`).
    ///
    /// - Parameter request: The request to count the results of; its offset and
    ///   limit apply.
    /// - Returns: The number of results, 0 when the context has no coordinator.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the request has no entity or names one the model lacks;
    ///   any error the store reports while reading.
    public func count<Result>(for request: FetchRequest<Result>) throws -> Int {
        assertOnQueue()
        let entity = try resolveEntity(request)
        if request.resultType == .dictionary { return try fetchDictionaries(request).count }
        if request.includesPendingChanges && hasPendingChanges(for: entity) {
            let unlimited = FetchRequest<ManagedObject>(entity: entity)
            unlimited.predicate = request.predicate
            unlimited.includesSubentities = request.includesSubentities
            unlimited.fetchOffset = request.fetchOffset
            unlimited.fetchLimit = request.fetchLimit
            return try fetchObjects(unlimited).count
        }
        guard persistentStoreCoordinator != nil else { return 0 }
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = request.predicate
        fetch.includesSubentities = request.includesSubentities
        var count = try sourceCount(fetch) - request.fetchOffset
        if request.fetchLimit > 0 { count = min(count, request.fetchLimit) }
        return max(0, count)
    }

    func resolveEntity<Result>(_ request: FetchRequest<Result>) throws -> EntityDescription {
        if let entity = request.entity { return entity }
        guard let name = request.entityName else {
            throw CoreDataError(.coreData, "A fetch request needs an entity")
        }
        guard let entity = persistentStoreCoordinator?.managedObjectModel.entitiesByName[name] else {
            throw CoreDataError(.coreData, "The model has no entity named '\(name)'", entityName: name)
        }
        return entity
    }

    /// Whether unsaved changes of this context touch objects of `entity` (or its
    /// subentities).
    func hasPendingChanges(for entity: EntityDescription) -> Bool {
        strong.contains { $0.hasChanges && $0.entity.isKindOf(entity: entity) }
    }

    /// The objects a request matches. `asFaults` (default: the request's
    /// `returnsObjectsAsFaults`) false loads them with the fetched rows.
    func fetchObjects<Result>(_ request: FetchRequest<Result>, asFaults: Bool? = nil) throws -> [ManagedObject] {
        let asFaults = asFaults ?? request.returnsObjectsAsFaults
        assertOnQueue("fetch(_:)")
        let entity = try resolveEntity(request)
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        if request.includesPendingChanges { processPendingChanges() }
        // Unsaved changes, or rows from several stores, are merged, sorted, offset
        // and limited here.
        let merging = (request.includesPendingChanges && hasPendingChanges(for: entity))
            || coordinator.storesHolding(entity).count > 1
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = request.predicate
        fetch.includesSubentities = request.includesSubentities
        fetch.sortDescriptors = request.sortDescriptors
        // IDs only when nothing here reads the values (merging sorts and filters
        // objects, which reads them).
        fetch.includesPropertyValues = merging || (request.includesPropertyValues && request.resultType == .managedObject)
        if !merging {
            fetch.fetchOffset = request.fetchOffset
            fetch.fetchLimit = request.fetchLimit
        }
        var rows = try sourceRows(fetch)
        // The generation the rows were read at (see `makeFault`), before anything
        // the loop below runs (an object's initializer, say) fetches again.
        let generation = rowGenerationAtFetch
        var objects: [ManagedObject] = []
        objects.reserveCapacity(rows.count)
        // A context with no registered object (a new one, or one just reset)
        // cannot have any of the rows' objects: while only this loop
        // registers objects, each under the ID of a row of its own, no row needs
        // looking up (a hash probe into a table as large as the fetch), and the
        // new objects' entries are only listed (`registerFetched`): the table is
        // built when something first looks an ID up. Anything else registering an
        // object (an initializer or `awakeFromFetch()` fetching) shows in the
        // count, and the lookups start again.
        var unregisteredCount = registry.entryCount == 0 ? 0 : -1
        if unregisteredCount < 0, registry.capacity - registry.count < rows.count {
            registry.reserveCapacity(Swift.max(registry.count + rows.count, registry.capacity * 2))
        }
        // The class of the last row's entity (one identity check per row, no atomic load).
        var lastClass: (entity: EntityDescription, type: ManagedObject.Type)?
        func objectClass(_ id: ManagedObjectID) -> ManagedObject.Type {
            if let lastClass, id.hasEntity(lastClass.entity) { return lastClass.type }
            let type = ManagedObjectClasses.type(for: id.entity)
            lastClass = (id.entity, type)
            return type
        }
        // The rows are borrowed, not copied out of the array (a copy retains and
        // releases each row's values), and a new object takes its row's values
        // (moved out, an empty array left behind: no retain, and no release when
        // the rows go).
        rows.withUnsafeMutableBufferPointer { rows in
            for index in rows.indices {
                let row = rows.baseAddress.unsafelyUnwrapped + index
                let isNew = unregisteredCount >= 0 && registry.entryCount == unregisteredCount
                if isNew { unregisteredCount += 1 } else { unregisteredCount = -1 }
                // Each branch moves its object into the array (`consume`): one
                // object for every branch, assigned in each, was copied twice
                // more (a retain and a release each, per row).
                if !isNew, let registered = registry[row.pointee.objectID] {
                    if fetch.includesPropertyValues {
                        if registered.isFault && !asFaults {
                            load(row.pointee.rowValues, version: row.pointee.version, into: registered)
                            registered.awakeFromFetch()
                        } else if !registered.isFault && request.shouldRefreshRefetchedObjects {
                            refreshRefetched(registered, with: row.pointee)
                        }
                    }
                    objects.append(consume registered)
                } else if !fetch.includesPropertyValues {
                    objects.append(makeFault(row.pointee.objectID, row: nil, type: objectClass(row.pointee.objectID), unregistered: isNew))
                } else if asFaults {
                    // The fault keeps the row and fires from it (see `makeFault`).
                    objects.append(makeFault(row.pointee.objectID, rowValues: row.pointee.takeValues(), version: row.pointee.version,
                                             generation: generation, type: objectClass(row.pointee.objectID), unregistered: isNew))
                } else {
                    let object = makeFault(row.pointee.objectID, row: nil, type: objectClass(row.pointee.objectID), unregistered: isNew)
                    load(taking: row.pointee.takeValues(), version: row.pointee.version, into: object)
                    object.awakeFromFetch()
                    objects.append(consume object)
                }
            }
        }
        guard merging else { return objects }

        // Merge this context's unsaved changes: drop deleted objects, re-evaluate
        // changed ones, add inserted ones, then sort, offset and limit here.
        var seen = Set(objects.map(ObjectIdentifier.init))
        objects.removeAll { $0.deletedFlag }
        let changed = strong.filter { $0.hasChanges && !$0.deletedFlag && $0.entity.isKindOf(entity: entity)
            && (request.includesSubentities || $0.entity === entity) }
        for object in changed.sorted(by: { ($0.objectID.primaryKey ?? Int64.max) < ($1.objectID.primaryKey ?? Int64.max) }) {
            let matches = try request.predicate?.evaluate(with: object) ?? true
            let present = seen.contains(ObjectIdentifier(object))
            if matches && !present {
                objects.append(object)
                seen.insert(ObjectIdentifier(object))
            } else if !matches && present {
                objects.removeAll { $0 === object }
            }
        }
        if !request.sortDescriptors.isEmpty {
            objects = objects.sorted(using: request.sortDescriptors)
        }
        if request.fetchOffset > 0 { objects = Array(objects.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { objects = Array(objects.prefix(request.fetchLimit)) }
        return objects
    }

    /// Evaluates a fetched property for `object`: its request (predicate, limit,
    /// offset... from the model) with `$FETCH_SOURCE` bound to the object and
    /// `$FETCHED_PROPERTY` to the property (`$FETCHED_PROPERTY.name`,
    /// `$FETCHED_PROPERTY.userInfo.<key>`); `$FETCH_SOURCE.<key path>` is the
    /// object's value there. Evaluated on each access, so it
    /// reflects the context's current objects, unsaved changes included.
    func evaluate(_ fetched: FetchedPropertyDescription, for object: ManagedObject) -> [ManagedObject] {
        guard let template = fetched.fetchRequest,
              persistentStoreCoordinator?.managedObjectModel.entitiesByName[template.entityName] != nil else { return [] }
        let variables: [String: any FormatArgument] = [
            "FETCH_SOURCE": object.objectID.formatArgumentValue,
            "FETCHED_PROPERTY": AttributeValue.dictionary([
                "name": .string(fetched.name),
                "userInfo": .dictionary(fetched.userInfo.mapValues { .string($0) }),
            ]),
        ]
        var options = template
        options.predicateFormat = nil
        guard let request = try? FetchRequest<ManagedObject>(template: options) else { return [] }
        if let format = template.predicateFormat {
            guard let predicate = try? CorePredicate(format: format) else { return [] }
            request.predicate = FetchSourceResolution.resolve(predicate, source: object).withSubstitutionVariables(variables)
        }
        request.resultType = .managedObject
        return (try? fetch(request)) ?? []
    }
}
