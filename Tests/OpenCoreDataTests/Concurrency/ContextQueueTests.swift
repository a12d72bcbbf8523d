import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

/// The non-blocking `perform(_:)` (in an async function, `context.perform { }`
/// picks the async overload, as with Core Data).
func enqueue(_ context: ManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
    context.perform(block)
}

@Suite("Contexts on queues")
struct ContextQueueTests {
    @Test("perform runs the block on the context's queue, after the work already enqueued")
    func performIsSerialAndOnQueue() async throws {
        let stack = try QueueStack()
        let context = stack.context()
        #expect(!context.isOnContextQueue)
        let order = Lock<[Int]>([])
        for index in 0..<50 {
            enqueue(context) {
                precondition(context.isOnContextQueue)
                order.withLock { $0.append(index) }
            }
        }
        let onQueue = await context.perform(schedule: .enqueued) { context.isOnContextQueue }
        #expect(onQueue)
        #expect(order.withLock { $0 } == Array(0..<50))
    }

    @Test("perform returns the block's value and rethrows its error; the context processes pending changes")
    func performResultsAndErrors() async throws {
        let stack = try QueueStack()
        let context = stack.context()
        let changes = Lock(0)
        let observer = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification,
                                                              object: context, queue: nil) { _ in changes.withLock { $0 += 1 } }
        defer { NotificationCenter.default.removeObserver(observer) }
        let id = try await context.perform {
            let item = ManagedObject(entity: stack.item, insertInto: context)
            item.setValue("a", forKey: "name")
            try context.save()
            return item.objectID
        }
        #expect(!id.isTemporaryID)
        #expect(changes.withLock { $0 } >= 1)
        await #expect(throws: CoreDataError.self) {
            try await context.perform {
                _ = try context.existingObject(with: ManagedObjectID(entity: stack.item, storeIdentifier: id.storeIdentifier!, primaryKey: 999))
            }
        }
    }

    @Test("performAndWait runs on the queue, is reentrant, and nests across contexts")
    func performAndWaitReentrant() throws {
        let stack = try QueueStack()
        let a = stack.context()
        let b = stack.context()
        let result = a.performAndWait { () -> [Bool] in
            let inner = a.performAndWait { a.isOnContextQueue }
            let other = b.performAndWait { (b.isOnContextQueue, a.isOnContextQueue) }
            return [a.isOnContextQueue, inner, other.0, other.1, b.isOnContextQueue]
        }
        // Inside b's block the thread still holds a's queue (a waits for b): a may
        // be used there, so a child can reach its parent.
        #expect(result == [true, true, true, true, false])
        #expect(!a.isOnContextQueue)
        #expect(throws: CoreDataError.self) {
            try a.performAndWait { throw CoreDataError(.coreData, "from the block") }
        }
    }

    @Test(".immediate runs at once on the queue; .enqueued waits for the work before it")
    func scheduling() async throws {
        let stack = try QueueStack()
        let context = stack.context()
        let log = Lock<[String]>([])
        let gate = DispatchSemaphore(value: 0)
        // A block holds the queue until the perform below has been scheduled.
        enqueue(context) {
            gate.wait()
            log.withLock { $0.append("first") }
        }
        async let second: Void = context.perform(schedule: .enqueued) { log.withLock { $0.append("second") } }
        try await Task.sleep(nanoseconds: 10_000_000)
        #expect(log.withLock { $0 }.isEmpty)
        gate.signal()
        await second
        #expect(log.withLock { $0 } == ["first", "second"])

        // Already on the queue, .immediate does not wait for work enqueued meanwhile.
        context.performAndWait {
            enqueue(context) { log.withLock { $0.append("later") } }
            log.withLock { $0.append("now") }
        }
        await context.perform(schedule: .enqueued) {}
        #expect(log.withLock { $0 }.suffix(2) == ["now", "later"])
    }

    @Test("A main-queue context performs on the main queue, where the main actor runs")
    func mainQueue() async throws {
        let stack = try QueueStack()
        let context = stack.context(.mainQueue)
        let onMain = await context.perform { context.isOnContextQueue }
        #expect(onMain)
        #expect(!context.isOnContextQueue)
        let fromBackground = await Task.detached { context.performAndWait { context.isOnContextQueue } }.value
        #expect(fromBackground)
        let privateContext = stack.context()
        let other = await context.perform { privateContext.performAndWait { (context.isOnContextQueue, privateContext.isOnContextQueue) } }
        #expect(other == (true, true), "the thread holds the main queue while it waits for the private one")
        let detached = await Task.detached { privateContext.performAndWait { (context.isOnContextQueue, privateContext.isOnContextQueue) } }.value
        #expect(detached == (false, true))
        let onMainActor = await MainActor.run { context.isOnContextQueue }
        #expect(onMainActor)
    }

    @Test("Contexts on several queues pass object IDs, never objects")
    func objectIDsCrossQueues() async throws {
        let stack = try QueueStack()
        let writer = stack.context()
        let reader = stack.context()
        let ids = try await writer.perform {
            let items = (0..<10).map { index -> ManagedObject in
                let item = ManagedObject(entity: stack.item, insertInto: writer)
                item.setValue("item \(index)", forKey: "name")
                return item
            }
            try writer.save()
            return items.map(\.objectID)
        }
        let names = try await reader.perform {
            try ids.map { try reader.existingObject(with: $0).value(forKey: "name") as? String ?? "" }
        }
        #expect(names == (0..<10).map { "item \($0)" })
    }

    // MARK: Debug mode

    @Test("The debug mode stops a program that uses a private-queue context off its queue")
    func debugModeCatchesContextMisuse() async {
        await #expect(processExitsWith: .failure) {
            setenv("OPENCOREDATA_CONCURRENCY_DEBUG", "1", 1)
            let stack = try? QueueStack(storeType: .inMemory)
            let context = stack?.context()
            _ = try? context?.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
        }
    }

    @Test("The debug mode stops a program that reads an object off its context's queue")
    func debugModeCatchesObjectMisuse() async {
        await #expect(processExitsWith: .failure) {
            setenv("OPENCOREDATA_CONCURRENCY_DEBUG", "1", 1)
            guard let stack = try? QueueStack(storeType: .inMemory) else { return }
            let context = stack.context()
            let item = context.performAndWait { ManagedObject(entity: stack.item, insertInto: context) }
            _ = item.value(forKey: "name")
        }
    }

    @Test("The debug mode is turned on by the environment variable or Core Data's launch argument")
    func debugModeSwitches() {
        #expect(ConcurrencyDebug.isEnabled(environment: ["OPENCOREDATA_CONCURRENCY_DEBUG": "1"], arguments: []))
        #expect(!ConcurrencyDebug.isEnabled(environment: ["OPENCOREDATA_CONCURRENCY_DEBUG": "0"], arguments: ["-com.apple.CoreData.ConcurrencyDebug", "1"]))
        #expect(ConcurrencyDebug.isEnabled(environment: [:], arguments: ["app", "-com.apple.CoreData.ConcurrencyDebug", "1"]))
        #expect(!ConcurrencyDebug.isEnabled(environment: [:], arguments: ["app", "-com.apple.CoreData.ConcurrencyDebug", "0"]))
        #expect(!ConcurrencyDebug.isEnabled(environment: [:], arguments: ["app", "-com.apple.CoreData.ConcurrencyDebug"]))
    }

    @Test("The debug mode lets correct code run: perform and performAndWait")
    func debugModeAllowsCorrectUse() async {
        await #expect(processExitsWith: .success) {
            setenv("OPENCOREDATA_CONCURRENCY_DEBUG", "1", 1)
            precondition(ConcurrencyDebug.isEnabled)
            guard let stack = try? QueueStack(storeType: .inMemory) else { exit(2) }
            let context = stack.context()
            let saved = context.performAndWait { () -> Bool in
                let item = ManagedObject(entity: stack.item, insertInto: context)
                item.setValue("ok", forKey: "name")
                return (try? context.save()) != nil
            }
            let semaphore = DispatchSemaphore(value: 0)
            context.perform {
                _ = try? context.fetch(FetchRequest<ManagedObject>(entityName: "Item")).first?.value(forKey: "name")
                semaphore.signal()
            }
            semaphore.wait()
            // Parent and child, merging, policies: no false alarm on the way.
            let child = ManagedObjectContext(concurrencyType: .privateQueue)
            child.parent = context
            let watcher = stack.context()
            watcher.automaticallyMergesChangesFromParent = true
            context.mergePolicy = .mergeByPropertyObjectTrump
            let pushed = child.performAndWait { () -> Bool in
                let item = ManagedObject(entity: stack.item, insertInto: child)
                item.setValue("from the child", forKey: "name")
                _ = try? child.fetch(FetchRequest<ManagedObject>(entityName: "Item")).map { $0.value(forKey: "name") }
                return (try? child.save()) != nil
            }
            let stored = context.performAndWait { (try? context.save()) != nil }
            watcher.perform { _ = watcher.registeredObjects.count; semaphore.signal() }
            semaphore.wait()
            exit(saved && pushed && stored ? 0 : 3)
        }
    }
}
