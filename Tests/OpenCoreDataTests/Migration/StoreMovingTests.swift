import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// `migratePersistentStore(_:to:options:type:)` and `replacePersistentStore`.
@Suite struct StoreMovingTests {
    @Test("A store moves to SQLite, to memory and back, objects, keys and relationships kept")
    func migratePersistentStore() throws {
        let url = try LightweightMigrationTests.makeVersion1Store(history: false)
        let model = try LightweightMigrationTests.version1()
        let before = try MigrationCheck.objects(at: url, model: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let original = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let folder = try Fixtures.temporaryDirectory()

        // SQLite to SQLite: the same file, the same UUID.
        let copyURL = folder.appendingPathComponent("Copy.sqlite")
        let copy = try coordinator.migratePersistentStore(original, to: copyURL, type: .sqlite)
        #expect(copy.identifier == original.identifier)
        #expect(coordinator.persistentStores.count == 1 && coordinator.persistentStores[0] === copy)
        #expect(try MigrationCheck.objects(at: copyURL, model: model) == before)
        #expect(throws: CoreDataError.self) { try coordinator.migratePersistentStore(copy, to: copyURL, type: .sqlite) }

        // To memory, object by object.
        let memory = try coordinator.migratePersistentStore(copy, to: nil, type: .inMemory)
        #expect(memory.type == .inMemory)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let counts = try context.performAndWait {
            try ["Person", "Pet", "Tag"].map { try context.count(for: FetchRequest<ManagedObject>(entityName: $0)) }
        }
        #expect(counts == [3, 5, 2])

        // And back to a new SQLite file: the same objects as the original.
        let backURL = folder.appendingPathComponent("Back.sqlite")
        try coordinator.migratePersistentStore(memory, to: backURL, type: .sqlite)
        #expect(try MigrationCheck.objects(at: backURL, model: model) == before)
    }

    @Test("replacePersistentStore copies a store, -wal content included, over another")
    func replacePersistentStore() throws {
        let source = try LightweightMigrationTests.makeVersion1Store(history: false)
        let target = try LightweightMigrationTests.makeVersion1Store(history: false)
        let model = try LightweightMigrationTests.version1()
        // A change only in the source's -wal.
        let keep = try DatabaseQueue(path: source.path)
        try keep.write { db in
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 0")
            try db.execute(sql: "UPDATE ZTAG SET ZLABEL = 'green' WHERE ZLABEL = 'red'")
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: target)
        try coordinator.replacePersistentStore(at: target, withPersistentStoreFrom: source)
        #expect(coordinator.persistentStores.isEmpty)
        try keep.close()
        let labels = try MigrationCheck.objects(at: target, model: model)["Tag"]?.values.compactMap { $0.attributes["label"] }.sorted()
        #expect(labels == ["\(AttributeValue.string("blue"))", "\(AttributeValue.string("green"))"])
        #expect(try SQLiteStoreMetadata.read(at: target)[SQLiteStoreMetadata.storeUUIDKey] as? String
                == SQLiteStoreMetadata.read(at: source)[SQLiteStoreMetadata.storeUUIDKey] as? String)
    }
}
