import Synchronization

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
    /// and drops objects keeps a small table. Entries count their deaths (an
    /// object's deinit marks its entries dead), so a table whose objects are all
    /// alive — a large fetch — is not filtered for nothing each time it doubles:
    /// that filter, touching every entry and its object, was a sixth of the time of
    /// a 100k-object fetch.
    struct ObjectRegistry {
        /// The number of entries marked dead since the last sweep (by their objects'
        /// deinit, on whatever thread the last release happens, hence atomic).
        final class Deaths: Sendable {
            let count = Atomic<Int>(0)
        }
        private let deaths = Deaths()
        /// Objects by permanent ID.
        private var entries: [ObjectID: WeakObject] = [:]
        /// New objects by temporary ID: a save re-keys them all, and then this
        /// table is emptied at once (see `pruneTemporaries`).
        private var temporaries: [ObjectID: WeakObject] = [:]
        /// Temporary entries re-keyed since the last prune.
        private var rekeyedTemporaries = 0
        private var countAfterSweep = 0
        /// How many sweeps the table has had (for tests of the sweep policy).
        private(set) var sweepCount = 0

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
                temporaries[object.objectID] = WeakObject(object, deaths: deaths)
                return
            }
            entries[object.objectID] = WeakObject(object, deaths: deaths)
            sweepIfNeeded()
        }

        /// Each time the table has doubled since the last check, drops the invalid
        /// entries if at least a quarter of them died; otherwise checks again when
        /// it has doubled once more. Sweeps are paid for by as many new entries, and
        /// dead entries stay below a quarter of the table at each check (dead ones
        /// plus re-keyed ones: `rekey` counts the entry it leaves behind).
        private mutating func sweepIfNeeded() {
            guard entries.count > Swift.max(4096, 2 * countAfterSweep) else { return }
            if deaths.count.load(ordering: .relaxed) >= entries.count / 4 {
                deaths.count.store(0, ordering: .relaxed)
                entries = entries.filter { id, entry in entry.object?.objectID == id }
                sweepCount += 1
            }
            countAfterSweep = entries.count
        }

        /// Makes `object` no longer registered (its entry stays, marked dead).
        mutating func unregister(_ object: ManagedObject) {
            let id = object.objectID
            if let entry = id.isTemporaryID ? temporaries[id] : entries[id], entry.object === object { entry.markDead() }
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
            // A permanent entry left under its old ID is invalid from now on.
            if !oldID.isTemporaryID && entry != nil { deaths.count.add(1, ordering: .relaxed) }
            object.objectID = newID
            if newID.isTemporaryID {
                temporaries[newID] = entry ?? WeakObject(object, deaths: deaths)
            } else {
                entries[newID] = entry ?? WeakObject(object, deaths: deaths)
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
            deaths.count.store(0, ordering: .relaxed)
        }
    }
}
