import Foundation
import OpenCoreDataPredicates

/// Reads a compiled Core Data model, the `NSKeyedArchiver` archive of an
/// `NSManagedObjectModel` found in `.mom` files and (deflated) in a store's
/// `Z_MODELCACHE`, into a ``ManagedObjectModel``.
///
/// Entities, attributes (with types, defaults, transformers, flags, derived
/// attributes), relationships, fetched properties, fetch indexes, compound indexes,
/// uniqueness constraints (`NSUniqueTuples`), user info, validation predicates,
/// configurations and fetch request templates are read. Inherited properties that
/// the compiler copies into subentities (older archives) or represents as
/// `_NSPropertyDescriptionProxy` (newer ones) are left to inheritance. Unknown
/// classes and keys are ignored; structural problems throw
/// ``CoreDataError/Code/fileReadCorruptFile`` naming the source, the object and the
/// problem.
///
/// ```swift
/// let reader = CompiledModelReader(source: "Moody.mom")
/// let model = try reader.read(archiveData: try Data(contentsOf: momURL))
/// let cached = try CompiledModelReader(source: "Z_MODELCACHE").read(modelCacheData: blob)
/// ```
public struct CompiledModelReader: Sendable {
    /// What is being read (a file path or "Z_MODELCACHE"), used in error messages.
    public var source: String
    /// The file being read, if any, attached to errors.
    public var url: URL?

    /// A reader whose errors name `source`.
    ///
    /// - Parameters:
    ///   - source: What is read (a file path or "Z_MODELCACHE"), for error
    ///     messages.
    ///   - url: The file read, if any, attached to errors.
    public init(source: String, url: URL? = nil) {
        self.source = source
        self.url = url
    }

    /// Reads a keyed archive (the content of a `.mom` file).
    ///
    /// - Parameter data: The archive.
    /// - Returns: A new, editable model.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) when the data is not a
    ///   compiled model archive or its structure is broken.
    public func read(archiveData data: Data) throws -> ManagedObjectModel {
        let archive: KeyedArchive
        do {
            archive = try KeyedArchive(data: data)
        } catch let failure as KeyedArchive.Failure {
            throw corrupt("not a compiled model archive: \(failure.description)")
        }
        do {
            return try Decoder(archive: archive, reader: self).model()
        } catch let failure as KeyedArchive.Failure {
            throw corrupt(failure.description)
        }
    }

    /// Reads a `Z_MODELCACHE.Z_CONTENT` blob: raw DEFLATE of a keyed archive.
    ///
    /// - Parameter data: The compressed archive.
    /// - Returns: A new, editable model.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) when the data is not
    ///   valid DEFLATE data or not a compiled model archive.
    public func read(modelCacheData data: Data) throws -> ManagedObjectModel {
        let archive: Data
        do {
            archive = try Inflate.decompress(data)
        } catch let failure as Inflate.Failure {
            throw corrupt("the model cache is not valid DEFLATE data: \(failure.description)")
        }
        return try read(archiveData: archive)
    }

    func corrupt(_ message: String) -> CoreDataError {
        CoreDataError(.fileReadCorruptFile, "\(source): \(message)", url: url)
    }
}

extension ManagedObjectModel {
    /// Loads a model from the content of a compiled `.mom` file (an
    /// `NSKeyedArchiver` archive of an `NSManagedObjectModel`).
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(compiledModelData: Data(contentsOf: momURL))
    /// ```
    ///
    /// - Parameter data: The content of a `.mom` file.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) when the data is not a
    ///   compiled model archive or its structure is broken.
    public convenience init(compiledModelData data: Data) throws {
        let loaded = try CompiledModelReader(source: "compiled model").read(archiveData: data)
        self.init()
        adopt(loaded)
    }

    /// Loads the model a SQLite store keeps in `Z_MODELCACHE.Z_CONTENT`: the model
    /// that created or last migrated the store, raw-DEFLATE compressed.
    ///
    /// ```swift
    /// let blob = try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")!
    /// let model = try ManagedObjectModel(modelCacheData: blob)
    /// model.entityVersionHashesByName   // equals the store's NSStoreModelVersionHashes
    /// ```
    ///
    /// - Parameter data: The `Z_CONTENT` blob.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) when the data is not
    ///   valid DEFLATE data or not a compiled model archive.
    public convenience init(modelCacheData data: Data) throws {
        let loaded = try CompiledModelReader(source: "Z_MODELCACHE").read(modelCacheData: data)
        self.init()
        adopt(loaded)
    }
}

// MARK: - Decoding

private typealias Failure = KeyedArchive.Failure

private struct Decoder {
    let archive: KeyedArchive
    let reader: CompiledModelReader
    var predicates: ArchivedPredicate { ArchivedPredicate(archive: archive) }

    /// What was read of one archived entity.
    struct EntityRecord {
        let object: KeyedArchive.Object
        let entity: EntityDescription
        /// Every property name listed in the archive, inherited copies included.
        var archivedPropertyNames: Set<String>
        var properties: [PropertyDescription]
        var superentityUID: Int?
    }

    func model() throws -> ManagedObjectModel {
        guard case .object(let root) = try archive.resolve(try archive.topReference()) else {
            throw Failure(description: "the root object is not an NSManagedObjectModel")
        }
        guard root.isKind(of: "NSManagedObjectModel") else {
            throw Failure(description: "the root object is an \(root.className), not an NSManagedObjectModel")
        }
        let model = ManagedObjectModel()

        // Entities.
        var records: [EntityRecord] = []
        var indexByUID: [Int: Int] = [:]
        for entry in try archive.entries(root["NSEntities"], "NSManagedObjectModel.NSEntities") {
            guard case .object(let object) = try archive.resolve(entry.value), object.isKind(of: "NSEntityDescription") else {
                throw Failure(description: "NSEntities holds \(try archive.resolve(entry.value).kindDescription), not an NSEntityDescription")
            }
            guard indexByUID[object.uid] == nil else { continue }
            indexByUID[object.uid] = records.count
            records.append(try entity(object))
        }
        let names = records.map(\.entity.name)
        guard Set(names).count == names.count else {
            throw Failure(description: "two entities have the same name (\(names.sorted().joined(separator: ", ")))")
        }

        // Superentities: check the links, then drop the inherited copies.
        for index in records.indices {
            var seen: Set<Int> = [index]
            var current = records[index].superentityUID
            var inherited: Set<String> = []
            while let uid = current {
                guard let parent = indexByUID[uid] else {
                    throw Failure(description: "entity '\(records[index].entity.name)': its superentity (object \(uid)) is not in NSEntities")
                }
                guard seen.insert(parent).inserted else {
                    throw Failure(description: "entity '\(records[index].entity.name)': the superentity chain loops")
                }
                inherited.formUnion(records[parent].archivedPropertyNames)
                current = records[parent].superentityUID
            }
            if !inherited.isEmpty {
                records[index].properties.removeAll { inherited.contains($0.name) }
            }
        }
        for record in records { record.entity.properties = record.properties }
        for (index, record) in records.enumerated() {
            let children = records.filter { $0.superentityUID.flatMap { indexByUID[$0] } == index }.map(\.entity)
            if !children.isEmpty { record.entity.subentities = children }
        }
        model.entities = records.map(\.entity)

        // Version identifiers.
        var identifiers: Set<String> = []
        for element in try archive.elements(root["NSVersionIdentifiers"], "NSVersionIdentifiers") {
            if let identifier = try archive.string(element, "a version identifier") { identifiers.insert(identifier) }
        }
        model.versionIdentifiers = identifiers

        // Configurations: name -> set of entities.
        let entityByUID = Dictionary(uniqueKeysWithValues: indexByUID.map { ($0.key, records[$0.value].entity) })
        for entry in try archive.entries(root["NSConfigurations"], "NSConfigurations") {
            guard let name = try archive.string(entry.key, "a configuration name") else { continue }
            var members: [EntityDescription] = []
            for element in try archive.elements(entry.value, "configuration '\(name)'") {
                switch try archive.resolve(element) {
                case .object(let object):
                    if let entity = entityByUID[object.uid] { members.append(entity) }
                case .string(let entityName):
                    if let entity = model.entitiesByName[entityName] { members.append(entity) }
                default:
                    continue
                }
            }
            model.setEntities(members.sorted { ManagedObjectModel.compareNames($0.name, $1.name) }, forConfigurationName: name)
        }

        // Fetch request templates.
        for entry in try archive.entries(root["NSFetchRequestTemplates"], "NSFetchRequestTemplates") {
            guard let name = try archive.string(entry.key, "a fetch request template name") else { continue }
            if let template = try fetchRequest(entry.value, label: "fetch request template '\(name)'", entityByUID: entityByUID) {
                model.setFetchRequestTemplate(template, forName: name)
            }
        }
        return model
    }

    // MARK: Entities

    func entity(_ object: KeyedArchive.Object) throws -> EntityRecord {
        guard let name = try archive.string(object["NSEntityName"], "entity object \(object.uid): NSEntityName"), !name.isEmpty else {
            throw Failure(description: "entity object \(object.uid) has no NSEntityName")
        }
        let label = "entity '\(name)'"
        let className = try archive.string(object["NSClassNameForEntity"], "\(label): NSClassNameForEntity")
        let entity = EntityDescription(name: name, managedObjectClassName: className ?? "NSManagedObject")
        entity.isAbstract = try bool(object["NSIsAbstract"], "\(label): NSIsAbstract")
        entity.userInfo = try userInfo(object["NSUserInfo"], label)
        entity.versionHashModifier = nonEmpty(try archive.string(object["NSVersionHashModifier"], "\(label): NSVersionHashModifier"))
        let renaming = try archive.string(object["NSRenamingIdentifier"], "\(label): NSRenamingIdentifier")
        entity.renamingIdentifier = renaming == name ? nil : nonEmpty(renaming)
        entity.uniquenessConstraints = try nameLists(object["NSUniqueTuples"], "\(label): NSUniqueTuples")
        entity.compoundIndexes = try nameLists(object["NSCompoundIndexes"], "\(label): NSCompoundIndexes")
        for element in try archive.elements(object["NSFetchIndexDescriptions"], "\(label): NSFetchIndexDescriptions") {
            if let index = try fetchIndex(element, label) { entity.indexes.append(index) }
        }
        // Fetch indexes are also written out as compound indexes; keep only the
        // compound indexes that are not just a fetch index's property list.
        // An expression element (`NSIndexedProperty` an expression description) is
        // written there under its key path (`self`, `entity`, ...), so it matches any
        // name at its position.
        if !entity.indexes.isEmpty {
            let indexLists = entity.indexes.map { $0.elements.map(\.propertyName) }
            entity.compoundIndexes.removeAll { compound in
                indexLists.contains { list in
                    list.count == compound.count && zip(list, compound).allSatisfy { $0 == nil || $0 == $1 }
                }
            }
        }

        var superentityUID: Int?
        switch try archive.resolve(object["NSSuperentity"]) {
        case .null: break
        case .object(let parent) where parent.isKind(of: "NSEntityDescription"): superentityUID = parent.uid
        case let other: throw Failure(description: "\(label): NSSuperentity is \(other.kindDescription)")
        }

        var properties: [PropertyDescription] = []
        var archivedNames: Set<String> = []
        for entry in try archive.entries(object["NSProperties"], "\(label): NSProperties") {
            guard case .object(let propertyObject) = try archive.resolve(entry.value) else {
                throw Failure(description: "\(label): NSProperties holds \(try archive.resolve(entry.value).kindDescription), not a property description")
            }
            if propertyObject.isKind(of: "_NSPropertyDescriptionProxy") {
                if let name = try proxyName(propertyObject) { archivedNames.insert(name) }
                continue
            }
            guard let property = try property(propertyObject, owner: label) else { continue }
            guard archivedNames.insert(property.name).inserted else {
                throw Failure(description: "\(label): two properties are named '\(property.name)'")
            }
            properties.append(property)
        }
        return EntityRecord(object: object, entity: entity, archivedPropertyNames: archivedNames,
                            properties: sortIfUnordered(properties, container: object["NSProperties"]),
                            superentityUID: superentityUID)
    }

    /// Plain dictionaries have no meaningful order: sort their properties by name, as
    /// Xcode lists them. `NSKnownKeysDictionary1` keeps the compiler's order.
    func sortIfUnordered(_ properties: [PropertyDescription], container: PropertyListValue) -> [PropertyDescription] {
        guard case .uid(let index) = container, index >= 0, index < archive.objects.count,
              case .dictionary(let fields) = archive.objects[index],
              case .uid(let classIndex)? = fields["$class"], classIndex >= 0, classIndex < archive.objects.count,
              case .dictionary(let info) = archive.objects[classIndex],
              case .string(let className)? = info["$classname"],
              className == "NSDictionary" || className == "NSMutableDictionary" else { return properties }
        return properties.sorted { ManagedObjectModel.compareNames($0.name, $1.name) }
    }

    func proxyName(_ proxy: KeyedArchive.Object) throws -> String? {
        if case .object(let underlying) = try archive.resolve(proxy["NSUnderlyingProperty"]) {
            return try archive.string(underlying["NSPropertyName"], "proxy: NSPropertyName")
        }
        return nil
    }

    // MARK: Properties

    func property(_ object: KeyedArchive.Object, owner: String) throws -> PropertyDescription? {
        guard let name = try archive.string(object["NSPropertyName"], "\(owner): property object \(object.uid): NSPropertyName"), !name.isEmpty else {
            throw Failure(description: "\(owner): property object \(object.uid) (\(object.className)) has no NSPropertyName")
        }
        let label = "\(owner), property '\(name)'"
        let property: PropertyDescription
        if object.isKind(of: "NSRelationshipDescription") {
            property = try relationship(object, name: name, label: label)
        } else if object.isKind(of: "NSAttributeDescription") {
            property = try attribute(object, name: name, label: label)
        } else if object.isKind(of: "NSFetchedPropertyDescription") {
            let request = try fetchRequest(object["NSFetchRequest"], label: "\(label): NSFetchRequest", entityByUID: [:],
                                           fallbackEntityName: try archive.string(object["_NSFetchRequestEntityName"], "\(label): _NSFetchRequestEntityName"))
            property = FetchedPropertyDescription(name: name, fetchRequest: request)
        } else {
            return nil
        }
        try readCommon(object, into: property, label: label)
        return property
    }

    func readCommon(_ object: KeyedArchive.Object, into property: PropertyDescription, label: String) throws {
        var flags: Int64 = 0
        if case .int(let packed) = object["_P"], packed & 1 != 0 { flags = packed }
        property.isOptional = try bool(object["NSIsOptional"], "\(label): NSIsOptional") || flags & 0x2 != 0
        property.isReadOnly = try bool(object["NSIsReadOnly"], "\(label): NSIsReadOnly") || flags & 0x4 != 0
        property.isTransient = try bool(object["NSIsTransient"], "\(label): NSIsTransient") || flags & 0x8 != 0
        property.isIndexedBySpotlight = try bool(object["NSIndexedBySpotlight"], "\(label): NSIndexedBySpotlight") || flags & 0x100 != 0
        property.isStoredInExternalRecord = try bool(object["NSIsStoredInTruth"], "\(label): NSIsStoredInTruth") || flags & 0x200 != 0
        property.versionHashModifier = nonEmpty(try archive.string(object["NSVersionHashModifier"], "\(label): NSVersionHashModifier"))
        let renaming = try archive.string(object["NSRenamingIdentifier"], "\(label): NSRenamingIdentifier")
        property.renamingIdentifier = renaming == property.name ? nil : nonEmpty(renaming)
        property.userInfo = try userInfo(object["NSUserInfo"], label)

        let predicates = try archive.elements(object["NSValidationPredicates"], "\(label): NSValidationPredicates")
        let warnings = try archive.elements(object["NSValidationWarnings"], "\(label): NSValidationWarnings")
        var rules: [ValidationRule] = []
        for (position, predicate) in predicates.enumerated() {
            // An undecodable predicate keeps its place as an always-true rule.
            let text = self.predicates.predicateFormat(predicate) ?? "TRUEPREDICATE"
            var warning = ""
            if position < warnings.count, let value = archive.plainValue(warnings[position]) {
                switch value {
                case .string(let message): warning = message
                case .int(let code): warning = String(code)
                default: break
                }
            }
            rules.append(ValidationRule(predicateFormat: text, warning: warning))
        }
        property.validationRules = rules
        if let relationship = property as? RelationshipDescription {
            relationship.isOrdered = try bool(object["NSIsOrdered"], "\(label): NSIsOrdered") || flags & 0x400 != 0
        }
        if let attribute = property as? AttributeDescription {
            attribute.allowsCloudEncryption = try bool(object["NSAllowsCloudEncryption"], "\(label): NSAllowsCloudEncryption") || flags & 0x800 != 0
        }
    }

    func attribute(_ object: KeyedArchive.Object, name: String, label: String, depth: Int = 0) throws -> AttributeDescription {
        guard depth < 16 else {
            throw Failure(description: "\(label): composite attributes nest too deeply")
        }
        guard case .int(let rawType) = object["NSAttributeType"] else {
            if case .null = object["NSAttributeType"], object.isKind(of: "NSCompositeAttributeDescription") {
                return try composite(object, name: name, label: label, depth: depth)
            }
            throw Failure(description: "\(label): NSAttributeType is missing or not an integer")
        }
        guard let type = AttributeType(rawValue: Int(truncatingIfNeeded: rawType)) else {
            throw Failure(description: "\(label): unknown NSAttributeType \(rawType)")
        }
        let attribute: AttributeDescription
        if object.isKind(of: "NSDerivedAttributeDescription") {
            let expression = predicates.expressionFormat(object["NSDerivationExpression"]) ?? ""
            let derived = DerivedAttributeDescription(name: name, type: type, derivationExpression: expression)
            derived.filteringPredicate = predicates.predicateFormat(object["NSFilteringPredicate"])
            attribute = derived
        } else if type == .composite || object.isKind(of: "NSCompositeAttributeDescription") {
            return try composite(object, name: name, label: label, depth: depth)
        } else {
            attribute = AttributeDescription(name: name, type: type)
        }
        try fillAttribute(attribute, object, label: label)
        return attribute
    }

    func fillAttribute(_ attribute: AttributeDescription, _ object: KeyedArchive.Object, label: String) throws {
        let type = attribute.attributeType
        if type == .transformable || type == .undefined {
            attribute.attributeValueClassName = nonEmpty(try archive.string(object["NSAttributeValueClassName"], "\(label): NSAttributeValueClassName"))
        }
        attribute.valueTransformerName = nonEmpty(try archive.string(object["NSValueTransformerName"], "\(label): NSValueTransformerName"))
        if let value = archive.plainValue(object["NSDefaultValue"]), !value.isNull {
            // A default of another type (a string in a numeric attribute, ...) never
            // refuses the model: a string reads as Xcode's defaultValueString would,
            // anything else that does not fit is dropped, with a warning.
            if let coerced = AttributeValueCoercion.coerce(value, to: type) {
                attribute.defaultValue = coerced
            } else if case .string(let text) = value {
                attribute.defaultValue = ModelLoadingLog.defaultValue(text, type: type, entity: nil, attribute: attribute.name,
                                                                      label: label)
            } else if type == .transformable || type == .undefined {
                attribute.defaultValue = value
            } else {
                ModelLoadingLog.warning("Default value \(value) of \(label) is not a \(type.xcodeName); the attribute has no default",
                                        entity: nil, property: attribute.name)
            }
        }
        var flags: Int64 = 0
        if case .int(let value) = object["NSFlagsKey"] { flags = value }
        attribute.allowsExternalBinaryDataStorage = flags & 0x4 != 0
        attribute.preservesValueInHistoryOnDeletion = flags & 0x10 != 0
        attribute.isIndexed = try bool(object["NSIsIndexed"], "\(label): NSIsIndexed")
    }

    func composite(_ object: KeyedArchive.Object, name: String, label: String, depth: Int) throws -> AttributeDescription {
        var elements: [AttributeDescription] = []
        for element in try archive.elements(object["NSElements"], "\(label): NSElements") {
            guard case .object(let elementObject) = try archive.resolve(element), elementObject.isKind(of: "NSAttributeDescription"),
                  let elementName = try archive.string(elementObject["NSPropertyName"], "\(label): element name") else { continue }
            let attribute = try attribute(elementObject, name: elementName, label: "\(label), element '\(elementName)'", depth: depth + 1)
            try readCommon(elementObject, into: attribute, label: "\(label), element '\(elementName)'")
            elements.append(attribute)
        }
        let composite = CompositeAttributeDescription(name: name, elements: elements)
        try fillAttribute(composite, object, label: label)
        return composite
    }

    func relationship(_ object: KeyedArchive.Object, name: String, label: String) throws -> RelationshipDescription {
        var destination = try archive.string(object["_NSDestinationEntityName"], "\(label): _NSDestinationEntityName")
        if destination == nil, case .object(let entity) = try archive.resolve(object["NSDestinationEntity"]) {
            destination = try archive.string(entity["NSEntityName"], "\(label): destination entity name")
        }
        var inverse = try archive.string(object["_NSInverseRelationshipName"], "\(label): _NSInverseRelationshipName")
        if inverse == nil, case .object(let relationship) = try archive.resolve(object["NSInverseRelationship"]) {
            inverse = try archive.string(relationship["NSPropertyName"], "\(label): inverse relationship name")
        }
        let relationship = RelationshipDescription(name: name, destination: nonEmpty(destination), inverse: nonEmpty(inverse))
        // Counts are NSUInteger in Core Data: recent frameworks (1344 and later) write
        // an unbounded to-many's maximum as -1 (all bits set), older ones as 0. A
        // negative maximum reads as unbounded (0), a negative minimum as none (0).
        let minCount = try int(object["NSMinCount"], "\(label): NSMinCount") ?? 0
        let maxCount = try int(object["NSMaxCount"], "\(label): NSMaxCount") ?? 1
        relationship.minCount = RelationshipDescription.storedCount(minCount)
        relationship.maxCount = RelationshipDescription.storedCount(maxCount)
        if let rawRule = try int(object["NSDeleteRule"], "\(label): NSDeleteRule") {
            guard let rule = DeleteRule(rawValue: rawRule) else {
                throw Failure(description: "\(label): unknown NSDeleteRule \(rawRule)")
            }
            relationship.deleteRule = rule
        }
        return relationship
    }

    // MARK: Fetch requests and indexes

    func fetchRequest(_ reference: PropertyListValue, label: String, entityByUID: [Int: EntityDescription],
                      fallbackEntityName: String? = nil) throws -> FetchRequestTemplate? {
        guard case .object(let request) = try archive.resolve(reference), request.isKind(of: "NSFetchRequest") else {
            return fallbackEntityName.map { FetchRequestTemplate(entityName: $0) }
        }
        var entityName: String?
        switch try archive.resolve(request["NSEntity"]) {
        case .string(let name): entityName = name
        case .object(let entity): entityName = try archive.string(entity["NSEntityName"], "\(label): entity name")
        default: break
        }
        if entityName == nil { entityName = try archive.string(request["NSEntityName"], "\(label): NSEntityName") }
        guard let entityName = entityName ?? fallbackEntityName else {
            throw Failure(description: "\(label) names no entity")
        }
        var template = FetchRequestTemplate(entityName: entityName)
        if case .null = request["NSPredicate"] {} else {
            template.predicateFormat = predicates.predicateFormat(request["NSPredicate"])
        }
        template.fetchLimit = try int(request["NSFetchLimit"], "\(label): NSFetchLimit") ?? 0
        template.fetchOffset = try int(request["NSFetchOffset"], "\(label): NSFetchOffset") ?? 0
        template.fetchBatchSize = try int(request["NSBatchSize"], "\(label): NSBatchSize") ?? 0
        template.resultType = try int(request["NSResultType"], "\(label): NSResultType") ?? 0
        if try bool(request["NSHasFetchRequestFlags"], "\(label): NSHasFetchRequestFlags"),
           let flags = try int(request["NSFetchRequestFlags"], "\(label): NSFetchRequestFlags") {
            template.returnsDistinctResults = flags & 0x1 != 0
            template.includesSubentities = flags & 0x2 != 0
            template.includesPropertyValues = flags & 0x4 != 0
            template.returnsObjectsAsFaults = flags & 0x8 != 0
            template.includesPendingChanges = flags & 0x10 != 0
        }
        return template
    }

    func fetchIndex(_ reference: PropertyListValue, _ owner: String) throws -> FetchIndexDescription? {
        guard case .object(let object) = try archive.resolve(reference), object.isKind(of: "NSFetchIndexDescription") else { return nil }
        guard let name = try archive.string(object["NSIndexName"], "\(owner): NSIndexName") else {
            throw Failure(description: "\(owner): a fetch index (object \(object.uid)) has no NSIndexName")
        }
        let label = "\(owner), fetch index '\(name)'"
        var elements: [FetchIndexElementDescription] = []
        for element in try archive.elements(object["NSIndexElements"], "\(label): NSIndexElements") {
            guard case .object(let elementObject) = try archive.resolve(element) else { continue }
            let ascending = elementObject.fields["NSAscending"] == nil ? true : try bool(elementObject["NSAscending"], "\(label): NSAscending")
            let type = try int(elementObject["NSFetchIndexElementType"], "\(label): NSFetchIndexElementType") ?? 0
            let collation: FetchIndexElementDescription.CollationType = type == 1 ? .rTree : .binary
            // An element indexing an expression (Photos' models, framework 973 and
            // later) points at an expression description through NSIndexedProperty;
            // its NSPropertyName is a made-up name (`expression1`), not a property.
            if case .object(let indexed) = try archive.resolve(elementObject["NSIndexedProperty"]),
               indexed.isKind(of: "NSExpressionDescription") {
                let name = try archive.string(indexed["NSPropertyName"], "\(label): expression name")
                let expression = predicates.expressionFormat(indexed["NSExpression"]) ?? name ?? "self"
                elements.append(FetchIndexElementDescription(expression: expression, expressionType: nil,
                                                             collationType: collation, ascending: ascending))
                continue
            }
            var propertyName = try archive.string(elementObject["NSPropertyName"], "\(label): NSPropertyName")
            if propertyName == nil, case .object(let property) = try archive.resolve(elementObject["NSProperty"]) {
                propertyName = try archive.string(property["NSPropertyName"], "\(label): property name")
            }
            if let propertyName {
                elements.append(FetchIndexElementDescription(property: propertyName, collationType: collation, ascending: ascending))
            } else if let expression = predicates.expressionFormat(elementObject["NSExpression"]) {
                elements.append(FetchIndexElementDescription(expression: expression, expressionType: nil,
                                                             collationType: collation, ascending: ascending))
            }
        }
        var partial: String?
        if case .null = object["NSPartialIndexPredicate"] {} else {
            partial = predicates.predicateFormat(object["NSPartialIndexPredicate"])
        }
        return FetchIndexDescription(name: name, elements: elements, partialIndexPredicate: partial)
    }

    // MARK: Values

    /// Lists of property names (compound indexes, uniqueness constraints): each
    /// element a string or a property description. Empty lists are dropped.
    func nameLists(_ reference: PropertyListValue, _ what: String) throws -> [[String]] {
        var lists: [[String]] = []
        for list in try archive.elements(reference, what) {
            var names: [String] = []
            for element in try archive.elements(list, what) {
                switch try archive.resolve(element) {
                case .string(let name): names.append(name)
                case .object(let object):
                    if let name = try archive.string(object["NSPropertyName"], "\(what): property name") { names.append(name) }
                default:
                    throw Failure(description: "\(what) holds \(try archive.resolve(element).kindDescription), not a property name")
                }
            }
            if !names.isEmpty { lists.append(names) }
        }
        return lists
    }

    func userInfo(_ reference: PropertyListValue, _ owner: String) throws -> [String: String] {
        var info: [String: String] = [:]
        for entry in try archive.entries(reference, "\(owner): NSUserInfo") {
            guard let key = try archive.string(entry.key, "\(owner): a user info key") else { continue }
            switch archive.plainValue(entry.value) {
            case .string(let text)?: info[key] = text
            case .int(let number)?: info[key] = String(number)
            case .double(let number)?: info[key] = String(number)
            case .bool(let flag)?: info[key] = flag ? "YES" : "NO"
            default: info[key] = ""
            }
        }
        return info
    }

    func bool(_ value: PropertyListValue, _ what: String) throws -> Bool {
        switch try archive.resolve(value) {
        case .null: return false
        case .bool(let flag): return flag
        case .int(let number): return number != 0
        case let other: throw Failure(description: "\(what) is \(other.kindDescription), not a Boolean")
        }
    }

    func int(_ value: PropertyListValue, _ what: String) throws -> Int? {
        switch try archive.resolve(value) {
        case .null: return nil
        case .int(let number): return Int(truncatingIfNeeded: number)
        case .bool(let flag): return flag ? 1 : 0
        case let other: throw Failure(description: "\(what) is \(other.kindDescription), not an integer")
        }
    }

    func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
