import Foundation
import OpenCoreDataPredicates

/// One-line helpers for the common case, in the spirit of Skopelos's
/// `SK_create`, `SK_all`, `SK_first`, `SK_numberOfEntities`, `SK_remove`,
/// `SK_removeAll` and `SK_inContext`.
///
/// Every helper works in the context it is given, so it belongs inside a
/// ``DataAccessLayer`` `read` or `write` block (or a context's `perform`), on
/// that context's queue:
///
/// ```swift
/// dataAccess.writeSync { context in
///     let user = User.create(in: context)
///     user.firstname = "John"
/// }
/// dataAccess.read { context in
///     let users = try User.all(in: context)
///     let johns = try User.all(predicate: CorePredicate(format: "firstname == %@", "John"), in: context)
///     let count = try User.count(in: context)
/// }
/// ```
///
/// The entity of `Self` is found as ``ManagedObject/init(context:)`` finds it: the
/// entity of the context's model whose class is `Self` (a `@ManagedEntity`
/// class, or an entity whose class name is the class's).
extension FetchRequestResult where Self: ManagedObject {
    /// A new object of this class inserted into `context` (Skopelos's `SK_create`).
    ///
    /// ```swift
    /// let mood = Mood.create(in: context)
    /// ```
    ///
    /// - Parameter context: The context to insert into.
    /// - Returns: The new object.
    public static func create(in context: ManagedObjectContext) -> Self {
        guard let entity = context.entity(for: Self.self) else {
            preconditionFailure("OpenCoreData: no entity of the context's model has class '\(String(describing: Self.self))'. Set the entity's class name (Xcode's Class field) to it.")
        }
        return Self(entity: entity, insertInto: context)
    }

    /// Every object of this class's entity (subentities included), as a fetch
    /// returns them: saved objects and the context's unsaved inserts, without its
    /// unsaved deletes (Skopelos's `SK_all`).
    ///
    /// ```swift
    /// let moods = try Mood.all(in: context)
    /// ```
    ///
    /// - Parameter context: The context to fetch in.
    /// - Returns: The objects, in no particular order.
    /// - Throws: The errors of ``ManagedObjectContext/fetch(_:)``.
    public static func all(in context: ManagedObjectContext) throws -> [Self] {
        try context.fetch(fetchRequest())
    }

    /// The objects of this class's entity that match `predicate`
    /// (Skopelos's `SK_all(predicate:context:)`).
    ///
    /// ```swift
    /// let good = try Mood.all(predicate: CorePredicate(format: "rating >= 4"), in: context)
    /// ```
    ///
    /// - Parameters:
    ///   - predicate: What the objects must match.
    ///   - context: The context to fetch in.
    /// - Returns: The matching objects, in no particular order.
    /// - Throws: The errors of ``ManagedObjectContext/fetch(_:)``.
    public static func all(predicate: CorePredicate, in context: ManagedObjectContext) throws -> [Self] {
        let request = fetchRequest()
        request.predicate = predicate
        return try context.fetch(request)
    }

    /// One object of this class's entity, or nil when there is none
    /// (Skopelos's `SK_first`). With `predicate`, one that matches; with
    /// `sortDescriptors`, the first in that order (otherwise in no particular order).
    ///
    /// ```swift
    /// let latest = try Mood.first(sortedBy: [CoreSortDescriptor(key: "date", ascending: false)], in: context)
    /// ```
    ///
    /// - Parameters:
    ///   - predicate: What the object must match; nil for any.
    ///   - sortDescriptors: The order the first object is taken in.
    ///   - context: The context to fetch in.
    /// - Returns: The object, or nil when none matches.
    /// - Throws: The errors of ``ManagedObjectContext/fetch(_:)``.
    public static func first(predicate: CorePredicate? = nil, sortedBy sortDescriptors: [CoreSortDescriptor] = [],
                             in context: ManagedObjectContext) throws -> Self? {
        let request = fetchRequest()
        request.predicate = predicate
        request.sortDescriptors = sortDescriptors
        request.fetchLimit = 1
        return try context.fetch(request).first
    }

    /// The number of objects of this class's entity (matching `predicate` if
    /// given), counting the context's unsaved changes (Skopelos's
    /// `SK_numberOfEntities`).
    ///
    /// ```swift
    /// let moods = try Mood.count(in: context)
    /// ```
    ///
    /// - Parameters:
    ///   - predicate: What the objects must match; nil for all.
    ///   - context: The context to count in.
    /// - Returns: The number of objects.
    /// - Throws: The errors of ``ManagedObjectContext/count(for:)``.
    public static func count(predicate: CorePredicate? = nil, in context: ManagedObjectContext) throws -> Int {
        let request = fetchRequest()
        request.predicate = predicate
        return try context.count(for: request)
    }

    /// Deletes this object's counterpart in `context` (Skopelos's `SK_remove`):
    /// the object itself when it belongs to `context`, else the object with the
    /// same ID there. The deletion is saved with the context.
    ///
    /// ```swift
    /// dataAccess.writeSync { context in
    ///     try mood.remove(in: context)
    /// }
    /// ```
    ///
    /// - Parameter context: The context to delete in; nothing happens when the
    ///   object cannot be found there.
    /// - Throws: The errors of ``inContext(_:)``.
    public func remove(in context: ManagedObjectContext) throws {
        guard let object = try inContext(context) else { return }
        context.delete(object)
    }

    /// Deletes every object of this class's entity (subentities included, or only
    /// those matching `predicate`) with one batch delete in the store, without
    /// loading them (Skopelos's `SK_removeAll`), and returns how many were
    /// deleted. Delete rules apply as in ``BatchDeleteRequest``. The deletions are
    /// merged into `context` and into every context of the coordinator that
    /// merges saves automatically (the main context of a ``DataAccessLayer``).
    ///
    /// ```swift
    /// dataAccess.writeSync { context in
    ///     try Mood.removeAll(in: context)
    /// }
    /// ```
    ///
    /// Unsaved changes of `context` to the deleted objects are dropped; save
    /// before a batch delete if they matter.
    ///
    /// - Parameters:
    ///   - predicate: What the objects must match; nil for all.
    ///   - context: The context the batch delete runs in.
    /// - Returns: The number of objects deleted, cascaded deletes included.
    /// - Throws: The errors of
    ///   ``ManagedObjectContext/execute(_:)-(BatchDeleteRequest)``.
    @discardableResult
    public static func removeAll(predicate: CorePredicate? = nil, in context: ManagedObjectContext) throws -> Int {
        let request = BatchDeleteRequest(entityName: ManagedObjectClasses.entityName(of: Self.self), predicate: predicate)
        request.resultType = .objectIDs
        let ids = try context.execute(request).objectIDs ?? []
        guard !ids.isEmpty else { return 0 }
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [RemoteChangeKey.deleted: ids], into: [context])
        let summary = ContextSaveSummary(insertedObjectIDs: [], updatedObjectIDs: [], deletedObjectIDs: Set(ids))
        context.persistentStoreCoordinator?.contextDidSave(summary, by: context)
        return ids.count
    }

    /// This object's counterpart in `context` — the same object when it belongs
    /// to `context`, else the object with the same ID there, or nil when
    /// `context` cannot see it (it was deleted, or never saved where `context`
    /// can read it) (Skopelos's `SK_inContext`).
    ///
    /// An object inserted and not yet saved has a temporary ID another context
    /// cannot resolve: save its context first. Call this on `context`'s queue;
    /// the receiver's ID is read without touching its values.
    ///
    /// ```swift
    /// var user: User!
    /// dataAccess.write { context in
    ///     user = User.create(in: context)
    /// }.write { context in
    ///     try user.inContext(context)?.remove(in: context)
    /// }
    /// ```
    ///
    /// - Parameter context: The context to find the object in.
    /// - Returns: The object registered in `context`, or nil.
    /// - Throws: Any error the store reports while reading, other than the
    ///   object not existing
    ///   (``CoreDataError/Code/managedObjectReferentialIntegrity``, which gives
    ///   nil).
    public func inContext(_ context: ManagedObjectContext) throws -> Self? {
        if managedObjectContext === context { return self }
        let id = objectID
        if id.isTemporaryID { return nil }
        do {
            return try context.existingObject(with: id) as? Self
        } catch let error as CoreDataError where error.code == .managedObjectReferentialIntegrity {
            return nil
        }
    }
}
