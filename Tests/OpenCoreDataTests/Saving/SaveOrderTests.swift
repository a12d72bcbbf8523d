import Foundation
import Synchronization
import Testing
@testable import OpenCoreData

/// The order in which a save walks its objects: new objects in the order they
/// were made (their primary keys follow it), changed and deleted objects by
/// primary key, whatever order the context's change sets hold them in.
@Suite("Save order")
struct SaveOrderTests {
    /// New items numbered `numbers`, in order.
    static func makeItems(_ numbers: Range<Int>, _ entity: EntityDescription, in context: ManagedObjectContext) -> [ManagedObject] {
        numbers.map { n in
            let item = ManagedObject(entity: entity, insertInto: context)
            item.setValue(Int64(n), forKey: "number")
            return item
        }
    }

    @Test("New objects get their primary keys in the order they were made", arguments: allStoreTypes)
    func primaryKeysFollowCreation(storeType: PersistentStoreType) throws {
        try ObjectRegistryTests.withItems(storeType) { context, entity in
            // Enough objects that the change set's hash order is not creation order.
            let items = Self.makeItems(0..<500, entity, in: context)
            try context.save()
            let keys = items.compactMap(\.objectID.primaryKey)
            #expect(keys.count == items.count)
            #expect(keys == keys.sorted())
            #expect(Set(keys).count == keys.count)
            // A second save continues after the first.
            let more = Self.makeItems(1000..<1300, entity, in: context)
            try context.save()
            let moreKeys = more.compactMap(\.objectID.primaryKey)
            #expect(moreKeys == moreKeys.sorted())
            #expect(moreKeys.first.map { $0 > (keys.last ?? 0) } == true)
        }
    }

    /// With 400 objects saved first, the save's 500 changed objects are most of
    /// the registered ones, and the save walks them in the registry's slot
    /// order; with 2,000, it walks the context's set of changed objects. Either
    /// way the result is the same.
    @Test("A save sorts changed and deleted objects by primary key, new ones by creation",
          arguments: allStoreTypes, [400, 2000])
    func sortingOrder(storeType: PersistentStoreType, saved: Int) throws {
        try ObjectRegistryTests.withItems(storeType) { context, entity in
            let items = Self.makeItems(0..<saved, entity, in: context)
            try context.save()
            // Changes and deletions made in a shuffled order.
            var generator = SeededGenerator(seed: 7)
            let shuffled = items.shuffled(using: &generator)
            for item in shuffled.prefix(150) { item.setValue(Int64(-1), forKey: "number") }
            for item in shuffled.dropFirst(150).prefix(150) { context.delete(item) }
            let fresh = Self.makeItems(5000..<5200, entity, in: context)
            context.processPendingChanges()
            // (The saved objects are held to here: an optimized build lets `items`
            // go after its last use, and the registry drops what only it holds.)
            withExtendedLifetime(items) {
                #expect((2 * context.strong.count >= context.registry.slotsInUse) == (saved == 400))
            }
            let sorting = SaveSorting(changedObjectsOf: context, callingWillSave: false)
            let updatedKeys = sorting.updated.compactMap(\.objectID.primaryKey)
            let deletedKeys = sorting.deleted.compactMap(\.objectID.primaryKey)
            #expect(updatedKeys.count == 150 && deletedKeys.count == 150)
            #expect(updatedKeys == updatedKeys.sorted())
            #expect(deletedKeys == deletedKeys.sorted())
            #expect(sorting.inserted.map(ObjectIdentifier.init) == fresh.map(ObjectIdentifier.init))
            // The permanent-ID groups point at the new objects' sorted positions.
            #expect(sorting.temporaryByEntity.count == 1)
            #expect(sorting.temporaryByEntity.first?.indexes == Array(0..<200))

            try context.save()
            let reader = ManagedObjectContext(concurrencyType: .privateQueue)
            reader.persistentStoreCoordinator = context.persistentStoreCoordinator
            try reader.performAndWait {
                let numbers = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Item")).compactMap { $0.value(forKey: "number") as? Int }
                #expect(numbers.count == saved - 150 + 200)
                #expect(numbers.filter { $0 == -1 }.count == 150)
                #expect(numbers.filter { $0 >= 5000 }.count == 200)
            }
        }
    }

    @Test("Saved objects nobody holds are freed at the end of the save, in the order they were made")
    func savedObjectsFreedInCreationOrder() throws {
        try ObjectRegistryTests.withItems(.sqlite) { context, entity in
            FreeOrderProbe.freed.withLock { $0 = [] }
            var generator = SeededGenerator(seed: 3)
            // Made in a shuffled order of tags; a set's hash order is neither.
            let tags = Array(0..<600).shuffled(using: &generator)
            for tag in tags {
                let probe = FreeOrderProbe(entity: entity, insertInto: context)
                probe.tag = tag
                probe.setValue(Int64(tag), forKey: "number")
            }
            #expect(FreeOrderProbe.freed.withLock { $0.isEmpty })
            try context.save()
            #expect(FreeOrderProbe.freed.withLock { $0 } == tags)
            #expect(context.registeredObjects.isEmpty)
            let count = try context.count(for: FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(count == 600)
        }
    }

    @Test("Reordering moves each object once: none is lost, duplicated or freed early")
    func permuteMovesReferences() throws {
        let model = try ManagedObjectModel { Entity("Thing") { Attribute("name", .string) } }
        let entity = try #require(model.entitiesByName["Thing"])
        var generator = SeededGenerator(seed: 42)
        for count in [0, 1, 2, 3, 10, 257] {
            weak var probe: ManagedObject?
            do {
                let originals = (0..<count).map { _ in ManagedObject(entity: entity, insertInto: nil) }
                probe = originals.last
                var objects = originals
                let target = Array(0..<count).shuffled(using: &generator)
                var order = target.map { (number: UInt64(0), position: Int32($0)) }
                SaveSorting.permute(&objects, taking: &order)
                #expect(objects.map(ObjectIdentifier.init) == target.map { ObjectIdentifier(originals[$0]) })
                #expect(order.allSatisfy { $0.position == -1 })
            }
            // Every reference released exactly once: the objects are gone with
            // their arrays (an extra retain would keep them, a missing one crash).
            #expect(probe == nil)
        }
    }
}

/// A managed object that records its tag when freed (see
/// `savedObjectsFreedInCreationOrder`).
final class FreeOrderProbe: ManagedObject {
    static let freed = Lock<[Int]>([])
    var tag = -1
    deinit { let tag = tag; Self.freed.withLock { $0.append(tag) } }
}
