import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// Staged migration: custom stages with handlers around an inferred step, runs of
/// lightweight stages, and the refusals.
@Suite struct StagedMigrationTests {
    static func version(_ number: Int) throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string, optional: number == 1)
                if number >= 3 { Attribute("email", .string, defaultValue: .string("none")) }
            }
        }
    }

    /// A version-1 store with one nameless person and one named.
    static func makeStore(allNamed: Bool = false) throws -> URL {
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("Staged.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try version(1))
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let entity = coordinator.managedObjectModel.entitiesByName["Person"]!
            ManagedObject(entity: entity, insertInto: context).setValue("Ada", forKey: "name")
            let second = ManagedObject(entity: entity, insertInto: context)
            if allNamed { second.setValue("Grace", forKey: "name") }
            try context.save()
        }
        coordinator.remove(store)
        return url
    }

    static func load(_ url: URL, model: ManagedObjectModel, stages: StagedMigrationManager) async throws -> PersistentContainer {
        let container = PersistentContainer(name: "Staged", managedObjectModel: model)
        var description = PersistentStoreDescription(url: url)
        description.stagedMigrationManager = stages
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        return container
    }

    @Test("A custom stage fills what the next version makes mandatory, then a lightweight run reaches the current model")
    func customThenLightweight() async throws {
        let url = try Self.makeStore()
        let v1 = try Self.version(1), v2 = try Self.version(2), v3 = try Self.version(3)
        let custom = CustomMigrationStage(migratingFrom: try ManagedObjectModelReference(model: v1, versionChecksum: v1.versionChecksum),
                                          to: try ManagedObjectModelReference(model: v2, versionChecksum: v2.versionChecksum))
        let seen = Lock<[String]>([])
        custom.willMigrateHandler = { manager, _ in
            let container = try #require(manager.container)
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let request = FetchRequest<ManagedObject>(entityName: "Person")
                request.predicate = try CorePredicate(format: "name == nil")
                for person in try context.fetch(request) { person.setValue("Unknown", forKey: "name") }
                try context.save()
            }
            seen.withLock { $0.append("will: email \(container.managedObjectModel.entitiesByName["Person"]?.attributesByName["email"] != nil)") }
        }
        custom.didMigrateHandler = { manager, _ in
            let container = try #require(manager.container)
            let count = try container.viewContext.performAndWait { try container.viewContext.count(for: FetchRequest<ManagedObject>(entityName: "Person")) }
            seen.withLock { $0.append("did: \(count) people, mandatory name \(container.managedObjectModel.entitiesByName["Person"]?.attributesByName["name"]?.isOptional == false)") }
        }
        let stages = try StagedMigrationManager([custom, LightweightMigrationStage([v2.versionChecksum, v3.versionChecksum])])
        let container = try await Self.load(url, model: try Self.version(3), stages: stages)
        #expect(seen.withLock { $0 } == ["will: email false", "did: 2 people, mandatory name true"])
        let values = try container.viewContext.performAndWait {
            try container.viewContext.fetch(FetchRequest<ManagedObject>(entityName: "Person")).map {
                "\($0.attributeValue(forKey: "name")) \($0.attributeValue(forKey: "email"))"
            }.sorted()
        }
        #expect(values == ["\(AttributeValue.string("Ada")) \(AttributeValue.string("none"))", "\(AttributeValue.string("Unknown")) \(AttributeValue.string("none"))"])
    }

    @Test("Without the custom stage, the mandatory name fails the migration (134110) and the store stays at version 1")
    func lightweightAloneFails() async throws {
        let url = try Self.makeStore()
        let v1 = try Self.version(1), v3 = try Self.version(3)
        let stages = try StagedMigrationManager([LightweightMigrationStage([v1.versionChecksum, v3.versionChecksum])])
        let bytes = MigrationCheck.bytes(of: url)
        await #expect(throws: CoreDataError.self) { _ = try await Self.load(url, model: v3, stages: stages) }
        #expect(MigrationCheck.bytes(of: url) == bytes)
        #expect(v1.isConfiguration(withName: nil, compatibleWithStoreMetadata: try SQLiteStoreMetadata.read(at: url)))
    }

    @Test("Duplicate checksums, a backwards migration (134506) and an unknown version are refused")
    func refusals() async throws {
        let v1 = try Self.version(1), v2 = try Self.version(2), v3 = try Self.version(3)
        let duplicate = #expect(throws: CoreDataError.self) {
            try StagedMigrationManager([LightweightMigrationStage([v1.versionChecksum]), LightweightMigrationStage([v1.versionChecksum, v2.versionChecksum])])
        }
        #expect(duplicate?.message.contains("Duplicate version checksums") == true)

        // A store at version 3 opened with version 2's model.
        let url = try Self.makeStore(allNamed: true)
        _ = try await Self.load(url, model: v3, stages: try StagedMigrationManager([LightweightMigrationStage([v1.versionChecksum, v3.versionChecksum])]))
        let backwards = await #expect(throws: CoreDataError.self) {
            _ = try await Self.load(url, model: v2, stages: try StagedMigrationManager([LightweightMigrationStage([v1.versionChecksum, v2.versionChecksum, v3.versionChecksum])]))
        }
        #expect(backwards?.code == .stagedMigrationBackwardMigration)

        let other = try ManagedObjectModel { Entity("Other") { Attribute("x", .string) } }
        let unknown = await #expect(throws: CoreDataError.self) {
            _ = try await Self.load(try Self.makeStore(), model: v3, stages: try StagedMigrationManager([LightweightMigrationStage([other.versionChecksum])]))
        }
        #expect(unknown?.message.contains("unknown model version") == true)
    }
}
