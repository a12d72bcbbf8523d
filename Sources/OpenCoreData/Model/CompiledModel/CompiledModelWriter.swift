import Foundation
import OpenCoreDataPredicates

/// Writes a ``ManagedObjectModel`` as a compiled model: the `NSKeyedArchiver`
/// archive of an `NSManagedObjectModel` that `.mom` files hold (and, raw-DEFLATE
/// compressed, a store's `Z_MODELCACHE`). The counterpart of ``CompiledModelReader``.
///
/// The archive uses Apple's classes and keys (`NSEntities` as an
/// `NSKnownKeysDictionary1`, `NSEntityDescription`, `NSAttributeDescription`,
/// `NSRelationshipDescription`, `NSFetchedPropertyDescription`,
/// `NSDerivedAttributeDescription`, `NSCompositeAttributeDescription`, packed `_P`
/// flags, `NSFlagsKey`, `NSUniqueTuples`, `NSCompoundIndexes`,
/// `NSFetchIndexDescription`, `NSFetchRequest`, archived `NSPredicate` and
/// `NSExpression` objects).
///
/// Subentities are written the way the Core Data caches in the fixture stores are:
/// each entity's `NSProperties` lists **all** its properties, inherited ones as
/// separate copies whose `NSEntity` is the subentity (no
/// `_NSPropertyDescriptionProxy`). Property dictionaries are
/// `NSKnownKeysDictionary1`, so property order survives a round trip.
///
/// Predicates (validation rules, fetch request templates, fetched properties,
/// partial indexes, derivations) are parsed and archived as predicate objects; a
/// predicate this writer can't archive (subqueries, conditionals, casts, set
/// operations...) is left out, and a validation rule's then becomes
/// `TRUEPREDICATE` so warnings keep their positions.
///
/// ```swift
/// let mom = try model.compiledModelData()
/// try mom.write(to: URL(fileURLWithPath: "Model.mom"))
/// let blob = try CompiledModelWriter().modelCacheData(for: model)   // for Z_MODELCACHE
/// ```
public struct CompiledModelWriter: Sendable {
    public init() {}

    /// The keyed archive of `model` (a `.mom` file's content).
    ///
    /// - Parameter model: The model to write.
    /// - Returns: The archive, readable by ``CompiledModelReader/read(archiveData:)``.
    public func archiveData(for model: ManagedObjectModel) throws -> Data {
        var encoder = ModelArchiveEncoder()
        let root = encoder.encode(model)
        return encoder.builder.archive(root: root)
    }

    /// The raw-DEFLATE compressed archive, as stored in `Z_MODELCACHE.Z_CONTENT`.
    ///
    /// - Parameter model: The model to write.
    /// - Returns: The compressed archive, readable by
    ///   ``CompiledModelReader/read(modelCacheData:)``.
    public func modelCacheData(for model: ManagedObjectModel) throws -> Data {
        Deflate.compress(try archiveData(for: model))
    }
}

extension ManagedObjectModel {
    /// The model as a compiled `.mom` file's content: an `NSKeyedArchiver` archive
    /// of an `NSManagedObjectModel` (see ``CompiledModelWriter``).
    ///
    /// ```swift
    /// let data = try model.compiledModelData()
    /// let again = try ManagedObjectModel(compiledModelData: data)
    /// again.entityVersionHashesByName == model.entityVersionHashesByName   // true
    /// ```
    ///
    /// - Returns: The archive, readable by ``init(compiledModelData:)``.
    public func compiledModelData() throws -> Data {
        try CompiledModelWriter().archiveData(for: self)
    }
}

// MARK: - Archive building

/// Builds `$objects` for an `NSKeyedArchiver` archive.
struct KeyedArchiveBuilder {
    private(set) var objects: [PropertyListValue] = [.string("$null")]
    private var classIndexes: [String: Int] = [:]
    private var stringIndexes: [String: Int] = [:]

    static let null = PropertyListValue.uid(0)

    /// Reserves a slot for an object filled later (for reference cycles).
    mutating func reserve() -> Int {
        objects.append(.null)
        return objects.count - 1
    }

    /// Fills a reserved slot with an object of `classes` (most specific first).
    mutating func fill(_ index: Int, classes: [String], _ fields: [String: PropertyListValue]) {
        var fields = fields
        fields["$class"] = .uid(classReference(classes))
        objects[index] = .dictionary(fields)
    }

    /// Adds an object and returns its reference.
    mutating func object(classes: [String], _ fields: [String: PropertyListValue]) -> PropertyListValue {
        let index = reserve()
        fill(index, classes: classes, fields)
        return .uid(index)
    }

    private mutating func classReference(_ classes: [String]) -> Int {
        if let index = classIndexes[classes[0]] { return index }
        objects.append(.dictionary(["$classname": .string(classes[0]), "$classes": .array(classes.map { .string($0) })]))
        classIndexes[classes[0]] = objects.count - 1
        return objects.count - 1
    }

    /// A shared string object, `$null` for nil.
    mutating func string(_ text: String?) -> PropertyListValue {
        guard let text else { return Self.null }
        if let index = stringIndexes[text] { return .uid(index) }
        objects.append(.string(text))
        stringIndexes[text] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// A scalar object (number, Boolean, data) stored directly in `$objects`.
    mutating func scalar(_ value: PropertyListValue) -> PropertyListValue {
        objects.append(value)
        return .uid(objects.count - 1)
    }

    mutating func array(_ elements: [PropertyListValue], className: String = "NSArray") -> PropertyListValue {
        let classes = className == "NSArray" ? ["NSArray", "NSObject"] : [className, "NSArray", "NSObject"]
        return object(classes: classes, ["NS.objects": .array(elements)])
    }

    mutating func set(_ elements: [PropertyListValue]) -> PropertyListValue {
        object(classes: ["NSMutableSet", "NSSet", "NSObject"], ["NS.objects": .array(elements)])
    }

    mutating func dictionary(_ entries: [(String, PropertyListValue)]) -> PropertyListValue {
        let keys = entries.map { string($0.0) }
        return object(classes: ["NSDictionary", "NSObject"], ["NS.keys": .array(keys), "NS.objects": .array(entries.map(\.1))])
    }

    /// An `NSKnownKeysDictionary1`, as Core Data archives `NSEntities` and
    /// `NSProperties` (ordered keys in an `NSKnownKeysMappingStrategy1`).
    mutating func knownKeysDictionary(_ entries: [(String, PropertyListValue)]) -> PropertyListValue {
        let keys = array(entries.map { string($0.0) })
        let mapping = object(classes: ["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"],
                             ["keys": keys, "length": .int(Int64(entries.count)), "version": .int(1)])
        let values = array(entries.map(\.1))
        return object(classes: ["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
                      ["searchMapping": mapping, "values": values, "version": .int(1),
                       "emptyToken": string("__empty_slot_token_4c24_98dc_ac1e_b773__")])
    }

    /// The whole archive as a binary property list.
    func archive(root: PropertyListValue) -> Data {
        let plist: PropertyListValue = .dictionary([
            "$archiver": .string("NSKeyedArchiver"),
            "$version": .int(100_000),
            "$top": .dictionary(["root": root]),
            "$objects": .array(objects),
        ])
        let order = ["$version", "$archiver", "$top", "$objects"]
        var writer = BinaryPropertyListWriter()
        writer.keyOrder = { keys in
            keys.sorted { (order.firstIndex(of: $0) ?? order.count, $0) < (order.firstIndex(of: $1) ?? order.count, $1) }
        }
        return writer.write(plist)
    }
}

// MARK: - Model encoding

private struct ModelArchiveEncoder {
    var builder = KeyedArchiveBuilder()
    /// Reserved entity objects by entity name.
    var entityUIDs: [String: Int] = [:]
    /// Reserved property objects by entity name and property name (inherited copies
    /// included).
    var propertyUIDs: [String: [String: Int]] = [:]
    var modelUID = 0

    static let propertyClasses = ["NSPropertyDescription", "NSObject"]

    mutating func encode(_ model: ManagedObjectModel) -> PropertyListValue {
        modelUID = builder.reserve()
        for entity in model.entities {
            entityUIDs[entity.name] = builder.reserve()
        }
        for entity in model.entities {
            var uids: [String: Int] = [:]
            for property in Self.archivedProperties(of: entity) { uids[property.name] = builder.reserve() }
            propertyUIDs[entity.name] = uids
        }
        var entities: [(String, PropertyListValue)] = []
        for entity in model.entities {
            encodeEntity(entity, model: model)
            entities.append((entity.name, .uid(entityUIDs[entity.name]!)))
        }
        var fields: [String: PropertyListValue] = [:]
        fields["NSEntities"] = builder.knownKeysDictionary(entities)
        fields["NSVersionIdentifiers"] = builder.set(model.versionIdentifiers.sorted().map { builder.string($0) })
        let templateNames = model.fetchRequestTemplatesByName.keys.sorted()
        if templateNames.isEmpty {
            fields["NSFetchRequestTemplates"] = KeyedArchiveBuilder.null
        } else {
            var templates: [(String, PropertyListValue)] = []
            for name in templateNames {
                guard let template = model.fetchRequestTemplatesByName[name] else { continue }
                templates.append((name, fetchRequest(template)))
            }
            fields["NSFetchRequestTemplates"] = builder.dictionary(templates)
        }
        let configurations = model.configurations.filter { $0 != ManagedObjectModel.defaultConfigurationName }
        if !configurations.isEmpty {
            var entries: [(String, PropertyListValue)] = []
            for name in configurations {
                let members = (model.entities(forConfigurationName: name) ?? []).compactMap { entityUIDs[$0.name] }
                entries.append((name, builder.array(members.map { .uid($0) })))
            }
            fields["NSConfigurations"] = builder.dictionary(entries)
        }
        builder.fill(modelUID, classes: ["NSManagedObjectModel", "NSObject"], fields)
        return .uid(modelUID)
    }

    /// Every property of an entity, inherited ones first; an overriding property
    /// replaces the inherited one in place.
    static func archivedProperties(of entity: EntityDescription) -> [PropertyDescription] {
        var result: [PropertyDescription] = []
        var positions: [String: Int] = [:]
        for property in entity.allProperties {
            if let position = positions[property.name] {
                result[position] = property
            } else {
                positions[property.name] = result.count
                result.append(property)
            }
        }
        return result
    }

    mutating func encodeEntity(_ entity: EntityDescription, model: ManagedObjectModel) {
        var fields: [String: PropertyListValue] = [:]
        fields["NSEntityName"] = builder.string(entity.name)
        let className = entity.managedObjectClassName
        fields["NSClassNameForEntity"] = className == "NSManagedObject" || className.isEmpty ? KeyedArchiveBuilder.null : builder.string(className)
        fields["NSManagedObjectModel"] = .uid(modelUID)
        if entity.isAbstract { fields["NSIsAbstract"] = .bool(true) }
        fields["NSUserInfo"] = userInfo(entity.userInfo)
        fields["NSVersionHashModifier"] = builder.string(entity.versionHashModifier)
        fields["NSRenamingIdentifier"] = builder.string(entity.renamingIdentifier ?? entity.name)
        if let parent = entity.superentity, let uid = entityUIDs[parent.name] {
            fields["NSSuperentity"] = .uid(uid)
        } else {
            fields["NSSuperentity"] = KeyedArchiveBuilder.null
        }
        let children = entity.subentities.compactMap { child in entityUIDs[child.name].map { (child.name, PropertyListValue.uid($0)) } }
        fields["NSSubentities"] = builder.dictionary(children)
        fields["NSUniqueTuples"] = nameLists(entity.uniquenessConstraints, className: "NSMutableArray")
        fields["NSCompoundIndexes"] = nameLists(entity.compoundIndexes, className: "NSArray")
        if !entity.indexes.isEmpty {
            let entityReference = PropertyListValue.uid(entityUIDs[entity.name]!)
            fields["NSFetchIndexDescriptions"] = builder.array(entity.indexes.map { fetchIndex($0, entity: entityReference) })
        }
        var properties: [(String, PropertyListValue)] = []
        for property in Self.archivedProperties(of: entity) {
            guard let uid = propertyUIDs[entity.name]?[property.name] else { continue }
            encodeProperty(property, into: uid, owner: entity, model: model)
            properties.append((property.name, .uid(uid)))
        }
        fields["NSProperties"] = builder.knownKeysDictionary(properties)
        builder.fill(entityUIDs[entity.name]!, classes: ["NSEntityDescription", "NSObject"], fields)
    }

    mutating func nameLists(_ lists: [[String]], className: String) -> PropertyListValue {
        let elements = lists.map { list in builder.array(list.map { builder.string($0) }, className: className) }
        return builder.array(elements, className: className)
    }

    mutating func userInfo(_ info: [String: String]) -> PropertyListValue {
        builder.object(classes: ["NSMutableDictionary", "NSDictionary", "NSObject"],
                       ["NS.keys": .array(info.keys.sorted().map { builder.string($0) }),
                        "NS.objects": .array(info.keys.sorted().map { builder.string(info[$0]) })])
    }

    // MARK: Properties

    mutating func encodeProperty(_ property: PropertyDescription, into uid: Int, owner: EntityDescription?, model: ManagedObjectModel) {
        var fields = commonFields(property, owner: owner)
        var classes = Self.propertyClasses
        if let relationship = property as? RelationshipDescription {
            classes.insert("NSRelationshipDescription", at: 0)
            let destinationName = relationship.destinationEntityName
            fields["_NSDestinationEntityName"] = builder.string(destinationName)
            fields["NSDestinationEntity"] = destinationName.flatMap { entityUIDs[$0] }.map { .uid($0) } ?? KeyedArchiveBuilder.null
            fields["_NSInverseRelationshipName"] = builder.string(relationship.inverseRelationshipName)
            if let destinationName, let inverse = relationship.inverseRelationshipName,
               let inverseUID = propertyUIDs[destinationName]?[inverse] {
                fields["NSInverseRelationship"] = .uid(inverseUID)
            } else {
                fields["NSInverseRelationship"] = KeyedArchiveBuilder.null
            }
            fields["NSDeleteRule"] = .int(Int64(relationship.deleteRule.rawValue))
            fields["NSMinCount"] = .int(Int64(relationship.minCount))
            fields["NSMaxCount"] = .int(Int64(relationship.maxCount))
        } else if let fetched = property as? FetchedPropertyDescription {
            classes.insert("NSFetchedPropertyDescription", at: 0)
            if let request = fetched.fetchRequest {
                fields["NSFetchRequest"] = fetchRequest(request)
                fields["_NSFetchRequestEntityName"] = builder.string(request.entityName)
            }
        } else if let attribute = property as? AttributeDescription {
            classes = attributeClasses(attribute)
            attributeFields(attribute, into: &fields, owner: owner, model: model)
        }
        builder.fill(uid, classes: classes, fields)
    }

    func attributeClasses(_ attribute: AttributeDescription) -> [String] {
        var classes = ["NSAttributeDescription"] + Self.propertyClasses
        if attribute is DerivedAttributeDescription { classes.insert("NSDerivedAttributeDescription", at: 0) }
        if attribute is CompositeAttributeDescription { classes.insert("NSCompositeAttributeDescription", at: 0) }
        return classes
    }

    mutating func attributeFields(_ attribute: AttributeDescription, into fields: inout [String: PropertyListValue],
                                  owner: EntityDescription?, model: ManagedObjectModel) {
        let type = attribute.attributeType
        fields["NSAttributeType"] = .int(Int64(type.rawValue))
        fields["NSAttributeValueClassName"] = builder.string(attribute.attributeValueClassName ?? Self.valueClassName(type))
        fields["NSValueTransformerName"] = builder.string(attribute.valueTransformerName)
        fields["NSDefaultValue"] = attribute.defaultValue.map { value($0) } ?? KeyedArchiveBuilder.null
        if attribute.isIndexed { fields["NSIsIndexed"] = .bool(true) }
        var flags: Int64 = 0
        if attribute.allowsExternalBinaryDataStorage { flags |= 0x4 }
        if attribute.preservesValueInHistoryOnDeletion { flags |= 0x10 }
        fields["NSFlagsKey"] = .int(flags)
        if let derived = attribute as? DerivedAttributeDescription {
            fields["NSDerivationExpression"] = expression(format: derived.derivationExpression) ?? KeyedArchiveBuilder.null
            if let filter = derived.filteringPredicate, let archived = predicate(format: filter) {
                fields["NSFilteringPredicate"] = archived
            }
        }
        if let composite = attribute as? CompositeAttributeDescription {
            var elements: [PropertyListValue] = []
            for element in composite.elements {
                let uid = builder.reserve()
                encodeProperty(element, into: uid, owner: nil, model: model)
                elements.append(.uid(uid))
            }
            fields["NSElements"] = builder.array(elements)
        }
    }

    static func valueClassName(_ type: AttributeType) -> String? {
        switch type {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: return "NSNumber"
        case .decimal: return "NSDecimalNumber"
        case .string: return "NSString"
        case .date: return "NSDate"
        case .binaryData: return "NSData"
        case .uuid: return "NSUUID"
        case .uri: return "NSURL"
        default: return nil
        }
    }

    mutating func commonFields(_ property: PropertyDescription, owner: EntityDescription?) -> [String: PropertyListValue] {
        var fields: [String: PropertyListValue] = [:]
        fields["NSPropertyName"] = builder.string(property.name)
        fields["NSEntity"] = owner.flatMap { entityUIDs[$0.name] }.map { .uid($0) } ?? KeyedArchiveBuilder.null
        var packed: Int64 = 0x1
        if property.isOptional { fields["NSIsOptional"] = .bool(true); packed |= 0x2 }
        if property.isReadOnly { fields["NSIsReadOnly"] = .bool(true); packed |= 0x4 }
        if property.isTransient { fields["NSIsTransient"] = .bool(true); packed |= 0x8 }
        if property.isIndexedBySpotlight { fields["NSIndexedBySpotlight"] = .bool(true); packed |= 0x100 }
        if property.isStoredInExternalRecord { fields["NSIsStoredInTruth"] = .bool(true); packed |= 0x200 }
        if let relationship = property as? RelationshipDescription, relationship.isOrdered {
            fields["NSIsOrdered"] = .bool(true); packed |= 0x400
        }
        if let attribute = property as? AttributeDescription, attribute.allowsCloudEncryption {
            fields["NSAllowsCloudEncryption"] = .bool(true); packed |= 0x800
        }
        fields["NSRenamingIdentifier"] = builder.string(property.renamingIdentifier ?? property.name)
        if property.validationRules.isEmpty {
            packed |= 0x10 | 0x20
        } else {
            let predicates = property.validationRules.map { rule in
                predicate(format: rule.predicateFormat) ?? builder.object(classes: ["NSTruePredicate", "NSPredicate", "NSObject"], [:])
            }
            fields["NSValidationPredicates"] = builder.array(predicates)
            fields["NSValidationWarnings"] = builder.array(property.validationRules.map { builder.string($0.warning) })
        }
        if property.userInfo.isEmpty { packed |= 0x40 } else { fields["NSUserInfo"] = userInfo(property.userInfo) }
        if let modifier = property.versionHashModifier, !modifier.isEmpty {
            fields["NSVersionHashModifier"] = builder.string(modifier)
        } else {
            packed |= 0x80
        }
        fields["_P"] = .int(packed)
        return fields
    }

    // MARK: Fetch requests and indexes

    mutating func fetchRequest(_ template: FetchRequestTemplate) -> PropertyListValue {
        var fields: [String: PropertyListValue] = [:]
        fields["NSEntity"] = entityUIDs[template.entityName].map { .uid($0) } ?? builder.string(template.entityName)
        fields["NSEntityName"] = builder.string(template.entityName)
        if let format = template.predicateFormat, let archived = predicate(format: format) {
            fields["NSPredicate"] = archived
        }
        fields["NSFetchLimit"] = .int(Int64(template.fetchLimit))
        fields["NSFetchOffset"] = .int(Int64(template.fetchOffset))
        fields["NSBatchSize"] = .int(Int64(template.fetchBatchSize))
        fields["NSResultType"] = .int(Int64(template.resultType))
        var flags: Int64 = 0
        if template.returnsDistinctResults { flags |= 0x1 }
        if template.includesSubentities { flags |= 0x2 }
        if template.includesPropertyValues { flags |= 0x4 }
        if template.returnsObjectsAsFaults { flags |= 0x8 }
        if template.includesPendingChanges { flags |= 0x10 }
        fields["NSHasFetchRequestFlags"] = .bool(true)
        fields["NSFetchRequestFlags"] = .int(flags)
        return builder.object(classes: ["NSFetchRequest", "NSPersistentStoreRequest", "NSObject"], fields)
    }

    mutating func fetchIndex(_ index: FetchIndexDescription, entity: PropertyListValue) -> PropertyListValue {
        let uid = builder.reserve()
        var elements: [PropertyListValue] = []
        for element in index.elements {
            var fields: [String: PropertyListValue] = [:]
            if let name = element.propertyName {
                fields["NSPropertyName"] = builder.string(name)
            } else if let text = element.expression, let archived = expression(format: text) {
                fields["NSExpression"] = archived
            } else {
                continue
            }
            fields["NSFetchIndexElementType"] = .int(element.collationType == .rTree ? 1 : 0)
            fields["NSAscending"] = .bool(element.isAscending)
            fields["NSFetchIndexDescription"] = .uid(uid)
            elements.append(builder.object(classes: ["NSFetchIndexElementDescription", "NSObject"], fields))
        }
        var fields: [String: PropertyListValue] = [:]
        fields["NSIndexName"] = builder.string(index.name)
        fields["NSIndexElements"] = builder.array(elements)
        fields["NSEntity"] = entity
        if let partial = index.partialIndexPredicate, let archived = predicate(format: partial) {
            fields["NSPartialIndexPredicate"] = archived
        }
        builder.fill(uid, classes: ["NSFetchIndexDescription", "NSObject"], fields)
        return .uid(uid)
    }

    // MARK: Values

    /// An attribute value as an archived Foundation object.
    mutating func value(_ value: AttributeValue) -> PropertyListValue {
        switch value {
        case .null: return KeyedArchiveBuilder.null
        case .bool(let flag): return builder.scalar(.bool(flag))
        case .int(let number): return builder.scalar(.int(number))
        case .double(let number): return builder.scalar(.real(number))
        case .string(let text): return builder.string(text)
        case .data(let data): return builder.scalar(.data(data))
        case .date(let date):
            return builder.object(classes: ["NSDate", "NSObject"], ["NS.time": .real(date.timeIntervalSinceReferenceDate)])
        case .uuid(let uuid):
            let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
            return builder.object(classes: ["NSUUID", "NSObject"], ["NS.uuidbytes": .data(bytes)])
        case .uri(let url):
            return builder.object(classes: ["NSURL", "NSObject"], ["NS.base": KeyedArchiveBuilder.null, "NS.relative": builder.string(url.absoluteString)])
        case .decimal(let decimal):
            return self.decimal(decimal)
        case .array(let elements):
            return builder.array(elements.map { self.value($0) })
        case .dictionary(let entries):
            return builder.dictionary(entries.sorted { $0.key < $1.key }.map { ($0.key, self.value($0.value)) })
        }
    }

    /// An `NSDecimalNumber`: the mantissa as eight little-endian 16-bit words.
    mutating func decimal(_ decimal: Decimal) -> PropertyListValue {
        builder.object(classes: ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"],
                       KeyedArchiveWriter.decimalFields(decimal))
    }

    // MARK: Predicates

    mutating func predicate(format: String) -> PropertyListValue? {
        guard let parsed = try? CorePredicate(format: format) else { return nil }
        return predicate(parsed)
    }

    mutating func expression(format: String) -> PropertyListValue? {
        guard let parsed = try? CoreExpression(format: format) else { return nil }
        return expression(parsed)
    }

    mutating func predicate(_ predicate: CorePredicate) -> PropertyListValue? {
        switch predicate {
        case .constant(let flag):
            return builder.object(classes: [flag ? "NSTruePredicate" : "NSFalsePredicate", "NSPredicate", "NSObject"], [:])
        case .and(let parts): return compound(1, parts)
        case .or(let parts): return compound(2, parts)
        case .not(let inner): return compound(0, [inner])
        case .comparison(let comparison):
            if comparison.modifier == .none {
                var any = comparison
                any.modifier = .any
                return compound(0, [.comparison(any)])
            }
            guard let left = expression(comparison.leftExpression), let right = expression(comparison.rightExpression),
                  let (type, className) = Self.operatorInfo(comparison.operatorType) else { return nil }
            var options: Int64 = 0
            if comparison.options.contains(.caseInsensitive) { options |= 1 }
            if comparison.options.contains(.diacriticInsensitive) { options |= 2 }
            if comparison.options.contains(.normalized) { options |= 4 }
            if comparison.options.contains(.localeSensitive) { options |= 8 }
            let modifier: Int64 = comparison.modifier == .any ? 1 : comparison.modifier == .all ? 2 : 0
            var operatorFields: [String: PropertyListValue] = ["NSOperatorType": .int(type), "NSModifier": .int(modifier)]
            if options != 0 { operatorFields["NSOptions"] = .int(options) }
            let operatorObject = builder.object(classes: [className, "NSPredicateOperator", "NSObject"], operatorFields)
            return builder.object(classes: ["NSComparisonPredicate", "NSPredicate", "NSObject"], [
                "NSLeftExpression": left, "NSRightExpression": right, "NSPredicateOperator": operatorObject,
            ])
        }
    }

    mutating func compound(_ type: Int64, _ parts: [CorePredicate]) -> PropertyListValue? {
        var archived: [PropertyListValue] = []
        for part in parts {
            guard let element = predicate(part) else { return nil }
            archived.append(element)
        }
        return builder.object(classes: ["NSCompoundPredicate", "NSPredicate", "NSObject"], [
            "NSCompoundPredicateType": .int(type), "NSSubpredicates": builder.array(archived),
        ])
    }

    /// `NSPredicateOperatorType` and the operator class. [class names: GUESS]
    static func operatorInfo(_ type: ComparisonOperator) -> (Int64, String)? {
        switch type {
        case .lessThan: return (0, "NSComparisonPredicateOperator")
        case .lessThanOrEqualTo: return (1, "NSComparisonPredicateOperator")
        case .greaterThan: return (2, "NSComparisonPredicateOperator")
        case .greaterThanOrEqualTo: return (3, "NSComparisonPredicateOperator")
        case .equalTo: return (4, "NSEqualityPredicateOperator")
        case .notEqualTo: return (5, "NSEqualityPredicateOperator")
        case .matches: return (6, "NSMatchingPredicateOperator")
        case .like: return (7, "NSLikePredicateOperator")
        case .beginsWith: return (8, "NSBeginsWithPredicateOperator")
        case .endsWith: return (9, "NSEndsWithPredicateOperator")
        case .in: return (10, "NSInPredicateOperator")
        case .contains: return (99, "NSContainsPredicateOperator")
        case .between: return (100, "NSBetweenPredicateOperator")
        case .conformsTo, .utiEquals: return nil
        }
    }

    mutating func expression(_ expression: CoreExpression) -> PropertyListValue? {
        let expressionClasses = ["NSExpression", "NSObject"]
        switch expression {
        case .constant(let constant):
            return builder.object(classes: ["NSConstantValueExpression"] + expressionClasses,
                                  ["NSConstantValue": value(constant), "NSExpressionType": .int(0)])
        case .evaluatedObject:
            return builder.object(classes: ["NSSelfExpression"] + expressionClasses, ["NSExpressionType": .int(1)])
        case .variable(let name):
            return builder.object(classes: ["NSVariableExpression"] + expressionClasses,
                                  ["NSVariable": builder.string(name), "NSExpressionType": .int(2)])
        case .keyPath(let path):
            return keyPath(path, operand: nil)
        case .member(let operand, let path):
            guard let archivedOperand = self.expression(operand) else { return nil }
            return keyPath(path, operand: archivedOperand)
        case .aggregate(let elements):
            var archived: [PropertyListValue] = []
            for element in elements {
                guard let item = self.expression(element) else { return nil }
                archived.append(item)
            }
            return builder.object(classes: ["NSAggregateExpression"] + expressionClasses,
                                  ["NSCollection": builder.array(archived), "NSExpressionType": .int(14)])
        case .function(let selector, let arguments):
            var archived: [PropertyListValue] = []
            for argument in arguments {
                guard let item = self.expression(argument) else { return nil }
                archived.append(item)
            }
            let operand = builder.object(classes: ["NSConstantValueExpression"] + expressionClasses,
                                         ["NSConstantValue": builder.string("_NSPredicateUtilities"), "NSExpressionType": .int(0)])
            return builder.object(classes: ["NSFunctionExpression"] + expressionClasses, [
                "NSOperand": operand, "NSSelectorName": builder.string(selector),
                "NSArguments": builder.array(archived), "NSExpressionType": .int(4),
            ])
        default:
            return nil
        }
    }

    mutating func keyPath(_ path: String, operand: PropertyListValue?) -> PropertyListValue {
        let expressionClasses = ["NSExpression", "NSObject"]
        let operand = operand ?? builder.object(classes: ["NSSelfExpression"] + expressionClasses, ["NSExpressionType": .int(1)])
        let specifier = builder.object(classes: ["NSKeyPathSpecifierExpression"] + expressionClasses,
                                       ["NSKeyPath": builder.string(path), "NSExpressionType": .int(10)])
        return builder.object(classes: ["NSKeyPathExpression", "NSFunctionExpression"] + expressionClasses, [
            "NSOperand": operand, "NSSelectorName": builder.string("valueForKeyPath:"),
            "NSArguments": builder.array([specifier]), "NSExpressionType": .int(3),
        ])
    }
}
