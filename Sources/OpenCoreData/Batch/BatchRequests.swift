import Foundation
import OpenCoreDataPredicates

/// What a batch request returns (`NSBatchDeleteRequestResultType` and friends).
public enum BatchRequestResultType: Sendable {
    /// Only whether it succeeded (the default).
    case statusOnly
    /// The number of objects changed.
    case count
    /// The IDs of the objects changed: merge them into live contexts with
    /// ``ManagedObjectContext/mergeChanges(fromRemoteContextSave:into:)``.
    case objectIDs
}

/// The outcome of a batch request (`NSPersistentStoreResult`,
/// `NSBatchInsertResult`, `NSBatchUpdateResult`, `NSBatchDeleteResult`).
///
/// ```swift
/// let request = BatchDeleteRequest(entityName: "Mood", predicate: try CorePredicate(format: "rating == 0"))
/// request.resultType = .objectIDs
/// let result = try context.execute(request)
/// ManagedObjectContext.mergeChanges(fromRemoteContextSave: [RemoteChangeKey.deleted: result.objectIDs ?? []],
///                                   into: [context])
/// ```
public struct PersistentStoreResult: Sendable {
    /// What the request asked for.
    public let resultType: BatchRequestResultType
    /// The IDs of the objects changed, for ``BatchRequestResultType/objectIDs``.
    public let objectIDs: [ManagedObjectID]?
    /// The number of objects changed, for ``BatchRequestResultType/count``.
    public let count: Int?

    /// The result of a request that changed the objects `ids`, as `resultType`
    /// asks for it: the IDs, their number, or only success.
    ///
    /// ```swift
    /// PersistentStoreResult(.count, ids).count   // ids.count
    /// ```
    ///
    /// - Parameters:
    ///   - resultType: What the request asked for.
    ///   - ids: The IDs of the objects changed.
    public init(_ resultType: BatchRequestResultType, _ ids: [ManagedObjectID]) {
        self.resultType = resultType
        self.objectIDs = resultType == .objectIDs ? ids : nil
        self.count = resultType == .count ? ids.count : nil
    }

    /// The result of a request that changed `count` objects without reading their
    /// IDs (a store's `DELETE` counted by SQLite, say): for
    /// ``BatchRequestResultType/statusOnly`` and ``BatchRequestResultType/count``.
    /// With ``BatchRequestResultType/objectIDs`` the IDs are unknown and
    /// ``objectIDs`` is nil: a store asked for IDs reads them.
    ///
    /// ```swift
    /// PersistentStoreResult(.count, count: db.changesCount)
    /// ```
    ///
    /// - Parameters:
    ///   - resultType: What the request asked for.
    ///   - count: The number of objects changed.
    public init(_ resultType: BatchRequestResultType, count: Int) {
        self.resultType = resultType
        self.objectIDs = nil
        self.count = resultType == .count ? count : nil
    }

    /// The result as Core Data's `result` property gives it: `true`, the count, or
    /// the object IDs.
    public var result: Any {
        switch resultType {
        case .statusOnly: return true
        case .count: return count ?? 0
        case .objectIDs: return objectIDs ?? []
        }
    }
}

/// Inserts many objects straight into the store, without managed objects, in one
/// transaction (`NSBatchInsertRequest`).
///
/// ```swift
/// let request = BatchInsertRequest(entityName: "Mood", objects: [
///     ["rating": 3, "date": Date()],
///     ["rating": 5, "date": Date()],
/// ])
/// request.resultType = .objectIDs
/// let ids = try context.execute(request).objectIDs
/// ```
///
/// Rows come from ``objectsToInsert``, or from a handler called until it returns
/// `true` (``dictionaryHandler`` fills a dictionary, ``managedObjectHandler`` an
/// object that belongs to no context). Only attributes are set; missing ones get
/// their default values. Values are not validated beyond their type, as in Core
/// Data.
public final class BatchInsertRequest {
    /// The entity of the new objects.
    public var entityName: String
    /// The values of each new object, by attribute name.
    public var objectsToInsert: [[String: Any]]?
    /// Fills the values of one new object; returns `true` when there are no more.
    public var dictionaryHandler: ((inout [String: Any]) -> Bool)?
    /// Fills one new object (of the entity's class, in no context); returns `true`
    /// when there are no more.
    public var managedObjectHandler: ((ManagedObject) -> Bool)?
    /// What ``ManagedObjectContext/execute(_:)-(BatchInsertRequest)`` returns.
    public var resultType: BatchRequestResultType = .statusOnly

    /// A request inserting `objects`.
    ///
    /// - Parameters:
    ///   - entityName: The entity of the new objects.
    ///   - objects: The values of each new object, by attribute name.
    public init(entityName: String, objects: [[String: Any]]) {
        self.entityName = entityName
        self.objectsToInsert = objects
    }

    /// A request inserting what `handler` fills, until it returns `true`.
    ///
    /// - Parameters:
    ///   - entityName: The entity of the new objects.
    ///   - dictionaryHandler: Fills the values of one new object, by attribute
    ///     name; returns `true` when there are no more (that call's values are
    ///     not inserted).
    public init(entityName: String, dictionaryHandler: @escaping (inout [String: Any]) -> Bool) {
        self.entityName = entityName
        self.dictionaryHandler = dictionaryHandler
    }

    /// A request inserting the objects `handler` fills, until it returns `true`.
    ///
    /// - Parameters:
    ///   - entityName: The entity of the new objects.
    ///   - managedObjectHandler: Fills one new object of the entity's class, in no
    ///     context; returns `true` when there are no more (that call's object is
    ///     not inserted).
    public init(entityName: String, managedObjectHandler: @escaping (ManagedObject) -> Bool) {
        self.entityName = entityName
        self.managedObjectHandler = managedObjectHandler
    }
}

/// Changes properties of every matching object straight in the store
/// (`NSBatchUpdateRequest`).
///
/// ```swift
/// let request = BatchUpdateRequest(entityName: "Mood")
/// request.predicate = try CorePredicate(format: "rating < 2")
/// request.propertiesToUpdate = ["rating": 2, "creatorID": try CoreExpression(format: "'archived'")]
/// request.resultType = .count
/// let updated = try context.execute(request).count
/// ```
///
/// A value is a constant, or a `CoreExpression` evaluated against each object
/// (`rating + 1`). Each updated row's `Z_OPT` is bumped, so contexts holding the
/// old version see a merge conflict when they save.
public final class BatchUpdateRequest {
    /// The entity whose objects are updated.
    public var entityName: String
    /// Which objects are updated (nil: all).
    public var predicate: CorePredicate?
    /// The new values, by attribute name: constants or `CoreExpression`s.
    public var propertiesToUpdate: [String: Any]?
    /// Whether objects of subentities are updated too.
    public var includesSubentities = true
    /// What ``ManagedObjectContext/execute(_:)-(BatchUpdateRequest)`` returns.
    public var resultType: BatchRequestResultType = .statusOnly

    /// A request updating objects of `entityName`.
    ///
    /// - Parameter entityName: The entity whose objects are updated.
    public init(entityName: String) { self.entityName = entityName }
}

/// Deletes every matching object straight in the store (`NSBatchDeleteRequest`),
/// applying delete rules there: cascade deletes the destinations, nullify clears
/// the inverse to-ones, deny fails the request, join-table rows go.
///
/// ```swift
/// let request = BatchDeleteRequest(entityName: "Mood", predicate: try CorePredicate(format: "date < %@", cutoff))
/// request.resultType = .objectIDs
/// let result = try context.execute(request)
/// ```
///
/// The IDs returned include the objects deleted by cascade.
public final class BatchDeleteRequest {
    /// The entity whose objects are deleted.
    public let entityName: String?
    /// Which objects are deleted (nil: all).
    public let predicate: CorePredicate?
    /// Whether objects of subentities are deleted too.
    public let includesSubentities: Bool
    /// The objects to delete, for a request made with IDs.
    public let objectIDs: [ManagedObjectID]?
    /// What ``ManagedObjectContext/execute(_:)-(BatchDeleteRequest)`` returns.
    public var resultType: BatchRequestResultType = .statusOnly

    /// A request deleting the objects of `entityName` that match `predicate`.
    ///
    /// - Parameters:
    ///   - entityName: The entity whose objects are deleted, with its subentities'.
    ///   - predicate: Which objects are deleted; nil for all.
    public init(entityName: String, predicate: CorePredicate? = nil) {
        self.entityName = entityName
        self.predicate = predicate
        self.includesSubentities = true
        self.objectIDs = nil
    }

    /// A request deleting the objects a fetch request matches (its entity,
    /// predicate and `includesSubentities`).
    ///
    /// - Parameter fetchRequest: The request whose objects are deleted; its sort,
    ///   offset and limit are ignored.
    public init<Result>(fetchRequest: FetchRequest<Result>) {
        self.entityName = fetchRequest.entity?.name ?? fetchRequest.entityName
        self.predicate = fetchRequest.predicate
        self.includesSubentities = fetchRequest.includesSubentities
        self.objectIDs = nil
    }

    /// A request deleting these objects (all of one entity).
    ///
    /// - Parameter objectIDs: The IDs of the objects, all of one entity.
    public init(objectIDs: [ManagedObjectID]) {
        self.entityName = objectIDs.first?.entityName
        self.predicate = nil
        self.includesSubentities = true
        self.objectIDs = objectIDs
    }
}
