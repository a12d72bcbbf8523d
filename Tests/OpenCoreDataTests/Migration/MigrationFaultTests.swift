import Foundation
import OpenCoreData
import Testing

/// A migration killed at any point leaves the old store or the new one, never a
/// mixture, and the next migration finishes the job.
@Suite struct MigrationFaultTests {
    @Test("Killed at each point of a migration, the store is at version 1 or version 2, and migrates afterwards",
          arguments: ["copied", "in-place", "migrated", "checkpointed", "renamed"])
    func killedMigration(point: String) async throws {
        let url = try LightweightMigrationTests.makeVersion1Store(history: false)
        let v1 = try LightweightMigrationTests.version1(), v2 = try LightweightMigrationTests.version2()
        let before = try MigrationCheck.objects(at: url, model: v1)
        let path = url.path
        await #expect(processExitsWith: .exitCode(75)) { [path = path as String, point = point as String] in
            FaultPoints.install { reached in if reached == point { _exit(75) } }
            let url = URL(fileURLWithPath: path)
            let step = try LightweightMigrationTests.step(try LightweightMigrationTests.version1(), try LightweightMigrationTests.version2())
            try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [step]))
        }
        let metadata = try SQLiteStoreMetadata.read(at: url)
        let atVersion2 = v2.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata)
        #expect(atVersion2 == (point == "renamed"), "at \(point)")
        if atVersion2 {
            #expect(try MigrationCheck.objects(at: url, model: v2)["Animal"]?.count == 5)
        } else {
            #expect(v1.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
            #expect(try MigrationCheck.objects(at: url, model: v1) == before)
            // The next migration cleans up and finishes.
            try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [try LightweightMigrationTests.step(try LightweightMigrationTests.version1(), v2)]))
            #expect(try MigrationCheck.objects(at: url, model: v2)["Person"]?.count == 3)
            #expect(try MigrationCheck.leftovers(beside: url).isEmpty)
        }
    }
}
