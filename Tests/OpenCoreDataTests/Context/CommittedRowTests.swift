import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// A fetched object keeps one array for its current and committed values until it
/// changes (`ManagedObject.committedRow`): every path that writes its values must
/// leave the committed row as the store has it.
@Suite("Committed values of fetched objects")
struct CommittedRowTests {
    private func number(_ object: ManagedObject) -> Int? {
        (object.value(forKey: "number") as? Int64).map(Int.init) ?? object.value(forKey: "number") as? Int
    }

    private func committedNumber(_ object: ManagedObject) -> Int? {
        let value = object.committedValues(forKeys: ["number"])["number"]
        return (value as? Int64).map(Int.init) ?? value as? Int
    }

    @Test("Changes, rollback, save and refresh of fetched objects keep the committed row exact",
          arguments: [PersistentStoreType.sqlite, .inMemory])
    func committedRowOfFetchedObjects(storeType: PersistentStoreType) throws {
        try ObjectRegistryTests.withItems(storeType) { context, entity in
            let items = try ObjectRegistryTests.refetchedItems(0..<3, context, entity)
                .sorted { (number($0) ?? 0) < (number($1) ?? 0) }
            #expect(items.map(number) == [0, 1, 2])
            for item in items {
                #expect(!item.hasChanges)
                #expect(item.changedValues().isEmpty)
                #expect(committedNumber(item) == number(item))
            }

            // A change leaves the committed value alone.
            items[0].setValue(100, forKey: "number")
            #expect(items[0].isUpdated)
            #expect(Array(items[0].changedValues().keys) == ["number"])
            #expect(committedNumber(items[0]) == 0)
            #expect(context.updatedObjects.count == 1)

            // Rollback restores it.
            context.rollback()
            #expect(number(items[0]) == 0)
            #expect(!items[0].hasChanges)
            #expect(committedNumber(items[0]) == 0)

            // A save makes the new value the committed one; a later change does not.
            items[1].setValue(50, forKey: "number")
            try context.save()
            #expect(!items[1].hasChanges)
            #expect(committedNumber(items[1]) == 50)
            items[1].setValue(51, forKey: "number")
            #expect(committedNumber(items[1]) == 50)
            #expect(Array(items[1].changedValues().keys) == ["number"])

            // Refreshing without merging drops the change; the value is the store's.
            context.refresh(items[1], mergeChanges: false)
            #expect(number(items[1]) == 50)
            #expect(!items[1].hasChanges)

            // A fault fired after the fetch is loaded from its row like the others.
            context.refresh(items[2], mergeChanges: false)
            #expect(items[2].isFault)
            #expect(number(items[2]) == 2)
            items[2].setValue(7, forKey: "number")
            #expect(committedNumber(items[2]) == 2)
        }
    }
}

/// Batches (`fetchBatchSize`) match each row read to its place in the batch: rows
/// come back in key order, the IDs in the fetch's order.
@Suite("Batched fetches place rows read in any order")
struct BatchPlacementTests {
    @Test("Small and large batches, keys in an order unlike the fetch's", arguments: [7, 100])
    func rowsInAnyOrder(batchSize: Int) throws {
        try ObjectRegistryTests.withItems(.sqlite) { context, entity in
            var generator = SeededGenerator(seed: 42)
            // Keys ascend with insertion; the numbers are a shuffled permutation.
            let numbers = Array(0..<150).shuffled(using: &generator)
            for number in numbers { ManagedObject(entity: entity, insertInto: context).setValue(number, forKey: "number") }
            try context.save()
            context.reset()
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.sortDescriptors = [CoreSortDescriptor(key: "number", ascending: true)]
            request.fetchBatchSize = batchSize
            let batched = try context.fetchInBatches(request)
            let read = batched.map { $0.value(forKey: "number") as? Int ?? -1 }
            #expect(read == Array(0..<150))
            #expect(batched.allSatisfy { !$0.isFault })
            #expect(Array(batched.map(\.objectID)) == (try context.fetch(request)).map(\.objectID))
        }
    }
}
