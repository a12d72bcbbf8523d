import Foundation

/// A fetch request as a model stores it: Xcode's fetch request templates and the
/// request of a fetched property.
///
/// ```swift
/// model.setFetchRequestTemplate(
///     FetchRequestTemplate(entityName: "Mood", predicateFormat: "rating >= $MIN"),
///     forName: "GoodMoods")
/// ```
///
/// The predicate is kept as format text, as in the model file, and may contain
/// `$variables` that are substituted when a request is made from the template.
public struct FetchRequestTemplate: Sendable, Hashable {
    /// The name of the entity to fetch.
    public var entityName: String
    /// The predicate, in the predicate format language, or nil for all objects.
    public var predicateFormat: String?
    /// At most this many results (0 = no limit).
    public var fetchLimit: Int = 0
    /// Skip this many results.
    public var fetchOffset: Int = 0
    /// Load objects this many at a time (0 = all at once).
    public var fetchBatchSize: Int = 0
    /// The result type raw value (0 objects, 1 object IDs, 2 dictionaries, 4 count).
    public var resultType: Int = 0
    /// Whether objects of subentities are included.
    public var includesSubentities: Bool = true
    /// Whether property values are fetched with the objects.
    public var includesPropertyValues: Bool = true
    /// Whether dictionary results are distinct.
    public var returnsDistinctResults: Bool = false
    /// Whether objects come back as faults.
    public var returnsObjectsAsFaults: Bool = true
    /// Whether unsaved changes are included.
    public var includesPendingChanges: Bool = true

    /// Creates a template.
    ///
    /// - Parameters:
    ///   - entityName: The name of the entity fetched.
    ///   - predicateFormat: The predicate format, with `$variables` for the
    ///     values given when a request is made; nil for every object.
    public init(entityName: String, predicateFormat: String? = nil) {
        self.entityName = entityName
        self.predicateFormat = predicateFormat
    }
}
