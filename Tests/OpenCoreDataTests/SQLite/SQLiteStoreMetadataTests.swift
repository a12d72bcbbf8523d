import Foundation
import GRDB
import Testing
@testable import OpenCoreData

@Suite("SQLite store metadata")
struct SQLiteStoreMetadataTests {
    static let stores = Fixtures.storesWithModels.map(\.store)

    @Test("Metadata read from a fixture equals its Z_METADATA, and the model that wrote it is compatible",
          arguments: stores)
    func fixtureMetadata(store: String) throws {
        let entry = try #require(SQLiteTestSupport.entry(store))
        let model = try SQLiteTestSupport.model(for: entry)
        let url = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(url) }
        let before = SQLiteTestSupport.fileContents(url)
        let metadata = try SQLiteStoreMetadata.read(at: url)
        SQLiteTestSupport.expectUnchanged(url, before: before)

        let raw = try Fixtures.storeMetadata(store)
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        let uuid = try queue.read { db in try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA") }
        try queue.close()
        #expect(metadata["NSStoreUUID"] as? String == uuid)
        #expect(Set(metadata.keys) == Set(raw.keys).union(["NSStoreUUID"]))
        #expect(NSDictionary(dictionary: metadata.filter { $0.key != "NSStoreUUID" }).isEqual(to: raw))
        #expect(metadata["NSStoreType"] as? String == "SQLite")
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        try SQLiteStoreMetadata.checkCompatibility(of: metadata, with: model)
    }

    @Test("Reading the metadata waits for a connection that holds the store locked for a moment, instead of failing")
    func metadataWaitsForALock() throws {
        let store = try #require(Self.stores.first)
        let url = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(url) }
        // Another connection takes the exclusive lock (as a closing store's
        // checkpoint or a rollback-journal commit does) and lets it go 0.3 s later.
        var held = Configuration()
        held.allowsUnsafeTransactions = true
        let locker = try DatabaseQueue(path: url.path, configuration: held)
        try locker.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "BEGIN EXCLUSIVE")
        }
        // A thread of its own: the suite's blocking tests can hold every thread of
        // Dispatch's pool for longer than the wait.
        let released = DispatchSemaphore(value: 0)
        Thread {
            Thread.sleep(forTimeInterval: 0.3)
            try? locker.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") }
            released.signal()
        }.start()
        let start = Date()
        let metadata = try SQLiteStoreMetadata.read(at: url)
        #expect(Date().timeIntervalSince(start) >= 0.2)
        #expect(metadata["NSStoreType"] as? String == "SQLite")
        released.wait()
        try locker.close()
    }

    @Test("A created store's metadata round-trips and is compatible with its model", arguments: stores)
    func createdMetadata(store: String) throws {
        let entry = try #require(SQLiteTestSupport.entry(store))
        let model = try SQLiteTestSupport.model(for: entry)
        let appKeys: [String: Any] = ["com.example.user": "someone", "com.example.counts": [1, 2, 3],
                                      "com.example.blob": Data([0, 1, 2]), "com.example.flag": true]
        let (url, _) = try SQLiteTestSupport.createdStore(model, metadata: appKeys)
        defer { SQLiteTestSupport.remove(url) }
        let metadata = try SQLiteStoreMetadata.read(at: url)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let fixture = try SQLiteStoreMetadata.read(at: Fixtures.copyStore(store))
        #expect((metadata["NSStoreModelVersionHashes"] as? [String: Data]) == (fixture["NSStoreModelVersionHashes"] as? [String: Data]))
        // The model's identifiers. (Moody.moody records [""] although the "Moody"
        // model file now says "1": identifiers don't enter the hashes.)
        #expect(metadata["NSStoreModelVersionIdentifiers"] as? [String] == model.versionIdentifiers.sorted())
        if store.hasSuffix("Moody.moody") {
            #expect(fixture["NSStoreModelVersionIdentifiers"] as? [String] == [""])
        } else {
            #expect(metadata["NSStoreModelVersionIdentifiers"] as? [String] == fixture["NSStoreModelVersionIdentifiers"] as? [String])
        }
        #expect(metadata["NSStoreModelVersionHashesVersion"] as? Int == 3)
        #expect(metadata["_NSAutoVacuumLevel"] as? String == "2")
        #expect(metadata["NSStoreModelVersionHashesDigest"] as? String == model.versionHashesDigest)
        #expect(metadata["NSStoreModelVersionChecksumKey"] as? String == model.versionChecksum)
        #expect(metadata["NSPersistenceFrameworkVersion"] as? Int == SQLiteStoreMetadata.frameworkVersion)
        if let digest = fixture["NSStoreModelVersionHashesDigest"] as? String {
            #expect(metadata["NSStoreModelVersionHashesDigest"] as? String == digest)
        }
        #expect(metadata["com.example.user"] as? String == "someone")
        #expect(metadata["com.example.counts"] as? [Int] == [1, 2, 3])
        #expect(metadata["com.example.blob"] as? Data == Data([0, 1, 2]))
        #expect(metadata["com.example.flag"] as? Bool == true)
        let uuid = try #require(metadata["NSStoreUUID"] as? String)
        #expect(UUID(uuidString: uuid) != nil)

        // Z_PLIST is what Core Data keeps there: no NSStoreUUID, UUID in Z_UUID.
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        let (version, storedUUID, plist) = try queue.read { db in
            let row = try #require(try Row.fetchOne(db, sql: "SELECT Z_VERSION, Z_UUID, Z_PLIST FROM Z_METADATA"))
            return (row[0] as Int, row[1] as String, row[2] as Data)
        }
        try queue.close()
        #expect(version == 1)
        #expect(storedUUID == uuid)
        #expect(plist.starts(with: Array("bplist00".utf8)))
        let dictionary = try #require(try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])
        #expect(dictionary["NSStoreUUID"] == nil)
        #expect(dictionary["NSStoreType"] as? String == "SQLite")
    }

    @Test("Writing metadata to an open store replaces it; a given NSStoreUUID is kept")
    func writeAndReplace() throws {
        let model = try ManagedObjectModel { Entity("Note") { Attribute("title", .string) } }
        let uuid = "12345678-1234-1234-1234-1234567890AB"
        let (url, _) = try SQLiteTestSupport.createdStore(model, metadata: ["NSStoreUUID": uuid])
        defer { SQLiteTestSupport.remove(url) }
        #expect(try SQLiteStoreMetadata.read(at: url)["NSStoreUUID"] as? String == uuid)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            var metadata = try SQLiteStoreMetadata.read(from: db)
            metadata["app"] = "changed"
            try SQLiteStoreMetadata.write(metadata, to: db)
        }
        try queue.close()
        let metadata = try SQLiteStoreMetadata.read(at: url)
        #expect(metadata["app"] as? String == "changed")
        #expect(metadata["NSStoreUUID"] as? String == uuid)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    @Test("Values that aren't property-list types are refused, not crashed on")
    func nonPlistValue() throws {
        struct Opaque {}
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: SQLiteLayout.bookkeepingStatements[1])
            let error = #expect(throws: CoreDataError.self) {
                try SQLiteStoreMetadata.write(["bad": Opaque()], to: db)
            }
            #expect(error?.key == "bad")
            let nested = #expect(throws: CoreDataError.self) {
                try SQLiteStoreMetadata.write(["bad": ["x": [Opaque()]]], to: db)
            }
            #expect(nested != nil)
        }
    }

    @Test("A store written by another model version: 134100 naming the entities")
    func incompatibleVersionHashes() throws {
        let metadata = try SQLiteStoreMetadata.read(at: Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody"))
        let moody5 = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5")
        #expect(!moody5.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let error = #expect(throws: CoreDataError.self) {
            try SQLiteStoreMetadata.checkCompatibility(of: metadata, with: moody5)
        }
        #expect(error?.code == .persistentStoreIncompatibleVersionHash)
        #expect(error?.message.contains("'Country'") == true)
        #expect(error?.message.contains("'GeographicRegion'") == true)
        #expect(error?.underlyingErrors.compactMap(\.entityName).contains("Continent") == true)
    }

    // MARK: Malformed stores

    @Test("No file: 260")
    func missingFile() throws {
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("none.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        let error = #expect(throws: CoreDataError.self) { try SQLiteStoreMetadata.read(at: url) }
        #expect(error?.code == .fileReadNoSuchFile)
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("Not a SQLite file: 259", arguments: [Data("this is not a database, just text".utf8),
                                                Data(repeating: 0xFF, count: 4096), Data()])
    func notSQLite(contents: Data) throws {
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("junk.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        try contents.write(to: url)
        let error = #expect(throws: CoreDataError.self) { try SQLiteStoreMetadata.read(at: url) }
        #expect(error?.code == .fileReadCorruptFile)
        #expect(FileManager.default.contents(atPath: url.path) == contents)
    }

    @Test("SQLite without Z_METADATA, with an empty one, with garbage or a non-dictionary plist: 259")
    func malformedMetadata() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases: [(String, [String])] = [
            ("no-table", ["CREATE TABLE T (x)"]),
            ("empty", [SQLiteLayout.bookkeepingStatements[1]]),
            ("null-plist", [SQLiteLayout.bookkeepingStatements[1], "INSERT INTO Z_METADATA VALUES (1, 'U', NULL)"]),
            ("garbage", [SQLiteLayout.bookkeepingStatements[1], "INSERT INTO Z_METADATA VALUES (1, 'U', x'62706C6973743030DEADBEEF')"]),
            ("text", [SQLiteLayout.bookkeepingStatements[1], "INSERT INTO Z_METADATA VALUES (1, 'U', 'hello')"]),
            ("array", [SQLiteLayout.bookkeepingStatements[1], "INSERT INTO Z_METADATA VALUES (1, 'U', ?)"]),
        ]
        let arrayPlist = try PropertyListSerialization.data(fromPropertyList: ["a", "b"], format: .binary, options: 0)
        for (name, statements) in cases {
            let url = folder.appendingPathComponent("\(name).sqlite")
            let queue = try DatabaseQueue(path: url.path)
            try queue.write { db in
                for statement in statements {
                    if statement.contains("?") { try db.execute(sql: statement, arguments: [arrayPlist]) }
                    else { try db.execute(sql: statement) }
                }
            }
            try queue.close()
            let error = #expect(throws: CoreDataError.self, "\(name)") { try SQLiteStoreMetadata.read(at: url) }
            #expect(error?.code == .fileReadCorruptFile, "\(name)")
        }
    }
}
