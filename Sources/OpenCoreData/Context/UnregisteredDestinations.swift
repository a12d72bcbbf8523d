extension ManagedObjectContext {
    /// Tells, row by row, whether the object for a destination row of a to-many
    /// relationship can be made without looking its ID up in the registry.
    ///
    /// It can when the relationship's inverse is a to-one (each destination row
    /// appears once among the rows read for distinct sources), no object of the
    /// destination's root entity is registered and alive when the rows come
    /// (`ObjectRegistry.mayHoldLiveObjects(ofRoot:)`), and only the objects made for
    /// the rows registered since (code run by their initializers or
    /// `awakeFromFetch()` registering anything ends it). A traversal that fires one
    /// to-many fault after another, dropping each one's members, then never probes
    /// the uniquing table, and the members' entries are only listed
    /// (`registerFetched`), never entered in it.
    ///
    /// ```swift
    /// var unregistered = UnregisteredDestinations(of: relationship, in: registry)
    /// for row in rows {
    ///     let isNew = unregistered.next(in: registry)
    ///     let object = (isNew ? nil : registry[row.objectID]) ?? makeFault(row.objectID, row: row, unregistered: isNew)
    /// }
    /// ```
    struct UnregisteredDestinations {
        /// The registry's count of slots taken the next row's object must find; -1
        /// once rows need looking up.
        private var expected: Int

        init(of relationship: RelationshipDescription, in registry: ObjectRegistry) {
            guard let inverse = relationship.inverseRelationship, !inverse.isToMany,
                  let destination = relationship.destinationEntity,
                  !registry.mayHoldLiveObjects(ofRoot: destination.rootEntity) else {
                expected = -1
                return
            }
            expected = registry.slotsTaken
        }

        /// Whether rows start out needing no lookup.
        var skipsLookups: Bool { expected >= 0 }

        /// Whether the next row's object needs no lookup (and is to be registered
        /// with `unregistered: true`).
        mutating func next(in registry: ObjectRegistry) -> Bool {
            guard expected >= 0, registry.slotsTaken == expected else {
                expected = -1
                return false
            }
            expected += 1
            return true
        }
    }
}
