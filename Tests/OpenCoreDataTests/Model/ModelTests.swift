import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("The managed object model")
struct ModelTests {
    /// Moody 5, declared in code.
    static func moody5InCode() throws -> ManagedObjectModel {
        try ManagedObjectModel(versionIdentifier: "5") {
            Entity("Country", className: "NSManagedObject") {
                Attribute("isoContinent", .integer16, defaultValue: 0)
                Attribute("markedForDeletionDate", .date)
                Attribute("numberOfMoods", .integer64, optional: false, defaultValue: 0)
                Attribute("numericISO3166Code", .integer16, optional: false, defaultValue: 0)
                Attribute("uniquenessDummy", .integer16, optional: false, defaultValue: 0)
                Attribute("updatedAt", .date, optional: false)
                Relationship("moods", to: "Mood", inverse: "country", toMany: true, optional: false)
                UniquenessConstraint("numericISO3166Code", "uniquenessDummy")
            }
            Entity("Mood", className: "NSManagedObject") {
                Attribute("colors", .transformable, transformer: "ColorsTransformer")
                Attribute("creatorID", .string)
                Attribute("date", .date, optional: false)
                Attribute("latitude", .double)
                Attribute("longitude", .double)
                Attribute("markedForDeletionDate", .date)
                Attribute("markedForRemoteDeletion", .boolean, optional: false, defaultValue: false)
                Attribute("rating", .integer16, optional: false, defaultValue: 0)
                Attribute("remoteID", .string, renamingIdentifier: "remoteIdentifier")
                Relationship("country", to: "Country", inverse: "moods")
            }
        }
    }

    @Test("A model built in code equals the one drawn in Xcode: same entities, same hashes")
    func builderMatchesXcode() throws {
        let code = try Self.moody5InCode()
        let xcode = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5")
        #expect(code.entityVersionHashesByName == xcode.entityVersionHashesByName)
        #expect(code.versionChecksum == xcode.versionChecksum)
        #expect(code.versionIdentifiers == xcode.versionIdentifiers)
        let metadata = try Fixtures.storeMetadata("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody")
        #expect(code.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    @Test("The builder resolves parents, configurations and templates, and validates")
    func builderStructure() throws {
        let model = try ManagedObjectModel {
            Entity("Region", abstract: true) {
                Attribute("name", .string, optional: false)
                FetchIndex("byName", "name")
            }
            Entity("Country", parent: "Region") {
                Relationship("cities", to: "City", inverse: "country", toMany: true, ordered: true, deleteRule: .cascade)
                FetchedProperty("bigCities", entity: "City", predicate: "country == $FETCH_SOURCE")
            }
            Entity("City") {
                Relationship("country", to: "Country", inverse: "cities")
                Attribute("population", .integer64, minValue: 0)
                Attribute("doubled", .integer64, derivedFrom: "population * 2")
            }
            ModelConfiguration("Places", entities: ["Country", "City"])
            FetchTemplate("Named", entity: "Region", predicate: "name == $NAME")
        }
        let country = try #require(model.entitiesByName["Country"])
        #expect(country.superentity?.name == "Region")
        #expect(country.attributesByName["name"] != nil)
        #expect(country.relationshipsByName["cities"]?.isOrdered == true)
        #expect(country.relationshipsByName["cities"]?.deleteRule == .cascade)
        #expect(model.entities(forConfigurationName: "Places")?.map(\.name) == ["Country", "City"])
        #expect(model.fetchRequestTemplate(forName: "Named")?.predicateFormat == "name == $NAME")
        #expect(model.entitiesByName["Region"]?.indexes.first?.name == "byName")
        #expect(model.entitiesByName["City"]?.attributesByName["doubled"] is DerivedAttributeDescription)
        #expect(country.managedObjectClassName == "Country")

        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel { Entity("A", parent: "Ghost") }
        }
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel { Entity("A") { Relationship("b", to: "B") } }
        }
    }

    @Test("What enters an entity's version hash, and what does not")
    func hashInputs() throws {
        func hash(_ configure: (EntityDescription, AttributeDescription, RelationshipDescription) -> Void) -> Data {
            let entity = EntityDescription(name: "Thing")
            let attribute = AttributeDescription(name: "title", type: .string)
            let relationship = RelationshipDescription(name: "friend", destination: "Thing", inverse: "friend")
            entity.properties = [attribute, relationship]
            configure(entity, attribute, relationship)
            let model = ManagedObjectModel()
            model.entities = [entity]
            return entity.versionHash
        }
        let base = hash { _, _, _ in }
        // Not hashed: delete rule, class name, defaults, validation, user info, indexes, renaming IDs.
        #expect(hash { _, _, r in r.deleteRule = .cascade } == base)
        #expect(hash { e, _, _ in e.managedObjectClassName = "Other" } == base)
        #expect(hash { _, a, _ in a.defaultValue = "x" } == base)
        #expect(hash { _, a, _ in a.maxValue = 10 } == base)
        #expect(hash { _, a, _ in a.userInfo = ["k": "v"] } == base)
        #expect(hash { e, _, _ in e.indexes = [FetchIndexDescription(name: "i", elements: [.init(property: "title")])] } == base)
        #expect(hash { _, a, _ in a.renamingIdentifier = "old" } == base)
        #expect(hash { _, a, _ in a.valueTransformerName = "T" } == base)
        // Hashed: names, optionality, types, modifiers, storage options, counts, ordering, constraints.
        var seen: Set<Data> = [base]
        let changes: [(EntityDescription, AttributeDescription, RelationshipDescription) -> Void] = [
            { _, a, _ in a.name = "name" },
            { _, a, _ in a.isOptional = false },
            { _, a, _ in a.attributeType = .uri },
            { _, a, _ in a.versionHashModifier = "v2" },
            { _, a, _ in a.attributeType = .binaryData; a.allowsExternalBinaryDataStorage = true },
            { _, a, _ in a.preservesValueInHistoryOnDeletion = true },
            { _, _, r in r.maxCount = 0 },
            { _, _, r in r.maxCount = 0; r.isOrdered = true },
            { _, _, r in r.minCount = 1 },
            { e, _, _ in e.versionHashModifier = "v2" },
            { e, _, _ in e.isAbstract = true },
            { e, _, _ in e.uniquenessConstraints = [["title"]] },
            { _, _, r in r.isReadOnly = true },
        ]
        for change in changes {
            #expect(seen.insert(hash(change)).inserted)
        }
        // Transient properties are left out of the entity hash.
        let withTransient = hash { e, _, _ in
            let scratch = AttributeDescription(name: "scratch", type: .string)
            scratch.isTransient = true
            e.properties.append(scratch)
        }
        #expect(withTransient == base)
        // Fetched properties are left out too.
        #expect(hash { e, _, _ in e.properties.append(FetchedPropertyDescription(name: "f", fetchRequest: nil)) } == base)
    }

    @Test("Inherited properties enter a subentity's hash after its parent's hash")
    func inheritanceHash() throws {
        let bundle = try XcodeDataModel(contentsOf: Fixtures.moodyModel)
        let model = try bundle.model(forVersion: "Moody")
        let country = try #require(model.entitiesByName["Country"])
        let hashBefore = country.versionHash
        let copy = model.copy()
        copy.entitiesByName["GeographicRegion"]?.properties.first?.isOptional.toggle()
        #expect(copy.entitiesByName["Country"]?.versionHash != hashBefore)
        #expect(copy.entitiesByName["Mood"]?.versionHash == model.entitiesByName["Mood"]?.versionHash)
    }

    @Test("A model becomes immutable when frozen; copies are editable and equal")
    func freezing() throws {
        let model = try Self.moody5InCode()
        #expect(model.isEditable)
        try model.freeze()
        #expect(!model.isEditable)
        let hashes = model.entityVersionHashesByName
        let copy = model.copy()
        #expect(copy.isEditable)
        #expect(copy.entityVersionHashesByName == hashes)
        copy.entitiesByName["Mood"]?.name = "Feeling"
        #expect(model.entitiesByName["Mood"] != nil)
    }

    @Test("Mutating a frozen model stops the program with a clear message, as Core Data raises")
    func mutationTraps() async {
        await #expect(processExitsWith: .failure) {
            let model = ManagedObjectModel()
            let entity = EntityDescription(name: "A")
            model.entities = [entity]
            try? model.freeze()
            entity.name = "B"
        }
    }

    @Test("Freezing validates the model")
    func freezeValidates() {
        let model = ManagedObjectModel()
        let entity = EntityDescription(name: "A")
        entity.properties = [RelationshipDescription(name: "r", destination: "Missing")]
        model.entities = [entity]
        #expect(throws: CoreDataError.self) { try model.freeze() }
        #expect(model.isEditable)
    }

    @Test("Merging models combines their entities and refuses duplicates")
    func merging() throws {
        let a = try ManagedObjectModel { Entity("A") { Attribute("x", .string) } }
        let b = try ManagedObjectModel { Entity("B") { Attribute("y", .date) } }
        let merged = try ManagedObjectModel.mergedModel(from: [a, b])
        #expect(merged.entities.map(\.name) == ["A", "B"])
        #expect(merged.entityVersionHashesByName["A"] == a.entityVersionHashesByName["A"])
        #expect(throws: CoreDataError.self) { try ManagedObjectModel.mergedModel(from: [a, a]) }
    }

    @Test("Validation lists every problem with entity and property")
    func validationProblems() {
        let model = ManagedObjectModel()
        let a = EntityDescription(name: "A")
        a.properties = [
            AttributeDescription(name: "x", type: .string),
            AttributeDescription(name: "x", type: .date),
            AttributeDescription(name: "id", type: .objectID),
            AttributeDescription(name: "n", type: .integer16, defaultValue: "text"),
            RelationshipDescription(name: "r", destination: "B", inverse: "nope"),
        ]
        let b = EntityDescription(name: "B")
        let bad = RelationshipDescription(name: "s", destination: "A", toMany: true)
        bad.minCount = 5
        bad.maxCount = 2
        b.properties = [bad]
        model.entities = [a, b]
        let problems = model.validationProblems()
        // A default value of another type is no problem (Core Data checks values, not
        // defaults, and Xcode compiles such models): 4, not 5.
        #expect(problems.count == 4)
        #expect(problems.contains { $0.key == "x" && $0.message.contains("two properties") })
        #expect(problems.contains { $0.key == "id" && $0.message.contains("Object ID") })
        #expect(!problems.contains { $0.key == "n" })
        #expect(problems.contains { $0.key == "r" && $0.message.contains("inverse 'nope'") })
        #expect(problems.contains { $0.key == "s" && $0.message.contains("minimum count 5") })
        #expect(throws: CoreDataError.self) { try model.validate() }
    }

    @Test("Incompatible store metadata names the entities that differ")
    func incompatibility() throws {
        let model = try Self.moody5InCode()
        var metadata: [String: Any] = [
            "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionHashes": model.entityVersionHashesByName,
        ]
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        var hashes = model.entityVersionHashesByName
        hashes["Mood"] = Data(repeating: 0, count: 32)
        hashes["Ghost"] = Data(repeating: 1, count: 32)
        metadata["NSStoreModelVersionHashes"] = hashes
        let problems = model.incompatibilities(withName: nil, storeMetadata: metadata)
        #expect(problems.count == 2)
        #expect(problems.contains { $0.contains("'Mood' differs") })
        #expect(problems.contains { $0.contains("'Ghost' is in the store but not in the model") })
        metadata["NSStoreModelVersionHashesVersion"] = 4
        #expect(!model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(!model.isConfiguration(withName: nil, compatibleWithStoreMetadata: [:]))
    }
}
