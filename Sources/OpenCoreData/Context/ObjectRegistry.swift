extension ManagedObjectContext {
    /// The objects registered with a context, by ID, held weakly: Core Data's
    /// uniquing table (one object per ID in a context).
    ///
    /// An entry is valid while its object is alive, still has the entry's ID and
    /// was not unregistered. Saves change objects' IDs (temporary to permanent) and
    /// unregister deleted objects without removing their old entries: removing a
    /// key from a large dictionary shifts its neighbors back, rehashing each, which
    /// cost a save more than its `DELETE`s. Invalid entries are swept out when the
    /// table has doubled since the last sweep, so a context that fetches, deletes
    /// and drops objects keeps a small table.
    struct ObjectRegistry {
        private var entries: [ObjectID: WeakObject] = [:]
        private var countAfterSweep = 0

        /// The registered object with `id`, if any.
        subscript(id: ObjectID) -> ManagedObject? {
            guard let object = entries[id]?.object, object.objectID == id else { return nil }
            return object
        }

        /// Every registered object that is still alive, once each.
        var objects: [ManagedObject] {
            entries.compactMap { id, entry in
                guard let object = entry.object, object.objectID == id else { return nil }
                return object
            }
        }

        /// Entries, valid or not (for sizing before a fetch registers many objects).
        var count: Int { entries.count }
        var capacity: Int { entries.capacity }
        mutating func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

        /// Registers `object` under its current ID (replacing any entry there).
        mutating func register(_ object: ManagedObject) {
            entries[object.objectID] = WeakObject(object)
            // Each sweep is paid for by as many registrations.
            if entries.count > Swift.max(4096, 2 * countAfterSweep) {
                entries = entries.filter { id, entry in entry.object?.objectID == id }
                countAfterSweep = entries.count
            }
        }

        /// Makes `object` no longer registered (its entry stays, marked dead).
        mutating func unregister(_ object: ManagedObject) {
            if let entry = entries[object.objectID], entry.object === object { entry.isAlive = false }
        }

        /// Gives a registered object a new ID (a save's permanent ID): the object is
        /// found under the new ID, no longer under the old one.
        mutating func rekey(_ object: ManagedObject, to newID: ObjectID) {
            let entry = entries[object.objectID].flatMap { $0.object === object ? $0 : nil }
            object.objectID = newID
            entries[newID] = entry ?? WeakObject(object)
        }

        mutating func removeAll() {
            entries = [:]
            countAfterSweep = 0
        }
    }
}
