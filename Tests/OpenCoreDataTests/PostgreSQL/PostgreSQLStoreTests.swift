#if PostgreSQLTests
import ArgumentParser
import Foundation
import GRDB
import OpenCoreDataPredicates
import NIOCore
import PostgresNIO
@testable import OpenCoreDataPostgreSQL
import Testing
@testable import OCDKit
import OCDPostgreSQL
@testable import OpenCoreData

/// The PostgreSQL store's own behaviour: opening and creating, its layout and
/// metadata, errors, several coordinators on one database (keys, optimistic
/// locking, changes arriving by themselves), and moving real stores from SQLite.
/// The behaviour every store shares runs in the conformance suites
/// (`allStoreTypes`).
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable))
struct PostgreSQLStoreTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Counter", className: "ManagedObject") {
                Attribute("name", .string, optional: false, defaultValue: "")
                Attribute("value", .integer64, optional: false, defaultValue: 0)
                Relationship("items", to: "Item", inverse: "counter", toMany: true, deleteRule: .cascade)
            }
            Entity("Item", className: "ManagedObject") {
                Attribute("label", .string)
                Attribute("when", .date)
                Attribute("ratio", .double)
                Attribute("price", .decimal)
                Attribute("flag", .boolean)
                Attribute("token", .uuid)
                Attribute("link", .uri)
                Attribute("bytes", .binaryData)
                Attribute("small", .integer16)
                Attribute("tags", .transformable)
                Relationship("counter", to: "Counter", inverse: "items")
            }
        }
    }

    /// A coordinator with one PostgreSQL store in `schema` (a new one by default).
    static func coordinator(_ model: ManagedObjectModel, schema: String, options: [String: String] = [:]) throws
        -> (PersistentStoreCoordinator, PostgreSQLStore) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .postgreSQL, at: try PostgreSQLTestServer.url(),
                                                       options: PostgreSQLTestServer.storeOptions(schema: schema).merging(options) { $1 })
        return (coordinator, try #require(store as? PostgreSQLStore))
    }

    static func newSchema() -> String { "t_" + UUID().uuidString.prefix(8).lowercased() }

    /// A private-queue context on `coordinator`.
    static func context(on coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// Two servers on one new store: a context writing through the first
    /// coordinator, a context on the second that merges automatically, and a
    /// counter the first saved.
    struct TwoServers {
        let writer: PersistentStoreCoordinator, writerStore: PostgreSQLStore
        let reader: PersistentStoreCoordinator, readerStore: PostgreSQLStore
        let writing: ManagedObjectContext, reading: ManagedObjectContext
        let counter: ManagedObjectID
    }

    static func twoServers(_ model: ManagedObjectModel, options: [String: String] = [:], counterName: String = "c") throws -> TwoServers {
        let schema = newSchema()
        let (writer, writerStore) = try coordinator(model, schema: schema, options: options)
        let (reader, readerStore) = try coordinator(model, schema: schema, options: options)
        let writing = Self.context(on: writer)
        let reading = Self.context(on: reader)
        reading.automaticallyMergesChangesFromParent = true
        let counter = try writing.performAndWait {
            let counter = ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: writing)
            counter.setValue(counterName, forKey: "name")
            try writing.save()
            return counter.objectID
        }
        return TwoServers(writer: writer, writerStore: writerStore, reader: reader, readerStore: readerStore,
                          writing: writing, reading: reading, counter: counter)
    }

    @Test("A new store gets Core Data's tables and metadata; reopening keeps its UUID and rows")
    func createAndReopen() throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let (coordinator, store) = try Self.coordinator(model, schema: schema)
        #expect(store.type == .postgreSQL)
        #expect(UUID(uuidString: store.identifier) != nil)
        #expect(store.metadata["NSStoreType"] == .string("PostgreSQL"))
        guard case .dictionary(let hashes)? = store.metadata["NSStoreModelVersionHashes"] else {
            Issue.record("no version hashes")
            return
        }
        #expect(Set(hashes.keys) == ["Counter", "Item"])
        let context = Self.context(on: coordinator)
        let token = UUID()
        let when = Date(timeIntervalSinceReferenceDate: 123_456.25)
        try context.performAndWait {
            let counter = ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: context)
            counter.setValue("c", forKey: "name")
            let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
            item.setValue("Zoë", forKey: "label")
            item.setValue(when, forKey: "when")
            item.setValue(0.1, forKey: "ratio")
            item.setValue(Decimal(string: "12.34")!, forKey: "price")
            item.setValue(true, forKey: "flag")
            item.setValue(token, forKey: "token")
            item.setValue(URL(string: "https://example.com/a?b=c")!, forKey: "link")
            item.setValue(Data([0, 1, 2, 255]), forKey: "bytes")
            item.setValue(Int16(-7), forKey: "small")
            item.setValue(["a", "b"], forKey: "tags")
            item.setValue(counter, forKey: "counter")
            try context.save()
        }
        // Another coordinator, as another server would: the same store, the same values.
        let (other, reopened) = try Self.coordinator(model, schema: schema)
        #expect(reopened.identifier == store.identifier)
        let reader = Self.context(on: other)
        try reader.performAndWait {
            let items = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Item"))
            let item = try #require(items.first)
            #expect(items.count == 1)
            #expect(item.value(forKey: "label") as? String == "Zoë")
            #expect(item.value(forKey: "when") as? Date == when)
            #expect(item.value(forKey: "ratio") as? Double == 0.1)
            #expect(item.value(forKey: "price") as? Decimal == Decimal(string: "12.34"))
            #expect(item.value(forKey: "flag") as? Bool == true)
            #expect(item.value(forKey: "token") as? UUID == token)
            #expect(item.value(forKey: "link") as? URL == URL(string: "https://example.com/a?b=c"))
            #expect(item.value(forKey: "bytes") as? Data == Data([0, 1, 2, 255]))
            #expect(item.value(forKey: "small") as? Int == -7)
            #expect(item.value(forKey: "tags") as? [String] == ["a", "b"])
            let counter = try #require(item.value(forKey: "counter") as? ManagedObject)
            #expect(counter.value(forKey: "name") as? String == "c")
            #expect(counter.objects(forRelationship: "items").count == 1)
        }
    }

    @Test("A stored value that cannot be read fails the fetch with an error; the store keeps serving")
    func unreadableValueFailsTheFetch() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema())
        let context = Self.context(on: coordinator)
        try context.performAndWait {
            for index in 0..<3000 {
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
                item.setValue("item \(index)", forKey: "label")
                item.setValue(["t\(index)"], forKey: "tags")
            }
            try context.save()
            context.reset()
        }
        // One row's archive is overwritten with bytes no transformer reads: rows
        // are converted as they arrive, so the error stops the statement midway.
        let changed = try store.withSession("spoiling a value") { session in
            try session.execute("UPDATE ZITEM SET ZTAGS = ? WHERE ZLABEL = 'item 1500'", [Data([1, 2, 3]).databaseValue])
        }
        #expect(changed == 1)
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.sortDescriptors = [CoreSortDescriptor(key: "label", ascending: true)]
        #expect(throws: (any Error).self) { try context.performAndWait { try context.fetch(request) } }
        #expect(context.performAndWait { context.registeredObjects.isEmpty })
        // The store goes on: the other rows read, a save works.
        request.predicate = try CorePredicate(format: "label != %@", "item 1500")
        let items = try context.performAndWait { try context.fetch(request) }
        #expect(items.count == 2999)
        #expect(context.performAndWait { items.last?.value(forKey: "tags") as? [String] } == ["t999"])
        try context.performAndWait {
            items[0].setValue("renamed", forKey: "label")
            try context.save()
        }
    }

    @Test("TLS: required and verified against the server's authority, the store's connections (pool and listeners) are encrypted; an untrusted certificate or an unreadable authority file is refused with 134080")
    func tls() throws {
        guard let authority = PostgreSQLTestServer.certificateAuthority else {
            print("TLS test skipped: the PostgreSQL server has no certificate of a known authority (openssl missing, or OCD_POSTGRESQL_URL)")
            return
        }
        let model = try Self.model()
        // The system's authorities do not know the server's: refused, not
        // connected unverified.
        let untrusted = #expect(throws: CoreDataError.self) {
            try Self.coordinator(model, schema: Self.newSchema(), options: [PostgreSQLStore.Option.tls: "require"])
        }
        #expect(untrusted?.code == .persistentStoreOpen)
        let missing = #expect(throws: CoreDataError.self) {
            try Self.coordinator(model, schema: Self.newSchema(), options: [PostgreSQLStore.Option.tls: "require",
                                                                            PostgreSQLStore.Option.tlsRootCertificates: "/nonexistent/ca.pem"])
        }
        #expect(missing?.code == .persistentStoreOpen)
        #expect(missing?.localizedDescription.contains("/nonexistent/ca.pem") == true)

        let servers = try Self.twoServers(model, options: [PostgreSQLStore.Option.tls: "require",
                                                           PostgreSQLStore.Option.tlsRootCertificates: authority.path],
                                          counterName: "over TLS")
        let (store, readerContext, context, id) = (servers.writerStore, servers.reading, servers.writing, servers.counter)
        let held = try readerContext.performAndWait { try readerContext.existingObject(with: id) }
        #expect(readerContext.performAndWait { held.value(forKey: "name") as? String } == "over TLS")
        // A change arrives through the reader's listening connection (TLS too).
        try context.performAndWait {
            try context.existingObject(with: id).setValue(Int64(5), forKey: "value")
            try context.save()
        }
        #expect(Self.wait(upTo: 10) { readerContext.performAndWait { held.value(forKey: "value") as? Int } == 5 })
        // The two stores' listening connections, and a pool connection, are encrypted.
        let listeners = try store.withSession("reading pg_stat_ssl") { session in
            try session.query("SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid WHERE a.query LIKE ?",
                              ["LISTEN%\(store.remoteChanges.channel)%".databaseValue])
                .map { PostgreSQLValues.int64($0.makeRandomAccess()[0]) }
        }
        #expect(listeners == [1, 1])
        let ownEncrypted = try store.withSession("reading pg_stat_ssl") { session in
            PostgreSQLValues.int64(try #require(session.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").first).makeRandomAccess()[0])
        }
        #expect(ownEncrypted == 1)
    }

    @Test("Another model is refused with 134100; bad URLs, options and servers with 134080")
    func openingErrors() throws {
        let schema = Self.newSchema()
        _ = try Self.coordinator(try Self.model(), schema: schema)
        let other = try ManagedObjectModel {
            Entity("Counter", className: "ManagedObject") { Attribute("name", .string) }
        }
        #expect { _ = try Self.coordinator(other, schema: schema) } throws: { error in
            (error as? CoreDataError)?.code == .persistentStoreIncompatibleVersionHash
        }
        let server = try PostgreSQLTestServer.url()
        let model = try Self.model()
        func opening(_ url: URL?, _ options: [String: String] = [:]) -> CoreDataError.Code? {
            do {
                _ = try PostgreSQLStore(url: url, model: model, options: options)
                return nil
            } catch {
                return (error as? CoreDataError)?.code
            }
        }
        #expect(opening(nil) == .persistentStoreOpen)
        #expect(opening(URL(fileURLWithPath: "/tmp/x.sqlite")) == .persistentStoreOpen)
        #expect(opening(URL(string: "postgres://u@127.0.0.1:1/db")!) == .persistentStoreOpen)
        #expect(opening(server, [PostgreSQLStore.Option.poolSize: "zero"]) == .persistentStoreOpen)
        #expect(opening(server, [PostgreSQLStore.Option.tls: "sometimes"]) == .persistentStoreOpen)
        #expect(opening(server, [PostgreSQLStore.Option.statementTimeout: "-1"]) == .persistentStoreOpen)
        #expect(opening(server, [PostgreSQLStore.Option.storeUUID: "'; DROP TABLE x; --"]) == .persistentStoreOpen)
        // A schema name is an identifier, never SQL: quotes stay inside it.
        let odd = "t \"odd\"; " + UUID().uuidString.prefix(4)
        #expect(opening(server, [PostgreSQLStore.Option.schema: odd]) == nil)
        // Read-only: no store there to open, and no save into one that exists.
        #expect(opening(server, [PostgreSQLStore.Option.schema: Self.newSchema(), PostgreSQLStore.Option.readOnly: "1"]) == .persistentStoreOpen)
    }

    @Test("Coordinators on one database get disjoint primary keys, even reserving at once")
    func disjointKeys() throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let stores = try (0..<4).map { _ in try Self.coordinator(model, schema: schema).1 }
        let item = model.entitiesByName["Item"]!
        let keys = Lock<[Int64]>([])
        DispatchQueue.concurrentPerform(iterations: 40) { index in
            let store = stores[index % stores.count]
            if let ids = try? store.newObjectIDs(for: item, count: 1 + index % 70) {
                keys.withLock { $0 += ids.compactMap(\.primaryKey) }
            }
        }
        let all = keys.withLock { $0 }
        #expect(all.count == (0..<40).reduce(0) { $0 + 1 + $1 % 70 })
        #expect(Set(all).count == all.count)
    }

    @Test("A row another coordinator changed fails the save with 133020; merge policies resolve it")
    func optimisticLocking() throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let (first, _) = try Self.coordinator(model, schema: schema, options: [PostgreSQLStore.Option.remoteChanges: "0"])
        let (second, _) = try Self.coordinator(model, schema: schema, options: [PostgreSQLStore.Option.remoteChanges: "0"])
        let a = Self.context(on: first)
        let b = Self.context(on: second)
        let id = try a.performAndWait {
            let counter = ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: a)
            counter.setValue("shared", forKey: "name")
            try a.save()
            return counter.objectID
        }
        let inB = try b.performAndWait { try b.existingObject(with: id) }
        b.performAndWait { _ = inB.value(forKey: "value") }
        try a.performAndWait {
            try a.existingObject(with: id).setValue(Int64(1), forKey: "value")
            try a.save()
        }
        b.performAndWait { inB.setValue(Int64(2), forKey: "value") }
        #expect { try b.performAndWait { try b.save() } } throws: { error in
            (error as? CoreDataError)?.code == .managedObjectMerge
        }
        b.mergePolicy = .mergeByPropertyObjectTrump
        try b.performAndWait { try b.save() }
        let stored = try a.performAndWait { () -> Int? in
            a.refreshAllObjects()
            return try a.existingObject(with: id).value(forKey: "value") as? Int
        }
        #expect(stored == 2)
    }

    /// Waits for `condition`, blocking this thread (a test task that suspends can
    /// wait many seconds for a thread of the cooperative pool while the suite's
    /// synchronous tests hold them all: a suspended wait measures the pool, not
    /// the store).
    static func wait(upTo seconds: TimeInterval, for condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.002)
        }
        return try condition()
    }

    @Test("Another coordinator's save arrives by itself: merged into contexts that merge automatically, and announced")
    func remoteChangesArrive() throws {
        let servers = try Self.twoServers(try Self.model())
        let (reader, viewContext, writing, id) = (servers.reader, servers.reading, servers.writing, servers.counter)
        // The reader holds the object, then the writer changes it and deletes nothing.
        let held = try viewContext.performAndWait { () -> ManagedObject in
            let object = try viewContext.existingObject(with: id)
            #expect(object.value(forKey: "value") as? Int == 0)
            return object
        }
        let announced = Lock(0)
        let observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: reader, queue: nil) { _ in
            announced.withLock { $0 += 1 }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        // The moment each merge reached the reader's context (its objects-did-change
        // notification, posted on the context's queue).
        let merged = Lock<[Date]>([])
        let mergeObserver = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification,
                                                                   object: viewContext, queue: nil) { _ in
            merged.withLock { $0.append(Date()) }
        }
        defer { NotificationCenter.default.removeObserver(mergeObserver) }
        // Five changes, each waited for: every one arrives, the fastest in well
        // under a second.
        var latencies: [TimeInterval] = []
        for value in 41...45 {
            let mergesBefore = merged.withLock { $0.count }
            let start = Date()
            try writing.performAndWait {
                try writing.existingObject(with: id).setValue(Int64(value), forKey: "value")
                try writing.save()
            }
            let arrived = Self.wait(upTo: 60) {
                viewContext.performAndWait { held.value(forKey: "value") as? Int == value }
            }
            #expect(arrived, "change \(value) not merged: \(announced.withLock { $0 }) announcements")
            if let time = merged.withLock({ $0.dropFirst(mergesBefore).first }) { latencies.append(time.timeIntervalSince(start)) }
        }
        #expect(latencies.count == 5)
        #expect(latencies.min() ?? 60 < 1, "latencies \(latencies)")
        #expect(announced.withLock { $0 } >= 5)
        // A delete arrives too: the object leaves the reader's context.
        try writing.performAndWait {
            writing.delete(try writing.existingObject(with: id))
            try writing.save()
        }
        let gone = Self.wait(upTo: 60) {
            viewContext.performAndWait { viewContext.registeredObject(for: id) == nil || held.isDeleted }
        }
        #expect(gone)
    }

    @Test("A listening connection the server drops is opened again; contexts refresh what they may have missed")
    func listenerReconnects() throws {
        let servers = try Self.twoServers(try Self.model())
        let (readerStore, viewContext, writing, id) = (servers.readerStore, servers.reading, servers.writing, servers.counter)
        let held = try viewContext.performAndWait { try viewContext.existingObject(with: id) }
        #expect(viewContext.performAndWait { held.value(forKey: "value") as? Int } == 0)
        #expect(readerStore.remoteChanges.isConnected)
        // The server ends every connection listening on the store's channel (the
        // writer's and the reader's), then the writer saves at once.
        let terminated = try writing.performAndWait { () -> Int in
            try readerStore.withSession("ending listeners") { session in
                try session.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE ?",
                                  ["LISTEN%\(readerStore.remoteChanges.channel)%".databaseValue]).count
            }
        }
        #expect(terminated >= 1)
        func change(to value: Int64) throws {
            try writing.performAndWait {
                try writing.existingObject(with: id).setValue(value, forKey: "value")
                try writing.save()
            }
        }
        try change(to: 1)
        // Heard or refreshed after listening again: the reader sees the value.
        #expect(Self.wait(upTo: 60) { viewContext.performAndWait { held.value(forKey: "value") as? Int == 1 } })
        #expect(Self.wait(upTo: 60) { readerStore.remoteChanges.reconnections == 1 && readerStore.remoteChanges.isConnected })
        // Listening again: the next change arrives as announced.
        try change(to: 2)
        #expect(Self.wait(upTo: 60) { viewContext.performAndWait { held.value(forKey: "value") as? Int == 2 } })
    }

    @Test("A batch delete is one statement, its deletions announced by the server: other coordinators' contexts let the objects go")
    func batchDeleteArrives() throws {
        // No relationship (no delete rule to apply): the delete is done in SQL.
        let model = try ManagedObjectModel {
            Entity("Item", className: "ManagedObject") { Attribute("label", .string) }
        }
        let schema = Self.newSchema()
        let (writer, _) = try Self.coordinator(model, schema: schema)
        let (reader, _) = try Self.coordinator(model, schema: schema)
        let writing = Self.context(on: writer)
        let ids = try writing.performAndWait { () -> [ManagedObjectID] in
            let items = (0..<700).map { i -> ManagedObject in
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: writing)
                item.setValue(i < 50 ? "a \(i)" : i < 650 ? "b \(i)" : "k \(i)", forKey: "label")
                return item
            }
            try writing.save()
            return items.map(\.objectID)
        }
        let viewContext = Self.context(on: reader)
        viewContext.automaticallyMergesChangesFromParent = true
        let held = try viewContext.performAndWait { try ids.map { try viewContext.existingObject(with: $0) } }
        // A count result: the server writes the announcements (650 keys: three payloads).
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.predicate = try CorePredicate(format: "label BEGINSWITH 'a'")
        let delete = BatchDeleteRequest(fetchRequest: request)
        delete.resultType = .count
        #expect(try writing.performAndWait { try writing.execute(delete).count } == 50)
        // The IDs result: read back and announced by the store.
        request.predicate = try CorePredicate(format: "label BEGINSWITH 'b'")
        let byIDs = BatchDeleteRequest(fetchRequest: request)
        byIDs.resultType = .objectIDs
        let deleted = try writing.performAndWait { try writing.execute(byIDs).objectIDs ?? [] }
        #expect(deleted.count == 600)
        #expect(Set(deleted) == Set(ids[50..<650]), "the IDs of the 600 objects labelled b")
        let gone = Self.wait(upTo: 60) {
            viewContext.performAndWait { ids[0..<650].allSatisfy { viewContext.registeredObject(for: $0) == nil } }
        }
        #expect(gone)
        let kept = viewContext.performAndWait { ids[650...].allSatisfy { viewContext.registeredObject(for: $0) != nil } }
        #expect(kept)
        // The whole table with a count result: announced as "every row of Item",
        // without the keys; the reader checks which of its objects still exist
        // (one inserted after the delete stays).
        let whole = BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Item"))
        whole.resultType = .count
        #expect(try writing.performAndWait { try writing.execute(whole).count } == 50)
        let survivor = try writing.performAndWait { () -> ManagedObjectID in
            let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: writing)
            item.setValue("after", forKey: "label")
            try writing.save()
            return item.objectID
        }
        let heldSurvivor = try viewContext.performAndWait { try viewContext.existingObject(with: survivor) }
        let allGone = Self.wait(upTo: 60) {
            viewContext.performAndWait { ids.allSatisfy { viewContext.registeredObject(for: $0) == nil } }
        }
        #expect(allGone)
        viewContext.performAndWait {
            #expect(viewContext.registeredObject(for: survivor) === heldSurvivor && !heldSurvivor.isDeleted)
            #expect(heldSurvivor.value(forKey: "label") as? String == "after")
        }
        withExtendedLifetime(held) {}
    }

    @Test("A batch update is one statement, announced by the server: other coordinators' contexts merge the new values")
    func batchUpdateArrives() throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let (writer, _) = try Self.coordinator(model, schema: schema)
        let (reader, _) = try Self.coordinator(model, schema: schema)
        let writing = Self.context(on: writer)
        try writing.performAndWait {
            for i in 0..<400 {
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: writing)
                item.setValue(Int64(i % 10), forKey: "small")
                item.setValue("item \(i)", forKey: "label")
            }
            try writing.save()
        }
        let viewContext = Self.context(on: reader)
        viewContext.automaticallyMergesChangesFromParent = true
        let held = try viewContext.performAndWait { try viewContext.fetch(FetchRequest<ManagedObject>(entityName: "Item")) }
        // A count result: the server announces the 360 updated rows (two payloads).
        let update = BatchUpdateRequest(entityName: "Item")
        update.predicate = try CorePredicate(format: "small < 9")
        update.propertiesToUpdate = ["small": try CoreExpression(format: "small * 100 + 7"), "label": "batch"]
        update.resultType = .count
        #expect(try writing.performAndWait { try writing.execute(update).count } == 360)
        let merged = Self.wait(upTo: 60) {
            viewContext.performAndWait {
                held.allSatisfy { item in
                    let small = item.value(forKey: "small") as? Int ?? -1
                    return small == 9 ? item.value(forKey: "label") as? String != "batch" : small % 100 == 7 && item.value(forKey: "label") as? String == "batch"
                }
            }
        }
        #expect(merged)
        // A computed value out of the attribute's range (Integer 16): nothing
        // changes, whatever the result type.
        for resultType in [BatchRequestResultType.count, .objectIDs] {
            let overflow = BatchUpdateRequest(entityName: "Item")
            overflow.propertiesToUpdate = ["small": try CoreExpression(format: "small * 100")]
            overflow.resultType = resultType
            #expect { try writing.performAndWait { try writing.execute(overflow) } } throws: { error in
                (error as? CoreDataError)?.code == .managedObjectValidation
            }
        }
        let stored = try writing.performAndWait { () -> [Int] in
            writing.reset()
            return try writing.fetch(FetchRequest<ManagedObject>(entityName: "Item")).compactMap { $0.value(forKey: "small") as? Int }
        }
        #expect(stored.count == 400 && stored.allSatisfy { $0 == 9 || $0 % 100 == 7 })
        withExtendedLifetime(held) {}
    }

    @Test("Thousands of changes in one save: array statements, several payloads in one NOTIFY statement, all merged elsewhere")
    func largeSavesArrive() throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let (writer, _) = try Self.coordinator(model, schema: schema)
        let (reader, _) = try Self.coordinator(model, schema: schema)
        let writing = Self.context(on: writer)
        let count = 3_000
        let ids = try writing.performAndWait { () -> [ManagedObjectID] in
            let items = (0..<count).map { i -> ManagedObject in
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: writing)
                item.setValue(String(format: "item %05d", i), forKey: "label")
                item.setValue(Double(i) / 4, forKey: "ratio")
                return item
            }
            try writing.save()
            return items.map(\.objectID)
        }
        let viewContext = Self.context(on: reader)
        viewContext.automaticallyMergesChangesFromParent = true
        // Every item, in the order of `ids` (keys are allocated in insertion order).
        let all = FetchRequest<ManagedObject>(entityName: "Item")
        all.sortDescriptors = [CoreSortDescriptor(key: "label", ascending: true)]
        let held = try viewContext.performAndWait { try viewContext.fetch(all) }
        #expect(held.map(\.objectID) == ids)
        #expect(viewContext.performAndWait { held[2_999].value(forKey: "ratio") as? Double } == 749.75)
        // Updates of two column sets (two UPDATE ... FROM unnest statements) and
        // deletes: each list of 1,500 keys needs more than one payload.
        try writing.performAndWait {
            for (index, item) in try writing.fetch(all).enumerated() {
                if index < 1_500 {
                    item.setValue("changed \(index)", forKey: "label")
                } else {
                    writing.delete(item)
                }
            }
            try writing.save()
        }
        let merged = Self.wait(upTo: 60) {
            viewContext.performAndWait {
                held[..<1_500].enumerated().allSatisfy { $0.element.value(forKey: "label") as? String == "changed \($0.offset)" }
                    && held[1_500...].allSatisfy { viewContext.registeredObject(for: $0.objectID) == nil || $0.isDeleted }
            }
        }
        #expect(merged)
        // The rows as stored: 1,500 left, each with its new label and version 2.
        let check = Self.context(on: writer)
        let rows = try check.performAndWait { () -> [RowSnapshot] in
            let store = try #require(writer.persistentStores.first)
            return try store.fetchRows(StoreFetch(entity: model.entitiesByName["Item"]!))
        }
        #expect(rows.count == 1_500)
        #expect(rows.allSatisfy { $0.version == 2 && ($0.value(named: "label")?.attributeValue.stringValue ?? "").hasPrefix("changed ") })
        withExtendedLifetime(held) {}
    }

    @Test("A batched fetch read in order reads ahead, doubling up to the store's 2,000 rows; a jump reads one batch")
    func batchedFetchReadsAhead() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema())
        #expect(store.batchReadAheadRows == 2_000)
        let context = Self.context(on: coordinator)
        try context.performAndWait {
            for i in 0..<1_000 {
                ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context).setValue(Int64(i), forKey: "small")
            }
            try context.save()
        }
        let reading = Self.context(on: coordinator)
        try reading.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.sortDescriptors = [CoreSortDescriptor(key: "small", ascending: true)]
            request.fetchBatchSize = 20
            let items = try reading.fetchInBatches(request)
            #expect(items.count == 1_000)
            #expect(items[999].value(forKey: "small") as? Int == 999)
            #expect(items.loadedBatchCount == 1, "a jump reads one batch")
            // In order from the start: 1, 2, 4, 8, 16, 32 batches a read, up to 100
            // (2,000 rows); batch 49 is loaded already.
            var loads: [Int] = []
            var last = items.loadedBatchCount
            for index in 0..<1_000 {
                #expect(items[index].value(forKey: "small") as? Int == index)
                if items.loadedBatchCount != last {
                    loads.append(items.loadedBatchCount - last)
                    last = items.loadedBatchCount
                }
            }
            #expect(loads == [1, 2, 4, 8, 16, 18], "batches per read: \(loads)")
            // A new fetch read in order from the start: the reads double until the
            // end (the cap, 100 batches of 20, is not reached in 50 batches).
            let again = try reading.fetchInBatches(request)
            var reads: [Int] = []
            for index in 0..<1_000 {
                let before = again.loadedBatchCount
                #expect(again[index].value(forKey: "small") as? Int == index)
                if again.loadedBatchCount != before { reads.append(again.loadedBatchCount - before) }
            }
            #expect(reads == [1, 2, 4, 8, 16, 19], "batches per read: \(reads)")
            #expect(items.loadedBatchCount == 50)
        }
    }

    @Test("A batched fetch read in order sends its next read ahead; a change saved elsewhere or here meanwhile is not missed")
    func readAheadSeesChanges() throws {
        let model = try Self.model()
        let servers = try Self.twoServers(model)
        let ids = try servers.writing.performAndWait { () -> [ManagedObjectID] in
            let items = (0..<300).map { i -> ManagedObject in
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: servers.writing)
                item.setValue(Int64(i), forKey: "small")
                item.setValue("item \(i)", forKey: "label")
                return item
            }
            try servers.writing.save()
            return items.map(\.objectID)
        }
        let pool = servers.readerStore.pool
        let reading = Self.context(on: servers.reader)
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.sortDescriptors = [CoreSortDescriptor(key: "small", ascending: true)]
        request.fetchBatchSize = 20
        let items = try reading.performAndWait { try reading.fetchInBatches(request) }
        func label(_ index: Int) -> String? { reading.performAndWait { items[index].value(forKey: "label") as? String } }
        // Batch 0 loaded, batches 1-2 (items 20..<60) sent ahead.
        #expect(label(0) == "item 0")
        #expect(pool.readAheadCounts.sent == 1)
        // Another server changes item 30, read ahead before the change.
        let changes = pool.readAheadCounts.changes
        try servers.writing.performAndWait {
            try servers.writing.existingObject(with: ids[30]).setValue("changed elsewhere", forKey: "label")
            try servers.writing.save()
        }
        #expect(Self.wait(upTo: 30) { pool.readAheadCounts.changes > changes }, "the change is announced")
        #expect(label(30) == "changed elsewhere", "the rows read ahead before the change are not used")
        #expect(pool.readAheadCounts.taken == 0)
        // Items 60..<140 were sent ahead; a context on this coordinator changes item 100.
        let local = Self.context(on: servers.reader)
        let beforeSave = pool.readAheadCounts.changes
        try local.performAndWait {
            try local.existingObject(with: ids[100]).setValue("changed here", forKey: "label")
            try local.save()
        }
        // Counted twice: the save's transaction, then its own announcement,
        // which must not arrive after the last read is sent ahead.
        #expect(Self.wait(upTo: 30) { pool.readAheadCounts.changes >= beforeSave + 2 }, "the save is announced")
        #expect(label(60) == "item 60")
        #expect(label(100) == "changed here")
        #expect(pool.readAheadCounts.taken == 0)
        // Nothing changes meanwhile: the next read (items 140..<300) is the one sent ahead.
        #expect(label(140) == "item 140")
        #expect(pool.readAheadCounts.taken == 1)
        #expect((141..<300).allSatisfy { label($0) == "item \($0)" })
        #expect(items.loadedBatchCount == 15)
    }

    @Test("Reading ahead with a pool of one connection: a read or a save meanwhile ends it instead of waiting for it")
    func readAheadWithOneConnection() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema(), options: [PostgreSQLStore.Option.poolSize: "1"])
        let context = Self.context(on: coordinator)
        try context.performAndWait {
            for i in 0..<200 { ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context).setValue(Int64(i), forKey: "small") }
            try context.save()
        }
        let reading = Self.context(on: coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.sortDescriptors = [CoreSortDescriptor(key: "small", ascending: true)]
        request.fetchBatchSize = 20
        try reading.performAndWait {
            let items = try reading.fetchInBatches(request)
            #expect(items[0].value(forKey: "small") as? Int == 0)
            #expect(store.pool.readAheadCounts.sent == 1, "the one connection reads ahead")
            // A save needs the connection the read ahead holds.
            try context.performAndWait {
                ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: context).setValue("c", forKey: "name")
                try context.save()
            }
            #expect((0..<200).allSatisfy { items[$0].value(forKey: "small") as? Int == $0 })
        }
    }

    /// `count` items saved through `context` (`small` and `label` from their
    /// number), their IDs in key order.
    static func insertItems(_ count: Int, model: ManagedObjectModel, into context: ManagedObjectContext) throws -> [ManagedObjectID] {
        try context.performAndWait {
            let items = (0..<count).map { i -> ManagedObject in
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
                item.setValue(Int64(i), forKey: "small")
                item.setValue("item \(i)", forKey: "label")
                return item
            }
            try context.save()
            return items.map(\.objectID)
        }
    }

    @Test("A batched fetch in no order reads its rows through one cursor, FETCH after FETCH; a change saved elsewhere meanwhile ends it")
    func cursorReadsInOrder() throws {
        let model = try Self.model()
        let servers = try Self.twoServers(model)
        let ids = try Self.insertItems(4000, model: model, into: servers.writing)
        let pool = servers.readerStore.pool
        let reading = Self.context(on: servers.reader)
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        // A bound argument: the cursor's statement takes the fetch's arguments.
        request.predicate = try CorePredicate(format: "small >= %d", 0)
        request.fetchBatchSize = 20
        let items = try reading.performAndWait { try reading.fetchInBatches(request) }
        #expect(items.objectIDs == ids)
        #expect(pool.cursorCounts.declared == 1)
        func label(_ index: Int) -> String? { reading.performAndWait { items[index].value(forKey: "label") as? String } }
        // 2,500 rows: two FETCHes of 2,000 and part of the next.
        #expect((0..<2500).allSatisfy { label($0) == "item \($0)" })
        let served = pool.cursorCounts.served
        #expect(served > 2)
        #expect(pool.readAheadCounts.sent == 0, "nothing read ahead by key while the cursor reads ahead")
        // Another server changes item 3000, not read yet: the cursor predates it.
        let changes = pool.readAheadCounts.changes
        try servers.writing.performAndWait {
            try servers.writing.existingObject(with: ids[3000]).setValue("changed elsewhere", forKey: "label")
            try servers.writing.save()
        }
        #expect(Self.wait(upTo: 30) { pool.readAheadCounts.changes > changes }, "the change is announced")
        #expect((2500..<4000).allSatisfy { label($0) == ($0 == 3000 ? "changed elsewhere" : "item \($0)") })
        #expect(pool.cursorCounts.served == served, "the cursor declared before the change serves nothing")
        #expect(pool.cursorCounts.ended == 1)
        #expect(items.loadedBatchCount == 200)
    }

    @Test("The rows a cursor lacks are read by key, those of objects already loaded are passed over, and a jump ahead ends it")
    func cursorGapsAndJumps() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema())
        let ids = try Self.insertItems(6000, model: model, into: Self.context(on: coordinator))
        // Every seventh row is missing from the cursor (which reads the IDs'
        // snapshot: a row it lacks is a failure it must survive); FETCHes of 500.
        store.cursorConditionForTesting.withLock { $0 = "t0.ZSMALL % 7 <> 3" }
        store.cursorFetchRowsForTesting.withLock { $0 = 500 }
        let context = Self.context(on: coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.fetchBatchSize = 20
        let items = try context.performAndWait { () throws -> BatchedFetchResults<ManagedObject> in
            // Objects 5..<10 loaded before the fetch: the first batch's read skips them.
            for id in ids[5..<10] { _ = try context.existingObject(with: id).value(forKey: "label") }
            return try context.fetchInBatches(request)
        }
        func label(_ index: Int) -> String? { context.performAndWait { items[index].value(forKey: "label") as? String } }
        #expect((0..<20).allSatisfy { label($0) == "item \($0)" })
        // A jump within a FETCH: the rows between are passed over.
        #expect(label(300) == "item 300")
        let counts = store.pool.cursorCounts
        #expect(counts.declared == 1 && counts.served == 2 && counts.ended == 0)
        // Backwards: read by key, the cursor stays.
        #expect(label(200) == "item 200")
        #expect(store.pool.cursorCounts.ended == 0)
        // Far ahead (more than a FETCH further on): read by key, the cursor ends.
        #expect(label(2000) == "item 2000")
        #expect(store.pool.cursorCounts.ended == 1)
        #expect((0..<6000).allSatisfy { label($0) == "item \($0)" })
        #expect(store.pool.cursorCounts.served == counts.served)
    }

    @Test("A cursor's session ended by the server, or a pool too small for one: the rows come by key")
    func cursorFallsBack() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema(), options: [PostgreSQLStore.Option.poolSize: "2"])
        _ = try Self.insertItems(3000, model: model, into: Self.context(on: coordinator))
        // A FETCH size no other test uses names this cursor's session on the server.
        store.cursorFetchRowsForTesting.withLock { $0 = 777 }
        let context = Self.context(on: coordinator)
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        request.fetchBatchSize = 20
        let items = try context.performAndWait { try context.fetchInBatches(request) }
        func label(_ index: Int) -> String? { context.performAndWait { items[index].value(forKey: "label") as? String } }
        #expect((0..<100).allSatisfy { label($0) == "item \($0)" })
        let ended = try store.pool.withSession { session in
            try session.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'FETCH 777 FROM ocd_rows' AND pid <> pg_backend_pid()").count
        }
        #expect(ended == 1)
        #expect((100..<3000).allSatisfy { label($0) == "item \($0)" })
        #expect(store.pool.cursorCounts.ended == 1)
        // The pool has its two places back: a save and a read go through.
        try context.performAndWait {
            try context.existingObject(with: items.objectIDs[0]).setValue("saved", forKey: "label")
            try context.save()
        }
        #expect(label(0) == "saved")

        let (single, singleStore) = try Self.coordinator(model, schema: Self.newSchema(), options: [PostgreSQLStore.Option.poolSize: "1"])
        let singleContext = Self.context(on: single)
        _ = try Self.insertItems(100, model: model, into: singleContext)
        let few = try singleContext.performAndWait { try singleContext.fetchInBatches(request) }
        #expect(singleContext.performAndWait { (0..<100).allSatisfy { few[$0].value(forKey: "label") as? String == "item \($0)" } })
        #expect(singleStore.pool.cursorCounts.declared == 0, "the one connection is not held by a cursor")
    }

    @Test("Announcements list keys in decimal, comma-separated, as String(_:) writes them")
    func announcedKeyLists() {
        #expect(PostgreSQLRemoteChanges.commaSeparated([0, 7, 12, -3, .max, .min][...]) == "0,7,12,-3,9223372036854775807,-9223372036854775808")
        #expect(PostgreSQLRemoteChanges.commaSeparated([][...]).isEmpty)
        let keys = (0..<500).map { _ in Int64.random(in: .min ... .max) }
        #expect(PostgreSQLRemoteChanges.commaSeparated(keys[...]) == keys.map(String.init).joined(separator: ","))
    }

    @Test("A fetch with no sort descriptor returns its rows (or IDs, or a batched fetch's IDs) in key order, however the server finds them")
    func unsortedFetchInKeyOrder() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema())
        let context = Self.context(on: coordinator)
        try context.performAndWait {
            let items = (0..<300).map { i -> ManagedObject in
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
                item.setValue(Double(i), forKey: "ratio")
                return item
            }
            try context.save()
            // An updated row is written anew at the table's end: the server's
            // scans then meet the rows out of key order.
            for item in items where (item.value(forKey: "ratio") as? Double ?? 0) < 150 { item.setValue("changed", forKey: "label") }
            try context.save()
        }
        let stored = try store.withSession("reading the table's order") { session in
            try session.query("SELECT Z_PK FROM ZITEM", []).map { $0.int64(0) }
        }
        #expect(stored != stored.sorted(), "the table's own order is not key order")
        let reading = Self.context(on: coordinator)
        try reading.performAndWait {
            for format in [nil, "ratio >= 0", "ratio >= 100 AND ratio < 200"] {
                let request = FetchRequest<ManagedObject>(entityName: "Item")
                request.predicate = try format.map { try CorePredicate(format: $0) }
                let keys = try reading.fetch(request).compactMap(\.objectID.primaryKey)
                #expect(keys == keys.sorted(), "\(format ?? "every row")")
                #expect(keys.count == (format == nil || format == "ratio >= 0" ? 300 : 100))
                // The IDs alone come packed in one array: the same keys, in the same order.
                let idRequest = FetchRequest<ManagedObjectID>(entityName: "Item")
                idRequest.predicate = request.predicate
                #expect(try reading.fetch(idRequest).compactMap(\.primaryKey) == keys)
                request.fetchBatchSize = 20
                #expect(try reading.fetchInBatches(request).objectIDs.compactMap(\.primaryKey) == keys)
            }
            let none = FetchRequest<ManagedObjectID>(entityName: "Item")
            none.predicate = try CorePredicate(format: "ratio < 0")
            #expect(try reading.fetch(none).isEmpty)
        }
    }

    @Test("IDs too many for one array (the server refuses it with 54000) are read as rows: the same keys, in a query generation too")
    func packedIDsFallBackToRows() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema())
        let context = Self.context(on: coordinator)
        let request = FetchRequest<ManagedObjectID>(entityName: "Item")
        request.predicate = try CorePredicate(format: "ratio >= 10")
        let packed = try context.performAndWait {
            for i in 0..<50 { ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context).setValue(Double(i), forKey: "ratio") }
            try context.save()
            return try context.fetch(request).compactMap(\.primaryKey)
        }
        #expect(packed.count == 40 && packed == packed.sorted())
        let pinned = Self.context(on: coordinator)
        // Pinned at its first read.
        let pinnedFirst = try pinned.performAndWait { () throws -> Int in
            try pinned.setQueryGenerationFrom(.current)
            return try pinned.fetch(request).count
        }
        #expect(pinnedFirst == 40)
        store.packedRowsFailForTesting.withLock { $0 = true }
        defer { store.packedRowsFailForTesting.withLock { $0 = false } }
        let (refused, afterSave) = try context.performAndWait { () throws -> ([Int64], Int) in
            let refused = try context.fetch(request).compactMap(\.primaryKey)
            // A row the pinned context must not see.
            ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context).setValue(99.0, forKey: "ratio")
            try context.save()
            return (refused, try context.fetch(request).count)
        }
        #expect(refused == packed)
        #expect(afterSave == 41)
        // A batched fetch reads its IDs in its cursor's transaction first: the
        // refusal ends the cursor, and the IDs are read as any fetch's are.
        let batched = try context.performAndWait { () throws -> [Int64] in
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.predicate = try CorePredicate(format: "ratio >= 10")
            request.fetchBatchSize = 5
            let items = try context.fetchInBatches(request)
            #expect(items.map { $0.value(forKey: "ratio") as? Double }.count == 41)
            return items.objectIDs.compactMap(\.primaryKey)
        }
        #expect(batched.prefix(40) == packed[...] && batched.count == 41)
        #expect(store.pool.cursorCounts.declared == 1 && store.pool.cursorCounts.ended == 1)
        // The refused statement is undone inside the generation's transaction, which goes on.
        let (pinnedKeys, pinnedCount) = try pinned.performAndWait { () throws -> ([Int64], Int) in
            (try pinned.fetch(request).compactMap(\.primaryKey), try pinned.count(for: FetchRequest<ManagedObject>(entityName: "Item")))
        }
        #expect(pinnedKeys == packed)
        #expect(pinnedCount == 50)
    }

    @Test("Packed rows read back what the server's arrays hold: keys, text, NULLs and every element type a key column has")
    func packedRowsFromTheServer() throws {
        let (_, store) = try Self.coordinator(try Self.model(), schema: Self.newSchema())
        let sql = "SELECT " + PostgreSQLPackedRows.aggregates(["v.k", "v.e", "v.t"])
            + " FROM (VALUES (1::int8, 3::int4, 'one'::text), (NULL, 4, NULL), (-9223372036854775808, NULL, ''), (42, 5, 'vier zwei')) v(k, e, t)"
        let rows = try store.withSession("reading packed rows") { session in
            try session.query(sql).map { row in try PostgreSQLPackedRowsTests.read(Array(row)) }
        }
        #expect(rows == [[["1", "3", "one"], [nil, "4", nil], ["-9223372036854775808", nil, ""], ["42", "5", "vier zwei"]]])
        let empty = try store.withSession("reading packed rows") { session in
            try session.query("SELECT " + PostgreSQLPackedRows.aggregates(["v.k"]) + " FROM (VALUES (1::int8)) v(k) WHERE false")
                .map { row in try PostgreSQLPackedRowsTests.read(Array(row)) }
        }
        #expect(empty == [[]])
    }

    @Test("Deleting rows read at several versions checks each row's version: a row changed elsewhere fails the save with 133020 and deletes nothing",
          arguments: [3, 6])
    func deletesCheckVersions(versions: Int) throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let (first, store) = try Self.coordinator(model, schema: schema, options: [PostgreSQLStore.Option.remoteChanges: "0"])
        let (second, _) = try Self.coordinator(model, schema: schema, options: [PostgreSQLStore.Option.remoteChanges: "0"])
        let writing = Self.context(on: first)
        // Item i saved again min(i, versions - 1) times: `versions` read versions,
        // a statement per version at 3, one statement joining (key, version)
        // pairs at 6 (more than `versionsPerDelete`).
        let ids = try writing.performAndWait { () -> [ManagedObjectID] in
            let items = (0..<20).map { i -> ManagedObject in
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: writing)
                item.setValue(Double(i), forKey: "ratio")
                return item
            }
            try writing.save()
            for round in 1..<versions {
                for (i, item) in items.enumerated() where i >= round { item.setValue("round \(round)", forKey: "label") }
                try writing.save()
            }
            return items.map(\.objectID)
        }
        func storedVersions() throws -> [Int64] {
            try store.withSession("reading versions") { session in
                try session.query("SELECT Z_OPT FROM ZITEM ORDER BY Z_PK", []).map { $0.int64(0) }
            }
        }
        #expect(Set(try storedVersions()).count == versions)
        let deleting = Self.context(on: first)
        try deleting.performAndWait {
            for item in try deleting.fetch(FetchRequest<ManagedObject>(entityName: "Item")) { deleting.delete(item) }
        }
        // Another server changes one row the context read.
        let other = Self.context(on: second)
        try other.performAndWait {
            try other.existingObject(with: ids[13]).setValue("elsewhere", forKey: "label")
            try other.save()
        }
        let before = try storedVersions()
        #expect { try deleting.performAndWait { try deleting.save() } } throws: { error in
            (error as? CoreDataError)?.code == .managedObjectMerge
        }
        #expect(try storedVersions() == before, "the failed save deleted nothing")
        // Read again, every row is deleted.
        let again = Self.context(on: first)
        try again.performAndWait {
            for item in try again.fetch(FetchRequest<ManagedObject>(entityName: "Item")) { again.delete(item) }
            try again.save()
        }
        #expect(try storedVersions().isEmpty)
    }

    @Test("Dictionary fetches run on the server: the same results as evaluation in memory, one statement each")
    func dictionariesInSQL() throws {
        let model = try Self.model()
        let (coordinator, store) = try Self.coordinator(model, schema: Self.newSchema())
        let context = Self.context(on: coordinator)
        try context.performAndWait {
            let counters = (0..<3).map { i -> ManagedObject in
                let counter = ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: context)
                counter.setValue("counter \(i)", forKey: "name")
                return counter
            }
            for i in 0..<200 {
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
                item.setValue("label \(i % 7)", forKey: "label")
                item.setValue(Int64(i % 13), forKey: "small")
                item.setValue(Double(i) / 4, forKey: "ratio")
                item.setValue(Decimal(i) / 10, forKey: "price")
                if i % 5 != 0 { item.setValue(counters[i % 3], forKey: "counter") }
            }
            try context.save()
        }
        let item = model.entitiesByName["Item"]!
        func column(_ name: String, _ expression: CoreExpression, _ type: AttributeType? = nil) -> StoreColumn {
            StoreColumn(name: name, expression: expression, resultType: type)
        }
        func aggregate(_ function: String, _ key: String) -> CoreExpression { .function(function, arguments: [.keyPath(key)]) }
        var requests: [StoreDictionaryFetch] = []
        // Grouped by a to-one relationship, every aggregate.
        var grouped = StoreDictionaryFetch(fetch: StoreFetch(entity: item))
        grouped.columns = [column("counter", .keyPath("counter")), column("n", aggregate("count:", "small"), .integer64),
                           column("total", aggregate("sum:", "small"), .integer64), column("mean", aggregate("average:", "ratio"), .double),
                           column("low", aggregate("min:", "price")), column("high", aggregate("max:", "label"))]
        grouped.groupBy = [grouped.columns[0]]
        requests.append(grouped)
        // No grouping: aggregates and arithmetic on them, with a predicate.
        var whole = StoreDictionaryFetch(fetch: StoreFetch(entity: item))
        whole.fetch.predicate = try CorePredicate(format: "small > 2")
        whole.columns = [column("sum", aggregate("sum:", "ratio"), .double),
                         column("perItem", .function(PredicateFunction.divide.rawValue, arguments: [aggregate("sum:", "small"), aggregate("count:", "small")]), .double),
                         column("decimals", aggregate("sum:", "price"), .decimal)]
        requests.append(whole)
        // Grouped by an attribute, sorted by it, with a having predicate.
        var labels = StoreDictionaryFetch(fetch: StoreFetch(entity: item))
        labels.columns = [column("label", .keyPath("label")), column("n", aggregate("count:", "label"), .integer64)]
        labels.groupBy = [labels.columns[0]]
        labels.fetch.sortDescriptors = [CoreSortDescriptor(key: "label", ascending: false)]
        labels.havingPredicate = try CorePredicate(format: "n > 28")
        requests.append(labels)
        // Plain values through a to-one, sorted, offset and limited; distinct values.
        var plain = StoreDictionaryFetch(fetch: StoreFetch(entity: item))
        plain.columns = [column("label", .keyPath("label")), column("owner", .keyPath("counter.name")), column("price", .keyPath("price"))]
        plain.fetch.sortDescriptors = [CoreSortDescriptor(key: "ratio", ascending: false)]
        plain.fetch.fetchOffset = 3
        plain.fetch.fetchLimit = 20
        requests.append(plain)
        var distinct = StoreDictionaryFetch(fetch: StoreFetch(entity: item))
        distinct.columns = [column("small", .keyPath("small"))]
        distinct.distinct = true
        distinct.fetch.sortDescriptors = [CoreSortDescriptor(key: "small", ascending: true)]
        requests.append(distinct)
        for request in requests {
            let inSQL = try #require(try store.sqlDictionaries(request), "\(request.columns.map(\.name)) not run in SQL")
            let evaluated = try store.evaluateDictionaries(request)
            let ordered = !request.fetch.sortDescriptors.isEmpty || request.groupBy.isEmpty && !request.distinct
            if ordered {
                #expect(inSQL == evaluated, "\(request.columns.map(\.name))")
            } else {
                #expect(Set(inSQL) == Set(evaluated), "\(request.columns.map(\.name))")
            }
            #expect(!inSQL.isEmpty)
        }
        // A sort on a value neither grouped nor aggregated: PostgreSQL refuses the
        // statement, the store computes it in memory.
        var refused = labels
        refused.fetch.sortDescriptors = [CoreSortDescriptor(key: "ratio", ascending: true)]
        refused.havingPredicate = nil
        #expect(try store.sqlDictionaries(refused) == nil)
        #expect(try store.fetchDictionaries(refused).count == 7)
    }

    @Test("A column goes into an array parameter only when every value has the column type's exact form")
    func binaryArrays() throws {
        let ints = try #require(PostgreSQLBinaryArray(column: [(7 as Int64).databaseValue, .null], type: "BIGINT"))
        var buffer = ByteBuffer()
        ints.encode(into: &buffer, context: .default)
        // One dimension, a NULL, int8 elements; 2 of them from 1; 7; NULL.
        #expect(buffer.readInteger(as: Int32.self) == 1)
        #expect(buffer.readInteger(as: Int32.self) == 1)
        #expect(buffer.readInteger(as: UInt32.self) == PostgresDataType.int8.rawValue)
        #expect(buffer.readInteger(as: Int32.self) == 2)
        #expect(buffer.readInteger(as: Int32.self) == 1)
        #expect(buffer.readInteger(as: Int32.self) == 8)
        #expect(buffer.readInteger(as: Int64.self) == 7)
        #expect(buffer.readInteger(as: Int32.self) == -1)
        #expect(buffer.readableBytes == 0)
        #expect(ints.psqlType == .int8Array)
        // Exact forms only: a double in an integer column, a number in a text
        // column, a fractional number in a NUMERIC one go another way.
        #expect(PostgreSQLBinaryArray(column: [(1.5 as Double).databaseValue], type: "BIGINT") == nil)
        #expect(PostgreSQLBinaryArray(column: [(3 as Int64).databaseValue], type: "TEXT") == nil)
        #expect(PostgreSQLBinaryArray(column: [(0.1 as Double).databaseValue], type: "NUMERIC") == nil)
        #expect(PostgreSQLBinaryArray(column: [(12 as Int64).databaseValue, "3.25".databaseValue], type: "NUMERIC")?.cast == "NUMERIC")
        #expect(PostgreSQLBinaryArray(column: [(Int64(1) << 60).databaseValue], type: "DOUBLE PRECISION") == nil)
    }

    @Test("Every real SQLite store moves to PostgreSQL with its objects, values, relationships and UUID",
          arguments: Fixtures.storesWithModels.map(\.store) + RealStoreTests.photosLibraries)
    func migrateRealStore(_ path: String) throws {
        let url = try Fixtures.copyStore(path)
        // A store without a model file (the Photos libraries) moves with the model
        // cached in it.
        let model: ManagedObjectModel
        if let entry = Fixtures.storesWithModels.first(where: { $0.store == path }) {
            model = try XcodeDataModel(contentsOf: Fixtures.url(entry.model)).model(forVersion: entry.version)
        } else {
            model = try SQLiteStore.storedModel(at: url)
        }
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let sqlite = try SQLiteStore(url: url, model: model, options: [SQLiteStore.Option.readOnly: "1"])
        let target = try coordinator.migratePersistentStore(source, to: try PostgreSQLTestServer.url(),
                                                           options: PostgreSQLTestServer.storeOptions(), type: .postgreSQL)
        #expect(target.identifier == sqlite.identifier)
        #expect(coordinator.persistentStores.count == 1)
        for entity in model.entities where !entity.isAbstract {
            var fetch = StoreFetch(entity: entity)
            fetch.includesSubentities = false
            let expected = try sqlite.fetchRows(fetch).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
            // With no sort descriptor the store returns the rows in key order itself.
            let moved = try target.fetchRows(fetch)
            #expect(moved.map(\.objectID.primaryKey) == moved.map(\.objectID.primaryKey).sorted { ($0 ?? 0) < ($1 ?? 0) }, "\(entity.name)")
            #expect(moved.count == expected.count, "\(entity.name)")
            for (row, original) in zip(moved, expected) {
                #expect(row.objectID == original.objectID)
                for (index, property) in entity.allProperties.enumerated() where !property.isTransient {
                    if let relationship = property as? RelationshipDescription, relationship.isToMany {
                        let ids = try target.relatedObjectIDs(of: row.objectID, relationship: relationship)
                        let originalIDs = try sqlite.relatedObjectIDs(of: original.objectID, relationship: relationship)
                        #expect(relationship.isOrdered ? ids == originalIDs : Set(ids) == Set(originalIDs),
                                "\(entity.name).\(property.name)")
                    } else {
                        #expect(row.values[index] == original.values[index], "\(entity.name).\(property.name)")
                    }
                }
            }
            // A batched fetch read in order (windows read ahead) gives every row, in
            // key order, with the same values.
            let context = Self.context(on: coordinator)
            try context.performAndWait {
                let request = FetchRequest<ManagedObject>(entity: entity)
                request.includesSubentities = false
                request.fetchBatchSize = 20
                let batched = try context.fetchInBatches(request)
                #expect(batched.objectIDs == moved.map(\.objectID), "\(entity.name)")
                for (object, row) in zip(batched, moved) {
                    for (index, property) in entity.allProperties.enumerated() where property is AttributeDescription && !property.isTransient {
                        #expect(object.attributeValue(forKey: property.name) == row.values[index].attributeValue, "\(entity.name).\(property.name)")
                    }
                }
            }
            if moved.count > 60 {
                // Read through the fetch's cursor, which reads ahead.
                #expect(try #require(target as? PostgreSQLStore).pool.cursorCounts.served > 0, "\(entity.name): read through a cursor")
            }
            // Every to-many relationship read for all sources in one statement gives
            // each source's destinations, in order, as reading them one by one does.
            for relationship in entity.relationshipsByName.values.sorted(by: { $0.name < $1.name }) where relationship.isToMany {
                let sources = moved.map(\.objectID)
                guard !sources.isEmpty, let grouped = try target.relatedRows(of: sources, relationship: relationship) else { continue }
                #expect(grouped.count == sources.count)
                for (source, rows) in zip(sources, grouped) {
                    let ids = try target.relatedObjectIDs(of: source, relationship: relationship)
                    let read = rows.map(\.objectID)
                    #expect(relationship.isOrdered ? read == ids : Set(read) == Set(ids), "\(entity.name).\(relationship.name) of \(source)")
                }
            }
        }
    }

    @Test("Every fixture model, every version, and the Photos libraries' cached models make a PostgreSQL store: an object of every entity, a value in every attribute, saved and read back")
    func everyFixtureModel() throws {
        var models: [(String, ManagedObjectModel)] = []
        for url in Fixtures.allModelFiles() where !url.path.contains("ponso") {   // ponso: Xcode 3's binary format, refused
            for (version, model) in try XcodeDataModel(contentsOf: url).allModels() {
                models.append(("\(url.lastPathComponent) \(version)", model))
            }
        }
        for path in RealStoreTests.photosLibraries {
            models.append((path, try SQLiteStore.storedModel(at: try Fixtures.copyStore(path))))
        }
        #expect(models.count >= 33)
        // Values that differ between entities (siblings share a table, and its
        // uniqueness constraints).
        func sample(_ attribute: AttributeDescription, _ n: Int) -> Any? {
            switch attribute.attributeType {
            case .integer16: return Int16(7 + n)
            case .integer32: return Int32(70_000 + n)
            case .integer64: return (Int64(1) << 40) + Int64(n)
            case .decimal: return Decimal(string: "12.5")! + Decimal(n)
            case .double: return 0.25 + Double(n)
            case .float: return Float(0.5) + Float(n)
            case .string: return "valeur ü \(attribute.name) \(n)"
            case .boolean: return n % 2 == 0
            case .date: return Date(timeIntervalSinceReferenceDate: 1000.5 + Double(n))
            case .binaryData: return Data([0, 1, 254, 255, UInt8(n % 256)])
            case .uuid: return UUID(uuidString: String(format: "6B1C7F3E-2A4D-4C2B-9E61-%012X", n))!
            case .uri: return URL(string: "https://example.com/\(attribute.name)/\(n)")!
            default: return nil   // transformable (the app's transformer), object IDs, undefined
            }
        }
        for (name, model) in models {
            let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .postgreSQL, at: try PostgreSQLTestServer.url(), options: PostgreSQLTestServer.storeOptions())
            let context = Self.context(on: coordinator)
            context.validatesOnSave = false   // one object each: required relationships stay empty
            let entities = model.entities.filter { !$0.isAbstract }
            let written = try context.performAndWait { () -> [String: [String: AttributeValue]] in
                var written: [String: [String: AttributeValue]] = [:]
                for (n, entity) in entities.enumerated() {
                    let object = ManagedObject(entity: entity, insertInto: context)
                    for (key, attribute) in entity.attributesByName where !attribute.isTransient {
                        if let value = sample(attribute, n) { object.setValue(value, forKey: key) }
                    }
                    written[entity.name] = Dictionary(uniqueKeysWithValues: entity.attributesByName.keys.map { ($0, object.attributeValue(forKey: $0)) })
                }
                try context.save()
                context.reset()
                return written
            }
            try context.performAndWait {
                for entity in entities {
                    let request = FetchRequest<ManagedObject>(entity: entity)
                    request.includesSubentities = false
                    let objects = try context.fetch(request)
                    #expect(objects.count == 1, "\(name): \(entity.name)")
                    guard let object = objects.first else { continue }
                    for (key, attribute) in entity.attributesByName where !attribute.isTransient {
                        #expect(object.attributeValue(forKey: key) == written[entity.name]?[key], "\(name): \(entity.name).\(key)")
                    }
                }
            }
        }
    }

    @Test("ocd tells the same of a real store moved to PostgreSQL as of its SQLite file: rows per entity, fetched objects",
          arguments: [RealStoreTests.photosLibraries[2], Fixtures.storesWithModels[0].store])
    func ocdReadsAMovedRealStore(_ path: String) throws {
        let file = try Fixtures.copyStore(path)
        let model = try SQLiteStore.storedModel(at: file)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let source = try coordinator.addPersistentStore(type: .sqlite, at: file)
        let schema = Self.newSchema()
        _ = try coordinator.migratePersistentStore(source, to: try PostgreSQLTestServer.url(),
                                                   options: PostgreSQLTestServer.storeOptions(schema: schema), type: .postgreSQL)
        let copy = try Fixtures.copyStore(path)
        let url = try PostgreSQLTestServer.url().absoluteString + "?schema=" + schema
        func rowsPerEntity(_ location: String) throws -> [String: Int] {
            let info = try #require(try JSONSerialization.jsonObject(with: Data(runOCD(["store", "info", location, "--json"]).utf8)) as? [String: Any])
            return Dictionary(uniqueKeysWithValues: ((info["entities"] as? [[String: Any]]) ?? []).compactMap { entry in
                (entry["name"] as? String).map { ($0, entry["rows"] as? Int ?? -1) }
            })
        }
        let counts = try rowsPerEntity(copy.path)
        #expect(!counts.isEmpty)
        #expect(try rowsPerEntity(url) == counts)
        // Every entity with rows: the same objects fetched from both.
        for (entity, count) in counts.sorted(by: { $0.key < $1.key }) where count > 0 {
            let fromFile = try runOCD(["fetch", copy.path, "--entity", entity, "--json"])
            let fromServer = try runOCD(["fetch", url, "--entity", entity, "--json"])
            let decoded = { (text: String) in try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]] }
            let fileObjects = try #require(try decoded(fromFile), "\(entity)")
            let serverObjects = try #require(try decoded(fromServer), "\(entity)")
            #expect(fileObjects.count == serverObjects.count, "\(entity)")
            func attributes(_ objects: [[String: Any]]) -> [String] {
                objects.map { object in
                    let values = object["attributes"] as? [String: Any] ?? [:]
                    return values.keys.sorted().map { "\($0)=\(values[$0].map { "\($0)" } ?? "nil")" }.joined(separator: ";")
                }.sorted()
            }
            #expect(attributes(fileObjects) == attributes(serverObjects), "\(entity)")
        }
    }

    @Test("ocd reads a PostgreSQL store by its URL: info with the cached model, fetch with a predicate; dump refuses it")
    func ocdReadsTheStore() throws {
        let model = try Self.model()
        let schema = Self.newSchema()
        let (coordinator, store) = try Self.coordinator(model, schema: schema)
        let context = Self.context(on: coordinator)
        try context.performAndWait {
            for (name, value) in [("a", 7), ("b", 8)] {
                let counter = ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: context)
                counter.setValue(name, forKey: "name")
                counter.setValue(Int64(value), forKey: "value")
                let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
                item.setValue("of \(name)", forKey: "label")
                item.setValue(counter, forKey: "counter")
            }
            try context.save()
        }
        let url = try PostgreSQLTestServer.url().absoluteString + "?schema=" + schema
        #expect(try PostgreSQLStore.storedModel(at: try #require(URL(string: url))).entitiesByName.keys.sorted() == ["Counter", "Item"])

        let info = try #require(try JSONSerialization.jsonObject(with: Data(runOCD(["store", "info", url, "--json"]).utf8)) as? [String: Any])
        #expect(info["uuid"] as? String == store.identifier)
        #expect((info["metadata"] as? [String: Any])?["NSStoreType"] as? String == "PostgreSQL")
        let rows = Dictionary(uniqueKeysWithValues: ((info["entities"] as? [[String: Any]]) ?? []).compactMap { entry in
            (entry["name"] as? String).map { ($0, entry["rows"] as? Int ?? -1) }
        })
        #expect(rows == ["Counter": 2, "Item": 2])

        let fetched = try #require(try JSONSerialization.jsonObject(
            with: Data(runOCD(["fetch", url, "--entity", "Counter", "--predicate", "value >= 8", "--json"]).utf8)) as? [[String: Any]])
        #expect(fetched.count == 1)
        #expect((fetched.first?["attributes"] as? [String: Any])?["name"] as? String == "b")
        #expect(((fetched.first?["relationships"] as? [String: Any])?["items"] as? [String])?.count == 1)

        #expect(throws: (any Error).self) { try runOCD(["store", "dump", url]) }
        // A schema with no store: an error naming it, nothing created.
        #expect(throws: (any Error).self) { try runOCD(["store", "info", try PostgreSQLTestServer.url().absoluteString + "?schema=" + Self.newSchema()]) }
    }
}

/// Runs `ocd arguments` in-process, as `ocd` built with the PostgreSQL trait
/// (the PostgreSQL opener installed), and returns what it printed.
private func runOCD(_ arguments: [String]) throws -> String {
    OCDPostgreSQL.install()
    let sink = CommandOutput.Sink()
    try CommandOutput.$sink.withValue(sink) {
        var command = try OCD.parseAsRoot(arguments)
        try command.run()
    }
    return sink.text
}
#endif
