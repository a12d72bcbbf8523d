import Foundation

/// A relationship from one entity to another (`NSRelationshipDescription`).
///
/// A relationship names its destination entity, usually an inverse relationship
/// on the destination (Core Data keeps both sides in step), how many objects it
/// may hold, and what happens to them when the source is deleted.
///
/// ```swift
/// let country = RelationshipDescription(name: "country", destination: "Country", inverse: "moods")
/// let moods = RelationshipDescription(name: "moods", destination: "Mood", inverse: "country", toMany: true)
/// moods.deleteRule = .cascade
/// ```
///
/// The destination and inverse are kept by name and resolved through the model, so
/// relationships can be declared before the entities they point to exist.
public final class RelationshipDescription: PropertyDescription, @unchecked Sendable {
    // Exclusivity: public properties keep Swift's dynamic checks. Only the caches
    // a model builds as it freezes (read on every object's hot paths) are
    // `@exclusivity(unchecked)`: written once by `freeze()`, read-only afterwards
    // (`checkEditable`), so no access overlaps another (docs/performance.md).

    /// The name of the destination entity.
    public var destinationEntityName: String? { willSet { checkEditable("destinationEntity") } }
    /// The name of the inverse relationship on the destination entity.
    public var inverseRelationshipName: String? { willSet { checkEditable("inverseRelationship") } }
    /// The smallest number of destination objects a valid object has (0 = no minimum).
    public var minCount: Int = 0 { willSet { checkEditable("minCount") } }
    /// The largest number of destination objects (1 for to-one; 0 = no limit).
    public var maxCount: Int = 1 { willSet { checkEditable("maxCount") } }
    /// What happens to the destination objects when the source is deleted.
    public var deleteRule: DeleteRule = .nullify { willSet { checkEditable("deleteRule") } }
    /// Whether a to-many relationship keeps its objects in order (an ordered set).
    public var isOrdered: Bool = false { willSet { checkEditable("isOrdered") } }

    // Weak: entities are held by their model; relationships form cycles.
    private weak var destinationCache: EntityDescription?
    /// Set once the model is frozen: the destination and inverse are then resolved
    /// for good, and read without a lookup by name (a to-many fault reads both).
    @exclusivity(unchecked) private var isResolved = false  // unchecked: written once as the model freezes, read-only after
    // Weak: the inverse belongs to the destination, held by the model.
    private weak var resolvedInverse: RelationshipDescription?

    /// Creates a relationship to the entity named `destination`.
    ///
    /// - Parameters:
    ///   - name: The relationship's name.
    ///   - destination: The destination entity's name.
    ///   - inverse: The name of the destination's relationship pointing back.
    ///   - toMany: Whether it is a to-many relationship.
    ///   - ordered: Whether a to-many relationship keeps its objects in order.
    public init(name: String, destination: String?, inverse: String? = nil, toMany: Bool = false, ordered: Bool = false) {
        self.destinationEntityName = destination
        self.inverseRelationshipName = inverse
        self.maxCount = toMany ? 0 : 1
        self.isOrdered = ordered
        super.init(name: name)
    }

    /// A count read from a model file, as Core Data reads it: counts are unsigned
    /// there, and recent frameworks (1344 and later) write an unbounded maximum as -1
    /// (all bits set). A negative count reads as 0 (no limit, no minimum).
    static func storedCount(_ count: Int) -> Int { max(count, 0) }

    /// Whether the relationship holds many objects (`maxCount` other than 1).
    public var isToMany: Bool { maxCount != 1 }

    /// The destination entity, looked up by name in the model of the source entity.
    public var destinationEntity: EntityDescription? {
        get {
            if isResolved { return destinationCache }
            if let cached = destinationCache, cached.name == destinationEntityName { return cached }
            guard let name = destinationEntityName else { return nil }
            return entity?.managedObjectModel?.entitiesByName[name]
        }
        set {
            checkEditable("destinationEntity")
            destinationCache = newValue
            destinationEntityName = newValue?.name
        }
    }

    /// The inverse relationship on the destination entity, if any.
    public var inverseRelationship: RelationshipDescription? {
        get {
            if isResolved { return resolvedInverse }
            guard let name = inverseRelationshipName else { return nil }
            return destinationEntity?.relationshipsByName[name]
        }
        set {
            checkEditable("inverseRelationship")
            inverseRelationshipName = newValue?.name
        }
    }

    /// Resolves the destination and inverse for good (the model is frozen).
    override func resolveReferences() {
        super.resolveReferences()
        guard let destination = destinationEntity else { return }
        destinationCache = destination
        resolvedInverse = inverseRelationship
        isResolved = true
    }

    override public func copy() -> PropertyDescription {
        let copy = RelationshipDescription(name: name, destination: destinationEntityName, inverse: inverseRelationshipName)
        copyCommon(to: copy)
        copy.minCount = minCount
        copy.maxCount = maxCount
        copy.deleteRule = deleteRule
        copy.isOrdered = isOrdered
        return copy
    }
}

/// A property whose value is the result of a fetch request, evaluated lazily
/// (`NSFetchedPropertyDescription`): a weak, one-way relationship.
///
/// The request's predicate may use `$FETCH_SOURCE` (the object the property belongs
/// to) and `$FETCHED_PROPERTY` (this description).
///
/// ```swift
/// let recent = FetchedPropertyDescription(name: "recentMoods",
///     fetchRequest: FetchRequestTemplate(entityName: "Mood",
///                                        predicateFormat: "country == $FETCH_SOURCE"))
/// ```
public final class FetchedPropertyDescription: PropertyDescription, @unchecked Sendable {
    /// The fetch request that computes the value.
    public var fetchRequest: FetchRequestTemplate? { willSet { checkEditable("fetchRequest") } }

    /// Creates a fetched property.
    ///
    /// - Parameters:
    ///   - name: The fetched property's name.
    ///   - fetchRequest: The request computing the value; its predicate can use
    ///     `$FETCH_SOURCE`, the object whose property is read.
    public init(name: String, fetchRequest: FetchRequestTemplate?) {
        self.fetchRequest = fetchRequest
        super.init(name: name)
    }

    override public func copy() -> PropertyDescription {
        let copy = FetchedPropertyDescription(name: name, fetchRequest: fetchRequest)
        copyCommon(to: copy)
        return copy
    }
}
