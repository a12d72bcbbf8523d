import Foundation

extension ManagedObjectModel {
    /// Checks that the model is consistent, and throws an error listing every
    /// problem found: unknown destinations, parents or configuration members,
    /// inverses that do not point back, duplicate or shadowed property names,
    /// inheritance cycles, invalid counts, constraints and indexes naming unknown
    /// properties.
    ///
    /// ```swift
    /// do {
    ///     try model.validate()
    /// } catch let error as CoreDataError {
    ///     print(error)   // names each entity, property and problem
    /// }
    /// ```
    ///
    /// A persistent store coordinator validates its model before using it.
    ///
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060): the one problem, or an error gathering every problem in its
    ///   ``CoreDataError/underlyingErrors``.
    public func validate() throws {
        let problems = validationProblems()
        guard !problems.isEmpty else { return }
        if problems.count == 1 { throw problems[0] }
        throw CoreDataError(.coreData, "The model is invalid (\(problems.count) problems)", underlyingErrors: problems)
    }

    /// Every consistency problem of the model, one error each (empty when valid).
    ///
    /// - Returns: One ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) per problem, naming its entity and property.
    public func validationProblems() -> [CoreDataError] {
        var problems: [CoreDataError] = []
        func problem(_ entity: String?, _ key: String?, _ message: String) {
            problems.append(CoreDataError(.coreData, message, entityName: entity, key: key))
        }

        var byName: [String: EntityDescription] = [:]
        for entity in entities {
            if entity.name.isEmpty { problem(nil, nil, "An entity has an empty name"); continue }
            if byName[entity.name] != nil {
                problem(entity.name, nil, "Two entities are named '\(entity.name)'")
            }
            byName[entity.name] = entity
        }

        for entity in entities {
            // Inheritance: cycles, and superentities that are not in the model.
            var seen: Set<ObjectIdentifier> = [ObjectIdentifier(entity)]
            var parent = entity.superentity
            var cyclic = false
            while let p = parent {
                if !seen.insert(ObjectIdentifier(p)).inserted {
                    problem(entity.name, nil, "Entity '\(entity.name)' inherits from itself")
                    cyclic = true
                    break
                }
                if byName[p.name] !== p {
                    problem(entity.name, nil, "Entity '\(entity.name)' has parent entity '\(p.name)', which is not in the model")
                }
                parent = p.superentity
            }
            if cyclic { continue }
            for sub in entity.subentities where byName[sub.name] !== sub {
                problem(entity.name, nil, "Entity '\(entity.name)' has subentity '\(sub.name)', which is not in the model")
            }

            // Property names: non-empty, unique, not shadowing inherited ones.
            var own: Set<String> = []
            let inherited = Set(entity.superentity?.allProperties.map(\.name) ?? [])
            for property in entity.properties {
                if property.name.isEmpty {
                    problem(entity.name, nil, "Entity '\(entity.name)' has a property with an empty name")
                    continue
                }
                if !own.insert(property.name).inserted {
                    problem(entity.name, property.name, "Entity '\(entity.name)' has two properties named '\(property.name)'")
                }
                if inherited.contains(property.name) {
                    problem(entity.name, property.name, "Property '\(entity.name).\(property.name)' shadows a property of its superentity with the same name")
                }
                if let attribute = property as? AttributeDescription {
                    validateAttribute(attribute, in: entity, problem: problem)
                }
                if let relationship = property as? RelationshipDescription {
                    validateRelationship(relationship, in: entity, byName: byName, problem: problem)
                }
                if let fetched = property as? FetchedPropertyDescription,
                   let request = fetched.fetchRequest, byName[request.entityName] == nil {
                    problem(entity.name, property.name, "Fetched property '\(entity.name).\(property.name)' fetches unknown entity '\(request.entityName)'")
                }
            }

            let names = entity.propertiesByName
            for constraint in entity.uniquenessConstraints {
                if constraint.isEmpty {
                    problem(entity.name, nil, "Entity '\(entity.name)' has an empty uniqueness constraint")
                }
                for path in constraint {
                    let first = String(path.split(separator: ".", maxSplits: 1).first ?? "")
                    guard let property = names[first] else {
                        problem(entity.name, path, "Uniqueness constraint of '\(entity.name)' names unknown property '\(path)'")
                        continue
                    }
                    if let relationship = property as? RelationshipDescription, relationship.isToMany {
                        problem(entity.name, path, "Uniqueness constraint of '\(entity.name)' names to-many relationship '\(path)'")
                    }
                    if property.isTransient {
                        problem(entity.name, path, "Uniqueness constraint of '\(entity.name)' names transient property '\(path)'")
                    }
                }
            }
            for index in entity.indexes {
                for element in index.elements {
                    if let name = element.propertyName, names[name] == nil {
                        problem(entity.name, name, "Fetch index '\(index.name)' of '\(entity.name)' names unknown property '\(name)'")
                    }
                }
            }
            for compound in entity.compoundIndexes {
                for name in compound where names[name] == nil {
                    problem(entity.name, name, "Compound index of '\(entity.name)' names unknown property '\(name)'")
                }
            }
        }

        for configuration in configurations {
            for entity in entities(forConfigurationName: configuration) ?? [] where byName[entity.name] == nil {
                problem(entity.name, nil, "Configuration '\(configuration)' names unknown entity '\(entity.name)'")
            }
        }
        for (name, template) in fetchRequestTemplatesByName.sorted(by: { $0.key < $1.key }) where byName[template.entityName] == nil {
            problem(template.entityName, nil, "Fetch request template '\(name)' fetches unknown entity '\(template.entityName)'")
        }
        return problems
    }

    private func validateAttribute(_ attribute: AttributeDescription, in entity: EntityDescription,
                                   problem: (String?, String?, String) -> Void) {
        let label = "\(entity.name).\(attribute.name)"
        if attribute.attributeType == .objectID {
            problem(entity.name, attribute.name, "Attribute '\(label)' has type Object ID, which only expression descriptions may have")
        }
        if attribute.attributeType == .undefined && !attribute.isTransient {
            problem(entity.name, attribute.name, "Attribute '\(label)' has type Undefined but is not transient")
        }
        // A composite attribute with no elements is accepted, as Core Data accepts
        // it (SwiftData records a Swift enum property so): it has no column.
    }

    private func validateRelationship(_ relationship: RelationshipDescription, in entity: EntityDescription,
                                      byName: [String: EntityDescription], problem: (String?, String?, String) -> Void) {
        let label = "\(entity.name).\(relationship.name)"
        guard let destinationName = relationship.destinationEntityName, !destinationName.isEmpty else {
            problem(entity.name, relationship.name, "Relationship '\(label)' has no destination entity")
            return
        }
        guard let destination = byName[destinationName] else {
            problem(entity.name, relationship.name, "Relationship '\(label)' has unknown destination entity '\(destinationName)'")
            return
        }
        if relationship.minCount < 0 || relationship.maxCount < 0 {
            problem(entity.name, relationship.name, "Relationship '\(label)' has a negative count")
        }
        if relationship.maxCount > 0 && relationship.minCount > relationship.maxCount {
            problem(entity.name, relationship.name, "Relationship '\(label)' has minimum count \(relationship.minCount) above its maximum \(relationship.maxCount)")
        }
        // An ordered to-one is accepted, as Core Data accepts it (Apple's own models
        // have them): the flag means nothing for one destination.
        guard let inverseName = relationship.inverseRelationshipName, !inverseName.isEmpty else { return }
        guard let inverse = destination.relationshipsByName[inverseName] else {
            problem(entity.name, relationship.name, "Relationship '\(label)' has inverse '\(inverseName)', which is not a relationship of '\(destinationName)'")
            return
        }
        // The inverse must point back at this entity (or one of its ancestors/descendants).
        if let back = inverse.destinationEntityName, let backEntity = byName[back],
           !(entity.isKindOf(entity: backEntity) || backEntity.isKindOf(entity: entity)) {
            problem(entity.name, relationship.name, "Relationship '\(label)' has inverse '\(destinationName).\(inverseName)', whose destination is '\(back)', not '\(entity.name)'")
        }
        if let backInverse = inverse.inverseRelationshipName, !backInverse.isEmpty, backInverse != relationship.name {
            problem(entity.name, relationship.name, "Inverse mismatch: '\(label)' names '\(destinationName).\(inverseName)' as its inverse, but that relationship's inverse is '\(backInverse)'")
        }
    }
}
