import Foundation
import GRDB
import Synchronization
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Persistent history tracking")
struct PersistentHistoryTests {
    typealias Support = HistoryTestSupport

    @Test("History tables, indexes and Z_PRIMARYKEY rows are Core Data's")
    func tableLayout() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        let dump = try StoreDump.read(stack.url)
        #expect(dump.tables["ACHANGE"] == ["Z_PK INTEGER", "Z_ENT INTEGER", "Z_OPT INTEGER", "ZCHANGETYPE INTEGER", "ZENTITY INTEGER",
                                           "ZENTITYPK INTEGER", "ZTRANSACTIONID INTEGER", "ZCOLUMNS BLOB", "ZTOMBSTONE0 BLOB", "ZTOMBSTONE1 BLOB"])
        #expect(dump.tables["ATRANSACTION"] == ["Z_PK INTEGER", "Z_ENT INTEGER", "Z_OPT INTEGER", "ZAUTHORTS INTEGER", "ZBUNDLEIDTS INTEGER",
                                                "ZCONTEXTNAMETS INTEGER", "ZPROCESSIDTS INTEGER", "ZTIMESTAMP FLOAT", "ZAUTHOR VARCHAR",
                                                "ZBUNDLEID VARCHAR", "ZCONTEXTNAME VARCHAR", "ZPROCESSID VARCHAR", "ZQUERYGEN BLOB"])
        #expect(dump.tables["ATRANSACTIONSTRING"] == ["Z_PK INTEGER", "Z_ENT INTEGER", "Z_OPT INTEGER", "ZNAME VARCHAR"])
        #expect(dump.indexes["Z_TRANSACTIONSTRING_UNIQUE_NAME"] == "ATRANSACTIONSTRING(ZNAME) unique")
        #expect(dump.primaryKeys.suffix(3) == ["16001|CHANGE|0", "16002|TRANSACTION|0", "16003|TRANSACTIONSTRING|0"])

        // Reopening (with or without the option) keeps everything and adds nothing.
        let again = try Support.stack(try Support.model(), url: stack.url)
        _ = again
        let plain = try Support.stack(try Support.model(), url: stack.url, options: [:])
        #expect(!plain.store.isTrackingHistory)
        #expect(try StoreDump.read(stack.url).tables == dump.tables)
    }

    @Test("Saves record transactions with author, context name and typed changes")
    func recordsSaves() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        let context = stack.context
        context.name = "editor"
        context.transactionAuthor = "app"
        let first = try Support.insertBook(context, title: "Dune", isbn: "0441013597", pages: 412)
        try Support.insertBook(context, title: "Emma", isbn: "0141439580")
        try context.save()

        first.setValue("Dune Messiah", forKey: "title")
        first.setValue("scratch", forKey: "scratch")
        context.transactionAuthor = "importer"
        try context.save()

        context.delete(first)
        context.transactionAuthor = nil
        try context.save()

        let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?))
        let transactions = try #require(result.transactions)
        #expect(transactions.count == 3)
        #expect(transactions.map(\.author) == ["app", "importer", nil])
        #expect(transactions.allSatisfy { $0.contextName == "editor" && $0.storeID == stack.store.identifier })
        #expect(transactions.allSatisfy { $0.processID == ProcessInfo.processInfo.processName && !$0.bundleID.isEmpty })
        #expect(transactions.map(\.transactionNumber) == [1, 2, 3])
        #expect(transactions[0].timestamp <= transactions[2].timestamp)
        #expect(abs(transactions[0].timestamp.timeIntervalSinceNow) < 600)

        let inserts = try #require(transactions[0].changes)
        #expect(inserts.map(\.changeType) == [.insert, .insert])
        #expect(Set(inserts.map(\.changedObjectID.entityName)) == ["Book"])
        #expect(inserts.allSatisfy { $0.tombstone == nil && $0.updatedProperties == nil })
        #expect(inserts.first?.transaction?.transactionNumber == 1)

        let update = try #require(transactions[1].changes?.first)
        #expect(update.changeType == .update)
        #expect(update.changedObjectID == first.objectID)
        #expect(update.updatedProperties?.map(\.name) == ["title"])

        let delete = try #require(transactions[2].changes?.first)
        #expect(delete.changeType == .delete)
        #expect(delete.changedObjectID == first.objectID)
        #expect(delete.tombstone == ["title": .string("Dune Messiah"), "isbn": .string("0441013597")])

        // The raw rows: interned strings, NULL string twins, Core Data's change bitmap.
        let raw = try Support.raw(stack.url)
        try raw.read { (db: Database) throws -> Void in
            let names = try String.fetchAll(db, sql: "SELECT ZNAME FROM ATRANSACTIONSTRING")
            #expect(Set(names).isSuperset(of: ["app", "importer", "editor", ProcessInfo.processInfo.processName]))
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ATRANSACTION WHERE ZAUTHOR IS NOT NULL OR ZCONTEXTNAME IS NOT NULL") == 0)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ATRANSACTION WHERE Z_ENT = 16002") == 3)
            let author = try String.fetchOne(db, sql: "SELECT s.ZNAME FROM ATRANSACTION t JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZAUTHORTS WHERE t.Z_PK = 2")
            #expect(author == "importer")
            // Book's properties by name, transient ones included: author, isbn, pages,
            // scratch, title → title is property 4, bit 5 (bit 0 names no property;
            // Core Data's layout, seen in the Photos libraries).
            let bitmap = try Data.fetchOne(db, sql: "SELECT ZCOLUMNS FROM ACHANGE WHERE ZCHANGETYPE = 1")
            #expect(bitmap == Data([0x04]))
            let entity = try Int.fetchOne(db, sql: "SELECT ZENTITY FROM ACHANGE WHERE ZCHANGETYPE = 2")
            #expect(entity == stack.store.schema.entityNumber(forEntityNamed: "Book"))
            // Tombstones in name order: isbn, title.
            let row = try #require(try Row.fetchOne(db, sql: "SELECT ZTOMBSTONE0, ZTOMBSTONE1, ZENTITYPK FROM ACHANGE WHERE ZCHANGETYPE = 2"))
            #expect(row[0] as String? == "0441013597")
            #expect(row[1] as String? == "Dune Messiah")
            #expect(row[2] as Int64? == first.objectID.primaryKey)
            #expect(try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = 16001") == 4)
        }
    }

    @Test("Fetching after a token, a transaction or a date; every result type")
    func fetchBoundaries() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        let context = stack.context
        for index in 0..<4 {
            try Support.insertBook(context, title: "Book \(index)")
            try context.save()
        }
        let all = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions)
        #expect(all.count == 4)

        let afterToken = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[1].token))
        #expect(afterToken.transactions?.map(\.transactionNumber) == [3, 4])
        let afterTransaction = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[2]))
        #expect(afterTransaction.transactions?.map(\.transactionNumber) == [4])
        let afterDate = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[0].timestamp.addingTimeInterval(-1)))
        #expect(afterDate.transactions?.count == 4)
        #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: Date().addingTimeInterval(60))).transactions?.isEmpty == true)

        var request = PersistentHistoryChangeRequest.fetchHistory(after: all[0].token)
        request.resultType = .transactionsOnly
        let only = try context.execute(request)
        #expect(only.transactions?.count == 3 && only.transactions?.allSatisfy { $0.changes == nil } == true)
        request.resultType = .changesOnly
        #expect(try context.execute(request).changes?.map(\.changeType) == [.insert, .insert, .insert])
        request.resultType = .objectIDs
        #expect(try context.execute(request).objectIDs?.count == 3)
        request.resultType = .count
        #expect(try context.execute(request).count == 3)

        // The coordinator's current token is the last transaction's.
        let current = try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil))
        #expect(current == all[3].token)
        #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: current)).transactions?.isEmpty == true)
    }

    @Test("Deleting history before a token, a transaction or a date; expired tokens")
    func deleteBoundaries() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        let context = stack.context
        for index in 0..<5 {
            try Support.insertBook(context, title: "Book \(index)")
            try context.save()
        }
        let all = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions)

        // Up to and including the token's transaction.
        var delete = PersistentHistoryChangeRequest.deleteHistory(before: all[1].token)
        delete.resultType = .count
        #expect(try context.execute(delete).count == 2)
        let left = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?))
        #expect(left.transactions?.map(\.transactionNumber) == [3, 4, 5])
        // Fetching after the last deleted token still works; after an older one it has expired.
        #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[1].token)).transactions?.count == 3)
        let error = #expect(throws: CoreDataError.self) {
            try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[0].token))
        }
        #expect(error?.code == .persistentHistoryTokenExpired)

        // Strictly before a transaction.
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: all[3]))
        #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions?.map(\.transactionNumber) == [4, 5])
        // Everything; the interned strings stay.
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: .distantFuture))
        try Support.raw(stack.url).read { (db: Database) throws -> Void in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ATRANSACTION") == 0)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ACHANGE") == 0)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ATRANSACTIONSTRING")! > 0)
        }
        // Numbering carries on after a purge.
        try Support.insertBook(context, title: "Later")
        try context.save()
        #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[4].token)).transactions?.map(\.transactionNumber) == [6])
    }

    @Test("Changes name the object's own entity; relationship changes are in the bitmap")
    func subentitiesAndRelationships() throws {
        let model = try ManagedObjectModel {
            Entity("Item") {
                Attribute("name", .string, preservesValueOnDeletion: true)
                Relationship("owner", to: "Owner", inverse: "items")
            }
            Entity("Special", parent: "Item") {
                Attribute("level", .integer16)
            }
            Entity("Owner") {
                Relationship("items", to: "Item", inverse: "owner", toMany: true)
            }
        }
        let stack = try Support.stack(model)
        defer { SQLiteTestSupport.remove(stack.url) }
        let special = ManagedObject(entity: try #require(model.entitiesByName["Special"]), insertInto: stack.context)
        special.setValue("deep", forKey: "name")
        let owner = ManagedObject(entity: try #require(model.entitiesByName["Owner"]), insertInto: stack.context)
        try stack.context.save()
        special.setValue(owner, forKey: "owner")
        special.setValue(3, forKey: "level")
        try stack.context.save()
        stack.context.delete(special)
        try stack.context.save()

        let transactions = try #require(try stack.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions)
        let update = try #require(transactions[1].changes?.first { $0.changedObjectID == special.objectID })
        // Special's properties in Core Data's order: Item's (name, owner), then its own (level).
        #expect(update.updatedProperties?.map(\.name) == ["owner", "level"])
        let delete = try #require(transactions[2].changes?.first { $0.changeType == .delete })
        #expect(delete.changedObjectID.entityName == "Special")
        #expect(delete.tombstone == ["name": .string("deep")])
        try Support.raw(stack.url).read { (db: Database) throws -> Void in
            let numbers = try Int.fetchAll(db, sql: "SELECT DISTINCT ZENTITY FROM ACHANGE WHERE ZENTITYPK = ? AND ZENTITY <> ?",
                                           arguments: [special.objectID.primaryKey, stack.store.schema.entityNumber(forEntityNamed: "Owner")])
            #expect(numbers == [stack.store.schema.entityNumber(forEntityNamed: "Special")])
            #expect(try Data.fetchOne(db, sql: "SELECT ZCOLUMNS FROM ACHANGE WHERE ZCHANGETYPE = 1 AND ZENTITY = ?",
                                      arguments: [stack.store.schema.entityNumber(forEntityNamed: "Special")]) == Data([0x30]))
        }
    }

    @Test("A read-only store reads the history it has; one without history tables says so")
    func readOnly() throws {
        let model = try Support.model()
        let stack = try Support.stack(model)
        defer { SQLiteTestSupport.remove(stack.url) }
        try Support.insertBook(stack.context, title: "Kept")
        try stack.context.save()
        var options = Support.trackingOptions
        options[SQLiteStore.Option.readOnly] = "1"
        let reader = try Support.stack(model, url: stack.url, options: options)
        #expect(try reader.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions?.count == 1)
        #expect(throws: CoreDataError.self) {
            try reader.context.execute(PersistentHistoryChangeRequest.deleteHistory(before: Date.distantFuture))
        }

        let plain = try Support.stack(model, url: stack.url.deletingLastPathComponent().appendingPathComponent("Plain.sqlite"), options: [:])
        try Support.insertBook(plain.context, title: "Untracked")
        try plain.context.save()
        let plainReader = try Support.stack(model, url: plain.url, options: options)
        let error = #expect(throws: CoreDataError.self) {
            try plainReader.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?))
        }
        #expect(error?.message.contains("ATRANSACTION") == true)
    }

    @Test("A store with history opened without tracking is read-only until its history is deleted")
    func forcedReadOnly() throws {
        let model = try Support.model()
        let stack = try Support.stack(model)
        defer { SQLiteTestSupport.remove(stack.url) }
        #expect(try !Support.stack(model, url: stack.url, options: [:]).store.isReadOnly)
        try Support.insertBook(stack.context, title: "Tracked")
        try stack.context.save()

        let untracked = try Support.stack(model, url: stack.url, options: [:])
        #expect(untracked.store.isReadOnly)
        try Support.insertBook(untracked.context, title: "Would leave a gap")
        #expect(throws: CoreDataError.self) { try untracked.context.save() }

        try stack.context.execute(PersistentHistoryChangeRequest.deleteHistory(before: Date.distantFuture))
        let afterPurge = try Support.stack(model, url: stack.url, options: [:])
        #expect(!afterPurge.store.isReadOnly)
    }

    @Test("Fetch requests narrow history by transaction or by change")
    func predicates() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        let context = stack.context
        context.transactionAuthor = "app"
        let book = try Support.insertBook(context, title: "Tracked")
        try context.save()
        context.transactionAuthor = "sync"
        try Support.insertBook(context, title: "Other")
        try context.save()
        book.setValue(7, forKey: "pages")
        try context.save()

        var request = PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)
        request.fetchRequest = PersistentHistoryTransaction.fetchRequest(predicate: try CorePredicate(format: "author != %@", "app"))
        let notApp = try #require(try context.execute(request).transactions)
        #expect(notApp.map(\.transactionNumber) == [2, 3])
        #expect(notApp.allSatisfy { $0.changes?.isEmpty == false })

        request.fetchRequest = PersistentHistoryChange.fetchRequest(predicate: try CorePredicate(format: "changedObjectID == %@", book.objectID))
        let ofBook = try #require(try context.execute(request).transactions)
        #expect(ofBook.map(\.transactionNumber) == [1, 3])
        #expect(ofBook.map { $0.changes?.map(\.changeType) ?? [] } == [[.insert], [.update]])

        request.fetchRequest = PersistentHistoryChange.fetchRequest(predicate: try CorePredicate(format: "changeType == 1 AND transaction.author == 'sync'"))
        request.resultType = .transactionsOnly
        let updates = try #require(try context.execute(request).transactions)
        #expect(updates.map(\.transactionNumber) == [3])
        #expect(updates.first?.changes == nil)
    }

    @Test("A persistent container with history tracking records background saves")
    func container() async throws {
        let model = try Support.model()
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("Container.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        let container = PersistentContainer(name: "Library", managedObjectModel: model)
        var description = PersistentStoreDescription(url: url)
        description.isHistoryTrackingEnabled = true
        container.persistentStoreDescriptions = [description]
        try await container.loadPersistentStores()
        #expect((container.persistentStoreCoordinator.persistentStores.first as? SQLiteStore)?.isTrackingHistory == true)

        try await container.performBackgroundTask { context in
            context.name = "background"
            context.transactionAuthor = "import"
            try Support.insertBook(context, title: "Imported")
            try context.save()
        }
        let seen = try await container.performBackgroundTask { context in
            try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions?
                .map { "\($0.author ?? "-") \($0.contextName ?? "-") \($0.changes?.count ?? 0)" } ?? []
        }
        #expect(seen == ["import background 1"])
    }

    @Test("Batch deletes and updates are recorded like saves, tombstones included")
    func batchRequests() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        for index in 0..<4 { try Support.insertBook(stack.context, title: "Book \(index)", isbn: "isbn-\(index)", pages: index) }
        try stack.context.save()
        let start = try #require(stack.coordinator.currentPersistentHistoryToken(fromStores: nil))

        stack.context.transactionAuthor = "cleanup"
        stack.context.name = "maintenance"
        try stack.context.execute(BatchDeleteRequest(entityName: "Book", predicate: try CorePredicate(format: "pages < 2")))
        let transactions = try #require(try stack.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: start)).transactions)
        #expect(transactions.count == 1)
        #expect(transactions.first?.author == "cleanup" && transactions.first?.contextName == "maintenance")
        let changes = transactions.first?.changes ?? []
        #expect(changes.map(\.changeType) == [.delete, .delete])
        #expect(Set(changes.compactMap { $0.tombstone?["isbn"] }) == [.string("isbn-0"), .string("isbn-1")])
    }

    @Test("Tokens round-trip through Codable and order per store")
    func tokens() throws {
        let token = PersistentHistoryToken(storeIdentifier: "A", transactionNumber: 7)
        let data = try JSONEncoder().encode(token)
        #expect(try JSONDecoder().decode(PersistentHistoryToken.self, from: data) == token)
        let later = PersistentHistoryToken(storeIdentifier: "A", transactionNumber: 9)
        #expect(token < later && !(later < token))
        let other = PersistentHistoryToken(storeIdentifier: "B", transactionNumber: 1)
        #expect(!(token < other) && !(other < token))
        let both = PersistentHistoryToken(storeTokens: ["A": 7, "B": 3])
        #expect(both < PersistentHistoryToken(storeTokens: ["A": 8, "B": 3]))
        #expect(!(both < PersistentHistoryToken(storeTokens: ["A": 8, "B": 2])))
    }

    @Test("Stores without history tracking refuse history requests with 134091")
    func untrackedStores() throws {
        let stack = try Support.stack(try Support.model(), options: [:])
        defer { SQLiteTestSupport.remove(stack.url) }
        let error = #expect(throws: CoreDataError.self) {
            try stack.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?))
        }
        #expect(error?.code == .persistentStoreUnsupportedRequestType)
        #expect(stack.coordinator.currentPersistentHistoryToken(fromStores: nil) == nil)
        // No history tables are created without the option.
        #expect(StoreDumpKeys.tables(stack.url).contains("ATRANSACTION") == false)

        let memory = PersistentStoreCoordinator(managedObjectModel: try Support.model())
        try memory.addPersistentStore(type: .inMemory)
        #expect(throws: CoreDataError.self) {
            try memory.execute(PersistentHistoryChangeRequest.deleteHistory(before: Date()))
        }
    }

    @Test("A failed save records no history")
    func failedSave() throws {
        let model = try Support.model()
        let first = try Support.stack(model)
        defer { SQLiteTestSupport.remove(first.url) }
        let book = try Support.insertBook(first.context, title: "Shared")
        try first.context.save()

        // Another coordinator changes the book; the first one's stale update conflicts.
        let second = try Support.stack(model, url: first.url)
        let theirs = try #require(try Support.fetchAll(second.context).first)
        theirs.setValue(1, forKey: "pages")
        try second.context.save()
        book.setValue(2, forKey: "pages")
        #expect(throws: CoreDataError.self) { try first.context.save() }
        let transactions = try first.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions
        #expect(transactions?.count == 2)
        #expect(transactions?.last?.changes?.first?.changedObjectID == book.objectID)
    }

    @Test("A transaction's object-ID notification lists its inserted, updated and deleted objects")
    func objectIDNotification() throws {
        let stack = try Support.stack(try Support.model())
        defer { SQLiteTestSupport.remove(stack.url) }
        let keep = try Support.insertBook(stack.context, title: "Keep")
        let drop = try Support.insertBook(stack.context, title: "Drop")
        try stack.context.save()
        keep.setValue(5, forKey: "pages")
        stack.context.delete(drop)
        let added = try Support.insertBook(stack.context, title: "New")
        try stack.context.save()
        let transaction = try #require(try stack.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions?.last)
        let info = try #require(transaction.objectIDNotification().userInfo)
        #expect(info[ManagedObjectContext.NotificationKey.insertedObjectIDs] as? Set<ManagedObjectID> == [added.objectID])
        #expect(info[ManagedObjectContext.NotificationKey.updatedObjectIDs] as? Set<ManagedObjectID> == [keep.objectID])
        #expect(info[ManagedObjectContext.NotificationKey.deletedObjectIDs] as? Set<ManagedObjectID> == [drop.objectID])
    }

    @Test("Two coordinators on one file: the other's save posts a remote-change notification with a history token")
    func remoteChangeNotification() async throws {
        let model = try Support.model()
        var options = Support.trackingOptions
        options[NSPersistentStoreRemoteChangeNotificationPostOptionKey] = "1"
        options[SQLiteStore.Option.remoteChangePollInterval] = "0.02"
        let watcher = try Support.stack(model, options: options)
        defer { SQLiteTestSupport.remove(watcher.url) }
        let writer = try Support.stack(model, url: watcher.url, options: Support.trackingOptions)

        let received = Lock<[(URL?, PersistentHistoryToken?)]>([])
        let observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: watcher.coordinator, queue: nil) { note in
            let url = note.userInfo?[PersistentStoreRemoteChangeKey.storeURL] as? URL
            let token = note.userInfo?[PersistentStoreRemoteChangeKey.historyToken] as? PersistentHistoryToken
            received.withLock { $0.append((url, token)) }
        }
        defer { NotificationCenter.default.removeObserver(observer) }

        try Support.insertBook(writer.context, title: "From elsewhere")
        try writer.context.save()
        // Wait for the poll (a generous deadline: the machine may be busy).
        let deadline = ContinuousClock.now + .seconds(60)
        // (Reserving the new object's primary key is a write of its own, which may be
        // noticed first, before the transaction exists.)
        let expected = PersistentHistoryToken(storeIdentifier: watcher.store.identifier, transactionNumber: 1)
        func saw() -> Bool { received.withLock { $0.contains { $0.1 == expected } } }
        while !saw() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        let notes = received.withLock { $0 }
        #expect(saw())
        #expect(notes.allSatisfy { $0.0?.standardizedFileURL == watcher.url.standardizedFileURL })
        #expect(notes.allSatisfy { $0.1.map { $0 <= expected } ?? false })
        // The token leads to the other coordinator's transaction.
        let transactions = try watcher.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions
        #expect(transactions?.count == 1)

        // Stopping: after removal no more notifications arrive.
        watcher.coordinator.remove(watcher.store)
        let count = received.withLock { $0.count }
        try Support.insertBook(writer.context, title: "Unheard")
        try writer.context.save()
        try await Task.sleep(for: .milliseconds(200))
        #expect(received.withLock { $0.count } == count)
    }
}

enum StoreDumpKeys {
    static func tables(_ url: URL) -> Set<String> {
        Set((try? StoreDump.read(url).tables.keys.map { $0 }) ?? [])
    }
}
