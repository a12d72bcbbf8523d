import Foundation

/// The serial queue a context and its objects belong to: a private `DispatchQueue`
/// for ``ManagedObjectContext/ConcurrencyType/privateQueue`` contexts, the main
/// queue for ``ManagedObjectContext/ConcurrencyType/mainQueue`` ones.
///
/// Each private queue is tagged with a queue-specific value, so "am I on this
/// context's queue?" is one `DispatchQueue.getSpecific` call, true as well inside
/// `DispatchQueue.sync` from another thread (which is how ``performAndWait`` runs a
/// block on the caller's thread yet on the context's queue). The main queue gets a
/// tag of its own: on Linux, once the program calls `dispatchMain()` (as Swift's
/// `async` main does), main-queue blocks run on a worker thread, so
/// `Thread.isMainThread` alone cannot tell.
final class ContextQueue: Sendable {
    let queue: DispatchQueue
    let isMain: Bool

    /// The tag of the queues.
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    init(main: Bool, label: String) {
        isMain = main
        queue = main ? DispatchQueue.main : DispatchQueue(label: label)
        if main {
            _ = ContextQueue.mainTag
        } else {
            queue.setSpecific(key: ContextQueue.key, value: ObjectIdentifier(self))
        }
    }

    /// The main queue's tag, set once.
    private static let mainTag: ObjectIdentifier = {
        let tag = ObjectIdentifier(ContextQueue.self)
        DispatchQueue.main.setSpecific(key: key, value: tag)
        return tag
    }()

    /// The tag of this queue.
    var tag: ObjectIdentifier { isMain ? ContextQueue.mainTag : ObjectIdentifier(self) }

    /// Whether the calling code runs on this queue: directly, or in a
    /// `DispatchQueue.sync` this queue's thread made into another queue (a child
    /// context's `performAndWait` on the main thread asking its main-queue parent).
    var isCurrent: Bool {
        let current = DispatchQueue.getSpecific(key: ContextQueue.key)
        if current == tag { return true }
        if isMain && Thread.isMainThread { return true }
        return HeldQueues.current.tags.contains(tag)
    }

    /// Runs `body` synchronously on this queue, remembering for its duration that
    /// the calling thread also holds the queue it is on.
    func sync<T>(_ body: () -> T) -> T {
        let held = HeldQueues.current
        var pushed = 0
        if let outer = DispatchQueue.getSpecific(key: ContextQueue.key) { held.tags.append(outer); pushed += 1 }
        if Thread.isMainThread { held.tags.append(ContextQueue.mainTag); pushed += 1 }
        defer { held.tags.removeLast(pushed) }
        return withoutActuallyEscaping(body) { body in
            let transfer = UnsafeTransfer(body)
            return queue.sync { UnsafeTransfer(transfer.value()) }.value
        }
    }
}

/// The context queues a thread holds while it waits in `DispatchQueue.sync` for
/// another one (per thread, so no synchronization).
final class HeldQueues {
    var tags: [ObjectIdentifier] = []

    static var current: HeldQueues {
        let dictionary = Thread.current.threadDictionary
        if let held = dictionary["OpenCoreData.HeldQueues"] as? HeldQueues { return held }
        let held = HeldQueues()
        dictionary["OpenCoreData.HeldQueues"] = held
        return held
    }
}

/// The concurrency debug mode: with it on, every use of a context or of its objects
/// off the context's queue stops the program with a message naming the call.
///
/// Turn it on with the environment variable `OPENCOREDATA_CONCURRENCY_DEBUG=1` or
/// Core Data's launch argument `-com.apple.CoreData.ConcurrencyDebug 1`. It is
/// read once, at the first check.
enum ConcurrencyDebug {
    static let isEnabled = isEnabled(environment: ProcessInfo.processInfo.environment,
                                     arguments: ProcessInfo.processInfo.arguments)

    static func isEnabled(environment: [String: String], arguments: [String]) -> Bool {
        if let value = environment["OPENCOREDATA_CONCURRENCY_DEBUG"]?.lowercased() {
            return value == "1" || value == "true" || value == "yes"
        }
        if let index = arguments.firstIndex(of: "-com.apple.CoreData.ConcurrencyDebug"), index + 1 < arguments.count {
            return (Int(arguments[index + 1]) ?? 0) > 0
        }
        return false
    }
}

extension ManagedObjectContext {
    /// Scheduling of an asynchronous ``perform(schedule:_:)``
    /// (`NSManagedObjectContext.ScheduledTaskType`).
    public enum ScheduledTaskType: Sendable {
        /// Run the block at once when the caller is already on the context's queue,
        /// else enqueue it.
        case immediate
        /// Always enqueue the block after the work already on the queue.
        case enqueued
    }

    /// Whether the calling code runs on the context's queue.
    public var isOnContextQueue: Bool { contextQueue.isCurrent }

    /// In the concurrency debug mode, stops the program when called off the
    /// context's queue.
    @inline(__always)
    func assertOnQueue(_ function: StaticString = #function) {
        if ConcurrencyDebug.isEnabled && !contextQueue.isCurrent { concurrencyViolation(function) }
    }

    func concurrencyViolation(_ function: StaticString) -> Never {
        let kind = concurrencyType == .mainQueue ? "main-queue" : "private-queue"
        fatalError("OpenCoreData concurrency violation: \(function) used \(kind) context \(name.map { "'\($0)' " } ?? "")off its queue (Thread \(Thread.isMainThread ? "main" : "background")). Use the context and its objects only inside perform/performAndWait (or on the main queue for a main-queue context).")
    }

    /// Runs `block` on the context's queue without waiting (`perform(_:)`): the
    /// block is enqueued after the work already there, and the context processes
    /// its pending changes when the block returns.
    ///
    /// ```swift
    /// let context = container.newBackgroundContext()
    /// context.perform {
    ///     let mood = ManagedObject(entity: moodEntity, insertInto: context)
    ///     mood.setValue(3, forKey: "rating")
    ///     try? context.save()
    /// }
    /// ```
    ///
    /// - Parameter block: The work to run on the context's queue.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        contextQueue.queue.async {
            block()
            self.processPendingChanges()
        }
    }

    /// Runs `block` on the context's queue and returns its result
    /// (`perform(schedule:_:)`). The calling task is suspended, never blocked; the
    /// context processes its pending changes when the block returns.
    ///
    /// ```swift
    /// let count = try await context.perform {
    ///     try context.count(for: FetchRequest<ManagedObject>(entityName: "Mood"))
    /// }
    /// ```
    ///
    /// With ``ScheduledTaskType/immediate`` (the default) a caller already on the
    /// queue runs the block at once; with ``ScheduledTaskType/enqueued`` it always
    /// waits for the work enqueued before it. Return object IDs or values, never
    /// managed objects: they belong to the context's queue.
    ///
    /// - Parameters:
    ///   - schedule: Whether a caller already on the context's queue runs the
    ///     block at once (``ScheduledTaskType/immediate``) or after the work
    ///     already enqueued (``ScheduledTaskType/enqueued``).
    ///   - block: The work to run on the context's queue.
    /// - Returns: The value `block` returns.
    /// - Throws: The error `block` throws.
    public func perform<T, E: Error>(schedule: ScheduledTaskType = .immediate,
                                     _ block: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        if schedule == .immediate && contextQueue.isCurrent {
            let result = Result<T, E> { () throws(E) -> T in try block() }
            processPendingChanges()
            return try result.get()
        }
        let box: ResultBox<T, E> = await withCheckedContinuation { continuation in
            contextQueue.queue.async {
                let result = Result<T, E> { () throws(E) -> T in try block() }
                self.processPendingChanges()
                continuation.resume(returning: ResultBox(result: result))
            }
        }
        return try box.result.get()
    }

    /// Runs `block` on the context's queue and waits for it (`performAndWait(_:)`).
    /// Reentrant: called on the context's queue, the block runs at once. The
    /// block runs on the calling thread, on the context's queue.
    ///
    /// ```swift
    /// let names = try context.performAndWait {
    ///     try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
    ///         .compactMap { $0.value(forKey: "name") as? String }
    /// }
    /// ```
    ///
    /// Waiting on a main-queue context from a background thread while the main
    /// thread waits for that thread deadlocks, as in Core Data.
    ///
    /// - Parameter block: The work to run on the context's queue.
    /// - Returns: The value `block` returns.
    /// - Throws: The error `block` throws.
    public func performAndWait<T, E: Error>(_ block: () throws(E) -> T) throws(E) -> T {
        if contextQueue.isCurrent { return try block() }
        return try contextQueue.sync { Result<T, E> { () throws(E) -> T in try block() } }.get()
    }
}

/// A result handed from a context's queue to the task awaiting it.
///
/// `@unchecked Sendable`: the value is created on the context's queue and handed
/// over exactly once through a continuation; the queue keeps no reference to it.
/// The caller decides what `T` is, as with Core Data's `perform`: values and object
/// IDs cross safely; managed objects must not be used off their queue (the
/// concurrency debug mode catches it).
struct ResultBox<T, E: Error>: @unchecked Sendable {
    let result: Result<T, E>
}

/// A value moved to `DispatchQueue.sync` and back.
///
/// `@unchecked Sendable`: `sync` runs the closure while the caller is blocked, so
/// the value is never used by two threads at once.
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
