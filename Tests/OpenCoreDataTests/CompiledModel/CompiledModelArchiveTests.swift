import Foundation
import Testing
import OpenCoreDataPredicates
@testable import OpenCoreData

/// A hand-built archive in the newer compiler's shape (properties in
/// `NSKnownKeysDictionary1`, inherited properties as `_NSPropertyDescriptionProxy`,
/// packed `_P` flags, ordered relationships, uniqueness constraints, fetch indexes,
/// derived attributes, predicates, fetched properties, configurations and
/// templates), which the fixture stores are too old to contain.
@Suite("CompiledModel archive shapes")
struct CompiledModelArchiveTests {
    /// Writes a binary property list (2-byte references, 4-byte offsets).
    struct BinaryPlistWriter {
        private var objects: [[UInt8]] = []

        static func write(_ root: PropertyListValue) -> Data {
            var writer = BinaryPlistWriter()
            _ = writer.add(root)
            var bytes = Array("bplist00".utf8)
            var offsets: [Int] = []
            for object in writer.objects {
                offsets.append(bytes.count)
                bytes += object
            }
            let table = bytes.count
            for offset in offsets { bytes += (0..<4).reversed().map { UInt8(truncatingIfNeeded: offset >> ($0 * 8)) } }
            bytes += [0, 0, 0, 0, 0, 0, 4, 2]
            for value in [writer.objects.count, 0, table] {
                bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
            }
            return Data(bytes)
        }

        private static func header(_ kind: UInt8, _ count: Int) -> [UInt8] {
            if count < 15 { return [kind << 4 | UInt8(count)] }
            return [kind << 4 | 0x0f, 0x13] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> ($0 * 8)) }
        }

        private static func ref(_ index: Int) -> [UInt8] { [UInt8(index >> 8), UInt8(index & 0xff)] }

        mutating func add(_ value: PropertyListValue) -> Int {
            let index = objects.count
            objects.append([])
            var encoded: [UInt8]
            switch value {
            case .null: encoded = [0x00]
            case .bool(let flag): encoded = [flag ? 0x09 : 0x08]
            case .int(let number): encoded = [0x13] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: number >> ($0 * 8)) }
            case .real(let number): encoded = [0x23] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: number.bitPattern >> ($0 * 8)) }
            case .date(let date):
                let bits = date.timeIntervalSinceReferenceDate.bitPattern
                encoded = [0x33] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: bits >> ($0 * 8)) }
            case .data(let data): encoded = BinaryPlistWriter.header(0x4, data.count) + data
            case .string(let string):
                let units = Array(string.utf16)
                if units.allSatisfy({ $0 < 128 }) {
                    encoded = BinaryPlistWriter.header(0x5, units.count) + units.map { UInt8($0) }
                } else {
                    encoded = BinaryPlistWriter.header(0x6, units.count) + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
                }
            case .uid(let uid): encoded = [0x81] + BinaryPlistWriter.ref(uid)
            case .array(let elements), .set(let elements):
                var kind: UInt8 = 0xA
                if case .set = value { kind = 0xC }
                let refs = elements.map { add($0) }
                encoded = BinaryPlistWriter.header(kind, refs.count) + refs.flatMap(BinaryPlistWriter.ref)
            case .dictionary(let dictionary):
                let sorted = dictionary.sorted { $0.key < $1.key }
                let keys = sorted.map { add(.string($0.key)) }
                let values = sorted.map { add($0.value) }
                encoded = BinaryPlistWriter.header(0xD, keys.count) + (keys + values).flatMap(BinaryPlistWriter.ref)
            }
            objects[index] = encoded
            return index
        }
    }

    /// Builds an `NSKeyedArchiver` object table.
    final class ArchiveBuilder {
        var objects: [PropertyListValue] = [.string("$null")]
        private var classIndexes: [String: Int] = [:]
        let null = PropertyListValue.uid(0)

        func reserve() -> Int {
            objects.append(.null)
            return objects.count - 1
        }

        func set(_ index: Int, _ className: String, _ fields: [String: PropertyListValue], classes: [String] = []) {
            var fields = fields
            fields["$class"] = classReference(className, classes: classes)
            objects[index] = .dictionary(fields)
        }

        func object(_ className: String, _ fields: [String: PropertyListValue], classes: [String] = []) -> PropertyListValue {
            let index = reserve()
            set(index, className, fields, classes: classes)
            return .uid(index)
        }

        private func classReference(_ name: String, classes: [String]) -> PropertyListValue {
            if let index = classIndexes[name] { return .uid(index) }
            objects.append(.dictionary(["$classname": .string(name), "$classes": .array(([name] + classes + ["NSObject"]).map { .string($0) })]))
            classIndexes[name] = objects.count - 1
            return .uid(objects.count - 1)
        }

        func string(_ text: String) -> PropertyListValue {
            objects.append(.string(text))
            return .uid(objects.count - 1)
        }

        func array(_ elements: [PropertyListValue]) -> PropertyListValue { object("NSArray", ["NS.objects": .array(elements)]) }
        func set(_ elements: [PropertyListValue]) -> PropertyListValue { object("NSSet", ["NS.objects": .array(elements)]) }
        func dictionary(_ entries: [(String, PropertyListValue)]) -> PropertyListValue {
            object("NSDictionary", ["NS.keys": .array(entries.map { string($0.0) }), "NS.objects": .array(entries.map(\.1))])
        }
        func knownKeys(_ entries: [(String, PropertyListValue)]) -> PropertyListValue {
            let mapping = object("NSKnownKeysMappingStrategy1", ["keys": array(entries.map { string($0.0) }), "length": .int(Int64(entries.count)), "version": .int(1)])
            return object("NSKnownKeysDictionary1", ["searchMapping": mapping, "values": array(entries.map(\.1)),
                                                     "emptyToken": string("__empty_slot_token__"), "version": .int(1)])
        }

        func keyPath(_ path: String) -> PropertyListValue {
            object("NSKeyPathExpression", [
                "NSExpressionType": .int(3),
                "NSOperand": object("NSSelfExpression", ["NSExpressionType": .int(1)], classes: ["NSExpression"]),
                "NSSelectorName": string("valueForKeyPath:"),
                "NSArguments": array([object("NSKeyPathSpecifierExpression", ["NSKeyPath": string(path)], classes: ["NSExpression"])]),
            ], classes: ["NSFunctionExpression", "NSExpression"])
        }
        func constant(_ value: PropertyListValue) -> PropertyListValue {
            object("NSConstantValueExpression", ["NSConstantValue": value, "NSExpressionType": .int(0)], classes: ["NSExpression"])
        }
        func comparison(_ left: PropertyListValue, _ type: Int64, _ right: PropertyListValue, modifier: Int64 = 0) -> PropertyListValue {
            object("NSComparisonPredicate", [
                "NSLeftExpression": left, "NSRightExpression": right,
                "NSPredicateOperator": object("NSPredicateOperator", ["NSOperatorType": .int(type), "NSModifier": .int(modifier)]),
            ], classes: ["NSPredicate"])
        }

        func archive(root: Int) -> Data {
            BinaryPlistWriter.write(.dictionary([
                "$archiver": .string("NSKeyedArchiver"), "$version": .int(100000),
                "$top": .dictionary(["root": .uid(root)]), "$objects": .array(objects),
            ]))
        }
    }

    static func modernArchive() -> Data {
        let b = ArchiveBuilder()
        let modelIndex = b.reserve()
        let person = b.reserve(), employee = b.reserve(), tag = b.reserve()
        let personName = b.reserve(), tags = b.reserve(), tagPerson = b.reserve()

        b.set(personName, "NSAttributeDescription", [
            "NSPropertyName": b.string("name"), "NSEntity": .uid(person), "_P": .int(0x1 | 0x10 | 0x20 | 0x40 | 0x80 | 0x100),
            "NSAttributeType": .int(700), "NSAttributeValueClassName": b.string("NSString"), "NSDefaultValue": b.null,
            "NSValueTransformerName": b.null, "NSFlagsKey": .int(0),
            "NSValidationPredicates": b.array([b.comparison(b.keyPath("length"), 3, b.constant(.int(2)))]),
            "NSValidationWarnings": b.array([b.string("name too short")]),
        ], classes: ["NSPropertyDescription"])
        b.set(tags, "NSRelationshipDescription", [
            "NSPropertyName": b.string("tags"), "NSEntity": .uid(person), "_P": .int(0x1 | 0x2 | 0x400 | 0xF0),
            "NSDestinationEntity": .uid(tag), "_NSDestinationEntityName": b.string("Tag"),
            "NSInverseRelationship": .uid(tagPerson), "_NSInverseRelationshipName": b.string("person"),
            "NSDeleteRule": .int(2), "NSMinCount": .int(0), "NSMaxCount": .int(0),
        ], classes: ["NSPropertyDescription"])
        let derived = b.object("NSDerivedAttributeDescription", [
            "NSPropertyName": b.string("tagCount"), "NSEntity": .uid(person), "_P": .int(0x1 | 0x2 | 0xF0),
            "NSAttributeType": .int(300), "NSFlagsKey": .int(0x10),
            "NSDerivationExpression": b.keyPath("tags.@count"),
        ], classes: ["NSAttributeDescription", "NSPropertyDescription"])
        let photo = b.object("NSAttributeDescription", [
            "NSPropertyName": b.string("photo"), "NSEntity": .uid(person), "_P": .int(0x1 | 0x2 | 0xF0),
            "NSAttributeType": .int(1000), "NSFlagsKey": .int(0x4), "NSRenamingIdentifier": b.string("picture"),
            "NSVersionHashModifier": b.string("v2"),
        ], classes: ["NSPropertyDescription"])
        let index = b.object("NSFetchIndexDescription", [
            "NSIndexName": b.string("byName"), "NSEntity": .uid(person),
            "NSIndexElements": b.array([b.object("NSFetchIndexElementDescription", [
                "NSPropertyName": b.string("name"), "NSAscending": .bool(false), "NSFetchIndexElementType": .int(0)])]),
        ])
        b.set(person, "NSEntityDescription", [
            "NSEntityName": b.string("Person"), "NSClassNameForEntity": b.string("App.Person"),
            "NSManagedObjectModel": .uid(modelIndex), "NSSuperentity": b.null,
            "NSSubentities": b.dictionary([("Employee", .uid(employee))]),
            "NSProperties": b.knownKeys([("name", .uid(personName)), ("photo", photo), ("tagCount", derived), ("tags", .uid(tags))]),
            "NSUserInfo": b.dictionary([("purpose", b.string("test"))]), "NSVersionHashModifier": b.null,
            "NSUniqueTuples": b.array([b.array([b.string("name")])]),
            "NSFetchIndexDescriptions": b.array([index]),
            "NSCompoundIndexes": b.array([b.array([b.string("name")])]),
        ])
        let salary = b.object("NSAttributeDescription", [
            "NSPropertyName": b.string("salary"), "NSEntity": .uid(employee), "_P": .int(0x1 | 0x2 | 0xF0),
            "NSAttributeType": .int(400),
            "NSDefaultValue": b.object("NSDecimalNumber", [
                "NS.exponent": .int(-2), "NS.length": .int(1), "NS.negative": .bool(false), "NS.compact": .bool(true),
                "NS.mantissa": .data(Data([0x39, 0x30, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), "NS.mantissa.bo": .int(1)]),
        ], classes: ["NSPropertyDescription"])
        let colleagues = b.object("NSFetchedPropertyDescription", [
            "NSPropertyName": b.string("colleagues"), "NSEntity": .uid(employee), "_P": .int(0x1 | 0x2 | 0xF0),
            "NSFetchRequest": b.object("NSFetchRequest", ["NSEntity": b.string("Employee"),
                                                          "NSPredicate": b.object("NSTruePredicate", [:], classes: ["NSPredicate"])]),
        ], classes: ["NSPropertyDescription"])
        let proxy = b.object("_NSPropertyDescriptionProxy", ["NSUnderlyingProperty": .uid(personName), "NSEntityDescription": .uid(employee)])
        b.set(employee, "NSEntityDescription", [
            "NSEntityName": b.string("Employee"), "NSSuperentity": .uid(person), "NSManagedObjectModel": .uid(modelIndex),
            "NSProperties": b.knownKeys([("colleagues", colleagues), ("name", proxy), ("salary", salary)]),
        ])
        b.set(tagPerson, "NSRelationshipDescription", [
            "NSPropertyName": b.string("person"), "NSEntity": .uid(tag), "_P": .int(0x1 | 0x2 | 0xF0),
            "NSDestinationEntity": .uid(person), "NSInverseRelationship": .uid(tags),
            "NSDeleteRule": .int(1), "NSMinCount": .int(0), "NSMaxCount": .int(1),
        ], classes: ["NSPropertyDescription"])
        let label = b.object("NSAttributeDescription", [
            "NSPropertyName": b.string("label"), "NSEntity": .uid(tag), "_P": .int(0x1 | 0x2 | 0x8 | 0xF0),
            "NSAttributeType": .int(700), "NSDefaultValue": b.string("new"),
        ], classes: ["NSPropertyDescription"])
        b.set(tag, "NSEntityDescription", [
            "NSEntityName": b.string("Tag"), "NSManagedObjectModel": .uid(modelIndex),
            "NSProperties": b.knownKeys([("label", label), ("person", .uid(tagPerson))]),
        ])
        let template = b.object("NSFetchRequest", [
            "NSEntity": .uid(person),
            "NSPredicate": b.comparison(b.keyPath("name"), 4,
                                        b.object("NSVariableExpression", ["NSVariable": b.string("NAME")], classes: ["NSExpression"])),
            "NSFetchLimit": .int(5), "NSHasFetchRequestFlags": .bool(true), "NSFetchRequestFlags": .int(0x2 | 0x4 | 0x10),
        ])
        b.set(modelIndex, "NSManagedObjectModel", [
            "NSEntities": b.knownKeys([("Employee", .uid(employee)), ("Person", .uid(person)), ("Tag", .uid(tag))]),
            "NSVersionIdentifiers": b.set([b.string("v7")]),
            "NSConfigurations": b.dictionary([("Cloud", b.set([.uid(tag), .uid(person)]))]),
            "NSFetchRequestTemplates": b.dictionary([("ByName", template)]),
        ])
        return b.archive(root: modelIndex)
    }

    @Test func modernArchiveShape() throws {
        let model = try ManagedObjectModel(compiledModelData: CompiledModelArchiveTests.modernArchive())
        #expect(model.entities.map(\.name) == ["Employee", "Person", "Tag"])
        #expect(model.versionIdentifiers == ["v7"])
        #expect(model.configurations == ["Cloud"])
        #expect(model.entities(forConfigurationName: "Cloud")?.map(\.name) == ["Person", "Tag"])

        let person = try #require(model.entitiesByName["Person"])
        let employee = try #require(model.entitiesByName["Employee"])
        #expect(person.managedObjectClassName == "App.Person")
        #expect(person.subentities.map(\.name) == ["Employee"])
        #expect(employee.superentity === person)
        #expect(person.userInfo == ["purpose": "test"])
        #expect(person.uniquenessConstraints == [["name"]])
        #expect(person.indexes == [FetchIndexDescription(name: "byName", elements: [FetchIndexElementDescription(property: "name", ascending: false)])])
        #expect(person.compoundIndexes.isEmpty)
        #expect(person.properties.map(\.name) == ["name", "photo", "tagCount", "tags"])

        let name = try #require(person.attributesByName["name"])
        #expect(!name.isOptional)
        #expect(name.isIndexedBySpotlight)
        #expect(name.validationRules == [ValidationRule(predicateFormat: "length >= 2", warning: "name too short")])
        let photo = try #require(person.attributesByName["photo"])
        #expect(photo.allowsExternalBinaryDataStorage)
        #expect(photo.renamingIdentifier == "picture")
        #expect(photo.versionHashModifier == "v2")
        let tagCount = try #require(person.propertiesByName["tagCount"] as? DerivedAttributeDescription)
        #expect(tagCount.derivationExpression == "tags.@count")
        #expect(tagCount.preservesValueInHistoryOnDeletion)
        let tags = try #require(person.relationshipsByName["tags"])
        #expect(tags.isOrdered && tags.isToMany && tags.deleteRule == .cascade)
        #expect(tags.destinationEntityName == "Tag" && tags.inverseRelationshipName == "person")

        // The proxy is not an own property: Employee inherits `name`.
        #expect(employee.properties.map(\.name) == ["colleagues", "salary"])
        #expect(employee.propertiesByName["name"] === name)
        #expect(employee.attributesByName["salary"]?.defaultValue == .decimal(Decimal(string: "123.45")!))
        let colleagues = try #require(employee.propertiesByName["colleagues"] as? FetchedPropertyDescription)
        #expect(colleagues.fetchRequest?.entityName == "Employee")
        #expect(colleagues.fetchRequest?.predicateFormat == "TRUEPREDICATE")

        let tag = try #require(model.entitiesByName["Tag"])
        let label = try #require(tag.attributesByName["label"])
        #expect(label.isTransient && label.defaultValue == .string("new"))
        let back = try #require(tag.relationshipsByName["person"])
        #expect(back.destinationEntityName == "Person" && back.inverseRelationshipName == "tags" && !back.isToMany)

        let template = try #require(model.fetchRequestTemplate(forName: "ByName"))
        #expect(template.entityName == "Person")
        #expect(template.predicateFormat == "name == $NAME")
        #expect(template.fetchLimit == 5)
        #expect(template.includesSubentities && template.includesPropertyValues && template.includesPendingChanges)
        #expect(!template.returnsObjectsAsFaults && !template.returnsDistinctResults)

        // The same model declared in code hashes the same.
        let declared = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string, optional: false)
                Attribute("photo", .binaryData, allowsExternalStorage: true, versionHashModifier: "v2")
                Attribute("tagCount", .integer64, derivedFrom: "tags.@count")
                Relationship("tags", to: "Tag", inverse: "person", toMany: true, ordered: true, deleteRule: .cascade)
                UniquenessConstraint("name")
            }
            Entity("Employee", parent: "Person") {
                Attribute("salary", .decimal)
                FetchedProperty("colleagues", entity: "Employee")
            }
            Entity("Tag") {
                Attribute("label", .string, transient: true)
                Relationship("person", to: "Person", inverse: "tags")
            }
        }
        #expect(model.entityVersionHashesByName == declared.entityVersionHashesByName)
        try model.validate()
    }

    @Test func structuralProblemsNameTheObject() throws {
        let b = ArchiveBuilder()
        let root = b.reserve()
        let entity = b.object("NSEntityDescription", [
            "NSEntityName": b.string("Broken"),
            "NSProperties": b.knownKeys([("x", b.object("NSAttributeDescription", ["NSPropertyName": b.string("x"), "NSAttributeType": .int(12345)]))]),
        ])
        b.set(root, "NSManagedObjectModel", ["NSEntities": b.knownKeys([("Broken", entity)])])
        do {
            _ = try CompiledModelReader(source: "Broken.mom").read(archiveData: b.archive(root: root))
            Issue.record("an unknown attribute type was accepted")
        } catch let error as CoreDataError {
            #expect(error.code == .fileReadCorruptFile)
            #expect(error.message.contains("Broken.mom"))
            #expect(error.message.contains("entity 'Broken', property 'x'"))
            #expect(error.message.contains("12345"))
        }

        // A superentity loop.
        let c = ArchiveBuilder()
        let loopRoot = c.reserve(), first = c.reserve(), second = c.reserve()
        c.set(first, "NSEntityDescription", ["NSEntityName": c.string("A"), "NSSuperentity": .uid(second)])
        c.set(second, "NSEntityDescription", ["NSEntityName": c.string("B"), "NSSuperentity": .uid(first)])
        c.set(loopRoot, "NSManagedObjectModel", ["NSEntities": c.knownKeys([("A", .uid(first)), ("B", .uid(second))])])
        #expect(throws: CoreDataError.self) { try ManagedObjectModel(compiledModelData: c.archive(root: loopRoot)) }

        // Shared sub-structures (exponential if walked naively) and self-containing
        // composites finish quickly with a result or an error.
        let e = ArchiveBuilder()
        let hostileRoot = e.reserve()
        var shared = e.string("leaf")
        var predicate = e.object("NSTruePredicate", [:], classes: ["NSPredicate"])
        for _ in 0..<60 {
            shared = e.array([shared, shared])
            predicate = e.object("NSCompoundPredicate", ["NSCompoundPredicateType": .int(1), "NSSubpredicates": e.array([predicate, predicate])],
                                 classes: ["NSPredicate"])
        }
        let selfComposite = e.reserve()
        e.set(selfComposite, "NSCompositeAttributeDescription", [
            "NSPropertyName": e.string("loop"), "NSAttributeType": .int(2100), "NSElements": e.array([.uid(selfComposite)]),
        ], classes: ["NSAttributeDescription", "NSPropertyDescription"])
        let hostileEntity = e.object("NSEntityDescription", [
            "NSEntityName": e.string("Hostile"),
            "NSProperties": e.knownKeys([("big", e.object("NSAttributeDescription", [
                "NSPropertyName": e.string("big"), "NSAttributeType": .int(1800), "NSDefaultValue": shared,
                "NSValidationPredicates": e.array([predicate]), "NSUserInfo": e.dictionary([("k", shared)]),
            ], classes: ["NSPropertyDescription"]))]),
        ])
        let loopEntity = e.object("NSEntityDescription", ["NSEntityName": e.string("Loop"), "NSProperties": e.knownKeys([("loop", .uid(selfComposite))])])
        e.set(hostileRoot, "NSManagedObjectModel", ["NSEntities": e.knownKeys([("Hostile", hostileEntity)])])
        let hostile = try ManagedObjectModel(compiledModelData: e.archive(root: hostileRoot))
        #expect(hostile.entitiesByName["Hostile"]?.attributesByName["big"]?.validationRules.count == 1)
        e.set(hostileRoot, "NSManagedObjectModel", ["NSEntities": e.knownKeys([("Loop", loopEntity)])])
        #expect(throws: CoreDataError.self) { try ManagedObjectModel(compiledModelData: e.archive(root: hostileRoot)) }

        // Unknown classes and keys are ignored.
        let d = ArchiveBuilder()
        let okRoot = d.reserve()
        let okEntity = d.object("NSEntityDescription", [
            "NSEntityName": d.string("Fine"), "NSFutureKey": .int(1),
            "NSProperties": d.knownKeys([("odd", d.object("NSFuturePropertyDescription", ["NSPropertyName": d.string("odd")]))]),
        ])
        d.set(okRoot, "NSManagedObjectModel", ["NSEntities": d.knownKeys([("Fine", okEntity)]), "NSSomethingNew": d.string("?")])
        let model = try ManagedObjectModel(compiledModelData: d.archive(root: okRoot))
        #expect(model.entities.map(\.name) == ["Fine"])
        #expect(model.entities.first?.properties.isEmpty == true)
    }
}
