import Foundation
import GRDB
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// A SQLite store's connection keeps its read transaction open between
/// single-statement reads (`SQLiteHeldRead`). These tests pin down that no read
/// ever sees an old snapshot because of it: a commit by any other connection, a
/// save through the store itself and a multi-statement read each end the hold
/// first; an idle store gives it up; a store not in WAL mode never holds.
@Suite("SQLite: the read transaction held between reads never hides a commit")
struct HeldReadTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Owner", className: "ManagedObject") {
                Attribute("name", .string)
                Relationship("items", to: "Item", inverse: "owner", toMany: true)
            }
            Entity("Item", className: "ManagedObject") {
                Attribute("number", .integer64)
                Relationship("owner", to: "Owner", inverse: "items")
            }
        }
    }

    /// A coordinator and a context on the store at `url` (one model for every
    /// coordinator of a test: their IDs compare equal). The store holds its read
    /// transaction for up to a minute of idleness, so that the tests see holds
    /// however slowly they run (the idle test sets its own).
    static func stack(_ model: ManagedObjectModel, _ url: URL) throws -> (PersistentStoreCoordinator, SQLiteStore, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try #require(try coordinator.addPersistentStore(type: .sqlite, at: url) as? SQLiteStore)
        store.heldRead.idleRelease = .seconds(60)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, store, context)
    }

    static func insertItems(_ numbers: Range<Int>, owner name: String, in context: ManagedObjectContext) throws {
        try context.performAndWait {
            let owner = ManagedObject(entity: try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Owner"]),
                                      insertInto: context)
            owner.setValue(name, forKey: "name")
            for number in numbers {
                let item = ManagedObject(entity: try #require(owner.entity.managedObjectModel?.entitiesByName["Item"]), insertInto: context)
                item.setValue(Int64(number), forKey: "number")
                item.setValue(owner, forKey: "owner")
            }
            try context.save()
        }
    }

    static func owner(named name: String, in context: ManagedObjectContext) throws -> ManagedObject? {
        let request = FetchRequest<ManagedObject>(entityName: "Owner")
        request.predicate = try CorePredicate(format: "name == %@", name)
        return try context.fetch(request).first
    }

    static func number(_ value: Any?) -> Int64? {
        (value as? Int64) ?? (value as? Int).map(Int64.init)
    }

    static func itemCount(_ context: ManagedObjectContext) throws -> Int {
        try context.performAndWait { try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")) }
    }

    @Test("Reads share one read transaction until another connection commits; the next read sees the commit")
    func otherConnectionsCommit() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Held.sqlite")
        let model = try Self.model()
        let (coordinator, store, context) = try Self.stack(model, url)
        try Self.insertItems(0..<3, owner: "a", in: context)

        #expect(try Self.itemCount(context) == 3)
        #expect(try Self.itemCount(context) == 3)
        let held = store.heldRead.statistics
        #expect(held.isHolding)
        #expect(held.invalidated == 0)

        // Another coordinator on the same file (another connection) commits.
        let (otherCoordinator, _, otherContext) = try Self.stack(model, url)
        try Self.insertItems(3..<5, owner: "b", in: otherContext)
        #expect(try Self.itemCount(context) == 5)
        #expect(store.heldRead.statistics.invalidated == 1)
        #expect(store.heldRead.statistics.begun == held.begun + 1)

        // A to-many fault fired after yet another commit reads the new rows.
        try otherContext.performAndWait {
            let owner = try #require(try Self.owner(named: "a", in: otherContext))
            let item = ManagedObject(entity: try #require(model.entitiesByName["Item"]), insertInto: otherContext)
            item.setValue(Int64(99), forKey: "number")
            item.setValue(owner, forKey: "owner")
            try otherContext.save()
        }
        try context.performAndWait {
            context.reset()
            let owner = try #require(try Self.owner(named: "a", in: context))
            let numbers = owner.objects(forRelationship: "items").compactMap { Self.number($0.value(forKey: "number")) }
            #expect(numbers.sorted() == [0, 1, 2, 99])
        }
        withExtendedLifetime((coordinator, otherCoordinator)) {}
    }

    @Test("A save through the store and a multi-statement read each give the hold up first")
    func ownWritesAndTransactions() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Held.sqlite")
        let (coordinator, store, context) = try Self.stack(try Self.model(), url)
        try Self.insertItems(0..<3, owner: "a", in: context)
        #expect(try Self.itemCount(context) == 3)
        #expect(store.heldRead.statistics.isHolding)

        try Self.insertItems(3..<4, owner: "b", in: context)
        #expect(!store.heldRead.statistics.isHolding)
        #expect(try Self.itemCount(context) == 4)
        #expect(store.heldRead.statistics.isHolding)

        // A dictionary fetch (a transaction of its own) after another connection's commit.
        let writer = try DatabaseQueue(path: url.path)
        try writer.write { db in try db.execute(sql: "UPDATE ZITEM SET ZNUMBER = ZNUMBER + 100") }
        try writer.close()
        let request = FetchRequest<[String: Any]>(entityName: "Item")
        request.propertiesToFetch = ["number"]
        let numbers = try context.performAndWait { try context.fetch(request).compactMap { Self.number($0["number"]) } }
        #expect(numbers.sorted() == [100, 101, 102, 103])
        #expect(!store.heldRead.statistics.isHolding)
        withExtendedLifetime(coordinator) {}
    }

    @Test("An idle store gives its read transaction up: the log can then be checkpointed and truncated")
    func idleRelease() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Held.sqlite")
        let (coordinator, store, context) = try Self.stack(try Self.model(), url)
        store.heldRead.idleRelease = .milliseconds(2)
        try Self.insertItems(0..<50, owner: "a", in: context)
        #expect(try Self.itemCount(context) == 50)
        #expect(store.heldRead.statistics.begun == 1)

        let deadline = Date().addingTimeInterval(5)
        while store.heldRead.statistics.isHolding, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        #expect(!store.heldRead.statistics.isHolding)
        let checkpointer = try DatabaseQueue(path: url.path)
        let busy = try checkpointer.writeWithoutTransaction { db in
            try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")?[0] as Int?
        }
        try checkpointer.close()
        #expect(busy == 0)
        let walSize = try FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? Int
        #expect(walSize == 0)
        #expect(try Self.itemCount(context) == 50)
        withExtendedLifetime(coordinator) {}
    }

    @Test("A store that goes away while holding closes its connection at once (the log is checkpointed and removed)")
    func closeWhileHolding() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Held.sqlite")
        try {
            let (coordinator, store, context) = try Self.stack(try Self.model(), url)
            try Self.insertItems(0..<5, owner: "a", in: context)
            #expect(try Self.itemCount(context) == 5)
            #expect(store.heldRead.statistics.isHolding)
            #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
            withExtendedLifetime(coordinator) {}
        }()
        // The last connection to close checkpoints the log and deletes it.
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
        let (coordinator, _, context) = try Self.stack(try Self.model(), url)
        #expect(try Self.itemCount(context) == 5)
        withExtendedLifetime(coordinator) {}
    }

    @Test("A store not in WAL mode never holds a read transaction (its readers would block writers)")
    func rollbackJournalStore() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Held.sqlite")
        let model = try Self.model()
        do {
            let (coordinator, _, context) = try Self.stack(model, url)
            try Self.insertItems(0..<3, owner: "a", in: context)
            coordinator.persistentStores.forEach(coordinator.remove)
        }
        let queue = try DatabaseQueue(path: url.path)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
        try queue.close()

        let (coordinator, store, context) = try Self.stack(model, url)
        #expect(try Self.itemCount(context) == 3)
        #expect(try Self.itemCount(context) == 3)
        #expect(store.heldRead.statistics.begun == 0)
        // Nor does it open a WAL index (shared memory) to compare.
        #expect(!FileManager.default.fileExists(atPath: url.path + "-shm"))
        // Another connection can write at once.
        let writer = try DatabaseQueue(path: url.path)
        try writer.write { db in try db.execute(sql: "DELETE FROM ZITEM WHERE ZNUMBER = 0") }
        try writer.close()
        #expect(try Self.itemCount(context) == 2)
        withExtendedLifetime(coordinator) {}
    }
}
