extension ManagedObjectContext {
    /// The objects registered with a context, by ID: Core Data's uniquing table
    /// (one object per ID in a context), holding objects as Core Data's context
    /// does, weakly: an object nobody else holds is no longer registered.
    ///
    /// Each registered object has a *slot*: a strong reference to it and whether it
    /// is still registered. Slots live in pages of 256 that only the registry holds;
    /// the tables map IDs to slot numbers.
    ///
    /// Weakness is kept by the registry itself, on the context's queue: a slot
    /// whose reference is the object's only one (`isKnownUniquelyReferenced`)
    /// stands for an object its users let go, and the registry drops it when it
    /// next reads the slot (a lookup, a listing) or sweeps. This is safe whatever
    /// thread releases objects: once the slot's reference is the only one, no
    /// other thread holds the object and none can take it but through the
    /// registry, so the answer cannot change under the registry's feet; an object
    /// is only ever released, never retained after its last release began. A
    /// `weak` slot would say the same, but it gives every object a side table of
    /// reference counts (an allocation, and every retain and release of the
    /// object a slower, indirect one), paid by fetches for every object they make.
    /// An object dropped by the registry is deinitialized there, on the
    /// context's queue; one let go after the registry dropped it, wherever it
    /// is let go.
    ///
    /// An entry is valid while its slot is registered (and so its object alive)
    /// with the entry's ID. Saves change objects' IDs (temporary to permanent) and
    /// unregister deleted objects without removing their old entries: removing a
    /// key from a large dictionary shifts its neighbors back, rehashing each, which
    /// cost a save more than its `DELETE`s. Invalid entries are swept out when the
    /// table has doubled since the last sweep and at least a quarter of it is dead
    /// (a table whose objects are all alive — a large fetch — is not filtered for
    /// nothing); the sweep then hands the dead slots out again.
    ///
    /// In the table of permanent IDs, an entry whose slot is alive always names
    /// its object's current ID (the rare re-keying of a permanent ID removes the
    /// old entry), so its sweep reads slots only.
    // A class, not a struct: reading a struct property of the context through its
    // subscript copied the whole table (retaining each of its buffers) per lookup.
    final class ObjectRegistry {
        /// The number of registered objects dropped or unregistered, by root
        /// entity. A new one per generation of the registry (`removeAll`): it also
        /// tells this registry's slots from those of an earlier generation.
        final class Deaths {
            /// The deaths of each root entity's objects, by the registry's number for
            /// the root (see `rootNumber(of:)`); never reset.
            private var counts = [Int](repeating: 0, count: 16)
            /// All deaths so far.
            private(set) var total = 0

            func died(root: UInt8) {
                counts[Int(root)] += 1
                total += 1
            }

            /// The deaths of objects of the root numbered `root`.
            func count(root: Int) -> Int { counts[root] }
        }

        /// A registered object and whether it is still registered. Read and
        /// written on the context's queue only.
        struct Slot {
            /// The object, while registered (nil once dropped or unregistered).
            var object: ManagedObject?
            /// Set while the slot is the object's registration (cleared when the
            /// object is unregistered or dropped).
            var isRegistered: Bool
        }

        /// 256 slots at a fixed address, held by the registry alone (its release
        /// releases the objects still in them).
        final class SlotPage {
            static let size = 256
            let slots: UnsafeMutablePointer<Slot>

            init() {
                slots = .allocate(capacity: SlotPage.size)
                slots.initialize(repeating: Slot(object: nil, isRegistered: false), count: SlotPage.size)
            }

            deinit {
                slots.deinitialize(count: SlotPage.size)
                slots.deallocate()
            }
        }

        /// Where an object's slot is: its number, the registry generation it
        /// belongs to (its `Deaths`), and the registry's number for the object's
        /// root entity. Holds nothing that holds the object.
        struct SlotReference {
            let generation: Deaths
            let number: UInt32
            let root: UInt8

            /// Whether the slot is in the registry generation whose deaths are `deaths`.
            func isIn(_ deaths: Deaths) -> Bool {
                generation === deaths
            }
        }

        private var deaths = Deaths()
        /// `deaths.total` at the last sweep.
        private var deathsAtSweep = 0
        /// The objects that died or were unregistered since the last sweep (or reset).
        var deathsSinceSweep: Int { deaths.total - deathsAtSweep }
        /// The slot pages, and their slots' base addresses.
        private var pages: [SlotPage] = []
        private var bases: [UnsafeMutablePointer<Slot>] = []
        /// Slots handed out so far, and dead ones free again since the last sweep.
        private var slotCount: UInt32 = 0
        private var freeSlots: [UInt32] = []
        /// Objects' slot numbers by permanent ID.
        private var entries: [ManagedObjectID: UInt32] = [:]
        /// New objects' slot numbers by temporary ID: a save re-keys them all, and
        /// then this table is emptied at once (see `pruneTemporaries`).
        private var temporaries: [ManagedObjectID: UInt32] = [:]
        /// Slots of objects registered under temporary IDs and not yet entered in
        /// `temporaries`: new objects are looked up by temporary ID rarely (most
        /// are saved, and re-keyed through the slot they hold), so an import of
        /// many new objects appends their slots here instead of hashing each into
        /// a table as large as the import. The first lookup by temporary ID
        /// enters them (see `enterPendingTemporaries`).
        private var pendingTemporaries: [UInt32] = []
        /// Slots of objects a fetch registered into an empty registry (see
        /// `registerFetched`), or a save re-keyed to new primary keys (see
        /// `rekey(_:to:fresh:)`), not yet entered in `entries`: a fetch whose
        /// objects are only read, or an import whose objects are dropped once
        /// saved, never builds a table as large as itself. The first
        /// lookup by permanent ID, listing, unregistration or re-keying enters them
        /// (see `enterPendingPermanents`). A sweep drops the dead slots from the list
        /// before it hands them out again.
        private var pendingPermanents: [UInt32] = []
        /// Temporary entries re-keyed since the last prune.
        private var rekeyedTemporaries = 0
        private var countAfterSweep = 0
        /// Moves on whenever an object stops being the registered object for its
        /// ID while it lives (unregistered, re-keyed from a permanent ID, or the
        /// registry emptied): what was looked up before may no longer be registered.
        private(set) var generation = 0

        @inline(__always)
        private func slot(_ number: UInt32) -> UnsafeMutablePointer<Slot> {
            bases[Int(number) / SlotPage.size] + Int(number) % SlotPage.size
        }

        /// Whether slot `number` still holds a registered object (one its users may
        /// have let go: see `dropIfUnreferenced(_:)`).
        @inline(__always)
        private func isAlive(_ number: UInt32) -> Bool {
            slot(number).pointee.isRegistered
        }

        /// Drops the object of slot `number` if the slot's reference is its only
        /// one: the object's users let it go, and it is no longer registered (the
        /// object is deinitialized here). Whether it did.
        @inline(__always)
        @discardableResult
        private func dropIfUnreferenced(_ number: UInt32) -> Bool {
            let slot = slot(number)
            guard slot.pointee.isRegistered, isKnownUniquelyReferenced(&slot.pointee.object) else { return false }
            drop(slot)
            return true
        }

        /// Clears a registered slot: its object is no longer registered, and its
        /// death counted.
        private func drop(_ slot: UnsafeMutablePointer<Slot>) {
            slot.pointee.isRegistered = false
            guard let object = slot.pointee.object.take() else { return }
            if let reference = object.registrySlot, reference.isIn(deaths) {
                deaths.died(root: reference.root)
                object.registrySlot = nil
            }
        }

        /// Drops every registered object its users let go (see `dropIfUnreferenced(_:)`),
        /// in slot order: an object held only by one dropped before it (prefetched
        /// destinations) goes in the same pass.
        private func dropUnreferenced() {
            var number: UInt32 = 0
            while number < slotCount {
                dropIfUnreferenced(number)
                number += 1
            }
        }

        /// The registered object in slot `number`, unless its users let it go.
        @inline(__always)
        private func registeredObject(_ number: UInt32) -> ManagedObject? {
            if dropIfUnreferenced(number) { return nil }
            return slot(number).pointee.object
        }

        /// The object in slot `number` if it is still registered under `id`.
        @inline(__always)
        private func object(_ number: UInt32, id: ManagedObjectID) -> ManagedObject? {
            guard let object = registeredObject(number), object.objectID == id else { return nil }
            return object
        }

        /// Whether slot `number` holds `object`, registered.
        @inline(__always)
        private func slot(_ number: UInt32, holds object: ManagedObject) -> Bool {
            let slot = slot(number)
            return slot.pointee.isRegistered && slot.pointee.object === object
        }

        /// The registered object with `id`, if any.
        subscript(id: ManagedObjectID) -> ManagedObject? {
            if id.isTemporaryID { enterPendingTemporaries() } else { enterPendingPermanents() }
            guard let number = id.isTemporaryID ? temporaries[id] : entries[id] else { return nil }
            return object(number, id: id)
        }

        /// Every registered object that is still alive, once each.
        var objects: [ManagedObject] {
            enterPendingTemporaries()
            // Listed fetched objects are read from their slots, without building the
            // table (a reset after a large fetch lists them and drops them all). No
            // listed object is also in the table: a lookup or registration empties the list.
            let listed = pendingPermanents.compactMap { number -> ManagedObject? in
                guard let object = registeredObject(number), !object.objectID.isTemporaryID else { return nil }
                return object
            }
            return entries.compactMap { object($1, id: $0) } + temporaries.compactMap { object($1, id: $0) } + listed
        }

        /// The slots holding registered objects or waiting to be handed out again:
        /// what a walk of the slots in order (``forEachRegistered(_:)``) reads.
        var slotsInUse: Int { Int(slotCount) - freeSlots.count }

        /// Calls `body` with every registered object, in the order of their slots:
        /// the order the objects were registered in, apart from slots handed out
        /// again after a sweep. Objects made one after another lie in memory that
        /// way, so a pass over many of them reads memory forward instead of jumping
        /// about it as a set's hash order does (a cache miss per object once the
        /// objects outgrow the caches). Each object is retained for its call;
        /// objects `body` registers are not walked.
        func forEachRegistered(_ body: (ManagedObject) throws -> Void) rethrows {
            let end = slotCount
            var number: UInt32 = 0
            // (`slotCount` again: a `reset()` from `body` empties the registry.)
            while number < Swift.min(end, slotCount) {
                let object = registeredObject(number)
                number += 1
                guard let object else { continue }
                try body(object)
            }
        }

        /// Entries by permanent ID, valid or not, those still listed included (for
        /// sizing before a fetch registers many objects).
        var count: Int { entries.count + pendingPermanents.count }
        var capacity: Int { entries.capacity }
        /// Entries by any ID, valid or not: it grows by one with each object
        /// registered under an ID not there yet.
        var entryCount: Int { entries.count + temporaries.count + pendingTemporaries.count + pendingPermanents.count }
        func reserveCapacity(_ capacity: Int) { entries.reserveCapacity(capacity) }

        /// The slot `object` holds in this registry, or a new one (any slot it
        /// still holds in another registry is marked dead: it is registered here now).
        private func slotNumber(for object: ManagedObject) -> UInt32 {
            if let reference = object.registrySlot {
                if reference.isIn(deaths) && slot(reference.number, holds: object) { return reference.number }
                // A slot of an earlier generation (`removeAll`), which nothing
                // reads any more: the object's registration moves here.
            }
            let number: UInt32
            if let free = freeSlots.popLast() {
                number = free
            } else {
                number = slotCount
                slotCount += 1
                if Int(number) / SlotPage.size == pages.count {
                    let page = SlotPage()
                    pages.append(page)
                    bases.append(page.slots)
                }
            }
            let root = rootNumber(of: object.objectID)
            let slot = slot(number)
            slot.pointee.object = object
            slot.pointee.isRegistered = true
            object.registrySlot = SlotReference(generation: deaths, number: number, root: root)
            registeredByRoot[Int(root)] += 1
            slotsTaken += 1
            return number
        }

        // MARK: Live objects by root entity

        /// The root entities of the objects registered so far, numbered by
        /// position. The last number is shared by every root past the first 15.
        private var roots: [EntityDescription] = []
        /// How many slots objects of each numbered root took (deaths subtracted, the
        /// objects still registered).
        private var registeredByRoot = [Int](repeating: 0, count: 16)
        /// The entity of the last registered object (held, so that its address
        /// cannot name another entity), and its root's number.
        private var lastRoot: (entity: EntityDescription, number: UInt8)?
        /// How many slots objects have taken: moves on with every new registration.
        private(set) var slotsTaken = 0

        /// This registry's number for the root entity of `id`'s entity.
        private func rootNumber(of id: ManagedObjectID) -> UInt8 {
            if let lastRoot, id.hasEntity(lastRoot.entity) { return lastRoot.number }
            let entity = id.entity
            let root = entity.rootEntity
            let number: UInt8
            if let known = roots.firstIndex(where: { $0 === root }) {
                number = UInt8(known)
            } else if roots.count < 15 {
                roots.append(root)
                number = UInt8(roots.count - 1)
            } else {
                number = 15
            }
            lastRoot = (entity, number)
            return number
        }

        /// Whether an object whose entity has `root` as its root entity may be
        /// registered and alive here: false only when every object of that root
        /// this registry took has been dropped or unregistered (or none ever was).
        /// Then no lookup can find an object of it, and objects made for its rows
        /// need no lookup first (see `registerFetched`).
        ///
        /// The objects listed since the last call are dropped first if their
        /// users let them go: a traversal that fires one to-many fault after
        /// another, dropping each one's members, finds them gone. If some still
        /// count as live, every slot is checked, once the calls and registrations
        /// since the last such pass pay for it (each call for 64 slots, each
        /// registration for one): a traversal holding what it reads does not
        /// pass over every slot at each step.
        func mayHoldLiveObjects(ofRoot root: EntityDescription) -> Bool {
            func live(_ number: Int) -> Bool { registeredByRoot[number] > deaths.count(root: number) }
            let known = roots.firstIndex(where: { $0 === root })
            // Never registered here, unless counted with the shared number.
            let number = known ?? 15
            if known == nil && roots.count < 15 { return false }
            guard live(number) else { return false }
            dropUnreferencedListed()
            fullPassCredit += 64
            if live(number) && fullPassCredit + slotsTaken - slotsTakenAtFullPass >= Int(slotCount) {
                fullPassCredit = 0
                slotsTakenAtFullPass = slotsTaken
                dropUnreferenced()
            }
            return live(number)
        }

        /// `slotsTaken` at the last pass over every slot from `mayHoldLiveObjects(ofRoot:)`,
        /// and the credit its calls earned since.
        private var slotsTakenAtFullPass = 0
        private var fullPassCredit = 0

        /// How many entries of `pendingPermanents` `dropUnreferencedListed()` went
        /// through: each is checked once there, and again after the list is
        /// compacted or swept (then by the sweeps).
        private var listedChecked = 0

        /// Drops the listed objects registered since the last call that their
        /// users let go: fetched into an empty registry, or saved as new (see
        /// `rekey(_:to:fresh:)`), in the order they were listed.
        func dropUnreferencedListed() {
            if listedChecked > pendingPermanents.count { listedChecked = 0 }
            for number in pendingPermanents[listedChecked...] { dropIfUnreferenced(number) }
            listedChecked = pendingPermanents.count
        }

        /// The slot `object` is registered in under its ID, if it is.
        ///
        /// A registered object with a temporary ID is entered under it, in the
        /// slot it holds (its ID does not change while temporary): that slot is
        /// the answer, without a lookup in a table as large as an import.
        private func registeredNumber(of object: ManagedObject) -> UInt32? {
            let id = object.objectID
            if id.isTemporaryID {
                if let reference = object.registrySlot, reference.isIn(deaths), slot(reference.number, holds: object) {
                    return reference.number
                }
                enterPendingTemporaries()
            } else {
                enterPendingPermanents()
            }
            return (id.isTemporaryID ? temporaries[id] : entries[id]).flatMap { slot($0, holds: object) ? $0 : nil }
        }

        /// Enters the pending temporary registrations in `temporaries` (those
        /// whose object is still registered under a temporary ID).
        private func enterPendingTemporaries() {
            guard !pendingTemporaries.isEmpty else { return }
            for number in pendingTemporaries {
                guard let object = registeredObject(number), object.objectID.isTemporaryID else { continue }
                temporaries[object.objectID] = number
            }
            pendingTemporaries = []
        }

        /// Enters the pending registrations of fetched objects in `entries` (those
        /// still registered, under the permanent ID each has now).
        private func enterPendingPermanents() {
            guard !pendingPermanents.isEmpty else { return }
            let pending = pendingPermanents
            pendingPermanents = []
            listedChecked = 0
            entries.reserveCapacity(entries.count + pending.count)
            for number in pending {
                // A dead slot is handed out again: no entry names a listed slot.
                guard let object = registeredObject(number) else { freeSlots.append(number); continue }
                guard !object.objectID.isTemporaryID else { continue }
                entries[object.objectID] = number
            }
            // Lists of objects registered without lookups grow the table too (each
            // to-many fault of a traversal, looked up before the next).
            sweepIfNeeded()
        }

        /// Registers an object a fetch made for a row, in a registry where no object
        /// was registered when the fetch began and nothing but the fetch registered
        /// one since (so no entry can have its ID): its entry is only listed, and
        /// entered in the table when something first needs the table.
        func registerFetched(_ object: ManagedObject) {
            let number = slotNumber(for: object)
            if object.objectID.isTemporaryID {
                pendingTemporaries.append(number)
            } else {
                if pendingPermanents.count >= pendingLimit { compactPendingPermanents() }
                pendingPermanents.append(number)
            }
        }

        /// The length of the list of fetched objects' entries past which its dead
        /// entries are dropped: objects registered without a lookup, one batch
        /// after another (each to-many fault of a traversal), die while nothing
        /// looks an ID up and enters the list in the table.
        private var pendingLimit = 4096

        /// Drops the dead entries of the list of fetched objects and hands their
        /// slots out again (no table entry names a listed slot: a listed object
        /// took a new or free slot, and its entry is only ever in the list).
        private func compactPendingPermanents() {
            for number in pendingPermanents { dropIfUnreferenced(number) }
            var kept: [UInt32] = []
            kept.reserveCapacity(pendingPermanents.count)
            for number in pendingPermanents {
                if isAlive(number) { kept.append(number) } else { freeSlots.append(number) }
            }
            pendingPermanents = kept
            // (Kept objects were held a moment ago, by a fault being filled say:
            // they are checked again.)
            listedChecked = 0
            pendingLimit = Swift.max(4096, 2 * kept.count)
        }

        /// Registers `object` under its current ID (replacing any entry there).
        func register(_ object: ManagedObject) {
            // The listed entries first: an object is then never both listed and
            // in the table, whoever registers it.
            enterPendingPermanents()
            let number = slotNumber(for: object)
            if object.objectID.isTemporaryID {
                pendingTemporaries.append(number)
                return
            }
            // Another object registered under the ID is replaced: it is no longer
            // the registered one.
            if let replaced = entries.updateValue(number, forKey: object.objectID), replaced != number { generation += 1 }
            sweepIfNeeded()
        }

        /// Each time the table has doubled since the last check, drops the invalid
        /// entries if at least a quarter of them died, and frees the dead slots;
        /// otherwise checks again when it has doubled once more. Sweeps are paid
        /// for by as many new entries, and dead entries stay below a quarter of the
        /// table at each check.
        private func sweepIfNeeded() {
            guard entries.count > Swift.max(4096, 2 * countAfterSweep) else { return }
            dropUnreferenced()
            if deathsSinceSweep >= entries.count / 4 {
                deathsAtSweep = deaths.total
                // The live entries go into a table already as large as this one
                // may grow before the next check (twice them): a filtered copy
                // is sized for them alone and was rehashed again as it grew.
                var live = [ManagedObjectID: UInt32](minimumCapacity: Swift.max(4096, 2 * (entries.count - entries.count / 4)))
                for (id, number) in entries where isAlive(number) { live[id] = number }
                entries = live
                enterPendingTemporaries()
                temporaries = temporaries.filter { object($1, id: $0) != nil }
                // No entry names a dead slot any more: they can be handed out again.
                // (An object whose dead slot is reused does not find itself there.)
                pendingPermanents.removeAll { !isAlive($0) }
                listedChecked = 0
                freeSlots = (0..<slotCount).filter { !isAlive($0) }
            }
            countAfterSweep = entries.count
        }

        /// Makes `object` no longer registered (its entry stays, marked dead).
        ///
        /// The slot the object holds, registered, is its registration whatever
        /// its ID: that slot is cleared without a lookup (a save deleting many
        /// fetched objects would otherwise enter them all in the table first). A
        /// listed slot stays listed, dead, until the list is entered or swept,
        /// which hand it out again once.
        func unregister(_ object: ManagedObject) {
            let number: UInt32
            if let reference = object.registrySlot, reference.isIn(deaths), slot(reference.number, holds: object) {
                number = reference.number
            } else if let found = registeredNumber(of: object) {
                number = found
            } else {
                return
            }
            generation += 1
            let slot = slot(number)
            slot.pointee.isRegistered = false
            slot.pointee.object = nil
            if let reference = object.registrySlot, reference.isIn(deaths), reference.number == number {
                deaths.died(root: reference.root)
                object.registrySlot = nil
            }
        }

        /// Starts a pass of re-keying that ends with `pruneTemporaries()` (a pass
        /// that failed halfway must not count toward the next one).
        func beginRekeying() {
            rekeyedTemporaries = 0
        }

        /// Gives a registered object a new ID (a save's permanent ID): the object is
        /// found under the new ID, no longer under the old one.
        ///
        /// `fresh`: no object can be registered under `newID` (a primary key the
        /// store has just handed out). The entry is then only listed, like a
        /// fetched object's in an empty registry (see `registerFetched`), and
        /// entered in the table when something first needs the table: the objects
        /// of a large import are often dropped at the end of their save, and
        /// hashing each into a table as large as the import cost the save as
        /// much as validating them.
        func rekey(_ object: ManagedObject, to newID: ManagedObjectID, fresh: Bool = false) {
            let oldID = object.objectID
            let found = registeredNumber(of: object)
            if oldID.isTemporaryID && found != nil { rekeyedTemporaries += 1 }
            // A permanent entry must not outlive its ID while its slot lives (the
            // sweep keeps entries by slot alone): it goes now.
            if !oldID.isTemporaryID && found != nil && oldID != newID {
                entries[oldID] = nil
                generation += 1
            }
            object.objectID = newID
            let number = found ?? slotNumber(for: object)
            if newID.isTemporaryID {
                temporaries[newID] = number
            } else if fresh && (oldID.isTemporaryID || found == nil) {
                // (No entry names the slot: it was registered under a temporary ID,
                // or taken just now. A slot found under a permanent ID may still be
                // named by the table, and is entered there below.)
                if pendingPermanents.count >= pendingLimit { compactPendingPermanents() }
                pendingPermanents.append(number)
            } else {
                entries[newID] = number
            }
        }

        /// Drops the temporary entries re-keyed since the last prune (the end of a
        /// save): the whole table at once when they are all it holds (the usual
        /// case), else by keeping the valid ones (objects inserted and deleted
        /// before the save leave dead entries).
        func pruneTemporaries() {
            if rekeyedTemporaries >= temporaries.count + pendingTemporaries.count {
                temporaries = [:]
                pendingTemporaries = []
            } else if rekeyedTemporaries > 0 || temporaries.count + pendingTemporaries.count > 4096 {
                enterPendingTemporaries()
                temporaries = temporaries.filter { object($1, id: $0) != nil }
            }
            rekeyedTemporaries = 0
            // Re-keyed objects entered the permanent table: an import that only
            // inserts and saves must have its dropped objects swept too.
            sweepIfNeeded()
        }

        /// Whether objects may keep each other through prefetching: some root
        /// entity has had objects both as prefetching sources and as prefetched
        /// destinations (a cycle needs an object in both roles).
        private var mayHoldPrefetched = false
        private var prefetchSources: Set<String> = []
        private var prefetchDestinations: Set<String> = []

        /// Records that objects of `source` prefetched objects of `destination`.
        func notePrefetch(from source: EntityDescription, to destination: EntityDescription) {
            guard !mayHoldPrefetched else { return }
            let from = source.rootEntity.name, to = destination.rootEntity.name
            let newSource = prefetchSources.insert(from).inserted
            let newDestination = prefetchDestinations.insert(to).inserted
            if newSource || newDestination {
                mayHoldPrefetched = !prefetchSources.isDisjoint(with: prefetchDestinations)
            }
        }

        /// Makes every registered object let go of the objects prefetching keeps
        /// with it. Objects that prefetched each other (both sides of a
        /// many-to-many, a reflexive relationship) hold each other strongly, so none
        /// is ever the registry's alone: without this they would outlive the
        /// registry, and each other, forever.
        func releasePrefetched() {
            prefetchSources = []
            prefetchDestinations = []
            guard mayHoldPrefetched else { return }
            mayHoldPrefetched = false
            // The slots as they are (no drop of unreferenced objects on the way:
            // the caller lets go of every slot next).
            for page in pages {
                for index in 0..<SlotPage.size { page.slots[index].object?.releasePrefetched() }
            }
        }

        deinit { releasePrefetched() }

        /// Unregisters every object: a new generation of slots starts (the old
        /// pages go, and the objects nobody else holds with them).
        func removeAll() {
            releasePrefetched()
            generation += 1
            roots = []
            registeredByRoot = [Int](repeating: 0, count: 16)
            lastRoot = nil
            pendingLimit = 4096
            entries = [:]
            temporaries = [:]
            pendingTemporaries = []
            pendingPermanents = []
            listedChecked = 0
            pages = []
            bases = []
            freeSlots = []
            slotCount = 0
            slotsTakenAtFullPass = slotsTaken
            rekeyedTemporaries = 0
            countAfterSweep = 0
            deaths = Deaths()
            deathsAtSweep = 0
        }
    }
}
