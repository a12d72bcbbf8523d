import Foundation
import OpenCoreDataPredicates

/// Declares a model in code, with the same result as drawing it in Xcode.
///
/// ```swift
/// let model = try ManagedObjectModel {
///     Entity("GeographicRegion", abstract: true) {
///         Attribute("numericISO3166Code", .integer16, optional: false, defaultValue: 0)
///         Attribute("updatedAt", .date, optional: false)
///         UniquenessConstraint("numericISO3166Code")
///     }
///     Entity("Country", parent: "GeographicRegion") {
///         Relationship("moods", to: "Mood", inverse: "country", toMany: true, deleteRule: .cascade)
///     }
///     Entity("Mood", className: "Mood") {
///         Attribute("date", .date, optional: false)
///         Attribute("colors", .transformable, transformer: "ColorsTransformer")
///         Relationship("country", to: "Country", inverse: "moods")
///         FetchIndex("byDate", "date", ascending: false)
///     }
/// }
/// ```
///
/// Relationships name their destination and inverse; parents are named too, and
/// everything is resolved and validated when the model is built.
@resultBuilder
public enum ModelBuilder {
    public static func buildBlock(_ parts: [ModelPart]...) -> [ModelPart] { parts.flatMap { $0 } }
    public static func buildExpression(_ entity: Entity) -> [ModelPart] { [.entity(entity)] }
    public static func buildExpression(_ configuration: ModelConfiguration) -> [ModelPart] { [.configuration(configuration)] }
    public static func buildExpression(_ template: FetchTemplate) -> [ModelPart] { [.template(template)] }
    public static func buildOptional(_ parts: [ModelPart]?) -> [ModelPart] { parts ?? [] }
    public static func buildEither(first parts: [ModelPart]) -> [ModelPart] { parts }
    public static func buildEither(second parts: [ModelPart]) -> [ModelPart] { parts }
    public static func buildArray(_ parts: [[ModelPart]]) -> [ModelPart] { parts.flatMap { $0 } }
}

/// One part of a model declared with ``ModelBuilder``.
public enum ModelPart {
    case entity(Entity)
    case configuration(ModelConfiguration)
    case template(FetchTemplate)
}

/// Declares the members of an entity in ``Entity``.
@resultBuilder
public enum EntityBuilder {
    public static func buildBlock(_ parts: [EntityPart]...) -> [EntityPart] { parts.flatMap { $0 } }
    public static func buildExpression(_ attribute: Attribute) -> [EntityPart] { [.property(attribute.description)] }
    public static func buildExpression(_ relationship: Relationship) -> [EntityPart] { [.property(relationship.description)] }
    public static func buildExpression(_ fetched: FetchedProperty) -> [EntityPart] { [.property(fetched.description)] }
    public static func buildExpression(_ property: PropertyDescription) -> [EntityPart] { [.property(property)] }
    public static func buildExpression(_ unique: UniquenessConstraint) -> [EntityPart] { [.unique(unique.keys)] }
    public static func buildExpression(_ index: FetchIndex) -> [EntityPart] { [.index(index.description)] }
    public static func buildOptional(_ parts: [EntityPart]?) -> [EntityPart] { parts ?? [] }
    public static func buildEither(first parts: [EntityPart]) -> [EntityPart] { parts }
    public static func buildEither(second parts: [EntityPart]) -> [EntityPart] { parts }
    public static func buildArray(_ parts: [[EntityPart]]) -> [EntityPart] { parts.flatMap { $0 } }
}

/// One member of an entity declared with ``EntityBuilder``.
public enum EntityPart {
    case property(PropertyDescription)
    case unique([String])
    case index(FetchIndexDescription)
}

/// An entity in a model declared in code.
public struct Entity {
    let description: EntityDescription
    let parent: String?

    /// Declares an entity.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - className: The class of its objects (defaults to the entity name when a
    ///     subclass of that name is registered, else `ManagedObject`).
    ///   - parent: The name of its superentity.
    ///   - abstract: Whether it has no objects of its own.
    ///   - members: Its attributes, relationships, fetched properties,
    ///     uniqueness constraints and fetch indexes.
    public init(_ name: String, className: String? = nil, parent: String? = nil, abstract: Bool = false,
                @EntityBuilder _ members: () -> [EntityPart] = { [] }) {
        let entity = EntityDescription(name: name, managedObjectClassName: className ?? name)
        entity.isAbstract = abstract
        var properties: [PropertyDescription] = []
        for part in members() {
            switch part {
            case .property(let property): properties.append(property)
            case .unique(let keys): entity.uniquenessConstraints.append(keys)
            case .index(let index): entity.indexes.append(index)
            }
        }
        entity.properties = properties
        self.description = entity
        self.parent = parent
    }
}

/// An attribute in an entity declared in code.
public struct Attribute {
    let description: AttributeDescription

    /// Declares an attribute.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The attribute's type.
    ///   - optional: Whether nil is a valid value.
    ///   - transient: Whether the value is kept in memory only, never stored.
    ///   - defaultValue: The value of new objects.
    ///   - minValue: The smallest valid value (or length, for strings and data).
    ///   - maxValue: The largest valid value (or length, for strings and data).
    ///   - regularExpression: A pattern string values must match.
    ///   - transformer: The name of the value transformer of a transformable
    ///     attribute.
    ///   - valueClassName: The class name of a transformable attribute's values.
    ///   - allowsExternalStorage: Whether large binary data may be stored in a
    ///     file beside the store.
    ///   - preservesValueOnDeletion: Whether persistent history keeps the value
    ///     of deleted objects (a tombstone).
    ///   - renamingIdentifier: The attribute's name in an earlier model version.
    ///   - versionHashModifier: A string that changes the attribute's version
    ///     hash.
    public init(_ name: String, _ type: AttributeType, optional: Bool = true, transient: Bool = false,
                defaultValue: AttributeValue? = nil, minValue: AttributeValue? = nil, maxValue: AttributeValue? = nil,
                regularExpression: String? = nil, transformer: String? = nil, valueClassName: String? = nil,
                allowsExternalStorage: Bool = false, preservesValueOnDeletion: Bool = false,
                renamingIdentifier: String? = nil, versionHashModifier: String? = nil) {
        let attribute = AttributeDescription(name: name, type: type, optional: optional, defaultValue: defaultValue)
        attribute.isTransient = transient
        attribute.minValue = minValue
        attribute.maxValue = maxValue
        attribute.regularExpression = regularExpression
        attribute.valueTransformerName = transformer
        attribute.attributeValueClassName = valueClassName
        attribute.allowsExternalBinaryDataStorage = allowsExternalStorage
        attribute.preservesValueInHistoryOnDeletion = preservesValueOnDeletion
        attribute.renamingIdentifier = renamingIdentifier
        attribute.versionHashModifier = versionHashModifier
        self.description = attribute
    }

    /// Declares a derived attribute, computed by the store from `expression`.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The attribute's type.
    ///   - expression: The derivation, as Xcode writes it (`moods.@count`,
    ///     `now()`, `lowercase:(name)`).
    public init(_ name: String, _ type: AttributeType, derivedFrom expression: String) {
        self.description = DerivedAttributeDescription(name: name, type: type, derivationExpression: expression)
    }
}

/// A relationship in an entity declared in code.
public struct Relationship {
    let description: RelationshipDescription

    /// Declares a relationship to the entity named `destination`.
    ///
    /// - Parameters:
    ///   - name: The relationship's name.
    ///   - destination: The destination entity's name.
    ///   - inverse: The name of the destination's relationship pointing back.
    ///   - toMany: Whether it is a to-many relationship.
    ///   - ordered: Whether a to-many relationship keeps its objects in order.
    ///   - optional: Whether it may be empty (nil, for a to-one relationship).
    ///   - deleteRule: What deleting the source does to the destination objects.
    ///   - minCount: The fewest objects of a to-many relationship.
    ///   - maxCount: The most objects of a to-many relationship; nil for no limit.
    ///   - renamingIdentifier: The relationship's name in an earlier model version.
    public init(_ name: String, to destination: String, inverse: String? = nil, toMany: Bool = false,
                ordered: Bool = false, optional: Bool = true, deleteRule: DeleteRule = .nullify,
                minCount: Int = 0, maxCount: Int? = nil, renamingIdentifier: String? = nil) {
        let relationship = RelationshipDescription(name: name, destination: destination, inverse: inverse,
                                                   toMany: toMany, ordered: ordered)
        relationship.isOptional = optional
        relationship.deleteRule = deleteRule
        relationship.minCount = minCount
        if let maxCount, toMany { relationship.maxCount = maxCount }
        relationship.renamingIdentifier = renamingIdentifier
        self.description = relationship
    }
}

/// A fetched property in an entity declared in code.
public struct FetchedProperty {
    let description: FetchedPropertyDescription

    /// Declares a fetched property fetching `entity` with a predicate.
    ///
    /// - Parameters:
    ///   - name: The fetched property's name.
    ///   - entity: The name of the entity fetched.
    ///   - predicate: The predicate format; `$FETCH_SOURCE` names the object
    ///     whose property is read.
    public init(_ name: String, entity: String, predicate: String? = nil) {
        self.description = FetchedPropertyDescription(
            name: name, fetchRequest: FetchRequestTemplate(entityName: entity, predicateFormat: predicate))
    }
}

/// A uniqueness constraint in an entity declared in code.
public struct UniquenessConstraint {
    let keys: [String]
    /// Declares that the values of `keys` together identify at most one object.
    ///
    /// - Parameter keys: The names of the constrained properties.
    public init(_ keys: String...) { self.keys = keys }
}

/// A fetch index in an entity declared in code.
public struct FetchIndex {
    let description: FetchIndexDescription
    /// Declares an index over `properties`.
    ///
    /// - Parameters:
    ///   - name: The index's name.
    ///   - properties: The names of the indexed properties, in order.
    ///   - ascending: The order of every element.
    public init(_ name: String, _ properties: String..., ascending: Bool = true) {
        self.description = FetchIndexDescription(
            name: name, elements: properties.map { FetchIndexElementDescription(property: $0, ascending: ascending) })
    }
}

/// A configuration in a model declared in code.
public struct ModelConfiguration {
    let name: String
    let entities: [String]
    /// Declares a configuration holding the entities named `entities`.
    ///
    /// - Parameters:
    ///   - name: The configuration's name.
    ///   - entities: The names of its entities.
    public init(_ name: String, entities: [String]) {
        self.name = name
        self.entities = entities
    }
}

/// A fetch request template in a model declared in code.
public struct FetchTemplate {
    let name: String
    let template: FetchRequestTemplate
    /// Declares a template named `name`.
    ///
    /// - Parameters:
    ///   - name: The template's name.
    ///   - entity: The name of the entity it fetches.
    ///   - predicate: The predicate format, with `$variables` for the values
    ///     given when the request is made.
    public init(_ name: String, entity: String, predicate: String? = nil) {
        self.name = name
        self.template = FetchRequestTemplate(entityName: entity, predicateFormat: predicate)
    }
}

extension ManagedObjectModel {
    /// Builds and validates a model declared in code with ``ModelBuilder``.
    ///
    /// - Parameters:
    ///   - versionIdentifier: The model's version identifier, if any.
    ///   - parts: The entities, configurations and fetch request templates.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) for an unknown parent entity, a configuration naming an unknown
    ///   entity, and every problem ``validate()`` finds.
    public convenience init(versionIdentifier: String? = nil, @ModelBuilder _ parts: () -> [ModelPart]) throws {
        self.init()
        var entities: [Entity] = []
        var configurations: [ModelConfiguration] = []
        var templates: [FetchTemplate] = []
        for part in parts() {
            switch part {
            case .entity(let entity): entities.append(entity)
            case .configuration(let configuration): configurations.append(configuration)
            case .template(let template): templates.append(template)
            }
        }
        let byName = Dictionary(entities.map { ($0.description.name, $0.description) }, uniquingKeysWith: { first, _ in first })
        for entity in entities {
            let subentities = entities.filter { $0.parent == entity.description.name }.map(\.description)
            if !subentities.isEmpty { entity.description.subentities = subentities }
        }
        for entity in entities {
            if let parent = entity.parent, byName[parent] == nil {
                throw CoreDataError(.coreData, "Entity '\(entity.description.name)' has unknown parent entity '\(parent)'",
                                    entityName: entity.description.name)
            }
        }
        self.entities = entities.map(\.description)
        for configuration in configurations {
            setEntities(configuration.entities.compactMap { byName[$0] }, forConfigurationName: configuration.name)
            for name in configuration.entities where byName[name] == nil {
                throw CoreDataError(.coreData, "Configuration '\(configuration.name)' names unknown entity '\(name)'", entityName: name)
            }
        }
        for template in templates { setFetchRequestTemplate(template.template, forName: template.name) }
        if let versionIdentifier { versionIdentifiers = [versionIdentifier] }
        try validate()
    }
}
