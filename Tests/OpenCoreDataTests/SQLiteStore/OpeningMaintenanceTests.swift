import Foundation
import GRDB
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// `NSSQLiteManualVacuumOption` and `NSSQLiteAnalyzeOption`: maintenance the SQLite
/// store runs as it is added to a coordinator.
@Suite("SQLite: vacuum and analyze on opening")
struct OpeningMaintenanceTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Note", className: "ManagedObject") {
                Attribute("number", .integer64)
                Attribute("body", .string)
                FetchIndex("byNumber", "number")
            }
        }
    }

    /// A store at `url` with 2,000 notes of which all but 100 were then deleted:
    /// their pages are free inside the file.
    static func makeStoreWithFreePages(at url: URL) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        _ = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let entity = try #require(coordinator.managedObjectModel.entitiesByName["Note"])
            for i in 0..<2000 {
                let note = ManagedObject(entity: entity, insertInto: context)
                note.setValue(i, forKey: "number")
                note.setValue(String(repeating: "note \(i) ", count: 40), forKey: "body")
            }
            try context.save()
            let request = BatchDeleteRequest(entityName: "Note", predicate: try CorePredicate(format: "number >= 100"))
            _ = try context.execute(request)
        }
        for store in coordinator.persistentStores { coordinator.remove(store) }
    }

    /// Runs `body` with the URL of a new store made by `makeStoreWithFreePages`, in
    /// a temporary folder removed afterwards.
    static func withStoreWithFreePages(_ body: (URL) throws -> Void) throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("Notes.sqlite")
        try makeStoreWithFreePages(at: url)
        try body(url)
    }

    /// Reads `sql`'s first integer from the file, on a connection of its own.
    static func integer(_ sql: String, at url: URL) throws -> Int {
        try DatabaseQueue(path: url.path).read { db in try Int.fetchOne(db, sql: sql) ?? -1 }
    }

    static func fileSize(_ url: URL) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int ?? -1
    }

    @Test("A store added with the manual vacuum option is rebuilt: no free pages, a smaller file, the same objects")
    func manualVacuum() throws {
        try Self.withStoreWithFreePages { url in
            #expect(try Self.integer("PRAGMA freelist_count", at: url) > 100)

            // Opened without the option: nothing changes.
            let plain = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            _ = try plain.addPersistentStore(type: .sqlite, at: url)
            for store in plain.persistentStores { plain.remove(store) }
            #expect(try Self.integer("PRAGMA freelist_count", at: url) > 100)

            let sizeBefore = try Self.fileSize(url)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            _ = try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.manualVacuum: "1"])
            #expect(try Self.integer("PRAGMA freelist_count", at: url) == 0)
            #expect(try Self.fileSize(url) < sizeBefore / 2)
            // The store still works: its objects read back, and a save goes through.
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                let numbers = try context.fetch(FetchRequest<ManagedObject>(entityName: "Note")).compactMap { $0.value(forKey: "number") as? Int }
                #expect(numbers.sorted() == Array(0..<100))
                let entity = try #require(coordinator.managedObjectModel.entitiesByName["Note"])
                ManagedObject(entity: entity, insertInto: context).setValue(5000, forKey: "number")
                try context.save()
                #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")) == 101)
            }
        }
    }

    @Test("A store added with the analyze option has index statistics for its tables")
    func analyze() throws {
        try Self.withStoreWithFreePages { url in
            #expect(try Self.integer("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'", at: url) == 0)

            var description = PersistentStoreDescription(url: url)
            description.setOption("1", forKey: PersistentStoreDescription.OptionKey.sqliteAnalyze)
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            _ = try coordinator.addPersistentStore(type: .sqlite, at: url, options: description.options)
            #expect(try Self.integer("SELECT COUNT(*) FROM sqlite_stat1 WHERE tbl = 'ZNOTE'", at: url) >= 1)
            // Analysis leaves the pages alone.
            #expect(try Self.integer("PRAGMA freelist_count", at: url) > 100)
        }
    }

    @Test("A store opened read-only, or an in-memory store, ignores both options")
    func ignoredWhereTheyCannotApply() throws {
        try Self.withStoreWithFreePages { url in
            let freePages = try Self.integer("PRAGMA freelist_count", at: url)
            let options = [SQLiteStore.Option.manualVacuum: "1", SQLiteStore.Option.analyze: "1"]

            let reader = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            _ = try reader.addPersistentStore(type: .sqlite, at: url, options: options.merging([SQLiteStore.Option.readOnly: "1"]) { $1 })
            #expect(try Self.integer("PRAGMA freelist_count", at: url) == freePages)
            #expect(try Self.integer("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'", at: url) == 0)

            let memory = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            _ = try memory.addPersistentStore(type: .inMemory, at: nil, options: options)
            #expect(memory.persistentStores.count == 1)
        }
    }
}
