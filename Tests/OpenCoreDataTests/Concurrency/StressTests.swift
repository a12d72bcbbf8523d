import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

/// Writers, a main-queue reader and merges, all at once on one SQLite store.
@Suite("Concurrency stress")
struct StressTests {
    /// Increments the shared counter `id` and inserts one item, in one save,
    /// retrying after optimistic locking conflicts (the counter then is read again).
    static func incrementAndInsert(_ context: ManagedObjectContext, counter id: ManagedObjectID, list: ManagedObject,
                                   item entity: EntityDescription, name: String, writer: Int) throws -> (ManagedObject, Int) {
        let item = ManagedObject(entity: entity, insertInto: context)
        item.setValue(name, forKey: "name")
        item.setValue(writer, forKey: "writer")
        item.setValue(list, forKey: "list")
        let counter = try context.existingObject(with: id)
        var conflicts = 0
        while true {
            counter.setValue((counter.value(forKey: "count") as? Int ?? 0) + 1, forKey: "count")
            do {
                try context.save()
                return (item, conflicts)
            } catch let error as CoreDataError where error.code == .managedObjectMerge {
                conflicts += 1
                context.refresh(counter, mergeChanges: false)
            }
        }
    }

    /// Creates the shared counter and one list per writer; returns their IDs.
    static func setUp(_ context: ManagedObjectContext, stack: QueueStack, writers: Int) throws -> (ManagedObjectID, [ManagedObjectID]) {
        try context.performAndWait {
            let counter = ManagedObject(entity: stack.item, insertInto: context)
            counter.setValue("shared counter", forKey: "name")
            counter.setValue(-1, forKey: "writer")
            let lists = (0..<writers).map { index -> ManagedObject in
                let list = ManagedObject(entity: stack.list, insertInto: context)
                list.setValue("writer \(index)", forKey: "title")
                return list
            }
            try context.save()
            return (counter.objectID, lists.map(\.objectID))
        }
    }

    @Test("Background writers, a merging main-queue reader: no lost updates, a consistent graph")
    func writersAndReader() async throws {
        let stack = try QueueStack()
        let writers = 4
        let savesPerWriter = 400
        let (counterID, listIDs) = try Self.setUp(stack.context(), stack: stack, writers: writers)

        let viewContext = stack.context(.mainQueue, name: "view")
        viewContext.automaticallyMergesChangesFromParent = true
        let viewed = try await viewContext.perform { try viewContext.existingObject(with: counterID).objectID }
        #expect(viewed == counterID)
        let itemEntity = stack.item
        let shared = SharedCounters(running: writers)

        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let context = stack.context(name: "writer \(writer)")
                    context.transactionAuthor = "stress"
                    try await context.perform {
                        let list = try context.existingObject(with: listIDs[writer])
                        var mine: [ManagedObject] = []
                        for index in 0..<savesPerWriter {
                            let (item, found) = try Self.incrementAndInsert(context, counter: counterID, list: list, item: itemEntity,
                                                                    name: "w\(writer)-\(index)", writer: writer)
                            shared.conflicts.add(found, ordering: .relaxed)
                            if index % 10 == 9, let first = mine.first {
                                // Now and then an update and a delete of its own items.
                                mine.removeFirst()
                                context.delete(first)
                                mine.last?.setValue("w\(writer)-\(index - 1) edited", forKey: "note")
                                try context.save()
                            }
                            mine.append(item)
                        }
                    }
                    shared.running.subtract(1, ordering: .relaxed)
                }
            }
            // The reader: reads on the main queue while the merges arrive.
            group.addTask {
                var reads = 0
                while shared.running.load(ordering: .relaxed) > 0 || reads == 0 {
                    let (count, items) = try await viewContext.perform {
                        let counter = try viewContext.existingObject(with: counterID)
                        let count = counter.value(forKey: "count") as? Int ?? 0
                        let items = try viewContext.count(for: FetchRequest<ManagedObject>(entityName: "Item"))
                        return (count, items)
                    }
                    #expect(count >= 0 && count <= writers * savesPerWriter)
                    #expect(items >= 1)
                    reads += 1
                    try await Task.sleep(nanoseconds: 2_000_000)
                }
            }
            try await group.waitForAll()
        }

        // Every merge enqueued on the main queue has run after this.
        await viewContext.perform(schedule: .enqueued) {}
        let deletesPerWriter = savesPerWriter / 10
        let check = stack.context()
        try check.performAndWait {
            let counter = try check.existingObject(with: counterID)
            #expect(counter.value(forKey: "count") as? Int == writers * savesPerWriter, "no lost increment")
            for (writer, listID) in listIDs.enumerated() {
                let list = try check.existingObject(with: listID)
                let items = list.value(forKey: "items") as? Set<ManagedObject> ?? []
                #expect(items.count == savesPerWriter - deletesPerWriter)
                #expect(items.allSatisfy { $0.value(forKey: "writer") as? Int == writer && $0.value(forKey: "list") as? ManagedObject === list })
                let edited = items.filter { ($0.value(forKey: "note") as? String)?.hasSuffix("edited") == true }
                // Item 10k+8 is edited at save 10k+9, items 0..<deletes are deleted.
                let editedSurvivors = (0..<deletesPerWriter).map { $0 * 10 + 8 }.filter { $0 >= deletesPerWriter }.count
                #expect(edited.count == editedSurvivors)
            }
            let all = try check.count(for: FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(all == 1 + writers * (savesPerWriter - deletesPerWriter))
        }
        // The merging view context agrees with the store.
        try await viewContext.perform {
            let merged = try viewContext.existingObject(with: counterID).value(forKey: "count") as? Int
            #expect(merged == writers * savesPerWriter)
            let registered = viewContext.registeredObjects.filter { $0.entity.name == "Item" && !$0.isFault }
            for object in registered {
                #expect(!object.isDeleted)
                #expect(object.value(forKey: "name") != nil)
            }
            #expect(!viewContext.hasChanges)
        }
    }

    @Test("Two coordinators on one store file save concurrently without losing updates")
    func twoCoordinators() async throws {
        let first = try QueueStack()
        let url = try #require(first.url)
        let secondCoordinator = PersistentStoreCoordinator(managedObjectModel: first.model)
        try secondCoordinator.addPersistentStore(type: .sqlite, at: url)
        let (counterID, listIDs) = try Self.setUp(first.context(), stack: first, writers: 2)
        let rounds = 150
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, coordinator) in [first.coordinator, secondCoordinator].enumerated() {
                group.addTask {
                    let context = ManagedObjectContext(concurrencyType: .privateQueue)
                    context.persistentStoreCoordinator = coordinator
                    try await context.perform {
                        let list = try context.existingObject(with: listIDs[index])
                        let entity = coordinator.managedObjectModel.entitiesByName["Item"]!
                        for round in 0..<rounds {
                            _ = try Self.incrementAndInsert(context, counter: counterID, list: list, item: entity,
                                                            name: "c\(index)-\(round)", writer: index)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let check = first.context()
        try check.performAndWait {
            let count = try check.existingObject(with: counterID).value(forKey: "count") as? Int
            #expect(count == 2 * rounds)
            #expect(try check.count(for: FetchRequest<ManagedObject>(entityName: "Item")) == 1 + 2 * rounds)
        }
    }

    static let processRounds = 150

    static func twoProcessFolder(parent: pid_t) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("OpenCoreDataTests-two-processes-\(parent)")
    }

    @Test("Two processes on one store file save concurrently without losing updates")
    func twoProcesses() async throws {
        // The child process finds the store by its parent's process ID.
        let folder = Self.twoProcessFolder(parent: getpid())
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stack = try QueueStack(url: folder.appendingPathComponent("Queue.sqlite"))
        let (counterID, listIDs) = try Self.setUp(stack.context(), stack: stack, writers: 2)
        let rounds = Self.processRounds
        // The other process: a coordinator of its own on the same file.
        async let other = #expect(processExitsWith: .success) {
            do {
            let model = try QueueModel.make()
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: StressTests.twoProcessFolder(parent: getppid()).appendingPathComponent("Queue.sqlite"))
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                let items = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
                let lists = try context.fetch(FetchRequest<ManagedObject>(entityName: "List"))
                guard let counter = items.first(where: { $0.value(forKey: "name") as? String == "shared counter" }),
                      let list = lists.first(where: { $0.value(forKey: "title") as? String == "writer 1" }) else { exit(2) }
                for round in 0..<StressTests.processRounds {
                    _ = try StressTests.incrementAndInsert(context, counter: counter.objectID, list: list, item: model.entitiesByName["Item"]!,
                                                           name: "p1-\(round)", writer: 1)
                }
            }
            } catch {
                exit(1)
            }
        }
        let context = stack.context()
        try await context.perform {
            let list = try context.existingObject(with: listIDs[0])
            for round in 0..<rounds {
                _ = try Self.incrementAndInsert(context, counter: counterID, list: list, item: stack.item, name: "p0-\(round)", writer: 0)
            }
        }
        _ = await other
        let check = stack.context()
        try check.performAndWait {
            #expect(try check.existingObject(with: counterID).value(forKey: "count") as? Int == 2 * rounds)
            let items = try check.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            #expect(items.count == 1 + 2 * rounds)
            #expect(items.filter { ($0.value(forKey: "name") as? String)?.hasPrefix("p1-") == true }.count == rounds)
        }
    }
}

