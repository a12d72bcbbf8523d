import Foundation
import OpenCoreDataPredicates

extension ManagedObjectContext {
    // MARK: Dictionary results

    /// The dictionaries of a ``FetchRequest/ResultType/dictionary`` request, from
    /// the stores. As in Core Data, unsaved changes of the context are not
    /// included: dictionaries reflect what is saved.
    func fetchDictionaries<Result>(_ request: FetchRequest<Result>) throws -> [[String: Any]] {
        let entity = try resolveEntity(request)
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = request.predicate
        fetch.includesSubentities = request.includesSubentities
        fetch.sortDescriptors = request.sortDescriptors
        let stores = coordinator.storesHolding(entity)
        if stores.count <= 1 {
            fetch.fetchOffset = request.fetchOffset
            fetch.fetchLimit = request.fetchLimit
        }
        var dictionaryFetch = StoreDictionaryFetch(fetch: fetch)
        dictionaryFetch.columns = try storeColumns(request.propertiesToFetch, of: entity)
        dictionaryFetch.groupBy = try request.propertiesToGroupBy.map { try storeColumns($0, of: entity) } ?? []
        dictionaryFetch.havingPredicate = request.havingPredicate
        dictionaryFetch.distinct = request.returnsDistinctResults
        if request.havingPredicate != nil && dictionaryFetch.groupBy.isEmpty {
            throw CoreDataError(.coreData, "A having predicate needs propertiesToGroupBy", entityName: entity.name)
        }
        var rows: [[String: SnapshotValue]] = []
        let generation = try readGeneration()
        for store in stores {
            if let snapshot = generation?.snapshot(for: store) {
                rows += try snapshot.fetchDictionaries(dictionaryFetch)
            } else {
                rows += try store.fetchDictionaries(dictionaryFetch)
            }
        }
        if stores.count > 1 {
            if request.fetchOffset > 0 { rows = Array(rows.dropFirst(request.fetchOffset)) }
            if request.fetchLimit > 0 { rows = Array(rows.prefix(request.fetchLimit)) }
        }
        return rows.map { row in
            var dictionary: [String: Any] = [:]
            for (key, value) in row {
                switch value {
                case .attribute(let attribute):
                    if let native = attribute.nativeValue { dictionary[key] = native }
                case .toOne(let id):
                    if let id { dictionary[key] = id }
                case .toMany:
                    continue
                }
            }
            return dictionary
        }
    }

    /// The store columns of `propertiesToFetch` (nil: every stored attribute).
    private func storeColumns(_ properties: [PropertyToFetch]?, of entity: EntityDescription) throws -> [StoreColumn] {
        guard let properties else {
            return entity.allProperties.compactMap { property in
                guard let attribute = property as? AttributeDescription, !attribute.isTransient else { return nil }
                return StoreColumn(name: attribute.name, expression: .keyPath(attribute.name))
            }
        }
        return try properties.map { property in
            if case .keyPath(let path) = property {
                try checkKeyPath(path, in: entity)
            } else if case .property(let description) = property {
                guard entity.propertiesByName[description.name] != nil
                        || entity.selfAndDescendants.contains(where: { $0.propertiesByName[description.name] != nil }) else {
                    throw CoreDataError(.coreData, "The entity \(entity.name) has no property '\(description.name)' to fetch",
                                        entityName: entity.name, key: description.name)
                }
                if let relationship = description as? RelationshipDescription, relationship.isToMany {
                    throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                        "A dictionary fetch can't fetch the to-many relationship '\(relationship.name)'",
                                        entityName: entity.name, key: relationship.name)
                }
            }
            return StoreColumn(name: property.name, expression: property.expression, resultType: property.resultType)
        }
    }

    /// Checks that a fetched key path goes through to-one relationships to a
    /// property.
    private func checkKeyPath(_ path: String, in entity: EntityDescription) throws {
        var current: EntityDescription? = entity
        let keys = path.split(separator: ".").map(String.init)
        for (index, key) in keys.enumerated() {
            guard let here = current else { break }
            guard let property = here.propertiesByName[key] ?? here.selfAndDescendants.lazy.compactMap({ $0.propertiesByName[key] }).first else {
                throw CoreDataError(.coreData, "keypath \(path) not found in entity \(here.name)", entityName: here.name, key: key)
            }
            if let relationship = property as? RelationshipDescription {
                if relationship.isToMany {
                    throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                        "A dictionary fetch can't fetch through the to-many relationship '\(key)' in '\(path)'",
                                        entityName: here.name, key: key)
                }
                current = relationship.destinationEntity
            } else if index < keys.count - 1 {
                throw CoreDataError(.coreData, "keypath \(path) continues after the attribute '\(key)'", entityName: here.name, key: key)
            }
        }
    }

    // MARK: Object IDs

    /// `SELF IN {ids}`, built without parsing.
    static func objectsPredicate(_ ids: [ManagedObjectID]) -> CorePredicate {
        .comparison(ComparisonPredicate(.evaluatedObject, .in, .constant(.array(ids.map { .uri($0.uriRepresentation()) }))))
    }

    /// The IDs of an object ID fetch straight from the store's keys, without
    /// creating objects, when nothing needs merging here (no unsaved changes of
    /// the entity, one store); nil otherwise. `batchSize`: the batches in which
    /// the caller reads the objects next (``StoreFetch/fetchBatchSize``).
    func storedObjectIDs<Result>(_ request: FetchRequest<Result>, batchSize: Int = 0) throws -> [ManagedObjectID]? {
        assertOnQueue("fetch(_:)")
        let entity = try resolveEntity(request)
        guard parent == nil, let coordinator = persistentStoreCoordinator else { return nil }
        if request.includesPendingChanges { processPendingChanges() }
        if (request.includesPendingChanges && hasPendingChanges(for: entity)) || coordinator.storesHolding(entity).count > 1 {
            return nil
        }
        var fetch = StoreFetch(entity: entity)
        fetch.predicate = request.predicate
        fetch.includesSubentities = request.includesSubentities
        fetch.sortDescriptors = request.sortDescriptors
        fetch.fetchOffset = request.fetchOffset
        fetch.fetchLimit = request.fetchLimit
        fetch.includesPropertyValues = false
        fetch.fetchBatchSize = batchSize
        return try coordinator.fetchRows(fetch, generation: try readGeneration()).map(\.objectID)
    }

    // MARK: Refetched objects

    /// Gives a registered object the values of a row just fetched
    /// (`shouldRefreshRefetchedObjects`): its unsaved changes stay on top.
    func refreshRefetched(_ object: ManagedObject, with row: RowSnapshot) {
        guard let committed = object.committed, row.version != committed.version || row.rowValues != committed.rowValues else { return }
        let local = object.changedIndexes()
        let storage = object.storage
        func refresh() {
            load(row, into: object)
            if let storage {
                for index in local where index < storage.count { object.storage?[index] = storage[index] }
            }
        }
        if let observation = object.observation, let storage {
            // Observers of the properties whose values the row changes are told.
            var refreshed = row.rowValues
            for index in local where index < storage.count && index < refreshed.count { refreshed[index] = storage[index] }
            observation.replacing(object, storage, with: refreshed, refresh)
        } else {
            refresh()
        }
        persistentStoreCoordinator?.updateCachedRow(row)
        eventRefreshed.insert(object)
    }

    // MARK: Prefetching

    /// Fetches the destinations of relationship key paths for `objects`, one query
    /// per relationship of each path (`relationshipKeyPathsForPrefetching`). The
    /// destinations are registered with their values and kept alive by the
    /// objects; to-many relationships with a to-one inverse are filled in.
    func prefetch(_ keyPaths: [String], for objects: [ManagedObject]) throws {
        var order: [String] = []
        var rest: [String: [String]] = [:]
        for path in keyPaths {
            let parts = path.split(separator: ".", maxSplits: 1).map(String.init)
            guard let first = parts.first else { continue }
            if rest[first] == nil { order.append(first); rest[first] = [] }
            if parts.count > 1 { rest[first]?.append(parts[1]) }
        }
        for name in order {
            // The destinations are gathered only for the paths that go on from them.
            let nested = rest[name] ?? []
            let destinations = try prefetchRelationship(name, for: objects, gathering: !nested.isEmpty)
            if !nested.isEmpty { try prefetch(nested, for: destinations) }
        }
    }

    /// Prefetches one relationship of `objects`; returns its destinations when
    /// `gathering` (else, possibly, none).
    private func prefetchRelationship(_ name: String, for objects: [ManagedObject], gathering: Bool) throws -> [ManagedObject] {
        let sources = objects
        guard let first = sources.first(where: { $0.entity.relationshipsByName[name] != nil }),
              let relationship = first.entity.relationshipsByName[name],
              let destination = relationship.destinationEntity,
              persistentStoreCoordinator != nil else {
            if let entity = objects.first?.entity, entity.propertiesByName[name] == nil {
                throw CoreDataError(.coreData, "The entity \(entity.name) has no relationship '\(name)' to prefetch",
                                    entityName: entity.name, key: name)
            }
            return []
        }
        // Prefetched objects are kept by their sources: the registry breaks those
        // references when it lets go of everything, if they can form a cycle
        // (see `releasePrefetched()`).
        registry.notePrefetch(from: first.entity, to: destination)
        var fetch = StoreFetch(entity: destination)
        let relevant = sources.filter { $0.entity.relationshipsByName[name] === relationship && !$0.objectID.isTemporaryID }
        // The sources get their values (from the row cache, filled by the fetch).
        for object in relevant where object.isFault { fireFault(object) }
        // A to-many relationship: the store reads every source's members at once, when it can.
        if relationship.isToMany, sharesRowCache, let coordinator = persistentStoreCoordinator,
           let grouped = try coordinator.relatedRows(of: relevant.map(\.objectID), relationship: relationship) {
            return fillPrefetched(grouped, of: relevant, relationship: relationship, gathering: gathering)
        }
        if relationship.isToMany {
            guard let inverse = relationship.inverseRelationship else { return [] }
            let uris = relevant.map { AttributeValue.uri($0.objectID.uriRepresentation()) }
            guard !uris.isEmpty else { return [] }
            fetch.predicate = try CorePredicate(format: inverse.isToMany ? "ANY \(inverse.name) IN %@" : "\(inverse.name) IN %@",
                                                AttributeValue.array(uris))
        } else {
            var seen = Set<ManagedObjectID>()
            var missing: [ManagedObjectID] = []
            for object in relevant {
                guard let index = object.entity.propertyIndex(named: name), case .toOne(let id?)? = object.slot(index),
                      seen.insert(id).inserted else { continue }
                if let registered = registry[id], !registered.isFault { continue }
                missing.append(id)
            }
            guard !missing.isEmpty else {
                return seen.compactMap { registry[$0] }
            }
            fetch.predicate = ManagedObjectContext.objectsPredicate(missing)
        }
        let rows = try sourceRows(fetch)
        var fetched: [ManagedObjectID: ManagedObject] = [:]
        for row in rows { fetched[row.objectID] = prefetchedObject(row) }
        // Each source keeps its destinations alive; to-many relationships whose
        // inverse is a to-one are filled in from the fetched rows.
        var members: [ManagedObjectID: [ManagedObjectID]] = [:]
        if relationship.isToMany, let inverse = relationship.inverseRelationship, !inverse.isToMany {
            for row in rows {
                if case .toOne(let owner?)? = row.value(named: inverse.name) { members[owner, default: []].append(row.objectID) }
            }
        }
        for object in relevant {
            guard let index = object.entity.propertyIndex(named: name) else { continue }
            if relationship.isToMany {
                if let inverse = relationship.inverseRelationship, !inverse.isToMany, !relationship.isOrdered,
                   case .toMany(nil)? = object.storage?[index] {
                    let ids = members[object.objectID] ?? []
                    fillToManyFault(of: object, at: index, with: ids)
                    object.prefetchedObjects += ids.compactMap { fetched[$0] }
                } else {
                    let ids = members[object.objectID] ?? []
                    object.prefetchedObjects += ids.compactMap { fetched[$0] }
                }
            } else if case .toOne(let id?)? = object.storage?[index], let destination = fetched[id] ?? registry[id] {
                object.prefetchedObjects.append(destination)
            }
        }
        if relationship.isToMany, relationship.inverseRelationship?.isToMany == true {
            // Many-to-many: the objects are loaded; each relationship fault still
            // asks the store for its members when it fires.
            let shared = Array(fetched.values)
            for object in relevant {
                // One shared buffer (copy-on-write), not a copy per object.
                if object.prefetchedObjects.isEmpty { object.prefetchedObjects = shared } else { object.prefetchedObjects += shared }
            }
        }
        return Array(fetched.values)
    }

    /// The object of a prefetched row: the registered one (loaded with the row if
    /// it is a fault), else a new one loaded with it.
    private func prefetchedObject(_ row: RowSnapshot) -> ManagedObject {
        var row = row
        return prefetchedObject(taking: &row)
    }

    /// ``prefetchedObject(_:)`` for a row the caller owns: an object loaded with
    /// it takes its values (`row.values` is left empty).
    private func prefetchedObject(taking row: inout RowSnapshot, isNew: Bool = false) -> ManagedObject {
        if !isNew, let registered = registry[row.objectID] {
            if registered.isFault {
                load(taking: row.takeValues(), version: row.version, into: registered)
                registered.awakeFromFetch()
            }
            return registered
        }
        // Loaded at once: the object holds its row, the row cache is not involved.
        let object = makeFault(row.objectID, row: nil, unregistered: isNew)
        load(taking: row.takeValues(), version: row.version, into: object)
        object.awakeFromFetch()
        return object
    }

    /// Registers the destination rows of each source's to-many relationship (as
    /// the store read them, source by source), fills in the relationships that are
    /// still faults, and makes each source keep its destinations alive. Returns the
    /// destinations, each once, when `gathering` (else none).
    private func fillPrefetched(_ grouped: consuming [[RowSnapshot]], of sources: [ManagedObject],
                                relationship: RelationshipDescription, gathering: Bool) -> [ManagedObject] {
        var grouped = grouped
        var destinations: [ManagedObject] = []
        // Without a to-one inverse, a destination may belong to several sources.
        let shared = relationship.inverseRelationship?.isToMany != false
        var seen = Set<ObjectIdentifier>()
        // The sources are distinct (a fetch's objects, or a previous step's
        // destinations, each once): with a to-one inverse, so are all the rows.
        var unregistered = UnregisteredDestinations(of: relationship, in: registry)
        // Room for every destination in the registry's table, made once, when they
        // are looked up and entered there.
        if !unregistered.skipsLookups { registry.reserveCapacity(registry.count + grouped.reduce(0) { $0 + $1.count }) }
        for (position, source) in zip(grouped.indices, sources) {
            // The source's rows, moved out of `grouped`: the objects take their values.
            var rows = takeArray(&grouped[position])
            var members: [ManagedObject] = []
            members.reserveCapacity(rows.count)
            for index in rows.indices {
                members.append(prefetchedObject(taking: &rows[index], isNew: unregistered.next(in: registry)))
            }
            if let index = source.entity.propertyIndex(named: relationship.name), case .toMany(nil)? = source.storage?[index] {
                let ids = members.map(\.objectID)
                fillToManyFault(of: source, at: index, with: ids)
                // Kept with their relationship: reading it takes them directly.
                source.prefetchedMembers.append(ManagedObject.PrefetchedMembers(
                    index: index, ids: ids, objects: members, registryGeneration: registry.generation))
            } else if source.prefetchedObjects.isEmpty {
                source.prefetchedObjects = members
            } else {
                source.prefetchedObjects += members
            }
            if !gathering {
                continue
            } else if shared {
                for member in members where seen.insert(ObjectIdentifier(member)).inserted { destinations.append(member) }
            } else {
                destinations += members
            }
        }
        return destinations
    }
}
