import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

@Suite("Merging saves between contexts")
struct MergingTests {
    /// Saves `changes` in `writer` and merges the save's notification into `reader`.
    func saveAndMerge(_ writer: ManagedObjectContext, into reader: ManagedObjectContext,
                      _ changes: @escaping @Sendable () throws -> Void) async throws -> ContextSaveSummary {
        let saved = Lock<ContextSaveSummary?>(nil)
        let observer = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification,
                                                              object: writer, queue: nil) { notification in
            let summary = ContextSaveSummary(didSaveNotification: notification)
            saved.withLock { $0 = summary }
            reader.perform { reader.mergeChanges(from: summary!) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try await writer.perform {
            try changes()
            try writer.save()
        }
        await reader.perform(schedule: .enqueued) {}
        return try #require(saved.withLock { $0 })
    }

    @Test("Each save posts the object-ID notification right after the did-save one, with the same IDs, and it merges", arguments: allStoreTypes)
    func objectIDNotification(storeType: PersistentStoreType) async throws {
        let stack = try QueueStack(storeType: storeType)
        let writer = stack.context(name: "writer")
        let reader = stack.context(name: "reader")
        let posted = Lock<[(kind: String, save: ContextSaveSummary, hasObjects: Bool)]>([])
        func record(_ kind: String) -> @Sendable (Notification) -> Void {
            { notification in
                guard let save = ContextSaveSummary(didSaveNotification: notification) else { return }
                let hasObjects = notification.userInfo?[ManagedObjectContext.NotificationKey.insertedObjects] != nil
                posted.withLock { $0.append((kind, save, hasObjects)) }
                if kind == "ids" { reader.perform { reader.mergeChanges(from: save) } }
            }
        }
        let observers = [
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: writer,
                                                   queue: nil, using: record("objects")),
            NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectIDsNotification, object: writer,
                                                   queue: nil, using: record("ids")),
        ]
        defer { for observer in observers { NotificationCenter.default.removeObserver(observer) } }

        let (milk, eggs) = try await writer.perform {
            let milk = ManagedObject(entity: stack.item, insertInto: writer)
            milk.setValue("milk", forKey: "name")
            let eggs = ManagedObject(entity: stack.item, insertInto: writer)
            eggs.setValue("eggs", forKey: "name")
            try writer.save()
            milk.setValue("oat milk", forKey: "name")
            writer.delete(eggs)
            try writer.save()
            return (milk.objectID, eggs.objectID)
        }
        await reader.perform(schedule: .enqueued) {}

        let notes = posted.withLock { $0 }
        #expect(notes.map(\.kind) == ["objects", "ids", "objects", "ids"])
        // The object-ID notification carries IDs only, the same as the did-save one's.
        #expect(notes.map(\.hasObjects) == [true, false, true, false])
        #expect(notes[0].save == notes[1].save && notes[2].save == notes[3].save)
        #expect(notes[1].save.insertedObjectIDs == [milk, eggs])
        #expect(notes[1].save.insertedObjectIDs.allSatisfy { !$0.isTemporaryID })
        #expect(notes[3].save.updatedObjectIDs == [milk] && notes[3].save.deletedObjectIDs == [eggs])
        #expect(notes[3].save.contextName == "writer")
        // Merged from the object-ID notifications alone: the reader sees the milk, renamed, and no eggs.
        try await reader.perform {
            #expect(reader.registeredObject(for: eggs) == nil)
            let names = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Item")).compactMap { $0.value(forKey: "name") as? String }
            #expect(names == ["oat milk"])
        }
    }

    @Test("Inserted objects arrive as faults, updated ones are refreshed, deleted ones removed", arguments: allStoreTypes)
    func mergeRules(storeType: PersistentStoreType) async throws {
        let stack = try QueueStack(storeType: storeType)
        let writer = stack.context(name: "writer")
        let reader = stack.context(name: "reader")
        let ids = try await writer.perform {
            let list = ManagedObject(entity: stack.list, insertInto: writer)
            list.setValue("groceries", forKey: "title")
            for name in ["milk", "eggs", "bread"] {
                let item = ManagedObject(entity: stack.item, insertInto: writer)
                item.setValue(name, forKey: "name")
                item.setValue(list, forKey: "list")
            }
            try writer.save()
            return try writer.itemsByName().mapValues(\.objectID).merging(["list": list.objectID]) { a, _ in a }
        }
        // The reader holds the list with its items loaded, and the milk.
        let holder = QueueBound<[ManagedObject]>([])
        try await reader.perform {
            let list = try reader.existingObject(with: ids["list"]!)
            let milk = try reader.existingObject(with: ids["milk"]!)
            let eggs = reader.object(with: ids["eggs"]!)
            #expect((list.value(forKey: "items") as? Set<ManagedObject>)?.count == 3)
            holder.value = [list, milk, eggs]
        }
        let changed = Lock<[String: Set<ManagedObjectID>]>([:])
        let observer = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification,
                                                              object: reader, queue: nil) { notification in
            let info = notification.userInfo ?? [:]
            var result: [String: Set<ManagedObjectID>] = [:]
            for key in ["inserted", "deleted", "refreshed"] {
                result[key] = Set((info[key] as? Set<ManagedObject> ?? []).map(\.objectID))
            }
            changed.withLock { $0 = result }
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        let save = try await saveAndMerge(writer, into: reader) {
            let items = try writer.itemsByName()
            items["milk"]!.setValue(2, forKey: "count")
            writer.delete(items["eggs"]!)
            let butter = ManagedObject(entity: stack.item, insertInto: writer)
            butter.setValue("butter", forKey: "name")
            butter.setValue(items["milk"]!.value(forKey: "list"), forKey: "list")
        }
        #expect(save.contextName == "writer")
        let butterID = try #require(save.insertedObjectIDs.first)
        #expect(save.deletedObjectIDs == [ids["eggs"]!])
        #expect(save.updatedObjectIDs.contains(ids["milk"]!))

        try await reader.perform {
            let (list, milk) = (holder.value[0], holder.value[1])
            #expect(milk.value(forKey: "count") as? Int == 2)
            #expect(!milk.hasChanges)
            let names = Set((list.value(forKey: "items") as? Set<ManagedObject> ?? []).compactMap { $0.value(forKey: "name") as? String })
            #expect(names == ["milk", "bread", "butter"])
            #expect(reader.registeredObject(for: ids["eggs"]!) == nil)
            #expect(holder.value[2].managedObjectContext == nil)
            #expect(!reader.hasChanges)
            let fetched = try reader.itemsByName()
            #expect(Set(fetched.keys) == ["milk", "bread", "butter"])
        }
        let notified = changed.withLock { $0 }
        #expect(notified["inserted"] == [butterID])
        #expect(notified["deleted"] == [ids["eggs"]!])
        #expect(notified["refreshed"]?.contains(ids["milk"]!) == true)
    }

    @Test("Merging keeps the context's own unsaved changes on top of the saved ones")
    func localChangesKept() async throws {
        let stack = try QueueStack()
        let writer = stack.context()
        let reader = stack.context()
        let id = try await writer.perform {
            let item = ManagedObject(entity: stack.item, insertInto: writer)
            item.setValue("milk", forKey: "name")
            try writer.save()
            return item.objectID
        }
        let holder = QueueBound<ManagedObject?>(nil)
        try await reader.perform {
            let item = try reader.existingObject(with: id)
            item.setValue("local note", forKey: "note")
            holder.value = item
        }
        _ = try await saveAndMerge(writer, into: reader) {
            try writer.existingObject(with: id).setValue(7, forKey: "count")
        }
        try await reader.perform {
            let item = holder.value!
            #expect(item.value(forKey: "count") as? Int == 7)
            #expect(item.value(forKey: "note") as? String == "local note")
            #expect(item.hasChanges)
            // The merged version is the stored one: saving does not conflict.
            try reader.save()
        }
        let stored = try await writer.perform {
            let item = try writer.existingObject(with: id)
            writer.refresh(item, mergeChanges: false)
            return (item.value(forKey: "count") as? Int, item.value(forKey: "note") as? String)
        }
        #expect(stored.0 == 7 && stored.1 == "local note")
    }

    @Test("automaticallyMergesChangesFromParent merges the saves of sibling contexts of the coordinator")
    func automaticMerging() async throws {
        let stack = try QueueStack()
        let viewContext = stack.context(.mainQueue, name: "view")
        viewContext.automaticallyMergesChangesFromParent = true
        let plain = stack.context()
        let writer = stack.context()
        let id = try await writer.perform {
            let item = ManagedObject(entity: stack.item, insertInto: writer)
            item.setValue("milk", forKey: "name")
            try writer.save()
            return item.objectID
        }
        let viewHolder = QueueBound<ManagedObject?>(nil)
        let plainHolder = QueueBound<ManagedObject?>(nil)
        try await viewContext.perform { viewHolder.value = try viewContext.existingObject(with: id) }
        try await plain.perform { plainHolder.value = try plain.existingObject(with: id) }
        try await writer.perform {
            try writer.existingObject(with: id).setValue(5, forKey: "count")
            try writer.save()
        }
        await viewContext.perform(schedule: .enqueued) {}
        await plain.perform(schedule: .enqueued) {}
        let counts = await viewContext.perform {
            viewHolder.value?.value(forKey: "count") as? Int
        }
        let plainCount = await plain.perform { plainHolder.value?.value(forKey: "count") as? Int }
        #expect(counts == 5)
        #expect(plainCount == 0, "a context that does not merge keeps the values it read")

        viewContext.automaticallyMergesChangesFromParent = false
        try await writer.perform {
            try writer.existingObject(with: id).setValue(6, forKey: "count")
            try writer.save()
        }
        await viewContext.perform(schedule: .enqueued) {}
        let after = await viewContext.perform { viewHolder.value?.value(forKey: "count") as? Int }
        #expect(after == 5)
    }
}
