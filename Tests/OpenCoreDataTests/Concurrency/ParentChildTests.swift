import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

@Suite("Parent and child contexts")
struct ParentChildTests {
    struct Family {
        let stack: QueueStack
        let parent: ManagedObjectContext
        let child: ManagedObjectContext
        let milk: ManagedObjectID

        init(_ storeType: PersistentStoreType) throws {
            stack = try QueueStack(storeType: storeType)
            let setup = stack.context()
            let stack = stack
            milk = try setup.performAndWait {
                let item = ManagedObject(entity: stack.item, insertInto: setup)
                item.setValue("milk", forKey: "name")
                try setup.save()
                return item.objectID
            }
            parent = stack.context(name: "parent")
            child = ManagedObjectContext(concurrencyType: .privateQueue)
            child.parent = parent
        }

        /// The number of items in the store (a fresh context).
        func storedNames() throws -> Set<String> {
            let check = stack.context()
            return try check.performAndWait { Set(try check.itemsByName().keys) }
        }
    }

    @Test("A child's save pushes its changes into the parent only; the parent's save stores them", arguments: allStoreTypes)
    func saveIntoParent(storeType: PersistentStoreType) throws {
        let family = try Family(storeType)
        let (parent, child, stack) = (family.parent, family.child, family.stack)
        #expect(child.persistentStoreCoordinator === stack.coordinator)
        let newID = try child.performAndWait {
            let eggs = ManagedObject(entity: stack.item, insertInto: child)
            eggs.setValue("eggs", forKey: "name")
            let list = ManagedObject(entity: stack.list, insertInto: child)
            list.setValue("groceries", forKey: "title")
            eggs.setValue(list, forKey: "list")
            try child.existingObject(with: family.milk).setValue(3, forKey: "count")
            try child.save()
            #expect(!child.hasChanges)
            #expect(eggs.objectID.isTemporaryID, "IDs stay temporary until the parent saves")
            return eggs.objectID
        }
        #expect(try family.storedNames() == ["milk"])
        try parent.performAndWait {
            #expect(parent.hasChanges)
            #expect(parent.insertedObjects.count == 2)
            let eggs = try #require(parent.registeredObject(for: newID))
            #expect(eggs.value(forKey: "name") as? String == "eggs")
            #expect((eggs.value(forKey: "list") as? ManagedObject)?.value(forKey: "title") as? String == "groceries")
            let milk = try parent.existingObject(with: family.milk)
            #expect(milk.value(forKey: "count") as? Int == 3)
            #expect(milk.isUpdated)
            try parent.save()
            #expect(!eggs.objectID.isTemporaryID)
        }
        #expect(try family.storedNames() == ["milk", "eggs"])
        // Saved to the store, the child's object still goes by its temporary ID,
        // and saving it again reaches the parent's object.
        try child.performAndWait {
            let eggs = try child.existingObject(with: newID)
            #expect(eggs.value(forKey: "name") as? String == "eggs")
            eggs.setValue(12, forKey: "count")
            try child.save()
        }
        let count = try parent.performAndWait { () throws -> Int? in
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = try CorePredicate(format: "name == 'eggs'")
            return try parent.fetch(request).first?.value(forKey: "count") as? Int
        }
        #expect(count == 12)
    }

    @Test("Fetches and faults in a child see the parent's unsaved state", arguments: allStoreTypes)
    func childSeesParent(storeType: PersistentStoreType) throws {
        let family = try Family(storeType)
        let (parent, child, stack) = (family.parent, family.child, family.stack)
        let (butterID, listID) = try parent.performAndWait {
            let butter = ManagedObject(entity: stack.item, insertInto: parent)
            butter.setValue("butter", forKey: "name")
            butter.setValue(5, forKey: "count")
            let list = ManagedObject(entity: stack.list, insertInto: parent)
            list.setValue("dairy", forKey: "title")
            let milk = try parent.existingObject(with: family.milk)
            milk.setValue(7, forKey: "count")
            milk.setValue(list, forKey: "list")
            butter.setValue(list, forKey: "list")
            return (butter.objectID, list.objectID)
        }
        try child.performAndWait {
            let items = try child.itemsByName()
            #expect(Set(items.keys) == ["milk", "butter"])
            #expect(items["milk"]?.value(forKey: "count") as? Int == 7)
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = try CorePredicate(format: "count > 6")
            #expect(try child.fetch(request).map { $0.value(forKey: "name") as? String } == ["milk"])
            #expect(try child.count(for: FetchRequest<ManagedObject>(entityName: "Item")) == 2)
            // Faults fire from the parent, temporary IDs included.
            let butter = try child.existingObject(with: butterID)
            #expect(butter.value(forKey: "count") as? Int == 5)
            let list = child.object(with: listID)
            let names = Set((list.value(forKey: "items") as? Set<ManagedObject> ?? []).compactMap { $0.value(forKey: "name") as? String })
            #expect(names == ["milk", "butter"])
            #expect(!child.hasChanges)
        }
        // The parent deletes: the child no longer finds the object.
        try parent.performAndWait { parent.delete(try parent.existingObject(with: family.milk)) }
        try child.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = try CorePredicate(format: "name == 'milk'")
            #expect(try child.fetch(request).isEmpty)
        }
    }

    @Test("Deletes in a child reach the parent with their delete rules; permanent IDs can be obtained early", arguments: allStoreTypes)
    func deletesAndPermanentIDs(storeType: PersistentStoreType) throws {
        let family = try Family(storeType)
        let (parent, child, stack) = (family.parent, family.child, family.stack)
        let (listID, itemIDs) = try child.performAndWait {
            let list = ManagedObject(entity: stack.list, insertInto: child)
            let items = (0..<3).map { index -> ManagedObject in
                let item = ManagedObject(entity: stack.item, insertInto: child)
                item.setValue("item \(index)", forKey: "name")
                item.setValue(list, forKey: "list")
                return item
            }
            try child.obtainPermanentIDs(for: [list] + items)
            try child.save()
            return (list.objectID, items.map(\.objectID))
        }
        #expect(!listID.isTemporaryID)
        try parent.performAndWait {
            #expect(parent.registeredObject(for: listID)?.isInserted == true)
            try parent.save()
        }
        #expect(try family.storedNames() == ["milk", "item 0", "item 1", "item 2"])
        // Deleting the list in the child cascades to its items, in the parent too.
        try child.performAndWait {
            child.delete(try child.existingObject(with: listID))
            try child.save()
        }
        try parent.performAndWait {
            #expect(parent.deletedObjects.count == 4)
            #expect(itemIDs.allSatisfy { parent.registeredObject(for: $0)?.isDeleted == true })
            try parent.save()
        }
        #expect(try family.storedNames() == ["milk"])
    }

    @Test("A child of the main-queue context saves from the main queue without deadlock")
    func childOfViewContext() async throws {
        let stack = try QueueStack()
        let viewContext = stack.context(.mainQueue, name: "view")
        let editing = ManagedObjectContext(concurrencyType: .privateQueue)
        editing.parent = viewContext
        let item = stack.item
        let id = try await MainActor.run {
            try editing.performAndWait {
                let object = ManagedObject(entity: item, insertInto: editing)
                object.setValue("edited", forKey: "name")
                try editing.save()
                return object.objectID
            }
        }
        let name = try await viewContext.perform {
            let object = try #require(viewContext.registeredObject(for: id))
            try viewContext.save()
            return object.value(forKey: "name") as? String
        }
        #expect(name == "edited")
        let check = stack.context()
        #expect(try check.performAndWait { try check.itemsByName().keys.sorted() } == ["edited"])
    }

    @Test("A merging child takes in its siblings' saves into the parent and the parent's own saves")
    func childMerging() async throws {
        let family = try Family(.sqlite)
        let (parent, sibling) = (family.parent, family.child)
        let watcher = ManagedObjectContext(concurrencyType: .privateQueue)
        watcher.parent = parent
        watcher.automaticallyMergesChangesFromParent = true
        let held = QueueBound<ManagedObject?>(nil)
        try await watcher.perform { held.value = try watcher.existingObject(with: family.milk) }
        try await sibling.perform {
            try sibling.existingObject(with: family.milk).setValue(4, forKey: "count")
            try sibling.save()
        }
        await watcher.perform(schedule: .enqueued) {}
        #expect(await watcher.perform { held.value?.value(forKey: "count") as? Int } == 4)
        try await parent.perform {
            try parent.existingObject(with: family.milk).setValue("from the parent", forKey: "note")
            try parent.save()
        }
        await watcher.perform(schedule: .enqueued) {}
        let merged = await watcher.perform { (held.value?.value(forKey: "count") as? Int, held.value?.value(forKey: "note") as? String) }
        #expect(merged.0 == 4 && merged.1 == "from the parent")
        #expect(await watcher.perform { watcher.hasChanges } == false)
    }

    @Test("Each context undoes its own changes")
    func undoPerContext() throws {
        let family = try Family(.inMemory)
        let (parent, child) = (family.parent, family.child)
        parent.performAndWait { parent.undoManager = CoreUndoManager() }
        child.performAndWait { child.undoManager = CoreUndoManager() }
        try child.performAndWait {
            let milk = try child.existingObject(with: family.milk)
            milk.setValue(1, forKey: "count")
            child.processPendingChanges()
            try child.save()
            milk.setValue(2, forKey: "count")
            child.undo()
            #expect(milk.value(forKey: "count") as? Int == 1)
        }
        try parent.performAndWait {
            let milk = try parent.existingObject(with: family.milk)
            #expect(milk.value(forKey: "count") as? Int == 1)
            parent.undo()
            #expect(milk.value(forKey: "count") as? Int == 0, "the parent undoes the pushed change")
        }
        let childValue = try child.performAndWait { try child.existingObject(with: family.milk).value(forKey: "count") as? Int }
        #expect(childValue == 1)
    }
}
