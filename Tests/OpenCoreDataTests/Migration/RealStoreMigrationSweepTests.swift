import Foundation
import GRDB
import OpenCoreData
import Testing

/// Migration code on every real model and store, beyond the ones with older versions:
/// inference between every pair of versions of every bundle never traps, and the
/// Photos libraries (large real schemas: deep inheritance, ordered relationships,
/// join tables, triggers, history) migrate in place to their own model with an
/// attribute added to every root entity, keeping every row, and reopen.
@Suite struct RealStoreMigrationSweepTests {
    @Test("Inference between every pair of versions of every fixture bundle succeeds or throws 134190")
    func inferenceOnEveryBundle() throws {
        var pairs = 0
        for url in Fixtures.allModelFiles() where url.pathExtension == "xcdatamodeld" {
            let versions = try ModelVersionBundle(contentsOf: url)
            for a in versions.versionNames {
                for b in versions.versionNames where a != b {
                    pairs += 1
                    do {
                        _ = try MappingModel.inferredMappingModel(forSourceModel: try versions.model(forVersion: a),
                                                                  destinationModel: try versions.model(forVersion: b))
                    } catch let error as CoreDataError {
                        #expect(error.code == .inferredMappingModel, "\(url.lastPathComponent) \(a) -> \(b): \(error)")
                    }
                }
            }
        }
        #expect(pairs > 50)
    }

    @Test("A Photos library migrates in place with an attribute added to every root entity, every row kept",
          arguments: ["10.15.1", "13.0.0", "26.1"])
    func photosLibrary(version: String) throws {
        let url = try Fixtures.copyStore("tkanarsky+osxphotos/tests/Test-\(version).photoslibrary/database/Photos.sqlite")
        let source = try SQLiteStore.storedModel(at: url)
        let destination = source.copy()
        for entity in destination.entities where entity.superentity == nil {
            entity.properties.append(AttributeDescription(name: "ocdAdded", type: .string, optional: true, defaultValue: .string("x")))
        }
        let counts = { (url: URL, model: ManagedObjectModel) throws -> [String: Int] in
            let schema = try DatabaseQueue(path: url.path).read { db in try SQLiteSchema(reading: db, model: model) }
            var result: [String: Int] = [:]
            try DatabaseQueue(path: url.path).read { db in
                for table in schema.tables {
                    guard case .entity = table.kind else { continue }
                    result[table.name.uppercased()] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"\(table.name)\"")
                }
            }
            return result
        }
        let before = try counts(url, source)
        let mapping = try MappingModel.inferredMappingModel(forSourceModel: source, destinationModel: destination)
        let step = MigrationPlan.Step(sourceVersion: "cached", destinationVersion: "plus", sourceModel: source,
                                      destinationModel: destination, mappingModel: mapping, mappingSource: .inferred)
        try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [step]))
        #expect(try counts(url, destination) == before)
        #expect(destination.isConfiguration(withName: nil, compatibleWithStoreMetadata: try SQLiteStoreMetadata.read(at: url)))
        let coordinator = PersistentStoreCoordinator(managedObjectModel: destination)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: ["NSReadOnlyPersistentStoreOption": "1"])
    }
}
