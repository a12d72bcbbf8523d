import Foundation
import OpenCoreDataPredicates

/// What happens to the objects of one entity mapping during a migration through
/// objects: Core Data's `NSEntityMigrationPolicy`.
///
/// A ``MigrationManager`` runs each entity mapping through three stages, calling
/// its policy's hooks in this order:
///
/// 1. ``begin(_:with:)``, ``createDestinationInstances(forSource:in:manager:)``
///    for each source object, ``endInstanceCreation(forMapping:manager:)``;
/// 2. ``createRelationships(forDestination:in:manager:)`` for each destination
///    object, ``endRelationshipCreation(forMapping:manager:)``;
/// 3. ``performCustomValidation(forMapping:manager:)``, ``end(_:manager:)``.
///
/// The default implementation makes one destination object per source object,
/// sets its attributes from the mapping's value expressions, associates the two,
/// and later sets its relationships. A subclass overrides the hooks it needs; one
/// that makes its own destination objects must associate them itself
/// (``MigrationManager/associate(sourceInstance:withDestinationInstance:for:)``).
///
/// Mapping models name their policy by class name (`Migrations.Country5ToCountry6Policy`).
/// Swift on Linux cannot look a class up by name, so policies are registered:
///
/// ```swift
/// final class CountryPolicy: EntityMigrationPolicy {
///     override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping,
///                                              manager: MigrationManager) throws {
///         try super.createDestinationInstances(forSource: source, in: mapping, manager: manager)
///         // ... set what the expressions cannot
///     }
/// }
/// EntityMigrationPolicy.register(CountryPolicy.self, forClassName: "Migrations.Country5ToCountry6Policy")
/// ```
///
/// A registered name also matches a mapping model's name with any module prefix
/// (`Country5ToCountry6Policy` matches `Migrations.Country5ToCountry6Policy`).
/// Hooks run on the calling thread, inside both contexts' `performAndWait`.
open class EntityMigrationPolicy {
    /// A policy (the manager makes one per entity mapping).
    public required init() {}

    /// Called before the mapping's first object.
    ///
    /// - Parameters:
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func begin(_ mapping: EntityMapping, with manager: MigrationManager) throws {}

    /// Makes the destination objects of one source object: by default one object
    /// of the mapping's destination entity, its attributes set from the mapping's
    /// value expressions (`$source` is the source object, `$manager` the manager),
    /// associated with the source.
    ///
    /// - Parameters:
    ///   - source: An object of the source store.
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
        guard let name = mapping.destinationEntityName, let entity = manager.destinationModel.entitiesByName[name] else { return }
        let destination = ManagedObject(entity: entity, insertInto: manager.destinationContext)
        for property in mapping.attributeMappings {
            guard let expression = property.valueExpression else { continue }
            let value = try manager.evaluate(expression, source: source, destination: destination, mapping: mapping, property: property)
            try manager.set(value, forKey: property.name, of: destination, mapping: mapping)
        }
        manager.associate(sourceInstance: source, withDestinationInstance: destination, for: mapping)
    }

    /// Called after the mapping's last source object.
    ///
    /// - Parameters:
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func endInstanceCreation(forMapping mapping: EntityMapping, manager: MigrationManager) throws {}

    /// Sets the relationships of one destination object from the mapping's
    /// relationship expressions, with `$source` its source object.
    ///
    /// - Parameters:
    ///   - destination: An object this mapping created.
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func createRelationships(forDestination destination: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
        guard let source = manager.sourceInstances(forEntityMappingName: mapping.name, destinationInstances: [destination]).first else { return }
        for property in mapping.relationshipMappings {
            guard let expression = property.valueExpression else { continue }
            let value = try manager.evaluate(expression, source: source, destination: destination, mapping: mapping, property: property)
            try manager.set(value, forKey: property.name, of: destination, mapping: mapping)
        }
    }

    /// Called after the mapping's last destination object got its relationships.
    ///
    /// - Parameters:
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func endRelationshipCreation(forMapping mapping: EntityMapping, manager: MigrationManager) throws {}

    /// Checks what validation of single objects cannot; throw to fail the migration.
    ///
    /// - Parameters:
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func performCustomValidation(forMapping mapping: EntityMapping, manager: MigrationManager) throws {}

    /// Called last.
    ///
    /// - Parameters:
    ///   - mapping: The entity mapping.
    ///   - manager: The migration manager.
    open func end(_ mapping: EntityMapping, manager: MigrationManager) throws {}

    // MARK: Registry

    private static let registry = Lock<[String: EntityMigrationPolicy.Type]>([:])

    /// Registers a policy class under the name mapping models give it.
    ///
    /// - Parameters:
    ///   - type: The policy class.
    ///   - className: The name in mapping models, with or without a module prefix.
    public static func register(_ type: EntityMigrationPolicy.Type, forClassName className: String) {
        registry.withLock { $0[className] = type }
    }

    /// The policy class registered for `className` (exactly, or without its module prefix).
    ///
    /// - Parameter className: A mapping model's policy class name.
    /// - Returns: The class, or nil when none is registered.
    public static func registeredPolicy(forClassName className: String) -> EntityMigrationPolicy.Type? {
        registry.withLock { registry in
            if let exact = registry[className] { return exact }
            let bare = className.split(separator: ".").last.map(String.init) ?? className
            return registry[bare] ?? registry.first { $0.key.split(separator: ".").last.map(String.init) == bare }?.value
        }
    }
}
