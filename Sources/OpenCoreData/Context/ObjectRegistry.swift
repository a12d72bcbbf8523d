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
        /// Objects by permanent ID.
        private var entries: [ObjectID: WeakObject] = [:]
        /// New objects by temporary ID: a save re-keys them all, and then this
        /// table is emptied at once (see `pruneTemporaries`).
        private var temporaries: [ObjectID: WeakObject] = [:]
        /// Temporary entries re-keyed since the last prune.
        private var rekeyedTemporaries = 0
        private var countAfterSweep = 0

        /// The registered object with `id`, if any.
        subscript(id: ObjectID) -> ManagedObject? {
            guard let object = (id.isTemporaryID ? temporaries[id] : entries[id])?.object, object.objectID == id else { return nil }
            return object
        }

        /// Every registered object that is still alive, once each.
        var objects: [ManagedObject] {
            func valid(_ id: ObjectID, _ entry: WeakObject) -> ManagedObject? {
                guard let object = entry.object, object.objectID == id else { return nil }
                return object
            }
            return entries.compactMap(valid) + temporaries.compactMap(valid)
        }

        /// Entries by permanent ID, valid or not (for sizing before a fetch
        /// registers many objects).
        var count: Int { entries.count }
        var capacity: Int { entries.capacity }
        mutating func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

        /// Registers `object` under its current ID (replacing any entry there).
        mutating func register(_ object: ManagedObject) {
            if object.objectID.isTemporaryID {
                temporaries[object.objectID] = WeakObject(object)
                return
            }
            entries[object.objectID] = WeakObject(object)
            sweepIfNeeded()
        }

        /// Drops the invalid entries once the table has doubled since the last
        /// sweep: each sweep is paid for by as many new entries.
        private mutating func sweepIfNeeded() {
            if entries.count > Swift.max(4096, 2 * countAfterSweep) {
                entries = entries.filter { id, entry in entry.object?.objectID == id }
                countAfterSweep = entries.count
            }
        }

        /// Makes `object` no longer registered (its entry stays, marked dead).
        mutating func unregister(_ object: ManagedObject) {
            let id = object.objectID
            if let entry = id.isTemporaryID ? temporaries[id] : entries[id], entry.object === object { entry.isAlive = false }
        }

        /// Starts a pass of re-keying that ends with `pruneTemporaries()` (a pass
        /// that failed halfway must not count toward the next one).
        mutating func beginRekeying() {
            rekeyedTemporaries = 0
        }

        /// Gives a registered object a new ID (a save's permanent ID): the object is
        /// found under the new ID, no longer under the old one.
        mutating func rekey(_ object: ManagedObject, to newID: ObjectID) {
            let oldID = object.objectID
            let entry = (oldID.isTemporaryID ? temporaries[oldID] : entries[oldID]).flatMap { $0.object === object ? $0 : nil }
            if oldID.isTemporaryID && entry != nil { rekeyedTemporaries += 1 }
            object.objectID = newID
            if newID.isTemporaryID {
                temporaries[newID] = entry ?? WeakObject(object)
            } else {
                entries[newID] = entry ?? WeakObject(object)
            }
        }

        /// Drops the temporary entries re-keyed since the last prune (the end of a
        /// save): the whole table at once when they are all it holds (the usual
        /// case), else by keeping the valid ones (objects inserted and deleted
        /// before the save leave dead entries).
        mutating func pruneTemporaries() {
            if rekeyedTemporaries >= temporaries.count {
                temporaries = [:]
            } else if rekeyedTemporaries > 0 || temporaries.count > 4096 {
                temporaries = temporaries.filter { id, entry in entry.object?.objectID == id }
            }
            rekeyedTemporaries = 0
            // Re-keyed objects entered the permanent table: an import that only
            // inserts and saves must have its dropped objects swept too.
            sweepIfNeeded()
        }

        mutating func removeAll() {
            entries = [:]
            temporaries = [:]
            rekeyedTemporaries = 0
            countAfterSweep = 0
        }
    }
}
