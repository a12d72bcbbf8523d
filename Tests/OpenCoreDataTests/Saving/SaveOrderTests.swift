import Foundation
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

    @Test("A save sorts changed and deleted objects by primary key, new ones by creation", arguments: allStoreTypes)
    func sortingOrder(storeType: PersistentStoreType) throws {
        try ObjectRegistryTests.withItems(storeType) { context, entity in
            let items = Self.makeItems(0..<400, entity, in: context)
            try context.save()
            // Changes and deletions made in a shuffled order.
            var generator = SeededGenerator(seed: 7)
            let shuffled = items.shuffled(using: &generator)
            for item in shuffled.prefix(150) { item.setValue(Int64(-1), forKey: "number") }
            for item in shuffled.dropFirst(150).prefix(150) { context.delete(item) }
            let fresh = Self.makeItems(5000..<5200, entity, in: context)
            context.processPendingChanges()
            let sorting = SaveSorting(context.strong, callingWillSave: false)
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
                #expect(numbers.count == 400 - 150 + 200)
                #expect(numbers.filter { $0 == -1 }.count == 150)
                #expect(numbers.filter { $0 >= 5000 }.count == 200)
            }
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
