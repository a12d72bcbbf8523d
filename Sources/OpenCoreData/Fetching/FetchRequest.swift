import Foundation
import OpenCoreDataPredicates

/// A search for objects of one entity: which ones (a predicate), in what order,
/// how many, and in what form (`NSFetchRequest`).
///
/// ```swift
/// let request = FetchRequest<Mood>(entityName: "Mood")
/// request.predicate = try CorePredicate(format: "rating >= %d", 3)
/// request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
/// request.fetchLimit = 20
/// let moods = try context.fetch(request)
/// ```
///
/// `Result` is the type of each result: a managed object class for
/// ``ResultType/managedObject``, ``ManagedObjectID`` for ``ResultType/managedObjectID``,
/// `[String: Any]` for ``ResultType/dictionary``, `Int` for ``ResultType/count``
/// (the result type is set from `Result` for the last three). See
/// <doc:FetchingInDepth> for every option.
public final class FetchRequest<Result> {
    /// What a fetch returns.
    public enum ResultType: Int, Sendable {
        /// Managed objects (the default).
        case managedObject = 0
        /// Object IDs.
        case managedObjectID = 1
        /// Dictionaries of property values.
        case dictionary = 2
        /// The number of matching objects.
        case count = 4
    }

    /// The name of the entity to fetch.
    public var entityName: String?
    /// The entity to fetch (takes precedence over ``entityName``).
    public var entity: EntityDescription?
    /// Which objects match; nil matches all.
    public var predicate: CorePredicate?
    /// The order of the results.
    public var sortDescriptors: [CoreSortDescriptor] = []
    /// At most this many results (0: no limit).
    public var fetchLimit: Int = 0
    /// Skip this many results.
    public var fetchOffset: Int = 0
    /// Load objects this many at a time (0: all at once).
    public var fetchBatchSize: Int = 0
    /// Whether objects of subentities are included.
    public var includesSubentities: Bool = true
    /// Whether unsaved changes of the context are included.
    public var includesPendingChanges: Bool = true
    /// Whether objects come back as faults (values loaded when first read).
    public var returnsObjectsAsFaults: Bool = true
    /// Whether property values are fetched with the objects.
    public var includesPropertyValues: Bool = true
    /// What each result is.
    public var resultType: ResultType = .managedObject
    /// Whether objects already registered in the context get the values just
    /// fetched (their unsaved changes are kept on top).
    public var shouldRefreshRefetchedObjects: Bool = false
    /// Relationship key paths (`"country"`, `"country.continent"`, `"tags"`)
    /// whose destination objects are fetched along with the results, one query per
    /// key path.
    public var relationshipKeyPathsForPrefetching: [String] = []
    /// For ``ResultType/dictionary`` results: the properties each dictionary holds
    /// (nil: every attribute). See ``PropertyToFetch``.
    public var propertiesToFetch: [PropertyToFetch]?
    /// For ``ResultType/dictionary`` results: whether equal dictionaries are
    /// returned once.
    public var returnsDistinctResults: Bool = false
    /// For ``ResultType/dictionary`` results: the properties results are grouped
    /// by; each group gives one dictionary, aggregates are computed per group.
    public var propertiesToGroupBy: [PropertyToFetch]?
    /// For grouped ``ResultType/dictionary`` results: which groups are returned,
    /// evaluated against each result dictionary (keys are the fetched names).
    public var havingPredicate: CorePredicate?

    /// A request for the entity named `entityName`.
    ///
    /// - Parameter entityName: The name of an entity of the model; it is looked
    ///   up when the request runs.
    public init(entityName: String) {
        self.entityName = entityName
        resultType = Self.defaultResultType
    }

    /// A request for `entity`.
    ///
    /// - Parameter entity: The entity whose objects the request fetches.
    public init(entity: EntityDescription) {
        self.entity = entity
        self.entityName = entity.name
        resultType = Self.defaultResultType
    }

    static var defaultResultType: ResultType {
        if Result.self == ManagedObjectID.self { return .managedObjectID }
        if Result.self == [String: Any].self { return .dictionary }
        if Result.self == Int.self { return .count }
        return .managedObject
    }
}
