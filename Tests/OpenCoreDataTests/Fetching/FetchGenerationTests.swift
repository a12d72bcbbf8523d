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
        #expect(try reader.context.fetch(FetchRequest<ObjectID>(entityName: "Book")).count == 2)
        let batched = FetchRequest<ManagedObject>(entityName: "Book")
        batched.fetchBatchSize = 1
        #expect(try reader.context.fetchInBatches(batched).compactMap { $0.value(forKey: "title") as? String }.sorted() == ["A", "B"])
        try reader.context.setQueryGenerationFrom(.current)
        #expect(try reader.context.fetch(sum).first?.int("pages") == 13)
    }
}
