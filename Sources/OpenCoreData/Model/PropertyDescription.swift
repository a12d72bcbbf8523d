import Foundation

/// A property of an entity: an attribute, a relationship or a fetched property
/// (`NSPropertyDescription`).
///
/// Properties are created on their own and then given to an entity through
/// ``EntityDescription/properties``; the entity becomes their ``entity``.
///
/// ```swift
/// let name = AttributeDescription(name: "name", type: .string)
/// name.isOptional = false
/// let person = EntityDescription(name: "Person")
/// person.properties = [name]
/// name.entity === person   // true
/// ```
///
/// Like every part of a model, a property can be changed until a persistent store
/// coordinator starts using the model; after that, changing it is a programming
/// error that stops the program, as Core Data raises an exception.
///
/// Thread safety: descriptions are classes with plain stored properties. They are
/// declared `@unchecked Sendable` because a model is only mutated while it is being
/// built, on one thread, and is frozen (``ManagedObjectModel/isEditable`` false)
/// before any coordinator or context shares it; frozen descriptions are never
/// written again, so concurrent reads are race-free.
public class PropertyDescription: @unchecked Sendable, CustomStringConvertible {
    // Exclusivity: public properties keep Swift's dynamic checks. Only the caches
    // a model builds as it freezes (read on every object's hot paths) are
    // `@exclusivity(unchecked)`: written once by `freeze()`, read-only afterwards
    // (`checkEditable`), so no access overlaps another (docs/performance.md).

    /// The property's name.
    public var name: String { willSet { checkEditable("name") } }
    /// Whether the property may be nil when the object is saved. Defaults to true.
    public var isOptional: Bool = true { willSet { checkEditable("isOptional") } }
    /// Whether the property is kept in memory only and never stored.
    public var isTransient: Bool = false { willSet { checkEditable("isTransient") } }
    /// Whether the property is read-only.
    public var isReadOnly: Bool = false { willSet { checkEditable("isReadOnly") } }
    /// Free-form information about the property.
    public var userInfo: [String: String] = [:] { willSet { checkEditable("userInfo") } }
    /// A string that enters the version hash, to mark a change the hash would
    /// otherwise not see.
    public var versionHashModifier: String? { willSet { checkEditable("versionHashModifier") } }
    /// The property's previous name, for lightweight migration (Xcode's "Renaming ID",
    /// `elementID` in the model file).
    public var renamingIdentifier: String? { willSet { checkEditable("renamingIdentifier") } }
    /// Whether Spotlight indexes the property (kept for fidelity; no effect on Linux).
    public var isIndexedBySpotlight: Bool = false { willSet { checkEditable("isIndexedBySpotlight") } }
    /// Whether the property is stored in an external record (legacy; kept for fidelity).
    public var isStoredInExternalRecord: Bool = false { willSet { checkEditable("isStoredInExternalRecord") } }
    /// Predicates a value must satisfy to be valid, each with the message of the
    /// warning it produces (`validationPredicates` / `validationWarnings`).
    public var validationRules: [ValidationRule] = [] { willSet { checkEditable("validationRules") } }

    /// The entity that owns this property (set when the property is added to one).
    public internal(set) var entity: EntityDescription? {
        get { entityReference }
        set { entityReference = newValue }
    }
    // Weak: the entity holds its properties. A `weak` load is atomic against the
    // entity's release on another thread.
    private weak var entityReference: EntityDescription?

    /// Whether the model this property belongs to is frozen.
    @exclusivity(unchecked) var isFrozen = false  // unchecked: written once as the model freezes, read-only after

    init(name: String) {
        self.name = name
    }

    /// Resolves what the property names in its model for good (the model is
    /// frozen; see `EntityDescription.resolveReferences()`).
    func resolveReferences() {}

    func checkEditable(_ what: String) {
        if isFrozen {
            modelMutationFailure("property '\(entity?.name ?? "?").\(name)' (\(what))")
        }
    }

    /// The property's version hash: 32 bytes of SHA-256, exactly as Core Data computes
    /// it (see ``ManagedObjectModel/entityVersionHashesByName``).
    public var versionHash: Data { Data(VersionHasher.hash(of: self)) }

    public var description: String { "\(type(of: self))(\(name))" }

    /// A copy of the description, not attached to any entity.
    ///
    /// - Returns: A new, editable description of the same class.
    public func copy() -> PropertyDescription {
        let copy = PropertyDescription(name: name)
        copyCommon(to: copy)
        return copy
    }

    func copyCommon(to copy: PropertyDescription) {
        copy.isOptional = isOptional
        copy.isTransient = isTransient
        copy.isReadOnly = isReadOnly
        copy.userInfo = userInfo
        copy.versionHashModifier = versionHashModifier
        copy.renamingIdentifier = renamingIdentifier
        copy.isIndexedBySpotlight = isIndexedBySpotlight
        copy.isStoredInExternalRecord = isStoredInExternalRecord
        copy.validationRules = validationRules
    }
}

/// One validation predicate of a property and the warning message used when a value
/// fails it (a pair of `validationPredicates` and `validationWarnings`).
///
/// The predicate is evaluated with the value as `SELF`:
///
/// ```swift
/// let rule = ValidationRule(predicateFormat: "SELF != \"unknown\"", warning: "must be known")
/// ```
public struct ValidationRule: Sendable, Hashable {
    /// The predicate, in the predicate format language, evaluated against the
    /// value (`SELF`).
    public var predicateFormat: String
    /// The warning: a message or a numeric Core Data error code as text ("1660").
    public var warning: String

    /// A rule from a predicate format string and its warning.
    ///
    /// - Parameters:
    ///   - predicateFormat: The predicate, evaluated with the value as `SELF`.
    ///   - warning: A message, or a numeric Core Data error code as text ("1660").
    public init(predicateFormat: String, warning: String) {
        self.predicateFormat = predicateFormat
        self.warning = warning
    }
}

/// Stops the program with a clear message when a frozen model is mutated, as Core
/// Data raises `NSInternalInconsistencyException` ("Can't modify an immutable model").
func modelMutationFailure(_ what: String) -> Never {
    preconditionFailure("OpenCoreData: can't modify an immutable model: \(what) was changed after the model was used by a persistent store coordinator. Copy the model (ManagedObjectModel.copy()) to change it.")
}
