import Foundation
import GRDB
import OpenCoreData
#if PostgreSQLTests
import OpenCoreDataPostgreSQL
#endif
import Testing

/// The Apple-written fixtures kept in Tests/OpenCoreDataTests/Fixtures (see its
/// SOURCES.md). Stores are always copied to a temporary folder before opening.
enum Fixtures {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/coredata")

    static func url(_ relativePath: String) -> URL {
        root.appendingPathComponent(relativePath)
    }

    static let moodyModel = url("objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld")
    static let moodyStores = url("objcio+core-data/Migrations/MigrationsTests")

    /// Every store fixture with the model version that wrote it.
    static let storesWithModels: [(store: String, model: String, version: String)] = [
        ("objcio+core-data/Migrations/MigrationsTests/Moody.moody", "objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld", "Moody"),
        ("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody", "objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld", "Moody 2"),
        ("objcio+core-data/Migrations/MigrationsTests/Moody 3.moody", "objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld", "Moody 3"),
        ("objcio+core-data/Migrations/MigrationsTests/Moody 4.moody", "objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld", "Moody 4"),
        ("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody", "objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld", "Moody 5"),
        ("bignerdranch+CoreDataStack/Sample Model/Deprecated/TestModel.sqlite", "bignerdranch+CoreDataStack/Sample Model/Deprecated/Sample.xcdatamodeld", "TestModel"),
        ("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v1.0.0.sqlite", "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld", "v1.0.0"),
        ("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v1.1.0.sqlite", "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld", "v1.1.0"),
        ("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v1.1.2.sqlite", "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld", "v1.1.2"),
        ("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v1.2.0.sqlite", "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld", "v1.2.0"),
        ("jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigrationTests/Example_v2.0.0.sqlite", "jeffreybergier+CoreDataMigrationTests/CoreDataMigration/CoreDataMigration/Model.xcdatamodeld", "v2.0.0"),
        ("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite", "objcio+issue-4-core-data-migration/BookMigration/Model.xcdatamodeld", "Model1"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V1.sqlite", "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld", "BookmarksModel"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V2.sqlite", "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld", "BookmarksModel 2"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V3.sqlite", "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld", "BookmarksModel 3"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V4.sqlite", "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld", "BookmarksModel 4"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V5.sqlite", "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld", "BookmarksModel 5"),
    ]

    /// Every model file among the fixtures (`.xcdatamodeld` bundles and bare
    /// `.xcdatamodel` folders not inside a bundle).
    static func allModelFiles() -> [URL] {
        var result: [URL] = []
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "xcdatamodeld" {
                result.append(url)
                enumerator?.skipDescendants()
            } else if url.pathExtension == "xcdatamodel" {
                result.append(url)
            }
        }
        return result.sorted { $0.path < $1.path }
    }

    /// Copies a store (with its -wal/-shm files) into a new temporary folder and
    /// returns the copy's URL.
    static func copyStore(_ relativePath: String) throws -> URL {
        let source = url(relativePath)
        let folder = try temporaryDirectory()
        let target = folder.appendingPathComponent(source.lastPathComponent)
        try FileManager.default.copyItem(at: source, to: target)
        for suffix in ["-wal", "-shm"] {
            let side = URL(fileURLWithPath: source.path + suffix)
            if FileManager.default.fileExists(atPath: side.path) {
                try FileManager.default.copyItem(at: side, to: URL(fileURLWithPath: target.path + suffix))
            }
        }
        return target
    }

    /// A coordinator for `model` with one store of `storeType`: SQLite in a new
    /// temporary folder (returned too, for the test to remove), or in memory.
    static func coordinator(for model: ManagedObjectModel, storeType: PersistentStoreType) throws -> (PersistentStoreCoordinator, folder: URL?) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        guard storeType == .sqlite else {
            try addStore(type: storeType, to: coordinator)
            return (coordinator, nil)
        }
        let folder = try temporaryDirectory()
        try coordinator.addPersistentStore(type: .sqlite, at: folder.appendingPathComponent("Store.sqlite"))
        return (coordinator, folder)
    }

    /// Adds a store of a type without a file to `coordinator`: an in-memory store,
    /// or a PostgreSQL store in a new schema of the test server.
    @discardableResult
    static func addStore(type: PersistentStoreType, to coordinator: PersistentStoreCoordinator) throws -> any PersistentStore {
        #if PostgreSQLTests
        if type == .postgreSQL {
            return try coordinator.addPersistentStore(type: .postgreSQL, at: try PostgreSQLTestServer.url(),
                                                      options: PostgreSQLTestServer.storeOptions())
        }
        #endif
        return try coordinator.addPersistentStore(type: type)
    }

    /// A new empty folder for one test, inside this process's scratch folder
    /// (``TestScratch``), which goes when the test process exits.
    static func temporaryDirectory() throws -> URL {
        try TestScratch.folder()
    }

    /// The metadata dictionary of a store copy, read from `Z_METADATA` directly.
    static func storeMetadata(_ relativePath: String) throws -> [String: Any] {
        let copy = try copyStore(relativePath)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let queue = try DatabaseQueue(path: copy.path)
        let blob: Data? = try queue.read { db in try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA") }
        guard let blob, let plist = try PropertyListSerialization.propertyList(from: blob, format: nil) as? [String: Any] else {
            throw FixtureError("no metadata plist in \(relativePath)")
        }
        return plist
    }

    struct FixtureError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
