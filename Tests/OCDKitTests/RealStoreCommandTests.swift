import Foundation
import Testing
@testable import OCDKit
@testable import OpenCoreData

/// Issue 32: `ocd store info` and `ocd fetch` read every fixture store Apple's
/// tools wrote, without its model (from `Z_MODELCACHE`) and with the model version
/// that wrote it, and never crash.
@Suite("ocd on every real fixture store")
struct RealStoreCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataTests/Fixtures/coredata")

    /// Store, and the `.xcdatamodel` version folder that wrote it (nil: none).
    static let stores: [(store: String, model: String?)] = {
        let moody = "objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld/"
        let jeff = "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld/"
        let bookmarks = "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld/"
        var list: [(String, String?)] = [
            ("objcio+core-data/Migrations/MigrationsTests/Moody.moody", moody + "Moody.xcdatamodel"),
            ("bignerdranch+CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
             "bignerdranch+CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld/TestModel.xcdatamodel"),
            ("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite",
             "objcio+issue-4-core-data-migration/BookMigration/Model.xcdatamodeld/Model1.xcdatamodel"),
        ]
        for n in 2...5 { list.append(("objcio+core-data/Migrations/MigrationsTests/Moody \(n).moody", moody + "Moody \(n).xcdatamodel")) }
        for version in ["v1.0.0", "v1.1.0", "v1.1.2", "v1.2.0", "v2.0.0"] {
            list.append(("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_\(version).sqlite",
                         jeff + "\(version).xcdatamodel"))
        }
        for n in 1...5 {
            list.append(("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V\(n).sqlite",
                         bookmarks + (n == 1 ? "BookmarksModel.xcdatamodel" : "BookmarksModel \(n).xcdatamodel")))
        }
        for version in ["10.15.1", "13.0.0", "26.1"] {
            list.append(("tkanarsky+osxphotos/tests/Test-\(version).photoslibrary/database/Photos.sqlite", nil))
        }
        return list
    }()

    /// A copy of a fixture store (with its -wal/-shm) in a scratch folder.
    static func copy(_ relativePath: String, from root: URL = fixtures) throws -> URL {
        let source = root.appendingPathComponent(relativePath)
        let folder = try TestScratch.folder("real")
        let target = folder.appendingPathComponent(source.lastPathComponent)
        try FileManager.default.copyItem(at: source, to: target)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: source.path + suffix) {
            try FileManager.default.copyItem(at: URL(fileURLWithPath: source.path + suffix), to: URL(fileURLWithPath: target.path + suffix))
        }
        return target
    }

    @Test("store info and fetch read the store, with the cached model and with its own", arguments: stores.map(\.store))
    func infoAndFetch(store: String) throws {
        let entry = try #require(Self.stores.first { $0.store == store })
        let copy = try Self.copy(store)
        var modelArguments: [[String]] = []
        if !store.hasSuffix("Model1.sqlite") { modelArguments.append([]) }   // framework 419: no model cache
        if let model = entry.model {
            let url = Self.fixtures.appendingPathComponent(model)
            #expect(FileManager.default.fileExists(atPath: url.path), "\(model)")
            modelArguments.append(["--model", url.path])
        }
        #expect(!modelArguments.isEmpty)
        for extra in modelArguments {
            let output = try runOCD(["store", "info", copy.path, "--json"] + extra)
            let info = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
            let entities = try #require(info["entities"] as? [[String: Any]])
            #expect(!entities.isEmpty)
            // Fetch the first entity that has objects (TestModel.sqlite has none: its first entity).
            let withRows = entities.first { ($0["rows"] as? Int ?? 0) > 0 }
            let name = try #require((withRows ?? entities[0])["name"] as? String)
            let fetched = try runOCD(["fetch", copy.path, "--entity", name, "--limit", "3", "--json"] + extra)
            let objects = try #require(try JSONSerialization.jsonObject(with: Data(fetched.utf8)) as? [[String: Any]])
            #expect(objects.isEmpty == (withRows == nil), "\(name) in \(store)")
        }
    }

    @Test("A model file that fails validation is an error from ocd, not a crash")
    func invalidModelIsAnError() throws {
        let folder = try TestScratch.folder("invalid").appendingPathComponent("Bad.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="A"><relationship name="r" maxCount="1" destinationEntity="Ghost"/></entity>
            </model>
            """
        try Data(xml.utf8).write(to: folder.appendingPathComponent("contents"))
        let copy = try Self.copy("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody")
        #expect(throws: (any Error).self) { try runOCD(["store", "info", copy.path, "--model", folder.path]) }
    }
}
