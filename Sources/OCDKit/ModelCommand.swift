import ArgumentParser
import Foundation
import OpenCoreData
import OpenCoreDataPredicates

struct ModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Inspect managed object models.",
        subcommands: [Show.self, Extract.self]
    )

    /// Whether `path` is a SQLite file (a store) rather than a model file or folder.
    static func isStoreFile(_ path: String) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: URL(fileURLWithPath: path)) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: 16)) == Data("SQLite format 3\0".utf8)
    }

    struct Extract: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a store's model as an Xcode model (.xcdatamodel).",
            discussion: """
                The model cached in the store (Z_MODELCACHE), or, for a store without a readable \
                cache, the model reconstructed from its schema (a warning says so). The file has \
                the model's version hashes: Xcode and ocd load it, and it opens the store.
                """
        )
        @Argument(help: "The store file.") var path: String
        @Option(name: .shortAndLong, help: "The .xcdatamodel folder to write.") var output: String

        func run() throws {
            do {
                let model = try readingModel(URL(fileURLWithPath: path))
                try XcodeModelWriter().write(model, to: URL(fileURLWithPath: output))
                emit("Wrote \(output) with \(model.entities.count) entities")
            } catch let error as CoreDataError {
                throw CommandFailure(error.description)
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the model of an .xcdatamodeld bundle, .xcdatamodel folder, compiled .momd/.mom, or store.",
            discussion: "For a store: the model cached in it, or reconstructed from its schema when it has no readable cache."
        )

        @Argument(help: "The .xcdatamodeld, .xcdatamodel, .momd or .mom path, or a SQLite store file.")
        var path: String

        @Flag(help: "Print JSON instead of text.")
        var json = false

        @Option(help: "The model version to show (default: the current one).")
        var version: String?

        func run() throws {
            let url = URL(fileURLWithPath: path)
            do {
                let model: ManagedObjectModel
                let name: String
                if ModelCommand.isStoreFile(path) {
                    model = try readingModel(url)
                    name = url.lastPathComponent
                } else if ["mom", "momd"].contains(url.pathExtension.lowercased()) {
                    let bundle = try CompiledModelBundle(contentsOf: url)
                    name = version ?? bundle.currentVersionName
                    model = try bundle.model(forVersion: name)
                } else {
                    let bundle = try XcodeDataModel(contentsOf: url)
                    name = version ?? bundle.currentVersionName
                    model = try bundle.model(forVersion: name)
                }
                emit(json ? try ModelReport.json(model) : ModelReport.text(model, versionName: name))
            } catch let error as CoreDataError {
                throw CommandFailure(error.description)
            }
        }
    }
}

/// A failure to report on standard error with a non-zero exit status.
struct CommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Renders a model for `ocd model show`.
public enum ModelReport {
    /// The JSON form: `{"versionChecksum", "entities": [{"name", "parent", "abstract",
    /// "versionHash", "attributes": [...], "relationships": [...]}]}`, each entity
    /// listing its own properties.
    public static func json(_ model: ManagedObjectModel) throws -> String {
        let entities: [[String: Any]] = model.entities.map { entity in
            var item: [String: Any] = [
                "name": entity.name,
                "parent": entity.superentity?.name ?? NSNull(),
                "abstract": entity.isAbstract,
                "versionHash": entity.versionHash.map { String(format: "%02x", $0) }.joined(),
                "className": entity.managedObjectClassName,
            ]
            item["attributes"] = entity.properties.compactMap { $0 as? AttributeDescription }.map { attribute -> [String: Any] in
                var entry: [String: Any] = [
                    "name": attribute.name,
                    "type": attribute.attributeType.xcodeName,
                    "optional": attribute.isOptional,
                    "transient": attribute.isTransient,
                    "defaultValue": jsonValue(attribute.defaultValue),
                ]
                if let derived = attribute as? DerivedAttributeDescription { entry["derivationExpression"] = derived.derivationExpression }
                if let transformer = attribute.valueTransformerName { entry["valueTransformerName"] = transformer }
                if let className = attribute.attributeValueClassName { entry["customClassName"] = className }
                return entry
            }
            item["relationships"] = entity.properties.compactMap { $0 as? RelationshipDescription }.map { relationship -> [String: Any] in
                [
                    "name": relationship.name,
                    "destination": relationship.destinationEntityName ?? NSNull(),
                    "inverse": relationship.inverseRelationshipName ?? NSNull(),
                    "toMany": relationship.isToMany,
                    "ordered": relationship.isOrdered,
                    "deleteRule": relationship.deleteRule.xcodeName,
                    "minCount": relationship.minCount,
                    "maxCount": relationship.maxCount,
                    "optional": relationship.isOptional,
                ]
            }
            item["fetchedProperties"] = entity.properties.compactMap { $0 as? FetchedPropertyDescription }.map { fetched -> [String: Any] in
                [
                    "name": fetched.name,
                    "entity": fetched.fetchRequest?.entityName ?? NSNull(),
                    "predicate": fetched.fetchRequest?.predicateFormat ?? NSNull(),
                ]
            }
            return item
        }
        let root: [String: Any] = [
            "versionChecksum": model.versionChecksum,
            "versionHashesDigest": model.versionHashesDigest,
            "versionIdentifiers": model.versionIdentifiers.sorted(),
            "configurations": model.configurations,
            "entities": entities,
        ]
        let data = try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// A JSON-compatible form of an attribute value.
    static func jsonValue(_ value: AttributeValue?) -> Any {
        switch value {
        case nil, .null?: return NSNull()
        case .bool(let b)?: return b
        case .int(let i)?: return i
        case .double(let d)?: return d.isFinite ? d : String(d)
        case .decimal(let d)?: return NSDecimalNumber(decimal: d).doubleValue
        case .string(let s)?: return s
        case .date(let d)?: return ISO8601DateFormatter().string(from: d)
        case .data(let d)?: return d.base64EncodedString()
        case .uuid(let u)?: return u.uuidString
        case .uri(let u)?: return u.absoluteString
        case .array(let a)?: return a.map { jsonValue($0) }
        case .dictionary(let d)?: return d.mapValues { jsonValue($0) }
        }
    }

    /// The text form, for people.
    public static func text(_ model: ManagedObjectModel, versionName: String) -> String {
        var lines: [String] = []
        lines.append("Model \(versionName): \(model.entities.count) entities, checksum \(model.versionChecksum)")
        if !model.versionIdentifiers.isEmpty {
            lines.append("Version identifiers: \(model.versionIdentifiers.sorted().joined(separator: ", "))")
        }
        for entity in model.entities {
            var header = "\nentity \(entity.name)"
            if let parent = entity.superentity { header += " : \(parent.name)" }
            if entity.isAbstract { header += " (abstract)" }
            if entity.managedObjectClassName != "NSManagedObject" { header += " class \(entity.managedObjectClassName)" }
            lines.append(header)
            lines.append("  versionHash \(entity.versionHash.map { String(format: "%02x", $0) }.joined())")
            for property in entity.properties {
                lines.append("  " + describe(property))
            }
            for constraint in entity.uniquenessConstraints {
                lines.append("  unique (\(constraint.joined(separator: ", ")))")
            }
            for index in entity.indexes {
                let elements = index.elements.map { ($0.propertyName ?? $0.expression ?? "?") + ($0.isAscending ? "" : " desc") }
                lines.append("  index \(index.name) (\(elements.joined(separator: ", ")))")
            }
            for compound in entity.compoundIndexes {
                lines.append("  compound index (\(compound.joined(separator: ", ")))")
            }
        }
        for name in model.configurations {
            let members = model.entities(forConfigurationName: name)?.map(\.name) ?? []
            lines.append("\nconfiguration \(name): \(members.joined(separator: ", "))")
        }
        for (name, template) in model.fetchRequestTemplatesByName.sorted(by: { $0.key < $1.key }) {
            lines.append("\nfetch request \(name): \(template.entityName) where \(template.predicateFormat ?? "TRUEPREDICATE")")
        }
        return lines.joined(separator: "\n")
    }

    private static func describe(_ property: PropertyDescription) -> String {
        var flags: [String] = []
        if !property.isOptional { flags.append("required") }
        if property.isTransient { flags.append("transient") }
        switch property {
        case let relationship as RelationshipDescription:
            var text = "\(relationship.name): \(relationship.isToMany ? "to-many" : "to-one") \(relationship.destinationEntityName ?? "?")"
            if let inverse = relationship.inverseRelationshipName { text += " inverse \(inverse)" }
            if relationship.isOrdered { flags.append("ordered") }
            flags.append("delete \(relationship.deleteRule.xcodeName)")
            if relationship.minCount > 0 { flags.append("min \(relationship.minCount)") }
            if relationship.isToMany && relationship.maxCount > 0 { flags.append("max \(relationship.maxCount)") }
            return text + " [" + flags.joined(separator: ", ") + "]"
        case let attribute as AttributeDescription:
            var text = "\(attribute.name): \(attribute.attributeType.xcodeName)"
            if let derived = attribute as? DerivedAttributeDescription { text += " = \(derived.derivationExpression)" }
            if let value = attribute.defaultValue { flags.append("default \(jsonValue(value))") }
            if let transformer = attribute.valueTransformerName { flags.append("transformer \(transformer)") }
            if attribute.allowsExternalBinaryDataStorage { flags.append("external storage") }
            if attribute.preservesValueInHistoryOnDeletion { flags.append("preserved after deletion") }
            return flags.isEmpty ? text : text + " [" + flags.joined(separator: ", ") + "]"
        case let fetched as FetchedPropertyDescription:
            return "\(fetched.name): fetched \(fetched.fetchRequest?.entityName ?? "?") where \(fetched.fetchRequest?.predicateFormat ?? "TRUEPREDICATE")"
        default:
            return property.name
        }
    }
}
