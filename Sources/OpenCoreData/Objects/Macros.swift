import Foundation

/// Declares a property of a managed object subclass whose value lives in the
/// object's storage: the Linux counterpart of `@NSManaged`.
///
/// The property becomes a computed property calling
/// ``ManagedObject/managedValue(forKey:)`` and
/// ``ManagedObject/setManagedValue(_:forKey:)``, which look at its Swift type:
///
/// ```swift
/// @ManagedEntity
/// final class Mood: ManagedObject {
///     @Managed fileprivate(set) var date: Date        // Date attribute
///     @Managed fileprivate(set) var colors: [Color]   // Codable → transformable attribute
///     @Managed var rating: Int16                       // Integer 16 attribute
///     @Managed var note: String?                       // optional String attribute
///     @Managed(inverse: "moods") var country: Country? // to-one relationship
///     @Managed(inverse: "moods") var tags: Set<Tag>    // to-many relationship
///     @Managed var photos: [Photo]                     // ordered to-many relationship
///     @Managed(key: "creator_id") var creatorID: String?
///     @Managed(.transient) var scratch: String?
/// }
/// ```
///
/// Scalars are `Int`, `Int16`, `Int32`, `Int64`, `Double`, `Float`, `Bool`,
/// `String`, `Date`, `Data`, `UUID`, `URL`, `Decimal` (and any ``ManagedScalar``);
/// other `Codable` types are stored as an `AttributeValue` tree. Reading a
/// non-optional property that has no value never traps on data: it gives a
/// neutral value (see ``ManagedObject/managedValue(forKey:)``).
///
/// - Parameters:
///   - options: Model options of the property (``ManagedPropertyOption``).
///   - key: The name of the property in the model, when it differs from the
///     Swift name.
///   - inverse: The inverse relationship on the destination (relationships).
///   - deleteRule: What deleting the object does to the destination
///     (relationships; `.nullify` by default).
@attached(accessor)
public macro Managed(
    _ options: ManagedPropertyOption...,
    key: String? = nil,
    inverse: String? = nil,
    deleteRule: DeleteRule = .nullify
) = #externalMacro(module: "OpenCoreDataMacros", type: "ManagedMacro")

/// Declares a property of a managed object subclass with a default value: the
/// value read when the attribute has none, and — in a model built from classes —
/// the attribute's default value, which new objects start with.
///
/// ```swift
/// enum Kind: String, Codable { case happy, sad }
///
/// @Managed(default: Kind.happy) var kind: Kind
/// @Managed(default: Int16(3)) var rating: Int16
/// ```
///
/// Give the default with its type (`Kind.happy`, not `.happy`): the compiler
/// checks macro arguments before it knows the property's type.
@attached(accessor)
public macro Managed<Value>(
    _ options: ManagedPropertyOption...,
    key: String? = nil,
    default: Value
) = #externalMacro(module: "OpenCoreDataMacros", type: "ManagedMacro")

/// Describes a managed object subclass as an entity, from its `@Managed`
/// properties, so that an app can build its model from classes, without a model
/// file.
///
/// ```swift
/// @ManagedEntity
/// final class Country: ManagedObject {
///     @Managed var numericISO3166Code: Int16
///     @Managed(inverse: "country", deleteRule: .cascade) var moods: Set<Mood>
/// }
///
/// let model = try ManagedObjectModel(classes: [Mood.self, Country.self])
/// ```
///
/// The entity is named after the class unless a name is given
/// (`@ManagedEntity("Country")`); `abstract: true` makes it abstract. A class
/// whose superclass is another `@ManagedEntity` class is a subentity of it.
/// The macro adds ``ManagedEntityType`` conformance and its
/// ``ManagedEntityType/managedEntitySchema``; properties declared in extensions
/// are not part of the entity.
@attached(member, names: named(managedEntitySchema), named(managedPropertyKeyPaths))
@attached(extension, conformances: ManagedEntityType)
public macro ManagedEntity(
    _ name: String? = nil,
    abstract: Bool = false
) = #externalMacro(module: "OpenCoreDataMacros", type: "ManagedEntityMacro")

/// A model option of a `@Managed` property.
///
/// ```swift
/// @Managed(.transient) var scratch: String?
/// @Managed(.indexed, .unique) var remoteIdentifier: String?
/// ```
public enum ManagedPropertyOption: Sendable, Hashable {
    /// The value is kept in memory only, never saved.
    case transient
    /// The attribute is indexed.
    case indexed
    /// Large binary values may be stored outside the store.
    case externalStorage
    /// No two objects of the entity have the same value (a uniqueness constraint).
    case unique
}
