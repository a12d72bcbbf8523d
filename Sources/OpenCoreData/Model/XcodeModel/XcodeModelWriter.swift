import Foundation
import OpenCoreDataPredicates

/// Writes a managed object model as an Xcode model (`.xcdatamodel` folder with its
/// `contents` XML), the file Xcode's model editor reads and writes.
///
/// Everything that enters an entity's version hash is written (names, inheritance,
/// abstractness, attribute types, optionality, transience, relationship
/// destinations, counts and order, version hash modifiers), so the model read back
/// with ``XcodeDataModel`` has the same version hashes and opens the same stores.
/// What users ask first of a store whose model is lost is this file: `ocd model
/// extract STORE -o Name.xcdatamodel` writes the model cached in the store (or
/// reconstructed from its schema) with it.
///
/// ```swift
/// let model = try SQLiteStore.storedModel(at: storeURL)
/// try XcodeModelWriter().write(model, to: URL(fileURLWithPath: "Recovered.xcdatamodel"))
/// let again = try XcodeDataModel(contentsOf: URL(fileURLWithPath: "Recovered.xcdatamodel")).currentModel()
/// again.entityVersionHashesByName == model.entityVersionHashesByName   // true
/// ```
public struct XcodeModelWriter: Sendable {
    public init() {}

    /// The names given to inline composites while writing (see ``contents(of:)``).
    private var compositeNames: [ObjectIdentifier: String] = [:]

    /// The model's `contents` XML.
    public func contents(of model: ManagedObjectModel) -> String {
        var writer = self
        return writer.makeContents(of: model)
    }

    private mutating func makeContents(of model: ManagedObjectModel) -> String {
        var lines = [#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#]
        var rootAttributes: [(String, String)] = [("type", "com.apple.IDECoreDataModeler.DataModel"), ("documentVersion", "1.0")]
        if let identifier = model.versionIdentifiers.sorted().first {
            rootAttributes.append(("userDefinedModelVersionIdentifier", identifier))
        }
        lines.append("<model" + Self.attributes(rootAttributes) + ">")
        // Xcode declares composites at model level; a compiled model's (a store's
        // cache) has them inline only: each gets a declaration named after its
        // entity and attribute.
        var composites = model.composites
        var inlineNames: [ObjectIdentifier: String] = [:]
        for entity in model.entities {
            for case let composite as CompositeAttributeDescription in entity.properties where composite.compositeName == nil {
                var name = entity.name + composite.name.prefix(1).uppercased() + composite.name.dropFirst()
                while composites[name] != nil { name += "_" }
                composites[name] = composite
                inlineNames[ObjectIdentifier(composite)] = name
            }
        }
        compositeNames = inlineNames
        for (name, composite) in composites.sorted(by: { $0.key < $1.key }) {
            lines.append("    <composite" + Self.attributes([("name", name)]) + ">")
            for element in composite.elements { lines += attributeLines(element, indent: 8) }
            lines.append("    </composite>")
        }
        for entity in model.entities {
            lines += entityLines(entity)
        }
        for (name, template) in model.fetchRequestTemplatesByName.sorted(by: { $0.key < $1.key }) {
            lines.append("    " + fetchRequestElement(template, name: name) + "/>")
        }
        for configuration in model.configurations {
            var attributes = [("name", configuration)]
            if model.cloudKitConfigurations.contains(configuration) { attributes.append(("usedWithCloudKit", "YES")) }
            lines.append("    <configuration" + Self.attributes(attributes) + ">")
            for entity in model.entities(forConfigurationName: configuration) ?? [] {
                lines.append("        <memberEntity" + Self.attributes([("name", entity.name)]) + "/>")
            }
            lines.append("    </configuration>")
        }
        lines.append("</model>")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes `model` as an `.xcdatamodel` folder at `url` (made, or its `contents`
    /// replaced).
    ///
    /// - Throws: a file error (``CoreDataError/Code/fileWriteUnknown``, 512) when the
    ///   folder or file cannot be written.
    public func write(_ model: ManagedObjectModel, to url: URL) throws {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try Data(contents(of: model).utf8).write(to: url.appendingPathComponent("contents"), options: .atomic)
        } catch {
            throw CoreDataError(.fileWriteUnknown, "Cannot write the model to \(url.path): \(error.localizedDescription)", url: url)
        }
    }

    // MARK: Elements

    private func entityLines(_ entity: EntityDescription) -> [String] {
        var attributes = [("name", entity.name)]
        if entity.managedObjectClassName != "ManagedObject" && entity.managedObjectClassName != "NSManagedObject" {
            attributes.append(("representedClassName", entity.managedObjectClassName))
        }
        if let parent = entity.superentity { attributes.append(("parentEntity", parent.name)) }
        if entity.isAbstract { attributes.append(("isAbstract", "YES")) }
        if let identifier = entity.renamingIdentifier { attributes.append(("elementID", identifier)) }
        if let modifier = entity.versionHashModifier { attributes.append(("versionHashModifier", modifier)) }
        attributes.append(("syncable", "YES"))
        var lines = ["    <entity" + Self.attributes(attributes) + ">"]
        for property in entity.properties {
            switch property {
            case let attribute as AttributeDescription: lines += attributeLines(attribute, indent: 8)
            case let relationship as RelationshipDescription: lines += relationshipLines(relationship)
            case let fetched as FetchedPropertyDescription: lines += fetchedPropertyLines(fetched)
            default: continue
            }
        }
        lines += keyListLines(entity.uniquenessConstraints, group: "uniquenessConstraints", list: "uniquenessConstraint", item: "constraint")
        lines += keyListLines(entity.compoundIndexes, group: "compoundIndexes", list: "compoundIndex", item: "index")
        for index in entity.indexes {
            var indexAttributes = [("name", index.name)]
            if let partial = index.partialIndexPredicate { indexAttributes.append(("partialIndexExpression", partial)) }
            lines.append("        <fetchIndex" + Self.attributes(indexAttributes) + ">")
            for element in index.elements {
                var elementAttributes: [(String, String)] = []
                if let property = element.propertyName { elementAttributes.append(("property", property)) }
                if let expression = element.expression { elementAttributes.append(("expression", expression)) }
                if let type = element.expressionType { elementAttributes.append(("expressionType", type)) }
                elementAttributes.append(("type", element.collationType.rawValue))
                elementAttributes.append(("order", element.isAscending ? "ascending" : "descending"))
                lines.append("            <fetchIndexElement" + Self.attributes(elementAttributes) + "/>")
            }
            lines.append("        </fetchIndex>")
        }
        lines += userInfoLines(entity.userInfo, indent: 8)
        lines.append("    </entity>")
        return lines
    }

    /// Lists of property names, as Xcode writes uniqueness constraints and compound
    /// indexes: `<group><list><item value="name"/>...</list>...</group>`.
    private func keyListLines(_ lists: [[String]], group: String, list: String, item: String) -> [String] {
        guard !lists.isEmpty else { return [] }
        var lines = ["        <\(group)>"]
        for keys in lists {
            lines.append("            <\(list)>")
            for key in keys { lines.append("                <\(item)" + Self.attributes([("value", key)]) + "/>") }
            lines.append("            </\(list)>")
        }
        lines.append("        </\(group)>")
        return lines
    }

    private func commonAttributes(_ property: PropertyDescription) -> [(String, String)] {
        var attributes = [("name", property.name)]
        if property.isOptional { attributes.append(("optional", "YES")) }
        if property.isTransient { attributes.append(("transient", "YES")) }
        if let identifier = property.renamingIdentifier { attributes.append(("elementID", identifier)) }
        if let modifier = property.versionHashModifier { attributes.append(("versionHashModifier", modifier)) }
        if property.isIndexedBySpotlight { attributes.append(("spotlightIndexingEnabled", "YES")) }
        if property.isStoredInExternalRecord { attributes.append(("storedInTruthFile", "YES")) }
        return attributes
    }

    private func attributeLines(_ attribute: AttributeDescription, indent: Int) -> [String] {
        var attributes = commonAttributes(attribute)
        attributes.append(("attributeType", attribute.attributeType.xcodeName))
        if let derived = attribute as? DerivedAttributeDescription {
            attributes.append(("derived", "YES"))
            attributes.append(("derivationExpression", derived.derivationExpression))
        }
        if let composite = attribute as? CompositeAttributeDescription,
           let name = composite.compositeName ?? compositeNames[ObjectIdentifier(composite)] {
            attributes.append(("composite", name))
        }
        if let className = attribute.attributeValueClassName { attributes.append(("customClassName", className)) }
        if let transformer = attribute.valueTransformerName { attributes.append(("valueTransformerName", transformer)) }
        if attribute.allowsExternalBinaryDataStorage { attributes.append(("allowsExternalBinaryDataStorage", "YES")) }
        if attribute.preservesValueInHistoryOnDeletion { attributes.append(("preserveAfterDeletion", "YES")) }
        if attribute.allowsCloudEncryption { attributes.append(("allowsCloudEncryption", "YES")) }
        if attribute.isIndexed { attributes.append(("indexed", "YES")) }
        if attribute.attributeType == .date {
            if case .date(let date)? = attribute.defaultValue { attributes.append(("defaultDateTimeInterval", Self.number(date.timeIntervalSinceReferenceDate))) }
            if case .date(let date)? = attribute.minValue { attributes.append(("minDateTimeInterval", Self.number(date.timeIntervalSinceReferenceDate))) }
            if case .date(let date)? = attribute.maxValue { attributes.append(("maxDateTimeInterval", Self.number(date.timeIntervalSinceReferenceDate))) }
        } else {
            if let text = attribute.defaultValue.flatMap(Self.text) { attributes.append(("defaultValueString", text)) }
            if let text = attribute.minValue.flatMap(Self.text) { attributes.append(("minValueString", text)) }
            if let text = attribute.maxValue.flatMap(Self.text) { attributes.append(("maxValueString", text)) }
        }
        if let pattern = attribute.regularExpression { attributes.append(("regularExpressionString", pattern)) }
        let pad = String(repeating: " ", count: indent)
        let info = userInfoLines(attribute.userInfo, indent: indent + 4)
        if info.isEmpty { return [pad + "<attribute" + Self.attributes(attributes) + "/>"] }
        return [pad + "<attribute" + Self.attributes(attributes) + ">"] + info + [pad + "</attribute>"]
    }

    private func relationshipLines(_ relationship: RelationshipDescription) -> [String] {
        var attributes = commonAttributes(relationship)
        if relationship.isToMany { attributes.append(("toMany", "YES")) }
        if relationship.isOrdered { attributes.append(("ordered", "YES")) }
        if relationship.isToMany && relationship.maxCount > 0 { attributes.append(("maxCount", String(relationship.maxCount))) }
        if !relationship.isToMany { attributes.append(("maxCount", "1")) }
        if relationship.minCount > 0 { attributes.append(("minCount", String(relationship.minCount))) }
        attributes.append(("deletionRule", relationship.deleteRule.xcodeName))
        if let destination = relationship.destinationEntityName { attributes.append(("destinationEntity", destination)) }
        if let inverse = relationship.inverseRelationshipName {
            attributes.append(("inverseName", inverse))
            if let destination = relationship.destinationEntityName { attributes.append(("inverseEntity", destination)) }
        }
        let info = userInfoLines(relationship.userInfo, indent: 12)
        if info.isEmpty { return ["        <relationship" + Self.attributes(attributes) + "/>"] }
        return ["        <relationship" + Self.attributes(attributes) + ">"] + info + ["        </relationship>"]
    }

    private func fetchedPropertyLines(_ fetched: FetchedPropertyDescription) -> [String] {
        var lines = ["        <fetchedProperty" + Self.attributes(commonAttributes(fetched)) + ">"]
        if let request = fetched.fetchRequest {
            lines.append("            " + fetchRequestElement(request, name: "fetchedPropertyFetchRequest") + "/>")
        }
        lines += userInfoLines(fetched.userInfo, indent: 12)
        lines.append("        </fetchedProperty>")
        return lines
    }

    private func fetchRequestElement(_ template: FetchRequestTemplate, name: String) -> String {
        var attributes = [("name", name), ("entity", template.entityName)]
        if let predicate = template.predicateFormat { attributes.append(("predicateString", predicate)) }
        if template.fetchLimit != 0 { attributes.append(("fetchLimit", String(template.fetchLimit))) }
        if template.fetchOffset != 0 { attributes.append(("fetchOffset", String(template.fetchOffset))) }
        if template.fetchBatchSize != 0 { attributes.append(("fetchBatchSize", String(template.fetchBatchSize))) }
        if template.resultType != 0 { attributes.append(("resultType", String(template.resultType))) }
        if !template.includesSubentities { attributes.append(("includeSubentities", "NO")) }
        if !template.includesPropertyValues { attributes.append(("includePropertyValues", "NO")) }
        if template.returnsDistinctResults { attributes.append(("returnDistinctResults", "YES")) }
        if !template.returnsObjectsAsFaults { attributes.append(("returnObjectsAsFaults", "NO")) }
        if !template.includesPendingChanges { attributes.append(("includesPendingChanges", "NO")) }
        return "<fetchRequest" + Self.attributes(attributes)
    }

    private func userInfoLines(_ info: [String: String], indent: Int) -> [String] {
        guard !info.isEmpty else { return [] }
        let pad = String(repeating: " ", count: indent)
        return [pad + "<userInfo>"]
            + info.sorted(by: { $0.key < $1.key }).map { pad + "    <entry" + Self.attributes([("key", $0.key), ("value", $0.value)]) + "/>" }
            + [pad + "</userInfo>"]
    }

    // MARK: Text

    private static func attributes(_ pairs: [(String, String)]) -> String {
        pairs.map { " \($0.0)=\"\(escaped($0.1))\"" }.joined()
    }

    private static func escaped(_ text: String) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\n": result += "&#10;"
            case "\r": result += "&#13;"
            case "\t": result += "&#9;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// The text Xcode writes for a default or bound value (nil: none it can write).
    private static func text(_ value: AttributeValue) -> String? {
        switch value {
        case .bool(let flag): return flag ? "YES" : "NO"
        case .int(let number): return String(number)
        case .double(let double): return double.isFinite ? number(double) : nil
        case .decimal(let number): return "\(number)"
        case .string(let text): return text
        case .uuid(let uuid): return uuid.uuidString
        case .uri(let url): return url.absoluteString
        default: return nil
        }
    }
}
