import Foundation
@testable import OpenCoreData
import Testing

/// An object whose update validation runs a test's code (which changes other objects).
final class RegistryTrackedItem: ManagedObject {
    var onValidateForUpdate: (() -> Void)?

    override func validateForUpdate() throws {
        try super.validateForUpdate()
        onValidateForUpdate?()
    }
}

/// The context's uniquing table keeps old entries after saves (new IDs, deleted
/// objects) and sweeps them later: lookups must never see them.
@Suite("Registered objects: lookups after saves, deletes and sweeps")
struct ObjectRegistryTests {
    /// A context on a store of `storeType` holding `Item`s, and the store's folder (if any) to remove.
    static func context(_ storeType: PersistentStoreType) throws -> (ManagedObjectContext, folder: URL?) {
        let model = try ManagedObjectModel {
            Entity("Item", className: "ManagedObject") {
                Attribute("number", .integer64)
            }
        }
        let (coordinator, folder) = try Fixtures.coordinator(for: model, storeType: storeType)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (context, folder)
    }

    /// Runs `body` on the queue of a new context on a store of `storeType`, with the
    /// `Item` entity; removes the store's folder afterwards.
    static func withItems(_ storeType: PersistentStoreType = .sqlite,
                          _ body: (ManagedObjectContext, EntityDescription) throws -> Void) throws {
        let (context, folder) = try context(storeType)
        defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
        let entity = try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Item"])
        try context.performAndWait { try body(context, entity) }
    }

    @Test("New objects are found by temporary ID however they were registered, deleted, given IDs or saved",
          arguments: allStoreTypes)
    func temporaryLookups(storeType: PersistentStoreType) throws {
        try Self.withItems(storeType) { context, entity in
            func make(_ range: Range<Int>) -> [ManagedObject] {
                range.map { n in
                    let item = ManagedObject(entity: entity, insertInto: context)
                    item.setValue(Int64(n), forKey: "number")
                    return item
                }
            }
            // Enough to pass the table's sweep threshold, looked up by temporary ID
            // between batches of registrations.
            var items = make(0..<3000)
            for item in items where item.value(forKey: "number") as? Int64 == 1234 {
                #expect(context.registeredObject(for: item.objectID) === item)
            }
            items += make(3000..<6000)
            for item in items.enumerated().filter({ $0.offset % 7 == 0 }).map(\.element) {
                #expect(context.registeredObject(for: item.objectID) === item)
                #expect(context.object(with: item.objectID) === item)
            }
            // New objects deleted before a save are forgotten: no longer found.
            let dropped = items.enumerated().filter { $0.offset % 10 == 3 }.map(\.element)
            let droppedIDs = dropped.map(\.objectID)
            for item in dropped { context.delete(item) }
            context.processPendingChanges()
            items += make(6000..<6500)
            // Some get permanent IDs before the save.
            let early = Array(items[100..<200])
            let earlyTemporaryIDs = early.map(\.objectID)
            try context.obtainPermanentIDs(for: early)
            for (item, old) in zip(early, earlyTemporaryIDs) {
                #expect(!item.objectID.isTemporaryID)
                #expect(context.registeredObject(for: item.objectID) === item)
                #expect(context.registeredObject(for: old) == nil)
            }
            let kept = items.filter { !$0.isDeleted }
            let temporaryIDs = kept.map(\.objectID)
            try context.save()
            for (item, old) in zip(kept, temporaryIDs) {
                #expect(!item.objectID.isTemporaryID)
                #expect(context.registeredObject(for: item.objectID) === item)
                if old.isTemporaryID { #expect(context.registeredObject(for: old) == nil) }
            }
            for id in droppedIDs { #expect(context.registeredObject(for: id) == nil) }
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")) == kept.count)
        }
    }

    /// Inserts items numbered `numbers` and saves them (the context holds none of
    /// them afterwards).
    static func saveItems(_ numbers: Range<Int>, _ context: ManagedObjectContext, _ entity: EntityDescription) throws {
        for number in numbers { ManagedObject(entity: entity, insertInto: context).setValue(number, forKey: "number") }
        try context.save()
    }

    /// Saves items numbered `numbers`, resets the context and fetches them all
    /// again (every one a new object registered by the fetch).
    static func refetchedItems(_ numbers: Range<Int>, _ context: ManagedObjectContext,
                               _ entity: EntityDescription) throws -> [ManagedObject] {
        try saveItems(numbers, context, entity)
        context.reset()
        return try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
    }

    @Test("After a save an object is found by its permanent ID only; after a deleting save, not at all",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func lookups(storeType: PersistentStoreType) throws {
        try Self.withItems(storeType) { context, entity in
            let items = (0..<10).map { number -> ManagedObject in
                let item = ManagedObject(entity: entity, insertInto: context)
                item.setValue(number, forKey: "number")
                return item
            }
            let temporaryIDs = items.map(\.objectID)
            #expect(temporaryIDs.allSatisfy { $0.isTemporaryID })
            try context.save()
            for (item, temporary) in zip(items, temporaryIDs) {
                #expect(!item.objectID.isTemporaryID)
                #expect(context.registeredObject(for: temporary) == nil)
                #expect(context.registeredObject(for: item.objectID) === item)
                #expect(context.object(with: item.objectID) === item)
            }
            #expect(context.registeredObjects.count == items.count)

            let gone = items[0]
            let goneID = gone.objectID
            context.delete(gone)
            try context.save()
            #expect(context.registeredObject(for: goneID) == nil)
            #expect(!context.registeredObjects.contains(gone))
            #expect(context.registeredObjects.count == items.count - 1)
            // A new fault for the deleted ID is a new object, not the old one.
            #expect(context.object(with: goneID) !== gone)
            #expect(throws: CoreDataError.self) { _ = try context.existingObject(with: goneID) }
        }
    }

    @Test("Objects inserted and deleted before a save are gone after it; unsaved new objects stay found")
    func insertedAndDeleted() throws {
        try Self.withItems { context, entity in
            let transient = ManagedObject(entity: entity, insertInto: context)
            let transientID = transient.objectID
            let kept = ManagedObject(entity: entity, insertInto: context)
            context.delete(transient)
            try context.save()
            #expect(context.registeredObject(for: transientID) == nil)
            #expect(context.registeredObject(for: kept.objectID) === kept)
            // New objects after the save: found by their temporary IDs until the next one.
            let later = ManagedObject(entity: entity, insertInto: context)
            #expect(context.registeredObject(for: later.objectID) === later)
            try context.obtainPermanentIDs(for: [later])
            #expect(!later.objectID.isTemporaryID)
            #expect(context.registeredObject(for: later.objectID) === later)
            #expect(context.registeredObjects == [kept, later])
        }
    }

    @Test("Inserting and saving, never fetching: dropped objects' entries never enter the table, and their slots are handed out again")
    func insertOnly() throws {
        try Self.withItems { context, entity in
            for batch in 0..<20 { try Self.saveItems(batch * 1000..<(batch + 1) * 1000, context, entity) }
            #expect(context.registeredObjects.isEmpty)
            #expect(context.registry.count <= 2 * 4096)
            // 20,000 objects registered one batch after another, in far fewer slots.
            #expect(context.registry.slotsInUse <= 2 * 4096)
            // Kept objects are found by their permanent IDs.
            let kept = (0..<3).map { _ in ManagedObject(entity: entity, insertInto: context) }
            try context.save()
            for object in kept { #expect(context.registeredObject(for: object.objectID) === object) }
            #expect(context.registry.count == 3)
        }
    }

    @Test("A large fetch's objects stay registered while alive and go when dropped; the table holds the live entries only once it grows again, and nothing after a reset")
    func aliveObjectsAreNotSwept() throws {
        try Self.withItems { context, entity in
            var items: [ManagedObject]? = try Self.refetchedItems(0..<10_000, context, entity)
            #expect(items?.count == 10_000)
            // The table passed 4096 and 8192 entries, all alive: all kept.
            #expect(context.registry.count == 10_000)
            for item in items ?? [] { #expect(context.registeredObject(for: item.objectID) === item) }
            items = nil
            #expect(context.registeredObjects.isEmpty)
            // A save's new objects are only listed, and dropped at its end.
            try Self.saveItems(0..<20_000, context, entity)
            #expect(context.registeredObjects.isEmpty)
            // The dead entries go with the table's next growth (a fetch whose
            // objects are looked up first).
            items = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(items?.count == 30_000)
            #expect(context.registry.count == 30_000)
            items = nil
            context.reset()
            #expect(context.registeredObjects.isEmpty)
            items = Array(try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))[0..<100])
            #expect(items?.count == 100)
            #expect(context.registeredObjects.count == 100)
            items = nil
            #expect(context.registeredObjects.isEmpty)
        }
    }

    @Test("Slots freed by a sweep are handed out again: deleted objects still alive, and the objects of an earlier generation, never disturb their new holders")
    func slotReuse() throws {
        try Self.withItems { context, entity in
            var items: [ManagedObject]? = try Self.refetchedItems(0..<6000, context, entity)
            let survivors = Array(items?[0..<100] ?? [])
            var deleted: [ManagedObject]? = Array(items?[100..<200] ?? [])
            let deletedIDs = deleted?.map(\.objectID) ?? []
            for object in deleted ?? [] { context.delete(object) }
            try context.save()
            items = nil
            for batch in 0..<6 { try Self.saveItems(6000 + batch * 4000..<10_000 + batch * 4000, context, entity) }
            for survivor in survivors { #expect(context.registeredObject(for: survivor.objectID) === survivor) }
            for id in deletedIDs { #expect(context.registeredObject(for: id) == nil) }
            #expect(Set(context.registeredObjects) == Set(survivors))

            // A fetch grows the table past a sweep, which frees the dead slots
            // (the deleted objects' among them) and hands them out again to the
            // fetch's objects, which stay registered when the deleted objects go.
            var all: [ManagedObject]? = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(all?.count == 29_900)
            deleted = nil
            #expect(deleted == nil)
            for object in all ?? [] { #expect(context.registeredObject(for: object.objectID) === object) }
            for survivor in survivors { #expect(all?.contains { $0 === survivor } == true) }

            // After a reset the earlier objects are not found, and their going
            // does not unregister the new ones.
            context.reset()
            for survivor in survivors { #expect(context.registeredObject(for: survivor.objectID) == nil) }
            let again = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(!again.contains { object in survivors.contains { $0 === object } })
            all = nil
            #expect(all == nil)
            for object in again { #expect(context.registeredObject(for: object.objectID) === object) }
        }
    }

    @Test("Objects changed by validation during a save stay changed (the change sets are not emptied under them)")
    func changesDuringValidation() throws {
        ManagedObjectClasses.register(RegistryTrackedItem.self)
        let model = try ManagedObjectModel {
            Entity("TrackedItem", className: "RegistryTrackedItem") {
                Attribute("number", .integer64)
            }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let entity = model.entitiesByName["TrackedItem"]!
            let items = (0..<3).map { n -> RegistryTrackedItem in
                let item = RegistryTrackedItem(entity: entity, insertInto: context)
                item.setValue(n, forKey: "number")
                return item
            }
            try context.save()
            let (a, y, z) = (items[0], items[1], items[2])
            a.setValue(10, forKey: "number")
            y.setValue(11, forKey: "number")
            // While the save validates `a`: `y` loses its change, `z` gets one.
            a.onValidateForUpdate = {
                a.onValidateForUpdate = nil
                context.refresh(y, mergeChanges: false)
                z.setValue(12, forKey: "number")
            }
            try context.save()
            #expect(z.hasChanges)
            #expect(context.hasChanges)
            #expect(context.updatedObjects.contains(z))
            try context.save()
            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.persistentStoreCoordinator = coordinator
            let stored = try other.performAndWait { try other.existingObject(with: z.objectID).value(forKey: "number") as? Int }
            #expect(stored == 12)
        }
    }

    @Test("A first fetch lists its objects' entries; every way of finding an object builds the table from the list",
          arguments: allStoreTypes)
    func firstFetchEntries(storeType: PersistentStoreType) throws {
        try Self.withItems(storeType) { context, entity in
            try Self.saveItems(0..<5000, context, entity)
            func firstFetch() throws -> [ManagedObject] {
                context.reset()
                return try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            }
            // By ID, for each object.
            var items = try firstFetch()
            #expect(items.count == 5000)
            for item in items { #expect(context.registeredObject(for: item.objectID) === item) }
            #expect(try context.existingObject(with: items[17].objectID) === items[17])
            // A second fetch finds the same objects (uniquing), not new ones.
            items = try firstFetch()
            let again = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(again.count == 5000)
            #expect(zip(items, again).allSatisfy { $0 === $1 })
            // Listing the registered objects.
            items = try firstFetch()
            #expect(Set(context.registeredObjects) == Set(items))
            // A relationship-free object(with:) gives the registered object, not a new fault.
            items = try firstFetch()
            #expect(context.object(with: items[4999].objectID) === items[4999])
            // Deleting and saving: the deleted objects are no longer found, the others are.
            items = try firstFetch()
            let deletedIDs = items[0..<100].map(\.objectID)
            for item in items[0..<100] { context.delete(item) }
            try context.save()
            for id in deletedIDs { #expect(context.registeredObject(for: id) == nil) }
            for item in items[100...] { #expect(context.registeredObject(for: item.objectID) === item) }
            // A reset forgets the listed objects too: a later lookup finds nothing of
            // them, and a new first fetch lists only its own.
            items = try firstFetch()
            let old = items
            context.reset()
            let one = FetchRequest<ManagedObject>(entityName: "Item")
            one.fetchLimit = 1
            let first = try context.fetch(one)
            #expect(first.count == 1)
            // (Held to the end: an optimized build lets `first` go after its last use.)
            withExtendedLifetime(first) { #expect(context.registeredObjects.count == 1) }
            for item in old.dropFirst(1) { #expect(context.registeredObject(for: item.objectID) !== item) }
            #expect(context.registeredObject(for: old[4000].objectID) == nil)
        }
    }

    /// Saves `batches` batches of `count` new items, held, then checks the registry:
    /// every registered object once, exactly `kept` and the new items, each found
    /// under its ID (no two objects given one slot). Returns the new items.
    static func saveHeldItems(batches: Int, of count: Int, _ context: ManagedObjectContext, _ entity: EntityDescription,
                              kept: [ManagedObject]) throws -> [ManagedObject] {
        var held: [ManagedObject] = []
        for batch in 0..<batches {
            for n in 0..<count {
                let item = ManagedObject(entity: entity, insertInto: context)
                item.setValue(10_000 + batch * count + n, forKey: "number")
                held.append(item)
            }
            try context.save()
        }
        let objects = context.registry.objects
        #expect(objects.count == Set(objects.map(ObjectIdentifier.init)).count)
        #expect(objects.count == kept.count + held.count)
        for object in kept + held { #expect(context.registeredObject(for: object.objectID) === object) }
        return held
    }

    @Test("The slots of a first fetch's dropped objects are handed out again only once the list lets them go")
    func listedSlotsReused() throws {
        try Self.withItems { context, entity in
            try Self.saveItems(0..<5000, context, entity)
            context.reset()
            var fetched: [ManagedObject]? = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            let kept = Array(fetched?[0..<50] ?? [])
            fetched = nil
            #expect(fetched == nil)
            // New objects, kept alive, pass the sweep threshold: the sweep frees the
            // dropped objects' slots, and the objects made after it take them.
            _ = try Self.saveHeldItems(batches: 4, of: 3000, context, entity, kept: kept)
        }
    }

    @Test("A first fetch's objects deleted by a save leave their listed slots at once; each slot is handed out again once",
          arguments: [false, true])
    func deletedListedSlotsReused(lookUpFirst: Bool) throws {
        try Self.withItems { context, entity in
            try Self.saveItems(0..<5000, context, entity)
            context.reset()
            var fetched: [ManagedObject]? = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            let kept = Array(fetched?[2000...] ?? [])
            let deletedIDs = fetched?[..<2000].map(\.objectID) ?? []
            for item in fetched?[..<2000] ?? [] { context.delete(item) }
            // Listed, unregistered by the save from the slots they hold (the table
            // not built), or from the table when a lookup built it first.
            if lookUpFirst { #expect(context.registeredObject(for: kept[0].objectID) === kept[0]) }
            try context.save()
            fetched = nil
            for id in deletedIDs { #expect(context.registeredObject(for: id) == nil) }
            // New objects take the freed slots; none may take a slot twice.
            let held = try Self.saveHeldItems(batches: 4, of: 1500, context, entity, kept: kept)
            #expect(context.registry.slotsInUse <= 5000 + held.count)
        }
    }

    @Test("Many fetched and dropped objects: the table is swept and lookups stay exact")
    func sweep() throws {
        try Self.withItems { context, entity in
            try Self.saveItems(0..<3000, context, entity)
            context.reset()
            let kept = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item")).filter { ($0.value(forKey: "number") as? Int ?? 0) % 100 == 0 }
            // Fetch and drop the rest several times: the table passes its sweep threshold.
            for _ in 0..<4 {
                let all = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
                #expect(all.count == 3000)
            }
            #expect(context.registry.count < 4 * 3000)
            for item in kept { #expect(context.registeredObject(for: item.objectID) === item) }
            #expect(Set(context.registeredObjects).isSuperset(of: kept))
        }
    }
}
