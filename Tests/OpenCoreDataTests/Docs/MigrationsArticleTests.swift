import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// The examples of the Migrations guide (OpenCoreData.docc/Migrations.md), as written.
@Suite(.serialized) struct MigrationsArticleTests {
    @Test("1. A container migrates an older store when it loads it")
    func automatic() async throws {
        let storeURL = try Fixtures.copyStore("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V3.sqlite")
        let bundle = Fixtures.url("duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld")
        // As in the guide, with the fixture's bundle.
        let model = try ManagedObjectModel(contentsOf: bundle)
        let container = PersistentContainer(name: "Bookmarks", managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: storeURL)]
        try await container.loadPersistentStores()      // an older store is migrated first
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: try SQLiteStoreMetadata.read(at: storeURL)))
    }

    final class AuthorsPolicy: EntityMigrationPolicy {
        nonisolated(unsafe) static var calls = 0   // the suite is serialized
        override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping,
                                                 manager: MigrationManager) throws {
            try super.createDestinationInstances(forSource: source, in: mapping, manager: manager)
            Self.calls += 1
            // ... what the mapping's expressions cannot say
        }
    }

    @Test("2. Step by step, with mapping models and a registered policy")
    func progressive() throws {
        let storeURL = try Fixtures.copyStore("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite")
        let folder = Fixtures.url("objcio+issue-4-core-data-migration/BookMigration")
        EntityMigrationPolicy.register(AuthorsPolicy.self, forClassName: "MHWBookToBookPolicy")
        let versions = try ModelVersionBundle(contentsOf: folder.appendingPathComponent("Model.xcdatamodeld"))
        let plan = try MigrationPlan.progressive(
            storeAt: storeURL, versions: versions, to: "Model2",
            mappingModels: try MappingModel.mappingModels(in: folder, versions: versions))
        #expect(plan.steps.map(\.description) == ["Model1 -> Model2 (mapping model Model1_to_Model2, through objects)"])
        AuthorsPolicy.calls = 0
        try StoreMigrator.migrateStore(at: storeURL, plan: plan)
        #expect(AuthorsPolicy.calls == 4)
        // Restore the policy the other suite registers under this name.
        EntityMigrationPolicy.register(BookAuthorsPolicy.self, forClassName: "MHWBookToBookPolicy")
    }

    @Test("3. A staged migration set on a description")
    func staged() async throws {
        let folder = Fixtures.url("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld")
        let versions = try ModelVersionBundle(contentsOf: folder)
        let storeURL = try Fixtures.copyStore("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v1.0.0.sqlite")
        let v1 = try versions.model(forVersion: "v1.0.0"), v2 = try versions.model(forVersion: "v1.1.0")
        let custom = CustomMigrationStage(
            migratingFrom: try ManagedObjectModelReference(model: v1, versionChecksum: v1.versionChecksum),
            to: try ManagedObjectModelReference(model: v2, versionChecksum: v2.versionChecksum))
        let ran = Lock(false)
        custom.willMigrateHandler = { manager, _ in
            // The store at v1, through manager.container: fill what v2 makes mandatory.
            if manager.container != nil { ran.withLock { $0 = true } }
        }
        var description = PersistentStoreDescription(url: storeURL)
        // Only custom stages make step boundaries: one per later pair of versions
        // too, so that the renames chained from version to version keep the value.
        var stages: [any MigrationStage] = [custom]
        let names = versions.versionNames
        for index in 1..<(names.count - 1) {
            let from = try versions.model(forVersion: names[index]), to = try versions.model(forVersion: names[index + 1])
            stages.append(CustomMigrationStage(migratingFrom: try ManagedObjectModelReference(model: from, versionChecksum: from.versionChecksum),
                                               to: try ManagedObjectModelReference(model: to, versionChecksum: to.versionChecksum)))
        }
        description.stagedMigrationManager = try StagedMigrationManager(stages)

        let container = PersistentContainer(name: "Example", managedObjectModel: try ManagedObjectModel(contentsOf: folder))
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        #expect(ran.withLock { $0 })
        let value = try container.viewContext.performAndWait {
            try container.viewContext.fetch(FetchRequest<ManagedObject>(entityName: "BasicEntity")).first?.attributeValue(forKey: "v2_0_0_name")
        }
        #expect(value != nil && value != .null)
    }
}

