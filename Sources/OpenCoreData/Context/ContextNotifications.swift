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
    /// Posted after a successful save, right after ``didSaveNotification``, with the
    /// object IDs only (`NSManagedObjectContextDidSaveObjectIDsNotification`):
    /// ``NotificationKey/insertedObjectIDs``, ``NotificationKey/updatedObjectIDs`` and
    /// ``NotificationKey/deletedObjectIDs``, each a `Set<ManagedObjectID>`; `object` is the
    /// context. Unlike managed objects, the IDs may be kept and handed to other
    /// queues, which is why Core Data recommends this notification over the other.
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveObjectIDsNotification,
    ///                                        object: backgroundContext, queue: nil) { notification in
    ///     guard let save = ContextSaveSummary(didSaveNotification: notification) else { return }
    ///     viewContext.perform { viewContext.mergeChanges(from: save) }
    /// }
    /// ```
    public static let didSaveObjectIDsNotification = Notification.Name("NSManagedObjectContextDidSaveObjectIDsNotification")

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
        /// `Set<ManagedObjectID>` inserted.
        public static let insertedObjectIDs = "inserted_objectIDs"
        /// `Set<ManagedObjectID>` updated.
        public static let updatedObjectIDs = "updated_objectIDs"
        /// `Set<ManagedObjectID>` deleted.
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

    /// The `userInfo` of a notification with a fixed set of keys, made from a
    /// table that holds the keys already: each notification copies the table and
    /// sets the values in place by their positions, without hashing a key.
    /// Hashing and comparing `AnyHashable` strings (a dynamic cast each) made a
    /// small save's two notifications a large part of the save's cost.
    struct UserInfoTemplate: @unchecked Sendable {
        // @unchecked: the table holds constant string keys and placeholder values,
        // and is only ever copied.
        private let table: [AnyHashable: Any]
        private let positions: [Dictionary<AnyHashable, Any>.Index]

        init(keys: [AnyHashable]) {
            var table = [AnyHashable: Any](minimumCapacity: keys.count * 2)
            for key in keys { table[key] = () }
            self.table = table
            positions = keys.map { table.index(forKey: $0)! }
        }

        /// The `userInfo` with `values` for the keys, in the keys' order.
        func userInfo(_ values: Any...) -> [AnyHashable: Any] {
            var info = table
            for (position, value) in zip(positions, values) { info.values[position] = value }
            return info
        }

        static let didSave = UserInfoTemplate(keys: [BoxedKey.insertedObjects, BoxedKey.updatedObjects, BoxedKey.deletedObjects,
                                                     BoxedKey.insertedObjectIDs, BoxedKey.updatedObjectIDs, BoxedKey.deletedObjectIDs])
        static let didSaveObjectIDs = UserInfoTemplate(keys: [BoxedKey.insertedObjectIDs, BoxedKey.updatedObjectIDs,
                                                             BoxedKey.deletedObjectIDs])
        static let objectsDidChange = UserInfoTemplate(keys: [BoxedKey.insertedObjects, BoxedKey.updatedObjects,
                                                              BoxedKey.deletedObjects, BoxedKey.refreshedObjects])
    }

    func publish(_ summary: ContextSaveSummary, inserted: Set<ManagedObject>, updated: Set<ManagedObject>, deleted: Set<ManagedObject>) {
        NotificationCenter.default.post(name: ManagedObjectContext.didSaveNotification, object: self, userInfo: UserInfoTemplate.didSave.userInfo(
            inserted, updated, deleted, summary.insertedObjectIDs, summary.updatedObjectIDs, summary.deletedObjectIDs))
        NotificationCenter.default.post(name: ManagedObjectContext.didSaveObjectIDsNotification, object: self,
                                        userInfo: UserInfoTemplate.didSaveObjectIDs.userInfo(
            summary.insertedObjectIDs, summary.updatedObjectIDs, summary.deletedObjectIDs))
        for continuation in saveObservers.values { continuation.yield(summary) }
        broadcast(summary)
    }
}

/// What one event of a context changed, by object ID.
public struct ContextChangeSummary: Sendable, Hashable {
    /// Objects inserted during the event.
    public var insertedObjectIDs: Set<ManagedObjectID>
    /// Objects updated during the event.
    public var updatedObjectIDs: Set<ManagedObjectID>
    /// Objects deleted during the event.
    public var deletedObjectIDs: Set<ManagedObjectID>
    /// Objects refreshed during the event.
    public var refreshedObjectIDs: Set<ManagedObjectID>
}

/// What one save of a context changed, by object ID.
public struct ContextSaveSummary: Sendable, Hashable {
    /// The IDs (permanent) of the objects inserted.
    public var insertedObjectIDs: Set<ManagedObjectID>
    /// The IDs of the objects updated.
    public var updatedObjectIDs: Set<ManagedObjectID>
    /// The IDs of the objects deleted.
    public var deletedObjectIDs: Set<ManagedObjectID>
    /// The name of the context that saved.
    public var contextName: String?
    /// The author of the save.
    public var transactionAuthor: String?
}
