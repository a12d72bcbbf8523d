import Foundation
import Synchronization

/// An entity: a kind of object in the model, with its properties
/// (`NSEntityDescription`).
///
/// Entities can inherit from a superentity: a subentity has every property of its
/// superentity plus its own, and fetching an entity includes its subentities' objects
/// unless the request says otherwise. An abstract entity has no objects of its own.
///
/// ```swift
/// let region = EntityDescription(name: "GeographicRegion")
/// region.isAbstract = true
/// region.properties = [AttributeDescription(name: "numberOfMoods", type: .integer64, optional: false, defaultValue: 0)]
///
/// let country = EntityDescription(name: "Country")
/// country.properties = [AttributeDescription(name: "numericISO3166Code", type: .integer16)]
/// region.subentities = [country]
///
/// country.propertiesByName.keys.sorted()   // ["numberOfMoods", "numericISO3166Code"]
/// ```
///
/// See ``PropertyDescription`` for when a model may be changed and why descriptions
/// are `Sendable`.
public final class EntityDescription: @unchecked Sendable, CustomStringConvertible {
    // Exclusivity: public properties keep Swift's dynamic checks. Only the caches
    // a model builds as it freezes (read on every object's hot paths) are
    // `@exclusivity(unchecked)`: written once by `freeze()`, read-only afterwards
    // (`checkEditable`), so no access overlaps another (docs/performance.md).

    /// The entity's name, unique in its model.
    public var name: String { willSet { checkEditable("name") } }
    /// The name of the class that represents the entity's objects (Xcode's "Class";
    /// a Swift module prefix such as `Moody.Mood` or `.Mood` may appear).
    public var managedObjectClassName: String { willSet { checkEditable("managedObjectClassName") } }
    /// Whether the entity has no objects of its own, only through subentities.
    public var isAbstract: Bool = false { willSet { checkEditable("isAbstract") } }
    /// Free-form information about the entity.
    public var userInfo: [String: String] = [:] { willSet { checkEditable("userInfo") } }
    /// A string that enters the version hash, to mark a change the hash would
    /// otherwise not see.
    public var versionHashModifier: String? { willSet { checkEditable("versionHashModifier") } }
    /// The entity's previous name, for lightweight migration ("Renaming ID").
    public var renamingIdentifier: String? { willSet { checkEditable("renamingIdentifier") } }
    /// Uniqueness constraints: each is a list of property names whose values together
    /// identify at most one object.
    public var uniquenessConstraints: [[String]] = [] { willSet { checkEditable("uniquenessConstraints") } }
    /// The fetch indexes of the entity.
    public var indexes: [FetchIndexDescription] = [] { willSet { checkEditable("indexes") } }
    /// Legacy compound indexes: each a list of property names (pre-fetch-index models).
    public var compoundIndexes: [[String]] = [] { willSet { checkEditable("compoundIndexes") } }

    /// The superentity, if any (set by adding this entity to another's ``subentities``).
    public internal(set) var superentity: EntityDescription? {
        get { superentityReference }
        set { superentityReference = newValue }
    }
    // Weak: the superentity holds its subentities. A `weak` load is atomic against
    // the entity's release on another thread.
    private weak var superentityReference: EntityDescription?

    /// The entity's direct subentities. Setting them makes this entity their superentity.
    public var subentities: [EntityDescription] = [] {
        willSet { checkEditable("subentities") }
        didSet {
            for old in oldValue where old.superentity === self && !subentities.contains(where: { $0 === old }) {
                old.superentity = nil
            }
            for sub in subentities { sub.superentity = self }
        }
    }

    /// The entity's own properties (not the inherited ones), in model order. Setting
    /// them makes this entity their owner.
    public var properties: [PropertyDescription] = [] {
        willSet { checkEditable("properties") }
        didSet { for property in properties { property.entity = self } }
    }

    /// The model that contains the entity.
    public internal(set) var managedObjectModel: ManagedObjectModel? {
        get { modelReference }
        set { modelReference = newValue }
    }
    // Weak: the model holds its entities.
    private weak var modelReference: ManagedObjectModel?

    /// Whether the model this entity belongs to is frozen.
    var isFrozen = false { didSet { for property in properties { property.isFrozen = isFrozen } } }
    @exclusivity(unchecked) private var frozenCache: Cache?  // unchecked: written once as the model freezes, read-only after

    /// Creates an entity; its class name defaults to `ManagedObject`.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - managedObjectClassName: The name of the class of its objects.
    public init(name: String, managedObjectClassName: String = "ManagedObject") {
        self.name = name
        self.managedObjectClassName = managedObjectClassName
    }

    deinit {
        frozenAttributeTypes?.deallocate()
    }

    func checkEditable(_ what: String) {
        if isFrozen { modelMutationFailure("entity '\(name)' (\(what))") }
    }

    /// Resolves what each relationship names (its destination and inverse) for
    /// good. Called by the model's `freeze()`.
    func resolveReferences() {
        for property in properties { property.resolveReferences() }
    }


    public var description: String { "EntityDescription(\(name))" }

    // MARK: - Inherited and derived views

    /// A class, not a struct: reading one field of an optional struct can copy
    /// (retain and release) all of them, and these are read on every property
    /// access of every object.
    private final class Cache {
        let allProperties: [PropertyDescription]
        let propertiesByName: [String: PropertyDescription]
        let attributesByName: [String: AttributeDescription]
        let relationshipsByName: [String: RelationshipDescription]
        let propertyIndexes: [String: Int]
        /// The names of `allProperties`, in order.
        let propertyNames: [String]
        /// The bits of each of `propertyNames` (see `indexOfProperty(named:)`).
        let propertyNameBits: [StringBits]
        /// The derived attributes computed from the object's own row.
        let ownRowDerivations: [Derivation]

        init(allProperties: [PropertyDescription], propertiesByName: [String: PropertyDescription],
             attributesByName: [String: AttributeDescription], relationshipsByName: [String: RelationshipDescription],
             propertyIndexes: [String: Int], propertyNames: [String], ownRowDerivations: [Derivation]) {
            self.allProperties = allProperties
            self.ownRowDerivations = ownRowDerivations
            self.propertiesByName = propertiesByName
            self.attributesByName = attributesByName
            self.relationshipsByName = relationshipsByName
            self.propertyIndexes = propertyIndexes
            self.propertyNames = propertyNames
            self.propertyNameBits = propertyNames.map(StringBits.init)
        }
    }

    private func makeCache() -> Cache {
        let all = (superentity?.allProperties ?? []) + properties
        var byName: [String: PropertyDescription] = [:]
        var indexes: [String: Int] = [:]
        var attributes: [String: AttributeDescription] = [:]
        var relationships: [String: RelationshipDescription] = [:]
        for (index, property) in all.enumerated() {
            byName[property.name] = property
            if indexes[property.name] == nil { indexes[property.name] = index }
            if let attribute = property as? AttributeDescription { attributes[property.name] = attribute }
            if let relationship = property as? RelationshipDescription { relationships[property.name] = relationship }
        }
        return Cache(allProperties: all, propertiesByName: byName, attributesByName: attributes,
                     relationshipsByName: relationships, propertyIndexes: indexes, propertyNames: all.map(\.name),
                     ownRowDerivations: Self.derivations(of: all).filter { $0.form.isOwnRow })
    }

    @exclusivity(unchecked) private var frozenVersionHash: Data?  // unchecked: written once as the model freezes, read-only after

    func buildFrozenCache() {
        frozenCache = makeCache()
        frozenNameHash = name.hashValue
        frozenInitialValues = ManagedObjectContext.computeInitialValues(for: self)
        frozenPlainAttributes = allProperties.map(PlainAttribute.init)
        frozenHasToMany = allProperties.contains { ($0 as? RelationshipDescription)?.isToMany == true }
        frozenHasTransients = allProperties.contains { $0.isTransient }
        let types = UnsafeMutableBufferPointer<AttributeType?>.allocate(capacity: allProperties.count)
        _ = types.initialize(from: allProperties.map { ($0 as? AttributeDescription)?.attributeType })
        frozenAttributeTypes?.deallocate()
        frozenAttributeTypes = types
        frozenVersionHash = Data(VersionHasher.hash(of: self))
    }

    // Each accessor reads one field of the frozen cache (`frozenCache?.field`).

    /// The own-row derived attributes, once the model is frozen.
    var frozenOwnRowDerivations: [Derivation]? { frozenCache?.ownRowDerivations }

    /// Every property, inherited ones first (superentity order), then the entity's own.
    public var allProperties: [PropertyDescription] { frozenCache?.allProperties ?? makeCache().allProperties }
    /// Every property, inherited ones included, by name.
    public var propertiesByName: [String: PropertyDescription] { frozenCache?.propertiesByName ?? makeCache().propertiesByName }
    /// The index of each property (inherited included) in ``allProperties``.
    var propertyIndexes: [String: Int] { frozenCache?.propertyIndexes ?? makeCache().propertyIndexes }
    /// The index of the property named `name` in ``allProperties``: a scan of the
    /// names for entities of up to 16 properties (comparing short names costs less
    /// than hashing one), the dictionary above that.
    ///
    /// The scan first compares the names' bits: two strings with the same bits are
    /// the same string (the same small-string bytes, or the same storage), and a
    /// key written in code (`"name"`) is a small string with the same bits as the
    /// model's; a name that matches no bits is compared as a string.
    func indexOfProperty(named name: String) -> Int? {
        guard let cache = frozenCache else { return makeCache().propertyIndexes[name] }
        let names = cache.propertyNames
        guard names.count <= 16 else { return cache.propertyIndexes[name] }
        let bits = StringBits(name)
        if let index = cache.propertyNameBits.firstIndex(of: bits) { return index }
        return names.firstIndex(of: name)
    }

    /// The 16 bytes of a `String` value, compared as two integers.
    struct StringBits: Equatable {
        let low: UInt64
        let high: UInt64

        init(_ string: String) {
            (low, high) = unsafeBitCast(string, to: (UInt64, UInt64).self)
        }
    }
    /// Every attribute, inherited ones included, by name.
    public var attributesByName: [String: AttributeDescription] { frozenCache?.attributesByName ?? makeCache().attributesByName }
    /// Every relationship, inherited ones included, by name.
    public var relationshipsByName: [String: RelationshipDescription] { frozenCache?.relationshipsByName ?? makeCache().relationshipsByName }

    /// The scope of a new temporary ID of this entity: its frozen model's (one
    /// per entity), or a new one for an entity of no model, or of one gone.
    var temporaryIDScope: ManagedObjectID.Scope {
        if let model = managedObjectModel, let scope = model.temporaryIDScopes[ObjectIdentifier(self)] { return scope }
        return ManagedObjectID.Scope(entity: self, storeName: .none)
    }

    /// A hash of the entity's name, computed once when the model is frozen: object
    /// IDs hash it instead of the name's characters.
    var nameHash: Int { frozenNameHash ?? name.hashValue }
    @exclusivity(unchecked) private var frozenNameHash: Int?  // unchecked: written once as the model freezes, read-only after
    /// The values of a new object (defaults, empty relationships), computed once
    /// when the model is frozen.
    @exclusivity(unchecked) private(set) var frozenInitialValues: RowValues?  // unchecked: written once as the model freezes, read-only after

    /// An attribute validation only checks for its type and presence: no range,
    /// pattern or validation rule.
    struct PlainAttribute {
        let attributeType: AttributeType
        let isOptional: Bool

        init?(_ property: PropertyDescription) {
            guard let attribute = property as? AttributeDescription, attribute.minValue == nil, attribute.maxValue == nil,
                  attribute.regularExpression == nil, attribute.validationRules.isEmpty else { return nil }
            attributeType = attribute.attributeType
            isOptional = attribute.isOptional
        }
    }
    /// Whether a frozen entity has to-many relationships (nil before it is frozen):
    /// loading a row of one that has none has no to-many slot to turn into a fault.
    @exclusivity(unchecked) private(set) var frozenHasToMany: Bool?  // unchecked: written once as the model freezes, read-only after
    /// Whether a frozen entity has transient properties (nil before it is frozen):
    /// a saved row of one that has none is its object's values as they are.
    @exclusivity(unchecked) private(set) var frozenHasTransients: Bool?  // unchecked: written once as the model freezes, read-only after
    /// For each of `allProperties` of a frozen entity: its attribute type, nil for
    /// a relationship or a fetched property. Plain memory, owned by the entity:
    /// reading it retains nothing, where reading `allProperties[index]` and casting
    /// it retains the array, the property and the cast result (three of the
    /// reference-count pairs of every `setValue(_:forKey:)`).
    @exclusivity(unchecked) private(set) var frozenAttributeTypes: UnsafeMutableBufferPointer<AttributeType?>?  // unchecked: written once as the model freezes, read-only after
    /// For each of `allProperties` of a frozen entity: its ``PlainAttribute``, if it is one.
    @exclusivity(unchecked) private(set) var frozenPlainAttributes: [PlainAttribute?]?  // unchecked: written once as the model freezes, read-only after
    /// The class of the entity's objects as ``ManagedObjectClasses`` last resolved
    /// it, with the registration generation it was resolved in.
    let resolvedClass = ResolvedClassCache()

    /// The relationships (inherited included) whose destination is `entity`.
    ///
    /// - Parameter entity: The destination entity, matched by name.
    /// - Returns: The relationships, in property order.
    public func relationships(forDestination entity: EntityDescription) -> [RelationshipDescription] {
        allProperties.compactMap { $0 as? RelationshipDescription }.filter { $0.destinationEntityName == entity.name }
    }

    /// The entity's version hash: 32 bytes of SHA-256 over its name, abstractness,
    /// superentity hash, stored properties and modifiers, exactly as Core Data
    /// computes it. Stores record it for every entity in their metadata.
    public var versionHash: Data { frozenVersionHash ?? Data(VersionHasher.hash(of: self)) }

    /// The topmost entity of the inheritance chain (the entity itself for a root).
    public var rootEntity: EntityDescription {
        var entity = self
        while let parent = entity.superentity { entity = parent }
        return entity
    }

    /// Whether this entity is `entity` or one of its subentities, at any depth.
    ///
    /// - Parameter entity: The entity to compare with.
    /// - Returns: True when `entity` is this entity or one of its superentities.
    public func isKindOf(entity: EntityDescription) -> Bool {
        var current: EntityDescription? = self
        var depth = 0
        while let candidate = current, depth < 10_000 {
            depth += 1
            if candidate === entity || candidate.name == entity.name && candidate.managedObjectModel === entity.managedObjectModel {
                return true
            }
            current = candidate.superentity
        }
        return false
    }

    /// This entity and all its subentities, depth first (pre-order).
    public var selfAndDescendants: [EntityDescription] {
        [self] + subentities.flatMap { $0.selfAndDescendants }
    }

    /// A copy of the entity and its properties (not its sub- or superentities).
    ///
    /// - Returns: A new, editable entity in no model.
    public func copy() -> EntityDescription {
        let copy = EntityDescription(name: name, managedObjectClassName: managedObjectClassName)
        copy.isAbstract = isAbstract
        copy.userInfo = userInfo
        copy.versionHashModifier = versionHashModifier
        copy.renamingIdentifier = renamingIdentifier
        copy.uniquenessConstraints = uniquenessConstraints
        copy.indexes = indexes
        copy.compoundIndexes = compoundIndexes
        copy.properties = properties.map { $0.copy() }
        return copy
    }
}
