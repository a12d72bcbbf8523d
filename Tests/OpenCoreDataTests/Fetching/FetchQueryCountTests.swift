import Foundation
import Synchronization
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// A store that forwards to an in-memory store and counts the requests it gets:
/// shows how many queries an option costs, and that custom stores get dictionary
/// fetches and batch requests for free.
final class CountingStore: PersistentStore {
    let base: InMemoryStore
    private let counts = Lock([String: Int]())

    init(model: ManagedObjectModel) { base = InMemoryStore(model: model) }

    func count(of kind: String) -> Int { counts.withLock { $0[kind] ?? 0 } }
    func resetCounts() { counts.withLock { $0 = [:] } }
    private func note(_ kind: String) { counts.withLock { $0[kind, default: 0] += 1 } }

    var identifier: String { base.identifier }
    var type: PersistentStoreType { PersistentStoreType(rawValue: "Counting") }
    var url: URL? { nil }
    var configurationName: String? { nil }
    var isReadOnly: Bool { false }
    var metadata: [String: AttributeValue] { base.metadata }
    func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] { note("fetch"); return try base.fetchRows(fetch) }
    func count(_ fetch: StoreFetch) throws -> Int { note("count"); return try base.count(fetch) }
    func row(for objectID: ManagedObjectID) throws -> RowSnapshot? { note("row"); return try base.row(for: objectID) }
    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        note("related"); return try base.relatedObjectIDs(of: objectID, relationship: relationship)
    }
    func newObjectIDs(for entity: EntityDescription, count: Int) throws -> [ManagedObjectID] { try base.newObjectIDs(for: entity, count: count) }
    func save(_ changes: SaveChanges) throws { note("save"); try base.save(changes) }
}

@Suite("Queries per fetch option")
struct FetchQueryCountTests {
    let seed = FetchSeed()

    func stack() throws -> (TestStack, CountingStore) {
        let stack = try TestStack()
        let store = CountingStore(model: stack.model)
        stack.coordinator.remove(stack.coordinator.persistentStores[0])
        stack.coordinator.add(store)
        try seed.insert(into: stack)
        stack.context.reset()
        store.resetCounts()
        return (stack, store)
    }

    @Test("prefetching costs one query per relationship of each key path")
    func prefetching() throws {
        let (stack, store) = try stack()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.relationshipKeyPathsForPrefetching = ["country.continent"]
        let moods = try stack.context.fetch(request)
        #expect(store.count(of: "fetch") == 3)   // moods, their countries, the continents
        for mood in moods {
            let country = mood.value(forKey: "country") as? ManagedObject
            _ = country?.value(forKey: "numericISO3166Code")
            _ = (country?.value(forKey: "continent") as? ManagedObject)?.value(forKey: "numericISO3166Code")
        }
        #expect(store.count(of: "fetch") == 3)
        #expect(store.count(of: "row") == 0)

        stack.context.reset()
        store.resetCounts()
        let countries = FetchRequest<ManagedObject>(entityName: "Country")
        countries.relationshipKeyPathsForPrefetching = ["moods"]
        for country in try stack.context.fetch(countries) {
            for mood in (country.value(forKey: "moods") as? Set<ManagedObject>) ?? [] { _ = mood.value(forKey: "rating") }
        }
        #expect(store.count(of: "fetch") == 2)
        #expect(store.count(of: "related") == 0)
        #expect(store.count(of: "row") == 0)
    }

    @Test("fetchInBatches: one query for the IDs, one per batch touched")
    func batches() throws {
        let (stack, store) = try stack()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.fetchBatchSize = 10
        let moods = try stack.context.fetchInBatches(request)
        #expect(store.count(of: "fetch") == 1)
        for mood in moods { _ = mood.value(forKey: "rating") }
        #expect(store.count(of: "fetch") == 1 + (seed.moods.count + 9) / 10)
        #expect(store.count(of: "row") == 0)
    }

    @Test("a custom store gets dictionaries and batch requests from its rows")
    func customStore() throws {
        let (stack, store) = try stack()
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        request.propertiesToFetch = [.expression(ExpressionDescription(name: "total", expression: .function("sum:", arguments: [.keyPath("rating")])))]
        #expect(try stack.context.fetch(request).first?.int("total") == seed.moods.map(\.rating).reduce(0, +))
        let update = BatchUpdateRequest(entityName: "Mood")
        update.propertiesToUpdate = ["rating": 1]
        update.resultType = .count
        #expect(try stack.context.execute(update).count == seed.moods.count)
        #expect(store.count(of: "save") == 1)
        #expect(try stack.context.fetch(request).first?.int("total") == seed.moods.count)
    }
}
