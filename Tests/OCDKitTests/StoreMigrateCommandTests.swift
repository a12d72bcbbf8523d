import Foundation
import Testing
@testable import OCDKit
import OpenCoreData

/// `ocd store migrate` on real stores: the plan, the migration, a dry run, and
/// the refusal of a step whose policy class the tool does not have.
@Suite("ocd store migrate")
struct StoreMigrateCommandTests {
    static let bookmarks = RealStoreCommandTests.fixtures
        .appendingPathComponent("duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld").path
    static let moodyFolder = RealStoreCommandTests.fixtures.appendingPathComponent("objcio+core-data/Migrations/Migrations")

    @Test("An old store is migrated in place to the bundle's current version, step by step")
    func migratesToCurrentVersion() throws {
        let store = try RealStoreCommandTests.copy("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V2.sqlite")
        let dry = try runOCD(["store", "migrate", store.path, "--model", Self.bookmarks, "--dry-run"])
        #expect(dry.contains("1. BookmarksModel 2 -> BookmarksModel 3 (inferred, in place with SQL)"))
        #expect(dry.contains("4. BookmarksModel 5 -> BookmarksModel 6 (inferred, in place with SQL)"))
        #expect(!dry.contains("Migrated"))
        let versions = try ModelVersionBundle(contentsOf: URL(fileURLWithPath: Self.bookmarks))
        #expect(try versions.versionName(compatibleWithStoreMetadata: SQLiteStoreMetadata.read(at: store)) == "BookmarksModel 2")

        let output = try runOCD(["store", "migrate", store.path, "--model", Self.bookmarks])
        #expect(output.contains("Migrated \(store.path) to version 'BookmarksModel 6'"))
        #expect(try versions.versionName(compatibleWithStoreMetadata: SQLiteStoreMetadata.read(at: store)) == "BookmarksModel 6")
        let info = try runOCD(["store", "info", store.path, "--model", Self.bookmarks])
        #expect(info.contains("BookmarkEntity"))
        #expect(try runOCD(["store", "migrate", store.path, "--model", Self.bookmarks]).contains("nothing to migrate"))
    }

    @Test("--to stops at a version; a target older than the store is refused")
    func migratesToAChosenVersion() throws {
        let store = try RealStoreCommandTests.copy("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V3.sqlite")
        try runOCD(["store", "migrate", store.path, "--model", Self.bookmarks, "--to", "BookmarksModel 4"])
        let versions = try ModelVersionBundle(contentsOf: URL(fileURLWithPath: Self.bookmarks))
        #expect(try versions.versionName(compatibleWithStoreMetadata: SQLiteStoreMetadata.read(at: store)) == "BookmarksModel 4")
        #expect(throws: CommandFailure.self) {
            try runOCD(["store", "migrate", store.path, "--model", Self.bookmarks, "--to", "BookmarksModel 2"])
        }
    }

    @Test("Mapping models from --mappings are used; a policy class the tool lacks fails before anything changes")
    func mappingModelsAndMissingPolicies() throws {
        let store = try RealStoreCommandTests.copy("objcio+core-data/Migrations/MigrationsTests/Moody 4.moody")
        // The policy registry is process-wide and other suites of this test process
        // register the book's policy: the mapping models are copied with a policy
        // class name nobody registers.
        let folder = try TestScratch.folder("mappings").appendingPathComponent("Migrations")
        try FileManager.default.copyItem(at: Self.moodyFolder, to: folder)
        let xml = folder.appendingPathComponent("Moody 5-Moody 6.xcmappingmodel/xcmapping.xml")
        let text = try String(contentsOf: xml, encoding: .utf8)
            .replacingOccurrences(of: "Migrations.Country5ToCountry6Policy", with: "Migrations.PolicyNobodyRegisters")
        try text.write(to: xml, atomically: true, encoding: .utf8)
        let model = folder.appendingPathComponent("Moody.xcdatamodeld").path
        let bytes = FileManager.default.contents(atPath: store.path)
        let error = #expect(throws: CommandFailure.self) {
            try runOCD(["store", "migrate", store.path, "--model", model, "--mappings", folder.path])
        }
        #expect(error?.description.contains("Migrations.PolicyNobodyRegisters") == true)
        #expect(FileManager.default.contents(atPath: store.path) == bytes)
        // Up to version 5 no policy is needed: the mapping model runs through objects.
        let output = try runOCD(["store", "migrate", store.path, "--model", model, "--mappings", folder.path, "--to", "Moody 5"])
        #expect(output.contains("Moody 4 -> Moody 5 (mapping model Moody 4-Moody 5, through objects)"))
        let fetched = try runOCD(["fetch", store.path, "--model", model + "/Moody 5.xcdatamodel", "--entity", "Country", "--json"])
        #expect(fetched.contains("isoContinent"))
    }
}
