import Foundation
import OpenCoreDataPredicates

extension MappingModel {
    /// The mapping Core Data infers between two versions of a model (lightweight
    /// migration): `NSMappingModel.inferredMappingModel(forSourceModel:destinationModel:)`.
    ///
    /// Each destination entity is matched to the source entity named by its
    /// ``EntityDescription/renamingIdentifier``, else by its own name; each
    /// property the same way within its entity (inherited properties included, so
    /// properties may move up or down a hierarchy). The result has one mapping per
    /// entity, named as Core Data names them:
    ///
    /// - `IEM_Copy_<E>`: same entity, same version hash;
    /// - `IEM_Transform_<E>`: a matched entity that changed (attributes added,
    ///   removed, renamed, made optional or mandatory, numeric types changed,
    ///   relationships added, removed, renamed, or their cardinality or ordering
    ///   changed, the entity renamed or moved in its hierarchy);
    /// - `IEM_Add_<E>`: an entity with no source; `IEM_Remove_<E>`: a source entity
    ///   with no destination.
    ///
    /// An attribute's value expression is `$source.<old name>`; a relationship's is
    /// `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>", $source.<old name>)`.
    /// A property with no source (or whose source changed between attribute and
    /// relationship) gets no expression: its default value.
    ///
    /// ```swift
    /// let mapping = try MappingModel.inferredMappingModel(forSourceModel: v1, destinationModel: v2)
    /// ```
    ///
    /// A renaming identifier names the element in the *source* model: keep the
    /// first name across later renames (Core Data's canonical-name rule), or a
    /// direct inference across several renames sees a removal and an addition.
    ///
    /// - Parameters:
    ///   - source: The model the store was written with.
    ///   - destination: The model to migrate to.
    /// - Returns: The inferred mapping model.
    /// Both models are frozen (made immutable), as a coordinator does when it
    /// starts using a model.
    ///
    /// - Throws: ``CoreDataError/Code/coreData`` (134060) for an invalid model;
    ///   ``CoreDataError/Code/inferredMappingModel`` (134190) naming the
    ///   first change Core Data cannot infer: an attribute whose type changed
    ///   other than between numeric types, or two source hierarchies whose
    ///   entities end in one destination hierarchy.
    public static func inferredMappingModel(forSourceModel source: ManagedObjectModel,
                                            destinationModel destination: ManagedObjectModel) throws -> MappingModel {
        // As when a coordinator uses them: validated, references resolved, immutable.
        try source.freeze()
        try destination.freeze()
        let sourceEntities = source.entitiesByName
        let ordered = { (entities: [EntityDescription]) in
            entities.sorted { ManagedObjectModel.compareNames($0.name, $1.name) }
        }
        // Destination entity -> source entity.
        var sourceOf: [String: EntityDescription] = [:]
        var claimed: Set<String> = []
        for entity in ordered(destination.entities) {
            for candidate in [entity.renamingIdentifier, entity.name].compactMap({ $0 }) where !claimed.contains(candidate) {
                guard let match = sourceEntities[candidate] else { continue }
                sourceOf[entity.name] = match
                claimed.insert(candidate)
                break
            }
        }
        // One source table per destination table: Core Data cannot merge hierarchies.
        var sourceRoots: [String: String] = [:]   // destination root -> source root
        for entity in ordered(destination.entities) {
            guard let match = sourceOf[entity.name] else { continue }
            let root = entity.rootEntity.name
            if let other = sourceRoots[root], other != match.rootEntity.name {
                throw CoreDataError(.inferredMappingModel,
                                    "Cannot infer a mapping: entity '\(entity.name)' of the hierarchy of '\(root)' comes from the hierarchy of '\(match.rootEntity.name)', another of its entities from that of '\(other)' (merging two hierarchies needs a mapping model)",
                                    entityName: entity.name)
            }
            sourceRoots[root] = match.rootEntity.name
        }
        func mappingName(_ entity: EntityDescription) -> String {
            guard let match = sourceOf[entity.name] else { return "IEM_Add_\(entity.name)" }
            return match.name == entity.name && match.versionHash == entity.versionHash
                ? "IEM_Copy_\(entity.name)" : "IEM_Transform_\(entity.name)"
        }
        var mappings: [EntityMapping] = []
        for entity in ordered(destination.entities) {
            let name = mappingName(entity)
            guard let match = sourceOf[entity.name] else {
                var mapping = EntityMapping(name: name, mappingType: .add, sourceEntityName: nil, destinationEntityName: entity.name)
                mapping.destinationEntityVersionHash = entity.versionHash
                mappings.append(mapping)
                continue
            }
            var mapping = EntityMapping(name: name, mappingType: name.hasPrefix("IEM_Copy_") ? .copy : .transform,
                                        sourceEntityName: match.name, destinationEntityName: entity.name)
            mapping.sourceEntityVersionHash = match.versionHash
            mapping.destinationEntityVersionHash = entity.versionHash
            let sourceProperties = match.propertiesByName
            func sourceProperty(_ property: PropertyDescription) -> PropertyDescription? {
                for candidate in [property.renamingIdentifier, property.name].compactMap({ $0 }) {
                    if let found = sourceProperties[candidate], !found.isTransient { return found }
                }
                return nil
            }
            for property in entity.allProperties where !property.isTransient {
                switch property {
                case let attribute as AttributeDescription:
                    guard !(attribute is DerivedAttributeDescription) else {
                        mapping.attributeMappings.append(PropertyMapping(name: attribute.name, valueExpression: nil))
                        continue
                    }
                    guard let old = sourceProperty(attribute) as? AttributeDescription else {
                        mapping.attributeMappings.append(PropertyMapping(name: attribute.name, valueExpression: nil))
                        continue
                    }
                    guard Self.canInferTypeChange(from: old.attributeType, to: attribute.attributeType) else {
                        throw CoreDataError(.inferredMappingModel,
                                            "Cannot infer a mapping for attribute '\(attribute.name)' of entity '\(entity.name)': its type changed from \(old.attributeType) to \(attribute.attributeType)",
                                            entityName: entity.name, key: attribute.name)
                    }
                    mapping.attributeMappings.append(PropertyMapping(name: attribute.name,
                                                                     valueExpression: .member(.variable("source"), keyPath: old.name)))
                case let relationship as RelationshipDescription:
                    guard let old = sourceProperty(relationship) as? RelationshipDescription,
                          let target = relationship.destinationEntity, sourceOf[target.name] != nil,
                          let oldTarget = old.destinationEntity,
                          sourceOf[target.name].map({ $0.isKindOf(entity: oldTarget) || oldTarget.isKindOf(entity: $0) }) == true
                    else {
                        mapping.relationshipMappings.append(PropertyMapping(name: relationship.name, valueExpression: nil))
                        continue
                    }
                    mapping.relationshipMappings.append(PropertyMapping(
                        name: relationship.name,
                        valueExpression: PropertyMapping.destinationInstances(mappingName: mappingName(target), sourceKeyPath: old.name)))
                default:
                    continue
                }
            }
            mappings.append(mapping)
        }
        let kept = Set(sourceOf.values.map(\.name))
        for entity in ordered(source.entities) where !kept.contains(entity.name) {
            var mapping = EntityMapping(name: "IEM_Remove_\(entity.name)", mappingType: .remove,
                                        sourceEntityName: entity.name, destinationEntityName: nil)
            mapping.sourceEntityVersionHash = entity.versionHash
            mappings.append(mapping)
        }
        return MappingModel(entityMappings: mappings)
    }

    /// Whether inference carries a value from an attribute of type `old` to one
    /// of type `new`: the same type, or numbers to numbers.
    static func canInferTypeChange(from old: AttributeType, to new: AttributeType) -> Bool {
        if old == new { return true }
        let numeric: Set<AttributeType> = [.integer16, .integer32, .integer64, .decimal, .double, .float, .boolean]
        return numeric.contains(old) && numeric.contains(new)
    }
}
