#if PostgreSQLTests
import Foundation
import OpenCoreDataPredicates
@testable import OpenCoreDataPostgreSQL
import Testing
@testable import OpenCoreData

/// Persistent history on PostgreSQL: the same requests, results and tokens as on
/// SQLite, recorded in the save's transaction, and the history token of other
/// servers' saves in the remote-change notification.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable))
struct PostgreSQLHistoryTests {
    typealias Support = HistoryTestSupport

    static func coordinator(_ model: ManagedObjectModel, schema: String) throws -> (PersistentStoreCoordinator, PostgreSQLStore) {
        try PostgreSQLStoreTests.coordinator(model, schema: schema, options: [NSPersistentHistoryTrackingKey: "1"])
    }

    static func context(_ coordinator: PersistentStoreCoordinator) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    @Test("Saves record transactions with author, context name, changed properties and tombstones")
    func recordsSaves() throws {
        let model = try Support.model()
        let (coordinator, store) = try Self.coordinator(model, schema: PostgreSQLStoreTests.newSchema())
        #expect(store.isTrackingHistory)
        let context = Self.context(coordinator)
        try context.performAndWait {
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

            let transactions = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions)
            #expect(transactions.map(\.author) == ["app", "importer", nil])
            #expect(transactions.map(\.transactionNumber) == [1, 2, 3])
            #expect(transactions.allSatisfy { $0.contextName == "editor" && $0.storeID == store.identifier })
            #expect(transactions.allSatisfy { $0.processID == ProcessInfo.processInfo.processName })
            #expect(abs(transactions[0].timestamp.timeIntervalSinceNow) < 600)
            #expect(transactions[0].changes?.map(\.changeType) == [.insert, .insert])
            let update = try #require(transactions[1].changes?.first)
            #expect(update.changeType == .update && update.changedObjectID == first.objectID)
            #expect(update.updatedProperties?.map(\.name) == ["title"])
            let delete = try #require(transactions[2].changes?.first)
            #expect(delete.changeType == .delete && delete.changedObjectID == first.objectID)
            #expect(delete.tombstone == ["title": .string("Dune Messiah"), "isbn": .string("0441013597")])
            #expect(coordinator.currentPersistentHistoryToken(fromStores: nil) == transactions[2].token)
        }
    }

    @Test("Fetching and deleting by token, transaction and date; expired tokens; batch requests recorded")
    func boundaries() throws {
        let model = try Support.model()
        let (coordinator, _) = try Self.coordinator(model, schema: PostgreSQLStoreTests.newSchema())
        let context = Self.context(coordinator)
        try context.performAndWait {
            for index in 0..<5 {
                try Support.insertBook(context, title: "Book \(index)", isbn: "isbn-\(index)", pages: index)
                try context.save()
            }
            let all = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions)
            #expect(all.count == 5)
            #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[1].token)).transactions?.map(\.transactionNumber) == [3, 4, 5])
            #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[3])).transactions?.map(\.transactionNumber) == [5])
            #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[0].timestamp.addingTimeInterval(-1))).transactions?.count == 5)
            var request = PersistentHistoryChangeRequest.fetchHistory(after: all[0].token)
            request.resultType = .count
            #expect(try context.execute(request).count == 4)

            var delete = PersistentHistoryChangeRequest.deleteHistory(before: all[1].token)
            delete.resultType = .count
            #expect(try context.execute(delete).count == 2)
            #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[1].token)).transactions?.count == 3)
            let error = #expect(throws: CoreDataError.self) {
                try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: all[0].token))
            }
            #expect(error?.code == .persistentHistoryTokenExpired)

            // A batch delete is recorded like a save, as the executing context, with
            // tombstones (history on: it runs over rows).
            let start = try #require(coordinator.currentPersistentHistoryToken(fromStores: nil))
            context.transactionAuthor = "cleanup"
            try context.execute(BatchDeleteRequest(entityName: "Book", predicate: try CorePredicate(format: "pages < 2")))
            let batch = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: start)).transactions)
            #expect(batch.count == 1 && batch.first?.author == "cleanup")
            #expect(Set(batch.first?.changes?.compactMap { $0.tombstone?["isbn"] } ?? []) == [.string("isbn-0"), .string("isbn-1")])
        }
    }

    @Test("Another server's save arrives with its history token; its transaction is in the shared history")
    func remoteSaveCarriesToken() throws {
        let model = try Support.model()
        let schema = PostgreSQLStoreTests.newSchema()
        let (writer, _) = try Self.coordinator(model, schema: schema)
        let (reader, readerStore) = try Self.coordinator(model, schema: schema)
        let tokens = Lock<[PersistentHistoryToken]>([])
        let observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: reader, queue: nil) { note in
            if let token = note.userInfo?[PersistentStoreRemoteChangeKey.historyToken] as? PersistentHistoryToken {
                tokens.withLock { $0.append(token) }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let before = try #require(reader.currentPersistentHistoryToken(fromStores: nil))
        let writing = Self.context(writer)
        try writing.performAndWait {
            writing.transactionAuthor = "server-a"
            try Support.insertBook(writing, title: "Remote")
            try writing.save()
        }
        #expect(PostgreSQLStoreTests.wait(upTo: 60) { !tokens.withLock { $0.isEmpty } })
        let token = try #require(tokens.withLock { $0.first })
        #expect(token.transactionNumber(forStore: readerStore.identifier) == (before.transactionNumber(forStore: readerStore.identifier) ?? 0) + 1)
        let reading = Self.context(reader)
        let transactions = try reading.performAndWait {
            try #require(try reading.execute(PersistentHistoryChangeRequest.fetchHistory(after: before)).transactions)
        }
        #expect(transactions.map(\.author) == ["server-a"])
        #expect(transactions.first?.token == token)
        #expect(transactions.first?.changes?.map(\.changeType) == [.insert])
    }

    @Test("A context pinned to a query generation reads one snapshot while other servers save; moving on sees their saves")
    func queryGenerations() throws {
        let model = try PostgreSQLStoreTests.model()
        let schema = PostgreSQLStoreTests.newSchema()
        let (writer, _) = try PostgreSQLStoreTests.coordinator(model, schema: schema)
        let (reader, _) = try PostgreSQLStoreTests.coordinator(model, schema: schema)
        let writing = Self.context(writer)
        func insert(_ count: Int, value: Int64) throws {
            try writing.performAndWait {
                for _ in 0..<count {
                    let counter = ManagedObject(entity: model.entitiesByName["Counter"]!, insertInto: writing)
                    counter.setValue("c", forKey: "name")
                    counter.setValue(value, forKey: "value")
                }
                try writing.save()
            }
        }
        try insert(3, value: 1)
        let pinned = Self.context(reader)
        let request = FetchRequest<ManagedObject>(entityName: "Counter")
        let sum = FetchRequest<[String: Any]>(entityName: "Counter")
        sum.propertiesToFetch = [.expression(ExpressionDescription(name: "total", expression: .function("sum:", arguments: [.keyPath("value")]),
                                                                   resultType: .integer64))]
        // A grouping PostgreSQL refuses (a sort on a value neither grouped nor
        // aggregated) is computed in memory: over the generation's rows too.
        let values = FetchRequest<[String: Any]>(entityName: "Counter")
        values.propertiesToFetch = ["value"]
        values.propertiesToGroupBy = ["value"]
        values.sortDescriptors = [CoreSortDescriptor(key: "name", ascending: true)]
        let token = try pinned.performAndWait { () -> QueryGenerationToken? in
            try pinned.setQueryGenerationFrom(.current)
            #expect(try pinned.count(for: request) == 3)
            return pinned.queryGenerationToken
        }
        #expect(token?.isCurrent == false)
        try insert(2, value: 10)
        try pinned.performAndWait { () throws -> Void in
            #expect(try pinned.count(for: request) == 3)
            #expect(try pinned.fetch(request).count == 3)
            #expect((try pinned.fetch(sum).first?["total"] as? Int) == 3)
            #expect(try pinned.fetch(values).compactMap { $0["value"] as? Int } == [1])
        }
        // Another context given the token reads the same generation.
        let sharing = Self.context(reader)
        try sharing.performAndWait { () throws -> Void in
            try sharing.setQueryGenerationFrom(token)
            #expect(try sharing.count(for: request) == 3)
        }
        // Moving to the current generation sees the other server's saves.
        try pinned.performAndWait { () throws -> Void in
            try pinned.setQueryGenerationFrom(.current)
            #expect(try pinned.count(for: request) == 5)
            #expect((try pinned.fetch(sum).first?["total"] as? Int) == 23)
            #expect(Set(try pinned.fetch(values).compactMap { $0["value"] as? Int }) == [1, 10])
            try pinned.setQueryGenerationFrom(nil)
            #expect(try pinned.count(for: request) == 5)
        }
    }
}
#endif
