import Foundation
import OpenCoreDataPredicates

/// How the objects of a store written with one model become the objects of a
/// store for another: Core Data's `NSMappingModel`.
///
/// A mapping model lists one ``EntityMapping`` per entity it touches, in the
/// order a migration processes them. Each entity mapping says which source
/// entity's objects become which destination entity's, and each of its
/// ``PropertyMapping``s how a destination property's value is computed from the
/// source object (`$source.name`, a constant, or a relationship's destination
/// objects through the migration manager).
///
/// Most migrations need no hand-made mapping: when only what Core Data can infer
/// changed (added, removed or renamed entities and properties, optionality with a
/// default, relationship cardinality), ``inferredMappingModel(forSourceModel:destinationModel:)``
/// builds it, and an SQLite store then migrates in place with set-based SQL:
///
/// ```swift
/// let mapping = try MappingModel.inferredMappingModel(forSourceModel: version1, destinationModel: version2)
/// mapping.isInferred                               // true
/// mapping.entityMappings.map(\.name)               // ["IEM_Copy_Country", "IEM_Transform_Mood"]
/// mapping.entityMapping(named: "IEM_Transform_Mood")?.attributeMappings.first?.valueExpression
/// // $source.colors
/// ```
public struct MappingModel: Sendable {
    /// The entity mappings, in the order a migration processes them.
    public var entityMappings: [EntityMapping]

    /// A mapping model with `entityMappings`.
    ///
    /// - Parameter entityMappings: The entity mappings, in processing order.
    public init(entityMappings: [EntityMapping] = []) {
        self.entityMappings = entityMappings
    }

    /// The entity mappings by name (Core Data's `entityMappingsByName`).
    public var entityMappingsByName: [String: EntityMapping] {
        Dictionary(entityMappings.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The entity mapping named `name`.
    ///
    /// - Parameter name: A mapping's name, such as `IEM_Copy_Mood` or `MoodToMood`.
    /// - Returns: The mapping, or nil when the model has none of that name.
    public func entityMapping(named name: String) -> EntityMapping? {
        entityMappings.first { $0.name == name }
    }

    /// The mapping that makes objects of the destination entity named `name`.
    ///
    /// - Parameter name: A destination entity's name.
    /// - Returns: The first mapping whose destination is that entity, or nil.
    public func entityMapping(forDestinationEntityNamed name: String) -> EntityMapping? {
        entityMappings.first { $0.destinationEntityName == name && $0.mappingType != .remove }
    }

    /// Whether the model is an inferred one (Core Data's private
    /// `_isInferredMappingModel`): every entity mapping is named `IEM_<kind>_<entity>`.
    /// Only such mappings migrate an SQLite store in place with SQL.
    public var isInferred: Bool {
        !entityMappings.isEmpty && entityMappings.allSatisfy { $0.name.hasPrefix("IEM_") }
    }

    /// Whether the model maps a store of `source` to `destination`: each entity
    /// mapping's version hashes are those of its entities in the two models
    /// (how Core Data finds the mapping model of a migration). A mapping with no
    /// hash recorded matches by entity name.
    ///
    /// - Parameters:
    ///   - source: The model the store was written with.
    ///   - destination: The model to migrate to.
    /// - Returns: Whether every entity mapping matches.
    public func matches(source: ManagedObjectModel, destination: ManagedObjectModel) -> Bool {
        let sourceEntities = source.entitiesByName
        let destinationEntities = destination.entitiesByName
        for mapping in entityMappings {
            if let name = mapping.sourceEntityName {
                guard let entity = sourceEntities[name] else { return false }
                if let hash = mapping.sourceEntityVersionHash, hash != entity.versionHash { return false }
            }
            if let name = mapping.destinationEntityName {
                guard let entity = destinationEntities[name] else { return false }
                if let hash = mapping.destinationEntityVersionHash, hash != entity.versionHash { return false }
            }
        }
        return true
    }
}

/// What an entity mapping does (Core Data's `NSEntityMappingType`).
public enum EntityMappingType: Int, Sendable, Hashable {
    /// `NSUndefinedEntityMappingType`.
    case undefined = 0
    /// `NSCustomEntityMappingType`: a migration policy class does the work.
    case custom = 1
    /// `NSAddEntityMappingType`: the entity is new in the destination.
    case add = 2
    /// `NSRemoveEntityMappingType`: the entity is gone from the destination.
    case remove = 3
    /// `NSCopyEntityMappingType`: the objects are copied as they are.
    case copy = 4
    /// `NSTransformEntityMappingType`: the objects are copied with changes.
    case transform = 5
}

/// How the objects of one source entity become objects of one destination
/// entity: Core Data's `NSEntityMapping`.
///
/// ```swift
/// var mapping = EntityMapping(name: "MoodToMood", mappingType: .transform,
///                             sourceEntityName: "Mood", destinationEntityName: "Mood")
/// mapping.attributeMappings = [PropertyMapping(name: "rating", valueExpression: .member(.variable("source"), keyPath: "rating"))]
/// ```
public struct EntityMapping: Sendable {
    /// The mapping's name: `IEM_<kind>_<entity>` for an inferred mapping, the
    /// name Xcode's compiler gives (`MoodToMood`, or the destination's name for an
    /// added entity) otherwise.
    public var name: String
    /// What the mapping does.
    public var mappingType: EntityMappingType
    /// The source entity's name (nil for an added entity).
    public var sourceEntityName: String?
    /// The source entity's version hash when the mapping was made (nil: not checked).
    public var sourceEntityVersionHash: Data?
    /// The destination entity's name (nil for a removed entity).
    public var destinationEntityName: String?
    /// The destination entity's version hash when the mapping was made (nil: not checked).
    public var destinationEntityVersionHash: Data?
    /// The expression giving the source objects (Core Data's default: a fetch of
    /// the source entity's objects); nil: every object of the source entity.
    public var sourceExpression: CoreExpression?
    /// How the destination's attributes are computed.
    public var attributeMappings: [PropertyMapping]
    /// How the destination's relationships are computed.
    public var relationshipMappings: [PropertyMapping]
    /// The name of the migration policy class (registered with
    /// `EntityMigrationPolicy`), nil for the default policy.
    public var entityMigrationPolicyClassName: String?
    /// Values for the policy.
    public var userInfo: [String: AttributeValue]

    /// An entity mapping.
    ///
    /// - Parameters:
    ///   - name: The mapping's name.
    ///   - mappingType: What the mapping does.
    ///   - sourceEntityName: The source entity (nil for an added one).
    ///   - destinationEntityName: The destination entity (nil for a removed one).
    public init(name: String, mappingType: EntityMappingType, sourceEntityName: String?, destinationEntityName: String?) {
        self.name = name
        self.mappingType = mappingType
        self.sourceEntityName = sourceEntityName
        self.destinationEntityName = destinationEntityName
        self.attributeMappings = []
        self.relationshipMappings = []
        self.userInfo = [:]
    }
}

/// How one destination property's value is computed: Core Data's `NSPropertyMapping`.
///
/// The value expression is evaluated with the variables `$source` (the source
/// object), `$manager` (the migration manager), `$entityMapping` and
/// `$propertyMapping`. A nil expression leaves the property at its default.
public struct PropertyMapping: Sendable {
    /// The destination property's name.
    public var name: String
    /// The expression giving its value; nil: the property keeps its default.
    public var valueExpression: CoreExpression?
    /// Values for the policy.
    public var userInfo: [String: AttributeValue]

    /// A property mapping.
    ///
    /// - Parameters:
    ///   - name: The destination property.
    ///   - valueExpression: Its value's expression, or nil.
    public init(name: String, valueExpression: CoreExpression?) {
        self.name = name
        self.valueExpression = valueExpression
        self.userInfo = [:]
    }

    /// The source key path of an expression `$source.<path>`, or nil when the
    /// expression is anything else.
    var sourceKeyPath: String? {
        guard let valueExpression else { return nil }
        return PropertyMapping.sourceKeyPath(of: valueExpression)
    }

    static func sourceKeyPath(of expression: CoreExpression) -> String? {
        switch expression {
        case .member(.variable("source"), let keyPath): return keyPath
        case .keyPath(let path) where path.hasPrefix("$source."): return String(path.dropFirst("$source.".count))
        default: return nil
        }
    }

    /// The entity mapping and source key path of a relationship expression
    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>", $source.<path>)`.
    var destinationInstancesCall: (mappingName: String, sourceKeyPath: String)? {
        guard case .customFunction(.variable("manager"), let selector, let arguments)? = valueExpression,
              selector == "destinationInstancesForEntityMappingNamed:sourceInstances:", arguments.count == 2,
              case .constant(.string(let mappingName)) = arguments[0],
              let path = PropertyMapping.sourceKeyPath(of: arguments[1]) else { return nil }
        return (mappingName, path)
    }

    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", mappingName, $source.keyPath)`.
    static func destinationInstances(mappingName: String, sourceKeyPath: String) -> CoreExpression {
        .customFunction(receiver: .variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                        arguments: [.constant(.string(mappingName)), .member(.variable("source"), keyPath: sourceKeyPath)])
    }
}
