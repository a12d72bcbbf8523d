import Foundation
import GRDB
import Testing
@testable import OpenCoreData

/// Issue 32: mutated model caches, `.mom` archives and store schemas fed to the
/// loaders, the validation, the layout and the store opening: errors, never a trap
/// or a hang. Seeded (a failing round replays from its seed) and bounded.
@Suite("Real stores: fuzzed models and schemas")
struct RealStoreFuzzTests {
    static let bookmarks = "duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V5.sqlite"
    static let moody = "objcio+core-data/Migrations/MigrationsTests/Moody 5.moody"

    /// Loads, validates (throwing path), lays out and, when `store` is given, opens
    /// read-only and reads every entity. Returns whether everything succeeded.
    @discardableResult
    static func exercise(_ model: ManagedObjectModel, store: URL?) throws -> Bool {
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        _ = try SQLiteSchema(model: model)
        guard let store else { return true }
        try coordinator.addPersistentStore(type: .sqlite, at: store, options: [SQLiteStore.Option.readOnly: "1"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait { () throws -> Void in
            for entity in model.entities {
                let request = FetchRequest<ManagedObject>(entity: entity)
                request.fetchLimit = 5
                for object in try context.fetch(request) {
                    for property in entity.allProperties {
                        if let relationship = property as? RelationshipDescription, relationship.isToMany {
                            _ = object.objects(forRelationship: property.name)
                        } else {
                            _ = object.value(forKey: property.name)
                        }
                    }
                }
            }
        }
        return true
    }

    static func archives() throws -> [Data] {
        var result: [Data] = []
        for store in [bookmarks, moody, "tkanarsky+osxphotos/tests/Test-10.15.1.photoslibrary/database/Photos.sqlite"] {
            if let blob = try CompiledModelFixtureTests.modelCache(store) { result.append(try Inflate.decompress(blob)) }
        }
        return result
    }

    @Test("Mutated model caches and .mom archives: load, validate, lay out, open: errors only", .timeLimit(.minutes(10)))
    func mutatedModels() throws {
        var generator = SeededGenerator(seed: 0x1532_0032)
        let archives = try Self.archives()
        #expect(archives.count == 3)
        let store = try Fixtures.copyStore(Self.bookmarks)
        defer { SQLiteTestSupport.remove(store) }
        var outcomes = (passed: 0, failed: 0)
        for round in 0..<Self.modelRounds {
            // The Photos model (thousands of objects) one round in twenty: it is slow to decode.
            let which = round % 20 == 19 ? 2 : Int.random(in: 0..<2, using: &generator)
            var bytes = [UInt8](archives[which])
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = Bool.random(using: &generator) ? UInt8.random(in: 0...255, using: &generator)
                                                                : UInt8.random(in: 0...16, using: &generator)
            }
            do {
                // As a .mom (the archive itself) and as a model cache (deflated).
                let data = Data(bytes)
                let model = round % 2 == 0 ? try ManagedObjectModel(compiledModelData: data)
                                           : try ManagedObjectModel(modelCacheData: Deflate.compress(data))
                // The Bookmarks model opens its own store; the others only lay out.
                try Self.exercise(model, store: which == 0 ? store : nil)
                outcomes.passed += 1
            } catch is CoreDataError {
                outcomes.failed += 1
            } catch {
                Issue.record("round \(round): unexpected error type \(type(of: error)): \(error)")
            }
        }
        #expect(outcomes.passed + outcomes.failed == Self.modelRounds)
        #expect(outcomes.failed > 0 && outcomes.passed > 0)
    }

    static let modelRounds = 240

    /// One mutation of a store's schema or bookkeeping, as SQL.
    static func mutation(_ db: Database, using generator: inout SeededGenerator) throws -> String {
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        guard let table = tables.randomElement(using: &generator) else { return "" }
        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
        let column = columns.randomElement(using: &generator) ?? "Z_PK"
        let number = Int.random(in: -2...40, using: &generator)
        switch Int.random(in: 0..<11, using: &generator) {
        case 0: return "DROP TABLE \"\(table)\""
        case 1: return "ALTER TABLE \"\(table)\" DROP COLUMN \"\(column)\""
        case 2: return "ALTER TABLE \"\(table)\" RENAME COLUMN \"\(column)\" TO \"\(column)X\""
        case 3: return "ALTER TABLE \"\(table)\" RENAME TO \"\(table)_OLD\""
        case 4: return "UPDATE Z_PRIMARYKEY SET Z_NAME = Z_NAME || 'X' WHERE Z_ENT = \(number)"
        case 5: return "UPDATE Z_PRIMARYKEY SET Z_SUPER = \(number) WHERE Z_ENT = (SELECT MIN(Z_ENT) FROM Z_PRIMARYKEY)"
        case 6: return "DELETE FROM Z_PRIMARYKEY WHERE Z_ENT = \(number)"
        case 7: return "UPDATE \"\(table)\" SET \"\(column)\" = \(number)"
        case 8: return "UPDATE \"\(table)\" SET \"\(column)\" = x'00ff13'"
        case 9: return "UPDATE Z_METADATA SET Z_PLIST = substr(Z_PLIST, 1, \(max(number, 0) * 10))"
        default: return "UPDATE Z_MODELCACHE SET Z_CONTENT = substr(Z_CONTENT, \(max(number, 1)), 5000)"
        }
    }

    @Test("Mutated store schemas open with an error or not at all, with and without the model", .timeLimit(.minutes(10)))
    func mutatedSchemas() throws {
        var generator = SeededGenerator(seed: 0x5C4E_3A32)
        let sources: [(store: String, model: ManagedObjectModel)] = [
            (Self.bookmarks, try XcodeDataModel(contentsOf: Fixtures.url(RealStoreTests.bookmarksModel)).model(forVersion: "BookmarksModel 5")),
            (Self.moody, try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5")),
        ]
        var outcomes = (opened: 0, refused: 0)
        for round in 0..<80 {
            let source = sources[round % sources.count]
            let copy = try Fixtures.copyStore(source.store)
            defer { SQLiteTestSupport.remove(copy) }
            var applied: [String] = []
            do {
                let queue = try DatabaseQueue(path: copy.path)
                try queue.writeWithoutTransaction { db in
                    for _ in 0..<Int.random(in: 1...3, using: &generator) {
                        let sql = try Self.mutation(db, using: &generator)
                        applied.append(sql)
                        try? db.execute(sql: sql)
                    }
                }
                try queue.close()
            }
            for withModel in [true, false] {
                do {
                    let model = withModel ? source.model : try SQLiteStore.storedModel(at: copy)
                    try Self.exercise(model, store: copy)
                    outcomes.opened += 1
                } catch is CoreDataError {
                    outcomes.refused += 1
                } catch {
                    Issue.record("round \(round) \(applied): unexpected error type \(type(of: error)): \(error)")
                }
            }
        }
        #expect(outcomes.opened + outcomes.refused == 160)
        #expect(outcomes.refused > 0)
    }
}
