import Dispatch
import Foundation
@testable import OpenCoreData
import Testing

/// Memory-safety hazards: objects, contexts and coordinators let go on one thread
/// while another uses their neighbours. Core Data lets a managed object be released
/// on any thread; the uniquing table, the object's deinit and the back references
/// must stay safe whatever thread the last release happens on. These tests run in
/// CI under ThreadSanitizer and AddressSanitizer too (`.ci/run`), where a race or a
/// use after free is a report, not a coincidence.
@Suite("Memory safety hazards")
struct MemorySafetyHazardTests {
    /// Items on a fresh SQLite store.
    static func seededStack(items: Int) throws -> QueueStack {
        let stack = try QueueStack()
        let context = stack.context()
        try context.performAndWait {
            for index in 0..<items {
                let item = ManagedObject(entity: stack.item, insertInto: context)
                item.setValue("item \(index)", forKey: "name")
                item.setValue(index, forKey: "count")
            }
            try context.save()
        }
        return stack
    }

    /// Fetches every item in `context` and hands the objects out, as code that
    /// returns fetched objects from `performAndWait` does.
    static func fetchItems(_ context: ManagedObjectContext) throws -> QueueBound<[ManagedObject]?> {
        try context.performAndWait {
            QueueBound<[ManagedObject]?>(try context.fetch(FetchRequest<ManagedObject>(entityName: "Item")))
        }
    }

    /// Runs `release` on another thread while `use` runs on the calling one.
    static func concurrently(release: @escaping @Sendable () -> Void, use: () throws -> Void) rethrows {
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group, execute: release)
        try use()
        group.wait()
    }

    @Test("Objects let go on another thread while their context looks their IDs up")
    func releaseWhileLookingUp() throws {
        let stack = try Self.seededStack(items: 2000)
        for _ in 0..<5 {
            let context = stack.context()
            let fetched = try Self.fetchItems(context)
            let ids = fetched.value?.map(\.objectID) ?? []
            #expect(ids.count == 2000)
            try Self.concurrently(release: { fetched.value = nil }) {
                try context.performAndWait {
                    for _ in 0..<3 {
                        for id in ids {
                            // Either the registered object, alive and with its ID, or nothing.
                            if let object = context.registeredObject(for: id) { #expect(object.objectID == id) }
                        }
                    }
                    // Every ID still finds an object: the registered one, or a new fault.
                    for id in ids.prefix(100) {
                        let object = try context.existingObject(with: id)
                        #expect(object.objectID == id)
                    }
                }
            }
        }
    }

    @Test("Objects let go on another thread while their context fetches, merges, resets and saves")
    func releaseWhileWorking() throws {
        let stack = try Self.seededStack(items: 1000)
        let other = stack.context()
        for round in 0..<4 {
            let context = stack.context()
            let fetched = try Self.fetchItems(context)
            let ids = fetched.value?.map(\.objectID) ?? []
            // A save elsewhere, for the context to merge.
            let summary = try other.performAndWait {
                let item = try other.existingObject(with: ids[round])
                item.setValue("renamed \(round)", forKey: "name")
                let saved = QueueBound<ContextSaveSummary?>(nil)
                let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification,
                                                                   object: other, queue: nil) { notification in
                    saved.value = ContextSaveSummary(didSaveNotification: notification)
                }
                defer { NotificationCenter.default.removeObserver(token) }
                try other.save()
                return saved.value
            }
            try Self.concurrently(release: { fetched.value = nil }) {
                try context.performAndWait {
                    let again = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
                    #expect(again.count == 1000)
                    if let summary { context.mergeChanges(from: summary) }
                    #expect(try context.existingObject(with: ids[round]).value(forKey: "name") as? String == "renamed \(round)")
                    again[0].setValue(round, forKey: "count")
                    try context.save()
                    context.reset()
                    #expect(context.registeredObjects.isEmpty)
                    _ = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
                }
            }
        }
    }

    @Test("A context let go on another thread while its objects live on")
    func contextReleasedBeforeObjects() throws {
        let stack = try Self.seededStack(items: 500)
        for _ in 0..<10 {
            let holder = QueueBound<ManagedObjectContext?>(stack.context())
            let fetched = try holder.value.map(Self.fetchItems)
            Self.concurrently(release: { holder.value = nil }) {
                for object in fetched?.value ?? [] {
                    // The context, while it lives, or nothing: never a dangling one.
                    if let context = object.managedObjectContext { #expect(context.registeredObjects.count >= 0) }
                }
            }
            #expect(holder.value == nil)
            for object in fetched?.value ?? [] { #expect(object.managedObjectContext == nil) }
            fetched?.value = nil
        }
    }

    @Test("A coordinator shared by contexts on many queues: fetches, faults and saves at once")
    func sharedCoordinator() async throws {
        let stack = try Self.seededStack(items: 400)
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    let context = stack.context(name: "worker \(worker)")
                    var seen = 0
                    for round in 0..<5 {
                        seen += try await context.perform {
                            let request = FetchRequest<ManagedObject>(entityName: "Item")
                            request.returnsObjectsAsFaults = true
                            let items = try context.fetch(request)
                            let named = items.filter { (item: ManagedObject) in (item.value(forKey: "name") as? String)?.isEmpty == false }
                            items[(worker * 50 + round) % items.count].setValue(worker * 100 + round, forKey: "count")
                            context.mergePolicy = .mergeByPropertyObjectTrump
                            try context.save()
                            if round % 2 == 1 { context.reset() }
                            return named.count
                        }
                    }
                    return seen
                }
            }
            var total = 0
            for try await seen in group { total += seen }
            #expect(total == 4 * 5 * 400)
        }
    }

    @Test("Faults firing in one context while another saves the same rows")
    func faultsRacingSaves() throws {
        let stack = try Self.seededStack(items: 300)
        let writer = stack.context(name: "writer")
        let reader = stack.context(name: "reader")
        let ids = try Self.fetchItems(reader).value?.map(\.objectID) ?? []
        let writes = DispatchGroup()
        let writerBox = QueueBound(writer)
        let idsBox = QueueBound(ids)
        DispatchQueue.global().async(group: writes) {
            writerBox.value.performAndWait {
                let context = writerBox.value
                for round in 0..<10 {
                    for id in idsBox.value.prefix(100) {
                        (try? context.existingObject(with: id))?.setValue(round, forKey: "count")
                    }
                    try? context.save()
                }
            }
        }
        try reader.performAndWait {
            for _ in 0..<10 {
                for id in ids.prefix(100) {
                    let object = try reader.existingObject(with: id)
                    reader.refresh(object, mergeChanges: false)
                    // Fires the fault: some committed version of the row, never a torn one.
                    let count = object.value(forKey: "count") as? Int
                    #expect(count != nil)
                }
            }
        }
        writes.wait()
    }
}
