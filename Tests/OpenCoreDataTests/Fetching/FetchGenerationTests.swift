import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Fetch options in a pinned query generation")
struct FetchGenerationTests {
    typealias Support = HistoryTestSupport

    @Test("Dictionaries, ID fetches and batches read the pinned generation")
    func pinned() throws {
        let model = try Support.model()
        let reader = try Support.stack(model, options: [:])
        defer { SQLiteTestSupport.remove(reader.url) }
        let writer = try Support.stack(model, url: reader.url, options: [:])
        _ = try Support.insertBook(writer.context, title: "A", pages: 1)
        _ = try Support.insertBook(writer.context, title: "B", pages: 2)
        try writer.context.save()
        try reader.context.setQueryGenerationFrom(.current)
        let sum = FetchRequest<[String: Any]>(entityName: "Book")
        sum.propertiesToFetch = [.expression(ExpressionDescription(name: "pages", expression: .function("sum:", arguments: [.keyPath("pages")]), resultType: .integer64))]
        #expect(try reader.context.fetch(sum).first?.int("pages") == 3)

        _ = try Support.insertBook(writer.context, title: "C", pages: 10)
        try writer.context.save()
        #expect(try reader.context.fetch(sum).first?.int("pages") == 3)
        #expect(try reader.context.fetch(FetchRequest<ManagedObjectID>(entityName: "Book")).count == 2)
        let batched = FetchRequest<ManagedObject>(entityName: "Book")
        batched.fetchBatchSize = 1
        #expect(try reader.context.fetchInBatches(batched).compactMap { $0.value(forKey: "title") as? String }.sorted() == ["A", "B"])
        try reader.context.setQueryGenerationFrom(.current)
        #expect(try reader.context.fetch(sum).first?.int("pages") == 13)
    }
}

@Suite("Batch requests and persistent history")
struct BatchHistoryTests {
    typealias Support = HistoryTestSupport

    @Test("Batch requests on a tracking store are recorded in the history")
    func recorded() throws {
        let model = try Support.model()
        let stack = try Support.stack(model)
        defer { SQLiteTestSupport.remove(stack.url) }
        let context = stack.context
        _ = try Support.insertBook(context, title: "A", pages: 1)
        _ = try Support.insertBook(context, title: "B", pages: 2)
        try context.save()
        let update = BatchUpdateRequest(entityName: "Book")
        update.propertiesToUpdate = ["pages": try CoreExpression(format: "pages + 1")]
        update.resultType = .objectIDs
        let updated = try #require(try context.execute(update).objectIDs)
        let delete = BatchDeleteRequest(entityName: "Book", predicate: try CorePredicate(format: "title == 'A'"))
        delete.resultType = .objectIDs
        let deleted = try #require(try context.execute(delete).objectIDs)
        let transactions = try #require(try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions)
        #expect(transactions.count == 3)
        #expect(Set(transactions[1].changes?.filter { $0.changeType == .update }.map(\.changedObjectID) ?? []) == Set(updated))
        #expect(transactions[2].changes?.filter { $0.changeType == .delete }.map(\.changedObjectID) == deleted)
        let pages = FetchRequest<[String: Any]>(entityName: "Book")
        pages.propertiesToFetch = ["pages"]
        #expect(try context.fetch(pages).compactMap { $0.int("pages") } == [3])
    }
}
