import Foundation

extension ManagedObjectContext {
    /// Posted at the end of each event (``processPendingChanges()``) with the objects
    /// inserted, updated and deleted during it; `object` is the context.
    public static let objectsDidChangeNotification = Notification.Name("NSManagedObjectContextObjectsDidChangeNotification")
    /// Posted when a save begins, before validation; `object` is the context.
    public static let willSaveNotification = Notification.Name("NSManagedObjectContextWillSaveNotification")
    /// Posted after a successful save with the objects and object IDs saved;
    /// `object` is the context.
    public static let didSaveNotification = Notification.Name("NSManagedObjectContextDidSaveNotification")

    /// The keys of the notifications' `userInfo`, as Core Data names them.
    public enum NotificationKey {
        /// `Set<ManagedObject>` inserted.
        public static let insertedObjects = "inserted"
        /// `Set<ManagedObject>` updated.
        public static let updatedObjects = "updated"
        /// `Set<ManagedObject>` deleted.
        public static let deletedObjects = "deleted"
        /// `Set<ManagedObject>` refreshed.
        public static let refreshedObjects = "refreshed"
        /// `Set<ManagedObject>` invalidated.
        public static let invalidatedObjects = "invalidated"
        /// Present (true) when every object was invalidated (`reset()`).
        public static let invalidatedAllObjects = "invalidatedAll"
        /// `Set<ObjectID>` inserted.
        public static let insertedObjectIDs = "inserted_objectIDs"
        /// `Set<ObjectID>` updated.
        public static let updatedObjectIDs = "updated_objectIDs"
        /// `Set<ObjectID>` deleted.
        public static let deletedObjectIDs = "deleted_objectIDs"
    }

    /// The saves of this context as an asynchronous sequence of summaries (object
    /// IDs only, so they can cross to any task).
    ///
    /// ```swift
    /// Task {
    ///     for await save in context.saves {
    ///         print("saved", save.insertedObjectIDs.count, "new objects")
    ///     }
    /// }
    /// ```
    public var saves: AsyncStream<ContextSaveSummary> {
        let (stream, continuation) = AsyncStream<ContextSaveSummary>.makeStream(bufferingPolicy: .unbounded)
        let key = UUID()
        saveObservers[key] = continuation
        return stream
    }

    /// The end of each event (``processPendingChanges()``) as an asynchronous
    /// sequence: what was inserted, updated, deleted and refreshed, by object ID —
    /// the `objectsDidChangeNotification` for Swift concurrency.
    ///
    /// ```swift
    /// let changes = context.changes
    /// mood.setValue(4, forKey: "rating")
    /// context.processPendingChanges()
    /// for await change in changes { print(change.updatedObjectIDs) ; break }
    /// ```
    public var changes: AsyncStream<ContextChangeSummary> {
        let (stream, continuation) = AsyncStream<ContextChangeSummary>.makeStream(bufferingPolicy: .unbounded)
        changeObservers[UUID()] = continuation
        return stream
    }

    /// The notification keys as `AnyHashable`, boxed once. (`nonisolated(unsafe)`:
    /// `AnyHashable` is not `Sendable`, but these box constant strings and are
    /// never mutated.)
    enum BoxedKey {
        nonisolated(unsafe) static let insertedObjects = AnyHashable(NotificationKey.insertedObjects)
        nonisolated(unsafe) static let updatedObjects = AnyHashable(NotificationKey.updatedObjects)
        nonisolated(unsafe) static let deletedObjects = AnyHashable(NotificationKey.deletedObjects)
        nonisolated(unsafe) static let refreshedObjects = AnyHashable(NotificationKey.refreshedObjects)
        nonisolated(unsafe) static let insertedObjectIDs = AnyHashable(NotificationKey.insertedObjectIDs)
        nonisolated(unsafe) static let updatedObjectIDs = AnyHashable(NotificationKey.updatedObjectIDs)
        nonisolated(unsafe) static let deletedObjectIDs = AnyHashable(NotificationKey.deletedObjectIDs)
    }

    /// A notification's `userInfo`, built in a table with room to spare. A
    /// dictionary literal fills a table of just its size, where most keys probe
    /// past other keys' buckets, and comparing two `AnyHashable` strings casts both
    /// dynamically: that made a small save's notifications cost more than its SQL.
    static func userInfo(_ entries: [(AnyHashable, Any)]) -> [AnyHashable: Any] {
        var info = [AnyHashable: Any](minimumCapacity: entries.count * 4)
        for (key, value) in entries { info[key] = value }
        return info
    }

    func publish(_ summary: ContextSaveSummary, inserted: Set<ManagedObject>, updated: Set<ManagedObject>, deleted: Set<ManagedObject>) {
        NotificationCenter.default.post(name: ManagedObjectContext.didSaveNotification, object: self, userInfo: Self.userInfo([
            (BoxedKey.insertedObjects, inserted),
            (BoxedKey.updatedObjects, updated),
            (BoxedKey.deletedObjects, deleted),
            (BoxedKey.insertedObjectIDs, summary.insertedObjectIDs),
            (BoxedKey.updatedObjectIDs, summary.updatedObjectIDs),
            (BoxedKey.deletedObjectIDs, summary.deletedObjectIDs),
        ]))
        for continuation in saveObservers.values { continuation.yield(summary) }
        broadcast(summary)
    }
}

/// What one event of a context changed, by object ID.
public struct ContextChangeSummary: Sendable, Hashable {
    /// Objects inserted during the event.
    public var insertedObjectIDs: Set<ObjectID>
    /// Objects updated during the event.
    public var updatedObjectIDs: Set<ObjectID>
    /// Objects deleted during the event.
    public var deletedObjectIDs: Set<ObjectID>
    /// Objects refreshed during the event.
    public var refreshedObjectIDs: Set<ObjectID>
}

/// What one save of a context changed, by object ID.
public struct ContextSaveSummary: Sendable, Hashable {
    /// The IDs (permanent) of the objects inserted.
    public var insertedObjectIDs: Set<ObjectID>
    /// The IDs of the objects updated.
    public var updatedObjectIDs: Set<ObjectID>
    /// The IDs of the objects deleted.
    public var deletedObjectIDs: Set<ObjectID>
    /// The name of the context that saved.
    public var contextName: String?
    /// The author of the save.
    public var transactionAuthor: String?
}
