import Foundation
import OpenCoreDataPredicates

/// Reads the `contents` XML that Xcode's model editor writes inside a
/// `.xcdatamodel` folder into a ``ManagedObjectModel``.
///
/// Every element and attribute Xcode writes is read (entities, attributes of every
/// type with their options, relationships, fetched properties, fetch indexes,
/// legacy compound indexes, uniqueness constraints, user info, configurations,
/// fetch request templates, composites); layout elements are ignored. Anything
/// malformed is an error naming the file, the line, the element and the problem.
struct XcodeModelReader {
    let url: URL

    func read(_ data: Data) throws -> ManagedObjectModel {
        let root = try XMLElementNode.parse(data, url: url)
        guard root.name == "model" else {
            throw fail(root, "the root element is <\(root.name)>, expected <model>")
        }
        let model = ManagedObjectModel()
        if let identifier = root["userDefinedModelVersionIdentifier"] {
            model.versionIdentifiers = [identifier]
        }

        var composites: [String: CompositeAttributeDescription] = [:]
        for node in root.children(named: "composite") {
            let name = try required(node, "name")
            let elements = try node.children(named: "attribute").map { try readAttribute($0, owner: "composite '\(name)'", ownerName: name, composites: composites) }
            let composite = CompositeAttributeDescription(name: name, elements: elements)
            composite.compositeName = name
            composites[name] = composite
        }
        model.composites = composites

        var entities: [EntityDescription] = []
        var parents: [(EntityDescription, String, XMLElementNode)] = []
        var seen: Set<String> = []
        for node in root.children(named: "entity") {
            let entity = try readEntity(node, composites: composites)
            guard seen.insert(entity.name).inserted else {
                throw fail(node, "<entity name=\"\(entity.name)\">: a second entity with the same name")
            }
            entities.append(entity)
            if let parent = node["parentEntity"], !parent.isEmpty { parents.append((entity, parent, node)) }
        }
        let byName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var parentOf: [String: String] = [:]
        for (entity, parentName, node) in parents {
            guard byName[parentName] != nil else {
                throw fail(node, "<entity name=\"\(entity.name)\">: unknown parentEntity '\(parentName)'")
            }
            parentOf[entity.name] = parentName
        }
        for (entity, _, node) in parents {
            var visited: Set<String> = [entity.name]
            var current = parentOf[entity.name]
            while let name = current {
                guard visited.insert(name).inserted else {
                    throw fail(node, "<entity name=\"\(entity.name)\">: parentEntity chain loops back to '\(name)'")
                }
                current = parentOf[name]
            }
        }
        for entity in entities {
            let children = entities.filter { parentOf[$0.name] == entity.name }
            if !children.isEmpty { entity.subentities = children }
        }
        model.entities = entities

        for node in root.children(named: "fetchRequest") {
            let name = try required(node, "name")
            model.setFetchRequestTemplate(try readFetchRequest(node), forName: name)
        }
        for node in root.children(named: "configuration") {
            let name = try required(node, "name")
            var members: [EntityDescription] = []
            for member in node.children(named: "memberEntity") {
                let memberName = try required(member, "name")
                guard let entity = byName[memberName] else {
                    throw fail(member, "<configuration name=\"\(name)\">: unknown memberEntity '\(memberName)'")
                }
                members.append(entity)
            }
            model.setEntities(members, forConfigurationName: name)
            if try bool(node, "usedWithCloudKit") { model.setUsedWithCloudKit(true, forConfigurationName: name) }
        }

        let problems = model.validationProblems()
        if !problems.isEmpty {
            let list = problems.map(\.message).joined(separator: "; ")
            throw CoreDataError(.coreData, "\(url.path): the model is invalid: \(list)", url: url, underlyingErrors: problems)
        }
        return model
    }

    // MARK: Elements

    private func readEntity(_ node: XMLElementNode, composites: [String: CompositeAttributeDescription]) throws -> EntityDescription {
        let name = try required(node, "name")
        let entity = EntityDescription(name: name, managedObjectClassName: node["representedClassName"] ?? "NSManagedObject")
        entity.isAbstract = try bool(node, "isAbstract")
        entity.renamingIdentifier = nonEmpty(node["elementID"])
        entity.versionHashModifier = nonEmpty(node["versionHashModifier"])
        let owner = "entity '\(name)'"
        var properties: [PropertyDescription] = []
        for child in node.children {
            switch child.name {
            case "attribute":
                properties.append(try readAttribute(child, owner: owner, ownerName: name, composites: composites))
            case "relationship":
                properties.append(try readRelationship(child, owner: owner))
            case "fetchedProperty":
                properties.append(try readFetchedProperty(child, owner: owner))
            case "userInfo":
                entity.userInfo = try readUserInfo(child)
            case "uniquenessConstraints":
                entity.uniquenessConstraints = try child.children(named: "uniquenessConstraint").map { constraint in
                    try constraint.children(named: "constraint").map { try required($0, "value") }
                }
            case "compoundIndexes":
                entity.compoundIndexes = try child.children(named: "compoundIndex").map { compound in
                    try compound.children(named: "index").map { try required($0, "value") }
                }
            case "fetchIndex":
                entity.indexes.append(try readFetchIndex(child, owner: owner))
            default:
                continue
            }
        }
        // Xcode's model compiler marks an attribute indexed when a fetch index holds
        // it alone (seen in the Bookmarks stores' model caches, versions 2-5).
        for index in entity.indexes where index.elements.count == 1 {
            guard let name = index.elements[0].propertyName else { continue }
            for case let attribute as AttributeDescription in properties where attribute.name == name {
                attribute.isIndexed = true
            }
        }
        entity.properties = properties
        return entity
    }

    private func readAttribute(_ node: XMLElementNode, owner: String, ownerName: String,
                               composites: [String: CompositeAttributeDescription]) throws -> AttributeDescription {
        let name = try required(node, "name")
        let label = "\(owner), <attribute name=\"\(name)\">"
        let transient = try bool(node, "transient")
        let type: AttributeType
        if let typeName = node["attributeType"] {
            guard let parsed = AttributeType(xcodeName: typeName) else {
                throw fail(node, "\(label): unknown attributeType '\(typeName)'")
            }
            type = parsed
        } else if transient {
            type = .undefined
        } else {
            throw fail(node, "\(label): missing attributeType")
        }

        let attribute: AttributeDescription
        if try bool(node, "derived") {
            guard let expression = nonEmpty(node["derivationExpression"]) else {
                throw fail(node, "\(label): derived attribute without derivationExpression")
            }
            attribute = DerivedAttributeDescription(name: name, type: type, derivationExpression: expression)
        } else if type == .composite {
            guard let compositeName = node["composite"] else {
                throw fail(node, "\(label): Composite attribute without a composite name")
            }
            guard let template = composites[compositeName] else {
                throw fail(node, "\(label): unknown composite '\(compositeName)'")
            }
            let composite = CompositeAttributeDescription(
                name: name, elements: template.elements.compactMap { $0.copy() as? AttributeDescription })
            composite.compositeName = compositeName
            attribute = composite
        } else {
            attribute = AttributeDescription(name: name, type: type)
        }
        try readCommon(node, into: attribute)
        attribute.isTransient = transient
        attribute.attributeValueClassName = nonEmpty(node["customClassName"])
        attribute.valueTransformerName = nonEmpty(node["valueTransformerName"])
        attribute.allowsExternalBinaryDataStorage = try bool(node, "allowsExternalBinaryDataStorage")
        attribute.preservesValueInHistoryOnDeletion = try bool(node, "preserveAfterDeletion")
        attribute.allowsCloudEncryption = try bool(node, "allowsCloudEncryption")
        attribute.isIndexed = try bool(node, "indexed")

        if type == .date {
            if let interval = node["defaultDateTimeInterval"] {
                // Never refuse a model for its default value: unreadable is no default.
                if let seconds = Double(interval.trimmingCharacters(in: .whitespaces)), seconds.isFinite {
                    attribute.defaultValue = .date(Date(timeIntervalSinceReferenceDate: seconds))
                } else {
                    ModelLoadingLog.warning("Default date '\(interval)' of '\(ownerName).\(name)' is not a number of seconds; the attribute has no default",
                                            entity: ownerName, property: name)
                }
            }
            if let interval = node["minDateTimeInterval"] {
                attribute.minValue = try dateValue(interval, node, label, "minDateTimeInterval")
            }
            if let interval = node["maxDateTimeInterval"] {
                attribute.maxValue = try dateValue(interval, node, label, "maxDateTimeInterval")
            }
        } else if let text = node["defaultValueString"], ![.binaryData, .transformable, .composite, .undefined, .objectID].contains(type) {
            // Types without a textual default ignore the XML attribute, as momc does.
            // A string that is not of the type never refuses the model (Xcode
            // compiles it): a lenient reading or no default, with a warning.
            attribute.defaultValue = ModelLoadingLog.defaultValue(text, type: type, entity: ownerName, attribute: name)
        }
        if type != .date {
            let lengthBounded = type == .string || type == .binaryData
            for (key, isMin) in [("minValueString", true), ("maxValueString", false)] {
                guard let text = node[key], !text.isEmpty else { continue }
                let value: AttributeValue?
                if lengthBounded {
                    value = Int64(text.trimmingCharacters(in: .whitespaces)).map { .int($0) }
                } else if type.isNumeric {
                    value = AttributeValueCoercion.parseDefault(text, type: type == .boolean ? .integer64 : type)
                } else {
                    value = nil
                }
                guard let value else {
                    throw fail(node, "\(label): \(key) '\(text)' is not a valid bound for a \(type.xcodeName)")
                }
                if isMin { attribute.minValue = value } else { attribute.maxValue = value }
            }
        }
        if let pattern = nonEmpty(node["regularExpressionString"]) {
            attribute.regularExpression = pattern
        }
        return attribute
    }

    private func readRelationship(_ node: XMLElementNode, owner: String) throws -> RelationshipDescription {
        let name = try required(node, "name")
        let label = "\(owner), <relationship name=\"\(name)\">"
        let destination = nonEmpty(node["destinationEntity"])
        let toMany = try bool(node, "toMany")
        let relationship = RelationshipDescription(name: name, destination: destination, inverse: nonEmpty(node["inverseName"]),
                                                   toMany: toMany, ordered: try bool(node, "ordered"))
        try readCommon(node, into: relationship)
        // Counts as Core Data reads them: NSUInteger, so -1 (or any negative) is
        // "unbounded" for a maximum and "none" for a minimum.
        if let text = node["maxCount"] {
            guard let count = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw fail(node, "\(label): maxCount '\(text)' is not a count")
            }
            relationship.maxCount = toMany ? RelationshipDescription.storedCount(count) : 1
        }
        if let text = node["minCount"] {
            guard let count = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw fail(node, "\(label): minCount '\(text)' is not a count")
            }
            relationship.minCount = RelationshipDescription.storedCount(count)
        }
        if let rule = node["deletionRule"] {
            guard let parsed = DeleteRule(xcodeName: rule) else {
                throw fail(node, "\(label): unknown deletionRule '\(rule)'")
            }
            relationship.deleteRule = parsed
        }
        return relationship
    }

    private func readFetchedProperty(_ node: XMLElementNode, owner: String) throws -> FetchedPropertyDescription {
        let name = try required(node, "name")
        let request = try node.child(named: "fetchRequest").map { try readFetchRequest($0) }
        let property = FetchedPropertyDescription(name: name, fetchRequest: request)
        try readCommon(node, into: property)
        return property
    }

    private func readFetchRequest(_ node: XMLElementNode) throws -> FetchRequestTemplate {
        var template = FetchRequestTemplate(entityName: try required(node, "entity"),
                                            predicateFormat: nonEmpty(node["predicateString"]))
        template.fetchLimit = try int(node, "fetchLimit") ?? 0
        template.fetchOffset = try int(node, "fetchOffset") ?? 0
        template.fetchBatchSize = try int(node, "fetchBatchSize") ?? 0
        template.resultType = try int(node, "resultType") ?? 0
        if node["includeSubentities"] != nil { template.includesSubentities = try bool(node, "includeSubentities") }
        if node["includePropertyValues"] != nil { template.includesPropertyValues = try bool(node, "includePropertyValues") }
        template.returnsDistinctResults = try bool(node, "returnDistinctResults")
        if node["returnObjectsAsFaults"] != nil { template.returnsObjectsAsFaults = try bool(node, "returnObjectsAsFaults") }
        if node["includesPendingChanges"] != nil { template.includesPendingChanges = try bool(node, "includesPendingChanges") }
        return template
    }

    private func readFetchIndex(_ node: XMLElementNode, owner: String) throws -> FetchIndexDescription {
        let name = try required(node, "name")
        let label = "\(owner), <fetchIndex name=\"\(name)\">"
        var elements: [FetchIndexElementDescription] = []
        for element in node.children(named: "fetchIndexElement") {
            let typeName = element["type"] ?? "Binary"
            guard let type = FetchIndexElementDescription.CollationType(rawValue: typeName) else {
                throw fail(element, "\(label): unknown index element type '\(typeName)'")
            }
            let order = element["order"] ?? "ascending"
            guard order == "ascending" || order == "descending" else {
                throw fail(element, "\(label): unknown order '\(order)'")
            }
            if let property = element["property"] {
                elements.append(FetchIndexElementDescription(property: property, collationType: type, ascending: order == "ascending"))
            } else if let expression = element["expression"] {
                elements.append(FetchIndexElementDescription(expression: expression, expressionType: element["expressionType"],
                                                             collationType: type, ascending: order == "ascending"))
            } else {
                throw fail(element, "\(label): a fetchIndexElement needs a property or an expression")
            }
        }
        return FetchIndexDescription(name: name, elements: elements, partialIndexPredicate: nonEmpty(node["partialIndexExpression"]))
    }

    private func readCommon(_ node: XMLElementNode, into property: PropertyDescription) throws {
        property.isOptional = try bool(node, "optional")
        property.isTransient = try bool(node, "transient")
        property.renamingIdentifier = nonEmpty(node["elementID"])
        property.versionHashModifier = nonEmpty(node["versionHashModifier"])
        property.isIndexedBySpotlight = try bool(node, "spotlightIndexingEnabled")
        property.isStoredInExternalRecord = try bool(node, "storedInTruthFile")
        if let info = node.child(named: "userInfo") { property.userInfo = try readUserInfo(info) }
    }

    private func readUserInfo(_ node: XMLElementNode) throws -> [String: String] {
        var info: [String: String] = [:]
        for entry in node.children(named: "entry") {
            info[try required(entry, "key")] = entry["value"] ?? ""
        }
        return info
    }

    // MARK: Values

    private func required(_ node: XMLElementNode, _ attribute: String) throws -> String {
        guard let value = node[attribute], !value.isEmpty else {
            throw fail(node, "<\(node.name)> is missing its '\(attribute)' attribute")
        }
        return value
    }

    private func bool(_ node: XMLElementNode, _ attribute: String) throws -> Bool {
        guard let text = node[attribute] else { return false }
        switch text {
        case "YES", "yes", "true", "1": return true
        case "NO", "no", "false", "0", "": return false
        default:
            throw fail(node, "<\(node.name) name=\"\(node["name"] ?? "")\">: '\(attribute)' is '\(text)', expected YES or NO")
        }
    }

    private func int(_ node: XMLElementNode, _ attribute: String) throws -> Int? {
        guard let text = node[attribute] else { return nil }
        guard let value = Int(text) else {
            throw fail(node, "<\(node.name) name=\"\(node["name"] ?? "")\">: '\(attribute)' is '\(text)', expected an integer")
        }
        return value
    }

    private func dateValue(_ text: String, _ node: XMLElementNode, _ label: String, _ key: String) throws -> AttributeValue {
        guard let interval = Double(text), interval.isFinite else {
            throw fail(node, "\(label): \(key) '\(text)' is not a number of seconds")
        }
        return .date(Date(timeIntervalSinceReferenceDate: interval))
    }

    private func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }

    private func fail(_ node: XMLElementNode, _ message: String) -> CoreDataError {
        CoreDataError(.fileReadCorruptFile, "\(url.path): line \(node.line): \(message)", url: url)
    }
}
