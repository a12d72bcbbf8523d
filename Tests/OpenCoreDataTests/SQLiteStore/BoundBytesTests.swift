import Foundation
import GRDB
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// A save binds the strings and blobs of each row from a copy of its own that SQLite
/// reads in place (`SQLiteBoundBytes`): these tests check that every row, inserted or
/// updated, gets its own bytes — whether the copy fits the buffer, outgrows it in the
/// middle of a row, or is too large to be copied at all — and that the types SQLite
/// records are those of a string and a blob.
@Suite("SQLite: strings and blobs bound from the save's own copy")
struct BoundBytesTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Note", className: "ManagedObject") {
                Attribute("number", .integer64)
                Attribute("title", .string)
                Attribute("body", .string)
                Attribute("data", .binaryData)
                Attribute("tag", .string)
            }
        }
    }

    static func stack(_ directory: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        _ = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("Notes.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    /// The values of note `i`: short and long strings in turn (one row outgrows the
    /// buffer in its middle, one holds a value too large to copy, the next is short
    /// again), empty ones, and blobs of the same sizes.
    static func values(_ i: Int, generation: Int) -> (title: String, body: String, data: Data, tag: String) {
        let sizes = [0, 3, 15, 16, 700, 1500, SQLiteBoundBytes.largestCopied + 1, 5, 3000]
        let size = sizes[i % sizes.count]
        let title = "t\(generation)-\(i)"
        let body = String(repeating: "é\(generation)", count: size / 2) + (size % 2 == 1 ? "x" : "")
        let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i &+ generation) })
        let tag = i % 3 == 0 ? "" : String(repeating: "🦊", count: i)
        return (title, body, data, tag)
    }

    static let count = 27

    @Test("Inserted and updated rows read back with their own strings and blobs")
    func roundTrip() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let (coordinator, context) = try Self.stack(directory)
            try context.performAndWait {
                let entity = try #require(coordinator.managedObjectModel.entitiesByName["Note"])
                for i in 0..<Self.count {
                    let note = ManagedObject(entity: entity, insertInto: context)
                    let v = Self.values(i, generation: 0)
                    note.setValue(i, forKey: "number")
                    note.setValue(v.title, forKey: "title")
                    note.setValue(v.body, forKey: "body")
                    note.setValue(v.data, forKey: "data")
                    note.setValue(v.tag, forKey: "tag")
                }
                try context.save()
                // Updates bind through the same buffer: change every other note.
                let request = FetchRequest<ManagedObject>(entityName: "Note")
                for note in try context.fetch(request) {
                    let i = try #require(note.value(forKey: "number") as? Int)
                    guard i % 2 == 1 else { continue }
                    let v = Self.values(Self.count - 1 - i, generation: 1)
                    note.setValue(v.title, forKey: "title")
                    note.setValue(v.body, forKey: "body")
                    note.setValue(v.data, forKey: "data")
                }
                try context.save()
            }
        }
        let (_, context) = try Self.stack(directory)
        try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.sortDescriptors = [CoreSortDescriptor(key: "number", ascending: true)]
            let notes = try context.fetch(request)
            #expect(notes.count == Self.count)
            for (i, note) in notes.enumerated() {
                let updated = i % 2 == 1
                let v = updated ? Self.values(Self.count - 1 - i, generation: 1) : Self.values(i, generation: 0)
                #expect(note.value(forKey: "title") as? String == v.title, "note \(i)")
                #expect(note.value(forKey: "body") as? String == v.body, "note \(i): body of \(v.body.utf8.count) bytes")
                #expect(note.value(forKey: "data") as? Data == v.data, "note \(i): data of \(v.data.count) bytes")
                #expect(note.value(forKey: "tag") as? String == Self.values(i, generation: 0).tag, "note \(i)")
            }
        }
        // SQLite holds strings as text and blobs as blobs; an empty string or blob is
        // empty, not NULL.
        let queue = try DatabaseQueue(path: directory.appendingPathComponent("Notes.sqlite").path)
        try queue.read { db in
            let types = try Row.fetchAll(db, sql: "SELECT typeof(ZBODY) AS body, typeof(ZDATA) AS data, typeof(ZTAG) AS tag FROM ZNOTE ORDER BY ZNUMBER")
            #expect(types.count == Self.count)
            for row in types {
                #expect(row["body"] as String == "text")
                #expect(row["data"] as String == "blob")
                #expect(row["tag"] as String == "text")
            }
        }
    }

    @Test("A failed save leaves the store as it was, and the next save binds afresh")
    func failedSaveThenSave() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (coordinator, context) = try Self.stack(directory)
        try context.performAndWait {
            let entity = try #require(coordinator.managedObjectModel.entitiesByName["Note"])
            let first = ManagedObject(entity: entity, insertInto: context)
            first.setValue(1, forKey: "number")
            first.setValue(String(repeating: "a", count: 2000), forKey: "body")
            try context.save()
            // A unique-index violation fails the next save after its rows were bound.
            let other = ManagedObject(entity: entity, insertInto: context)
            other.setValue(2, forKey: "number")
            other.setValue(String(repeating: "b", count: 3000), forKey: "body")
            let store = try #require(coordinator.persistentStores.first as? SQLiteStore)
            try store.write("test") { db in
                try db.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON ZNOTE WHEN NEW.ZNUMBER = 2 BEGIN SELECT RAISE(ABORT, 'refused'); END")
            }
            #expect(throws: (any Error).self) { try context.save() }
            try store.write("test") { db in try db.execute(sql: "DROP TRIGGER refuse") }
            try context.save()
        }
        let (_, reader) = try Self.stack(directory)
        try reader.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Note")
            request.sortDescriptors = [CoreSortDescriptor(key: "number", ascending: true)]
            let bodies = try reader.fetch(request).map { $0.value(forKey: "body") as? String }
            #expect(bodies == [String(repeating: "a", count: 2000), String(repeating: "b", count: 3000)])
        }
    }
}
