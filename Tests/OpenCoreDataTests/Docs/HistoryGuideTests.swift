import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

// The examples of Sources/OpenCoreData/OpenCoreData.docc/HistoryAndGenerations.md,
// run as written.
@Suite("Guide: persistent history and query generations")
struct HistoryGuideTests {
    @Test("Processing other writers' history after a saved token, then deleting it")
    func historyExample() throws {
        let model = try HistoryTestSupport.model()
        let storeURL = try Fixtures.temporaryDirectory().appendingPathComponent("Guide.sqlite")
        defer { SQLiteTestSupport.remove(storeURL) }
        let options = [NSPersistentHistoryTrackingKey: "1",
                       NSPersistentStoreRemoteChangeNotificationPostOptionKey: "1"]
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: storeURL, options: options)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        // Another writer (say an extension) on the same file.
        let other = PersistentStoreCoordinator(managedObjectModel: model)
        try other.addPersistentStore(type: .sqlite, at: storeURL, options: [NSPersistentHistoryTrackingKey: "1"])
        let extensionContext = ManagedObjectContext(concurrencyType: .privateQueue)
        extensionContext.persistentStoreCoordinator = other
        extensionContext.transactionAuthor = "extension"

        var lastToken: PersistentHistoryToken? = nil
        context.name = "main"
        context.transactionAuthor = "app"
        try HistoryTestSupport.insertBook(context, title: "Ours")
        try context.save()
        try HistoryTestSupport.insertBook(extensionContext, title: "Theirs")
        try extensionContext.save()

        var seen: [String] = []
        let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken))
        for transaction in result.transactions ?? [] where transaction.author != "app" {
            for change in transaction.changes ?? [] {
                seen.append("\(change.changeType) \(change.changedObjectID.entityName)")
            }
            lastToken = transaction.token
        }
        #expect(seen == ["insert Book"])
        let data = try JSONEncoder().encode(lastToken)
        lastToken = try JSONDecoder().decode(PersistentHistoryToken?.self, from: data)
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: lastToken))
        #expect(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken)).transactions?.isEmpty == true)
    }

    @Test("A context pinned to a generation, shared and moved on")
    func generationExample() throws {
        let model = try HistoryTestSupport.model()
        let stack = try HistoryTestSupport.stack(model, options: [:])
        defer { SQLiteTestSupport.remove(stack.url) }
        let context = stack.context
        let request = FetchRequest<ManagedObject>(entityName: "Book")
        try context.setQueryGenerationFrom(.current)
        let books = try context.fetch(request)
        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.persistentStoreCoordinator = stack.coordinator
        try HistoryTestSupport.insertBook(writer, title: "Meanwhile")
        try writer.save()
        #expect(try context.count(for: request) == books.count)
        let token = context.queryGenerationToken
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = stack.coordinator
        try reader.setQueryGenerationFrom(token)
        #expect(try reader.count(for: request) == books.count)
        try context.setQueryGenerationFrom(.current)
        #expect(try context.count(for: request) == books.count + 1)
        try context.setQueryGenerationFrom(nil)
        #expect(context.queryGenerationToken == nil)
    }
}
