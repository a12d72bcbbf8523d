import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// Inferred mappings and in-place SQLite migration, on code-built models and on
/// every real store written by an older version of a multi-version bundle.
@Suite struct LightweightMigrationTests {

    // MARK: Models in code

    static func version1() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string)
                Attribute("age", .integer16)
                Attribute("nickname", .string)
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
                Relationship("tags", to: "Tag", inverse: "people", toMany: true)
            }
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
            }
            Entity("Tag") {
                Attribute("label", .string)
                Relationship("people", to: "Person", inverse: "tags", toMany: true)
            }
        }
    }

    /// Version 2: `name` renamed `fullName`, `nickname` removed, `age` mandatory
    /// with a default, `email` added with a default, `Pet` renamed `Animal`, the
    /// pets ordered, and a new entity `Aardvark` that sorts first (every entity
    /// number moves).
    static func version2() throws -> ManagedObjectModel {
        let model = try ManagedObjectModel {
            Entity("Aardvark") {
                Attribute("burrows", .integer32)
            }
            Entity("Person") {
                Attribute("fullName", .string, renamingIdentifier: "name")
                Attribute("age", .integer16, optional: false, defaultValue: .int(7))
                Attribute("email", .string, defaultValue: .string("none"))
                Relationship("pets", to: "Animal", inverse: "owner", toMany: true, ordered: true)
                Relationship("tags", to: "Tag", inverse: "people", toMany: true)
            }
            Entity("Animal") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
            }
            Entity("Tag") {
                Attribute("label", .string)
                Relationship("people", to: "Person", inverse: "tags", toMany: true)
            }
        }
        model.entitiesByName["Animal"]?.renamingIdentifier = "Pet"
        return model
    }

    /// A version-1 store with three people, four pets and two tags; history on.
    static func makeVersion1Store(history: Bool = true) throws -> URL {
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("People.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try version1())
        let options = history ? [PersistentStoreDescription.OptionKey.historyTracking: "1"] : [:]
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let tags = ["red", "blue"].map { label -> ManagedObject in
                let tag = Self.insert(context, "Tag")
                tag.setValue(label, forKey: "label")
                return tag
            }
            for (index, name) in ["Ada", "Grace", "Edsger"].enumerated() {
                let person = Self.insert(context, "Person")
                person.setValue(name, forKey: "name")
                person.setValue(index == 1 ? nil : Int16(30 + index), forKey: "age")
                person.setValue("n\(index)", forKey: "nickname")
                person.setValue(Set(tags.prefix(index)), forKey: "tags")
                for number in 0..<index + (index == 2 ? 0 : 1) {
                    let pet = Self.insert(context, "Pet")
                    pet.setValue("\(name)'s pet \(number)", forKey: "name")
                    pet.setValue(person, forKey: "owner")
                }
            }
            try context.save()
        }
        try SQLiteStoreMetadataWriter.setAppKey(at: url, coordinator: coordinator, store: store)
        coordinator.remove(store)
        return url
    }

    static func insert(_ context: ManagedObjectContext, _ name: String) -> ManagedObject {
        ManagedObject(entity: context.persistentStoreCoordinator!.managedObjectModel.entitiesByName[name]!, insertInto: context)
    }

    static func step(_ source: ManagedObjectModel, _ destination: ManagedObjectModel) throws -> MigrationPlan.Step {
        MigrationPlan.Step(sourceVersion: "1", destinationVersion: "2", sourceModel: source, destinationModel: destination,
                           mappingModel: try MappingModel.inferredMappingModel(forSourceModel: source, destinationModel: destination),
                           mappingSource: .inferred)
    }

    // MARK: Inference

    @Test("Inference names its mappings as Core Data does and reads renamed properties from their old names")
    func inferredMappingShape() throws {
        let mapping = try MappingModel.inferredMappingModel(forSourceModel: try Self.version1(), destinationModel: try Self.version2())
        #expect(mapping.isInferred)
        #expect(mapping.entityMappings.map(\.name) == ["IEM_Add_Aardvark", "IEM_Transform_Animal", "IEM_Transform_Person", "IEM_Copy_Tag"])
        let person = try #require(mapping.entityMapping(named: "IEM_Transform_Person"))
        #expect(person.mappingType == .transform)
        #expect(person.sourceEntityName == "Person")
        let fullName = try #require(person.attributeMappings.first { $0.name == "fullName" }?.valueExpression)
        #expect("\(fullName)" == "$source.name")
        #expect(person.attributeMappings.first { $0.name == "email" }?.valueExpression == nil)
        let pets = try #require(person.relationshipMappings.first { $0.name == "pets" }?.valueExpression)
        #expect("\(pets)".contains("destinationInstancesForEntityMappingNamed:sourceInstances:"))
        #expect("\(pets)".contains("IEM_Transform_Animal"))
        #expect(mapping.entityMapping(named: "IEM_Transform_Animal")?.sourceEntityName == "Pet")
        #expect(mapping.entityMapping(forDestinationEntityNamed: "Aardvark")?.mappingType == .add)
        // Removing an entity.
        let back = try MappingModel.inferredMappingModel(forSourceModel: try Self.version2(), destinationModel: try Self.version1())
        #expect(back.entityMapping(named: "IEM_Remove_Aardvark")?.mappingType == .remove)
        #expect(mapping.matches(source: try Self.version1(), destination: try Self.version2()))
        #expect(!mapping.matches(source: try Self.version2(), destination: try Self.version1()))
    }

    @Test("Inference refuses a type change other than between numbers, and merging hierarchies (134190)")
    func inferenceRefusals() throws {
        let source = try ManagedObjectModel {
            Entity("A") { Attribute("when", .string); Attribute("count", .integer16) }
            Entity("B") { Attribute("x", .string) }
        }
        let numeric = try ManagedObjectModel {
            Entity("A") { Attribute("when", .string); Attribute("count", .double) }
            Entity("B") { Attribute("x", .string) }
        }
        #expect(try MappingModel.inferredMappingModel(forSourceModel: source, destinationModel: numeric).isInferred)
        let dated = try ManagedObjectModel {
            Entity("A") { Attribute("when", .date); Attribute("count", .integer16) }
            Entity("B") { Attribute("x", .string) }
        }
        let typeError = #expect(throws: CoreDataError.self) {
            try MappingModel.inferredMappingModel(forSourceModel: source, destinationModel: dated)
        }
        #expect(typeError?.code == .inferredMappingModel)
        #expect(typeError?.entityName == "A")
        #expect(typeError?.key == "when")
        let merged = try ManagedObjectModel {
            Entity("Root", abstract: true) { Attribute("x", .string) }
            Entity("A", parent: "Root") { Attribute("when", .string); Attribute("count", .integer16) }
            Entity("B", parent: "Root")
        }
        let mergeError = #expect(throws: CoreDataError.self) {
            try MappingModel.inferredMappingModel(forSourceModel: source, destinationModel: merged)
        }
        #expect(mergeError?.code == .inferredMappingModel)
        #expect(mergeError?.message.contains("merging two hierarchies") == true)
    }

    // MARK: In place, on code-built models

    @Test("Renames, removals, additions, a new default, a renamed and a new entity: one migration, data and layout as Core Data leaves them")
    func everyInferableChangeAtOnce() throws {
        let url = try Self.makeVersion1Store()
        let v1 = try Self.version1(), v2 = try Self.version2()
        let uuidBefore = try SQLiteStoreMetadata.read(at: url)[SQLiteStoreMetadata.storeUUIDKey] as? String
        let before = try MigrationCheck.objects(at: url, model: v1)
        let step = try Self.step(v1, v2)
        let report = try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [step]))
        #expect(report.rebuiltTables.first?.contains("ZPERSON") == true)

        // Data: what the mapping says.
        let after = try MigrationCheck.objects(at: url, model: v2)
        #expect(MigrationCheck.expectStepResult(step, before: before, after: after) > 20)
        let people = try #require(after["Person"])
        #expect(people.values.map { $0.attributes["fullName"] ?? "" }.sorted() == ["\(AttributeValue.string("Ada"))", "\(AttributeValue.string("Edsger"))", "\(AttributeValue.string("Grace"))"])
        #expect(people.values.first { $0.attributes["fullName"] == "\(AttributeValue.string("Grace"))" }?.attributes["age"] == "\(AttributeValue.int(7))")
        #expect(people.values.allSatisfy { $0.attributes["email"] == "\(AttributeValue.string("none"))" })
        #expect(after["Animal"]?.count == 5)

        // Layout: as a store created from version 2.
        #expect(try MigrationCheck.layout(at: url) == MigrationCheck.freshLayout(of: v2))
        // Bookkeeping: the UUID and app key kept, the hashes of version 2, the
        // renamed entity's old name in Z_PRIMARYKEY, the model cache of version 2.
        let metadata = try SQLiteStoreMetadata.read(at: url)
        #expect(metadata[SQLiteStoreMetadata.storeUUIDKey] as? String == uuidBefore)
        #expect(metadata["com.example.appKey"] as? String == "kept")
        #expect(v2.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(try SQLiteStore.storedModel(at: url).entitiesByName["Aardvark"] != nil)
        let names = try DatabaseQueue(path: url.path).read { db in
            try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT < 16000 ORDER BY Z_ENT").map { "\($0[0] as Int)=\($0[1] as String)" }
        }
        #expect(names == ["1=Aardvark", "2=Pet", "3=Person", "4=Tag"])
        // History follows the new entity numbers.
        let historyEntities = try DatabaseQueue(path: url.path).read { db in
            try Set(Int.fetchAll(db, sql: "SELECT DISTINCT ZENTITY FROM ACHANGE"))
        }
        #expect(historyEntities == [2, 3, 4])

        // The migrated store takes new objects without reusing a key.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: v2)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [PersistentStoreDescription.OptionKey.historyTracking: "1"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let animal = Self.insert(context, "Animal")
            animal.setValue("new", forKey: "name")
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.predicate = try CorePredicate(format: "fullName == 'Ada'")
            let ada = try #require(try context.fetch(request).first)
            animal.setValue(ada, forKey: "owner")
            _ = Self.insert(context, "Aardvark")
            try context.save()
            #expect((animal.objectID.primaryKey ?? 0) > (before["Pet"]?.keys.max() ?? 0))
            #expect((ada.value(forKey: "pets") as? [ManagedObject])?.last === animal)
        }
    }

    @Test("A table whose columns and rows do not change is left alone; an index-only change needs no migration")
    func unchangedTablesAreKept() throws {
        let url = try Self.makeVersion1Store(history: false)
        let v1 = try Self.version1()
        let v1b = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string)
                Attribute("age", .integer16)
                Attribute("nickname", .string)
                Attribute("added", .boolean)
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
                Relationship("tags", to: "Tag", inverse: "people", toMany: true)
            }
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
                FetchIndex("byName", "name")
            }
            Entity("Tag") {
                Attribute("label", .string)
                Relationship("people", to: "Person", inverse: "tags", toMany: true)
            }
        }
        let rootPageBefore = try DatabaseQueue(path: url.path).read { db in
            try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'ZPET'")
        }
        let report = try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [try Self.step(v1, v1b)]))
        #expect(report.rebuiltTables == [["ZPERSON"]])
        #expect(Set(report.keptTables.first ?? []) == ["ZPET", "ZTAG", "Z_1TAGS"])
        let rootPageAfter = try DatabaseQueue(path: url.path).read { db in
            try Int.fetchOne(db, sql: "SELECT rootpage FROM sqlite_master WHERE name = 'ZPET'")
        }
        #expect(rootPageBefore == rootPageAfter)
        #expect(try MigrationCheck.layout(at: url) == MigrationCheck.freshLayout(of: v1b))
        let indexes = try MigrationCheck.layout(at: url).indexes
        #expect(indexes.keys.contains { $0.contains("BYNAME") })
    }

    @Test("Migrated forward and back, a store opens in the old version's reader with its objects as they were")
    func roundTrip() throws {
        let url = try Self.makeVersion1Store(history: false)
        let v1 = try Self.version1()
        let before = try MigrationCheck.objects(at: url, model: v1)
        let v1b = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string)
                Attribute("age", .integer16)
                Attribute("nickname", .string)
                Attribute("added", .boolean, defaultValue: .bool(true))
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true, ordered: true)
                Relationship("tags", to: "Tag", inverse: "people", toMany: true)
            }
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
            }
            Entity("Tag") {
                Attribute("label", .string)
                Relationship("people", to: "Person", inverse: "tags", toMany: true)
            }
            Entity("Zebra") { Attribute("stripes", .integer16) }
        }
        try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [try Self.step(v1, v1b)]))
        try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [try Self.step(v1b, try Self.version1())]))
        #expect(try MigrationCheck.objects(at: url, model: v1) == before)
        #expect(try MigrationCheck.layout(at: url) == MigrationCheck.freshLayout(of: v1))
        try PersistentStoreCoordinator(managedObjectModel: try Self.version1()).addPersistentStore(type: .sqlite, at: url)
    }

    // MARK: Real stores

    /// The older stores of the multi-version bundles among the fixtures.
    static let olderStores = Fixtures.storesWithModels.filter { entry in
        guard let versions = try? ModelVersionBundle(contentsOf: Fixtures.url(entry.model)) else { return false }
        return entry.version != versions.currentVersionName && versions.versionNames.contains(entry.version)
    }

    @Test("Every older real store migrates, step by step, to its bundle's newest version", arguments: olderStores.map(\.store))
    func realStoreMigratesToNewestVersion(storePath: String) throws {
        let entry = try #require(Self.olderStores.first { $0.store == storePath })
        let url = try Fixtures.copyStore(entry.store)
        let versions = try ModelVersionBundle(contentsOf: Fixtures.url(entry.model))
        let metadataBefore = try SQLiteStoreMetadata.read(at: url)
        let plan = try MigrationPlan.progressive(storeAt: url, versions: versions)
        #expect(plan.steps.first?.sourceVersion == entry.version)
        #expect(plan.steps.last?.destinationVersion == versions.currentVersionName)
        var compared = 0
        for step in plan.steps {
            let before = try MigrationCheck.objects(at: url, model: step.sourceModel)
            try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [step]))
            let after = try MigrationCheck.objects(at: url, model: step.destinationModel)
            compared += MigrationCheck.expectStepResult(step, before: before, after: after)
            #expect(try MigrationCheck.layout(at: url) == MigrationCheck.freshLayout(of: step.destinationModel), "\(step)")
        }
        let objectCount = try MigrationCheck.objects(at: url, model: try versions.model(forVersion: versions.currentVersionName)).values.map(\.count).reduce(0, +)
        #expect(compared > 0 || objectCount == 0)
        let metadata = try SQLiteStoreMetadata.read(at: url)
        #expect(metadata[SQLiteStoreMetadata.storeUUIDKey] as? String == metadataBefore[SQLiteStoreMetadata.storeUUIDKey] as? String)
        for (key, value) in metadataBefore where !key.hasPrefix("NS") && !key.hasPrefix("_NS") {
            #expect("\(metadata[key] ?? "missing")" == "\(value)", "app key \(key)")
        }
        // The current model opens it, without a migration.
        let current = try versions.model(forVersion: versions.currentVersionName)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: current)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        #expect(try SQLiteStore.storedModel(at: url).isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(try MigrationCheck.leftovers(beside: url).isEmpty)
    }

    @Test("Renames chained from version to version: the progressive plan keeps the value, a direct inference drops it")
    func chainedRenames() throws {
        let entry = "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v1.0.0.sqlite"
        let versions = try ModelVersionBundle(contentsOf: Fixtures.url("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld"))
        let v2 = try versions.model(forVersion: "v2.0.0")
        let original = try MigrationCheck.objects(at: try Fixtures.copyStore(entry), model: try versions.model(forVersion: "v1.0.0"))
        let value = try #require(original["BasicEntity"]?.values.first?.attributes["v1_0_0_name"])
        #expect(value != "\(AttributeValue.null)")

        let stepwise = try Fixtures.copyStore(entry)
        try StoreMigrator.migrateStore(at: stepwise, plan: try MigrationPlan.progressive(storeAt: stepwise, versions: versions))
        #expect(try MigrationCheck.objects(at: stepwise, model: v2)["BasicEntity"]?.values.first?.attributes["v2_0_0_name"] == value)

        let direct = try Fixtures.copyStore(entry)
        let metadata = try SQLiteStoreMetadata.read(at: direct)
        let plan = try MigrationPlan.direct(storeMetadata: metadata, sourceModel: ("v1.0.0", try versions.model(forVersion: "v1.0.0")),
                                            destinationModel: ("v2.0.0", v2))
        try StoreMigrator.migrateStore(at: direct, plan: plan)
        #expect(try MigrationCheck.objects(at: direct, model: v2)["BasicEntity"]?.values.first?.attributes["v2_0_0_name"] == "\(AttributeValue.null)")
    }

    // MARK: Opening with automatic migration

    @Test("addPersistentStore migrates with the option, from the model bundle's versions; without it, 134100")
    func automaticMigrationWhenAdding() async throws {
        let bundle = Fixtures.url("duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld")
        let model = try ManagedObjectModel(contentsOf: bundle)
        #expect(model.versionBundleURL == bundle)
        let url = try Fixtures.copyStore("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V1.sqlite")
        let bytes = MigrationCheck.bytes(of: url)
        let refused = #expect(throws: CoreDataError.self) {
            try PersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(type: .sqlite, at: url)
        }
        #expect(refused?.code == .persistentStoreIncompatibleVersionHash)
        #expect(MigrationCheck.bytes(of: url) == bytes)

        let container = PersistentContainer(name: "Bookmarks", managedObjectModel: model)
        var description = PersistentStoreDescription(url: url)
        #expect(description.shouldMigrateStoreAutomatically && description.shouldInferMappingModelAutomatically)
        description.shouldAddStoreAsynchronously = false
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        let count = try container.viewContext.performAndWait {
            try container.viewContext.count(for: FetchRequest<ManagedObject>(entityName: "BookmarkEntity"))
        }
        #expect(count == 10)
    }

    @Test("Without a model for the store: 134130; with inference off or impossible: 134140; the store untouched")
    func automaticMigrationErrors() throws {
        let url = try Self.makeVersion1Store(history: false)
        let bytes = MigrationCheck.bytes(of: url)
        let options = [PersistentStoreDescription.OptionKey.migrateAutomatically: "1",
                       PersistentStoreDescription.OptionKey.inferMappingModelAutomatically: "1"]
        // The store's model cache is the source model: it migrates.
        let migrated = try Fixtures.temporaryDirectory().appendingPathComponent("Copy.sqlite")
        try FileManager.default.copyItem(at: url, to: migrated)
        try PersistentStoreCoordinator(managedObjectModel: try Self.version2()).addPersistentStore(type: .sqlite, at: migrated, options: options)
        #expect(try Self.version2().isConfiguration(withName: nil, compatibleWithStoreMetadata: SQLiteStoreMetadata.read(at: migrated)))

        // Inference off.
        let noInference = #expect(throws: CoreDataError.self) {
            try PersistentStoreCoordinator(managedObjectModel: try Self.version2()).addPersistentStore(
                type: .sqlite, at: url, options: [PersistentStoreDescription.OptionKey.migrateAutomatically: "1"])
        }
        #expect(noInference?.code == .migrationMissingMappingModel)
        // Inference impossible: a string became a date.
        let dated = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .date)
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
            }
            Entity("Pet") { Relationship("owner", to: "Person", inverse: "pets") }
        }
        let impossible = #expect(throws: CoreDataError.self) {
            try PersistentStoreCoordinator(managedObjectModel: dated).addPersistentStore(type: .sqlite, at: url, options: options)
        }
        #expect(impossible?.code == .migrationMissingMappingModel)
        #expect(impossible?.key == "name")
        // No source model: the model cache is gone and the model has no bundle.
        try DatabaseQueue(path: url.path).write { db in try db.execute(sql: "DELETE FROM Z_MODELCACHE") }
        let bytesWithoutCache = MigrationCheck.bytes(of: url)
        #expect(bytesWithoutCache != bytes)
        let missing = #expect(throws: CoreDataError.self) {
            try PersistentStoreCoordinator(managedObjectModel: try Self.version2()).addPersistentStore(type: .sqlite, at: url, options: options)
        }
        #expect(missing?.code == .migrationMissingSourceModel)
        #expect(MigrationCheck.bytes(of: url) == bytesWithoutCache)
        #expect(try MigrationCheck.leftovers(beside: url).isEmpty)
    }

    @Test("A new mandatory attribute without a default fails with 134110 naming it; the store and its -wal are byte-identical")
    func failedMigrationLeavesTheStore() throws {
        let url = try Self.makeVersion1Store(history: false)
        // Committed data only in the -wal: a reader left open keeps it from the checkpoint.
        let keepWal = try DatabaseQueue(path: url.path)
        try keepWal.write { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "UPDATE ZTAG SET ZLABEL = 'green' WHERE ZLABEL = 'red'")
        }
        let walOnly = try Fixtures.temporaryDirectory()
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: walOnly.appendingPathComponent("People.sqlite").path + suffix)
        }
        try keepWal.close()
        let store = walOnly.appendingPathComponent("People.sqlite")
        #expect(FileManager.default.fileExists(atPath: store.path + "-wal"))
        let bytes = MigrationCheck.bytes(of: store)
        let mandatory = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string)
                Attribute("age", .integer16)
                Attribute("nickname", .string)
                Attribute("email", .string, optional: false)
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
                Relationship("tags", to: "Tag", inverse: "people", toMany: true)
            }
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owner", to: "Person", inverse: "pets")
            }
            Entity("Tag") {
                Attribute("label", .string)
                Relationship("people", to: "Person", inverse: "tags", toMany: true)
            }
        }
        let error = #expect(throws: CoreDataError.self) {
            try StoreMigrator.migrateStore(at: store, plan: MigrationPlan(steps: [try Self.step(try Self.version1(), mandatory)]))
        }
        #expect(error?.code == .migration)
        #expect(error?.entityName == "Person")
        #expect(error?.key == "email")
        #expect(error?.message.contains("Cannot migrate store in-place") == true)
        #expect(MigrationCheck.bytes(of: store) == bytes)
        #expect(try MigrationCheck.leftovers(beside: store).isEmpty)
        // The data that was only in the -wal survives a successful migration.
        try StoreMigrator.migrateStore(at: store, plan: MigrationPlan(steps: [try Self.step(try Self.version1(), try Self.version2())]))
        let labels = try MigrationCheck.objects(at: store, model: try Self.version2())["Tag"]?.values.compactMap { $0.attributes["label"] }.sorted()
        #expect(labels == ["\(AttributeValue.string("blue"))", "\(AttributeValue.string("green"))"])
        let walAfter = FileManager.default.contents(atPath: store.path + "-wal") ?? Data()
        #expect(walAfter.isEmpty)
    }

    @Test("A compatible store is not touched; a migration's leftover copy is removed by the next one")
    func compatibleStoreAndLeftovers() throws {
        let url = try Self.makeVersion1Store(history: false)
        let bytes = MigrationCheck.bytes(of: url)
        let options = [PersistentStoreDescription.OptionKey.migrateAutomatically: "1",
                       PersistentStoreDescription.OptionKey.inferMappingModelAutomatically: "1"]
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.version1())
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
        coordinator.remove(store)
        #expect(MigrationCheck.bytes(of: url).first == bytes.first)
        // A crash after the copy was made leaves it beside the store.
        let leftover = url.deletingLastPathComponent().appendingPathComponent(".People.sqlite.migrationdestination_41b5a6b5c6e848c462a8480cd24caef3")
        try Data("half a store".utf8).write(to: leftover)
        try PersistentStoreCoordinator(managedObjectModel: try Self.version2()).addPersistentStore(type: .sqlite, at: url, options: options)
        #expect(try MigrationCheck.leftovers(beside: url).isEmpty)
    }
}

/// Writes an app key into a store's metadata through the coordinator.
enum SQLiteStoreMetadataWriter {
    static func setAppKey(at url: URL, coordinator: PersistentStoreCoordinator, store: any PersistentStore) throws {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        try queue.write { db in
            var metadata = try SQLiteStoreMetadata.read(from: db)
            metadata["com.example.appKey"] = "kept"
            try SQLiteStoreMetadata.write(metadata, to: db)
        }
    }
}
