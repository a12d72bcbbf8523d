import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Query generations")
struct QueryGenerationTests {
    typealias Support = HistoryTestSupport

    @Test("A pinned context does not see another coordinator's saves until it moves to the current generation")
    func pinnedAgainstOtherCoordinator() throws {
        let model = try Support.model()
        let reader = try Support.stack(model, options: [:])
        defer { SQLiteTestSupport.remove(reader.url) }
        let writer = try Support.stack(model, url: reader.url, options: [:])
        try Support.insertBook(writer.context, title: "A", pages: 1)
        try Support.insertBook(writer.context, title: "B", pages: 2)
        try writer.context.save()

        #expect(reader.context.queryGenerationToken == nil)
        try reader.context.setQueryGenerationFrom(.current)
        let before = try Support.fetchAll(reader.context)
        #expect(before.count == 2)
        let token = try #require(reader.context.queryGenerationToken)
        #expect(!token.isCurrent)

        // The writer changes, adds and deletes.
        let written = try Support.fetchAll(writer.context)
        written[0].setValue(100, forKey: "pages")
        writer.context.delete(written[1])
        try Support.insertBook(writer.context, title: "C")
        try writer.context.save()

        // Fetches, counts and faults of the pinned context still see the old state.
        let request = FetchRequest<ManagedObject>(entityName: "Book")
        #expect(try reader.context.count(for: request) == 2)
        #expect(try Support.fetchAll(reader.context).map { $0.value(forKey: "title") as? String } == ["A", "B"])
        let fault = reader.context.object(with: written[0].objectID)
        reader.context.refresh(fault, mergeChanges: false)
        #expect(fault.attributeValue(forKey: "pages") == .int(1))
        #expect(try reader.context.existingObject(with: written[1].objectID).value(forKey: "title") as? String == "B")

        // A context without generations sees the new state at once.
        let plain = ManagedObjectContext(concurrencyType: .mainQueue)
        plain.persistentStoreCoordinator = reader.coordinator
        #expect(try Support.fetchAll(plain).map { $0.value(forKey: "title") as? String } == ["A", "C"])
        // …and the pinned context still does not, though the row cache now has the new row.
        let again = reader.context.object(with: written[0].objectID)
        reader.context.refresh(again, mergeChanges: false)
        #expect(again.attributeValue(forKey: "pages") == .int(1))

        // Moving to the current generation shows everything.
        try reader.context.setQueryGenerationFrom(.current)
        #expect(try reader.context.count(for: request) == 2)
        let now = try Support.fetchAll(reader.context)
        #expect(now.map { $0.value(forKey: "title") as? String } == ["A", "C"])
        reader.context.refresh(now[0], mergeChanges: false)
        #expect(now[0].attributeValue(forKey: "pages") == .int(100))
        #expect(reader.context.queryGenerationToken != token)
    }

    @Test("A token can be shared with another context; nil stops using generations")
    func sharedToken() throws {
        let model = try Support.model()
        let stack = try Support.stack(model, options: [:])
        defer { SQLiteTestSupport.remove(stack.url) }
        try Support.insertBook(stack.context, title: "One")
        try stack.context.save()
        try stack.context.setQueryGenerationFrom(.current)
        let token = try #require(stack.context.queryGenerationToken)

        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.persistentStoreCoordinator = stack.coordinator
        try Support.insertBook(writer, title: "Two")
        try writer.save()

        let second = ManagedObjectContext(concurrencyType: .privateQueue)
        second.persistentStoreCoordinator = stack.coordinator
        try second.setQueryGenerationFrom(token)
        #expect(second.queryGenerationToken == token)
        #expect(try Support.fetchAll(second).count == 1)
        try second.setQueryGenerationFrom(nil)
        #expect(second.queryGenerationToken == nil)
        #expect(try Support.fetchAll(second).count == 2)
    }

    @Test("Saving or resetting moves a pinned context to the newest generation")
    func saveAdvances() throws {
        let model = try Support.model()
        let reader = try Support.stack(model, options: [:])
        defer { SQLiteTestSupport.remove(reader.url) }
        let writer = try Support.stack(model, url: reader.url, options: [:])
        try reader.context.setQueryGenerationFrom(.current)
        #expect(try Support.fetchAll(reader.context).isEmpty)

        try Support.insertBook(writer.context, title: "Theirs")
        try writer.context.save()
        #expect(try Support.fetchAll(reader.context).isEmpty)

        let pinned = reader.context.queryGenerationToken
        try Support.insertBook(reader.context, title: "Mine")
        try reader.context.save()
        #expect(reader.context.queryGenerationToken != pinned)
        #expect(try Support.fetchAll(reader.context).map { $0.value(forKey: "title") as? String } == ["Mine", "Theirs"])

        try Support.insertBook(writer.context, title: "Later")
        try writer.context.save()
        #expect(try Support.fetchAll(reader.context).count == 2)
        reader.context.reset()
        #expect(try Support.fetchAll(reader.context).count == 3)
    }

    @Test("Merging history into a pinned context moves it to the newest generation")
    func mergeAdvances() throws {
        let model = try Support.model()
        let reader = try Support.stack(model)
        defer { SQLiteTestSupport.remove(reader.url) }
        let writer = try Support.stack(model, url: reader.url)
        let book = try Support.insertBook(writer.context, title: "Draft", pages: 1)
        try writer.context.save()

        try reader.context.setQueryGenerationFrom(.current)
        let mine = try #require(try Support.fetchAll(reader.context).first)
        #expect(mine.attributeValue(forKey: "pages") == .int(1))
        let start = try #require(reader.coordinator.currentPersistentHistoryToken(fromStores: nil))

        book.setValue(2, forKey: "pages")
        try Support.insertBook(writer.context, title: "New")
        try writer.context.save()
        #expect(try Support.fetchAll(reader.context).count == 1)

        // The writer's transaction, merged through its object-ID notification.
        let transactions = try #require(try reader.context.execute(PersistentHistoryChangeRequest.fetchHistory(after: start)).transactions)
        #expect(transactions.count == 1)
        for transaction in transactions { reader.context.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
        #expect(mine.attributeValue(forKey: "pages") == .int(2))
        #expect(try Support.fetchAll(reader.context).count == 2)
    }

    @Test("Dictionary results, prefetching and batched fetches read the pinned generation too")
    func otherFetchKinds() throws {
        let model = try Support.model()
        let reader = try Support.stack(model, options: [:])
        defer { SQLiteTestSupport.remove(reader.url) }
        let writer = try Support.stack(model, url: reader.url, options: [:])
        for index in 0..<6 { try Support.insertBook(writer.context, title: "Book \(index)", pages: index) }
        try writer.context.save()

        try reader.context.setQueryGenerationFrom(.current)
        let titles = FetchRequest<[String: Any]>(entityName: "Book")
        titles.propertiesToFetch = ["title"]
        titles.sortDescriptors = [CoreSortDescriptor(key: "title")]
        #expect(try reader.context.fetch(titles).count == 6)

        for book in try Support.fetchAll(writer.context) { book.setValue(100, forKey: "pages") }
        try Support.insertBook(writer.context, title: "Book 6")
        try writer.context.save()

        #expect(try reader.context.fetch(titles).count == 6)
        let batched = FetchRequest<ManagedObject>(entityName: "Book")
        batched.sortDescriptors = [CoreSortDescriptor(key: "title")]
        batched.fetchBatchSize = 2
        let books = try reader.context.fetchInBatches(batched)
        #expect(books.count == 6)
        #expect(books[5].attributeValue(forKey: "pages") == .int(5))
    }

    @Test("The in-memory store refuses query generations (SQLite and PostgreSQL stores support them)")
    func inMemoryRefused() throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Support.model())
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let error = #expect(throws: CoreDataError.self) { try context.setQueryGenerationFrom(.current) }
        #expect(error?.code == .persistentStoreUnsupportedRequestType)
        #expect(context.queryGenerationToken == nil)
        try context.setQueryGenerationFrom(nil)
    }
}
