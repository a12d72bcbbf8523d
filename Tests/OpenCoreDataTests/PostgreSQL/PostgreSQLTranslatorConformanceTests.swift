#if PostgreSQLTests
import Foundation
import OpenCoreDataPredicates
import OpenCoreDataPostgreSQL
import Testing
@testable import OpenCoreData

/// The SQLite translator's conformance cases on the PostgreSQL store: the rows of
/// ``TranslatorFixture``, saved into a PostgreSQL store with the fixture's store
/// UUID, must come back from every fetch exactly as the in-memory store gives
/// them (the same objects, in the same order, counted alike).
final class PostgreSQLTranslatorFixture: Sendable {
    let fixture: TranslatorFixture
    let store: PostgreSQLStore

    static let shared: Result<PostgreSQLTranslatorFixture, any Error> = Result { try PostgreSQLTranslatorFixture() }

    private init() throws {
        fixture = try TranslatorFixture.make()
        var options = PostgreSQLTestServer.storeOptions()
        options[PostgreSQLStore.Option.storeUUID] = TranslatorFixture.storeIdentifier
        store = try PostgreSQLStore(url: try PostgreSQLTestServer.url(), model: fixture.model, options: options)
        // Every row of the in-memory store, with its relationships.
        var changes = SaveChanges()
        for entity in fixture.model.entities where entity.superentity == nil {
            var fetch = StoreFetch(entity: entity)
            fetch.includesSubentities = true
            changes.inserted += try fixture.memory.fetchRows(fetch)
        }
        try store.save(changes)
        try store.reserveObjectIDs(changes.inserted.map(\.objectID))
    }

    func keys(_ fetch: StoreFetch) throws -> [Int64] {
        try store.fetchRows(fetch).map { $0.objectID.primaryKey ?? 0 }
    }
}

@Suite(.enabled(if: PostgreSQLTestServer.isAvailable))
struct PostgreSQLTranslatorConformanceTests {
    private func check(_ testCase: TranslatorCase, sort: [CoreSortDescriptor] = []) throws {
        let postgres = try PostgreSQLTranslatorFixture.shared.get()
        let fixture = postgres.fixture
        let predicate = try CorePredicate(format: testCase.format, arguments: testCase.arguments)
        let fetch = fixture.fetch(testCase.entity, predicate, sort: sort, includesSubentities: testCase.includesSubentities)
        let expected = try fixture.memoryKeys(fetch)
        let actual = try postgres.keys(fetch)
        #expect(actual == expected, "\(testCase.format): PostgreSQL \(actual), in memory \(expected)")
        #expect(try postgres.store.count(fetch) == expected.count, "\(testCase.format)")
    }

    @Test("Strings: case, accents, normalization, LIKE, MATCHES, IN", arguments: stringCases)
    func strings(_ testCase: TranslatorCase) throws {
        try check(testCase)
    }

    @Test("Numbers, Booleans, decimals, dates, UUIDs, URIs, data, arithmetic, compounds", arguments: numberCases)
    func numbers(_ testCase: TranslatorCase) throws {
        try check(testCase)
    }

    @Test("To-one paths, object IDs, ANY/ALL/NONE, @count, aggregates, SUBQUERY, entities", arguments: relationshipCases)
    func relationships(_ testCase: TranslatorCase) throws {
        try check(testCase)
    }

    @Test("Sort descriptors give the in-memory order", arguments: 0..<TranslatorConformanceTests.sorts.count)
    func sorting(_ index: Int) throws {
        let postgres = try PostgreSQLTranslatorFixture.shared.get()
        let (label, descriptors) = TranslatorConformanceTests.sorts[index]
        let fetch = postgres.fixture.fetch("Country", sort: descriptors)
        let actual = try postgres.keys(fetch), expected = try postgres.fixture.memoryKeys(fetch)
        #expect(actual == expected, "\(label): PostgreSQL \(actual), in memory \(expected)")
    }

    @Test("Offset and limit, with and without sort; object ID fetches")
    func offsetAndLimit() throws {
        let postgres = try PostgreSQLTranslatorFixture.shared.get()
        let fixture = postgres.fixture
        let predicate = try CorePredicate(format: "population > 3")
        for (offset, limit) in [(0, 3), (2, 0), (2, 4), (20, 5), (0, 0)] {
            for sort in [[], [CoreSortDescriptor(key: "name", selector: .caseInsensitiveCompare)]] {
                var fetch = fixture.fetch("Country", predicate, sort: sort, offset: offset, limit: limit)
                let expected = try fixture.memoryKeys(fetch)
                #expect(try postgres.keys(fetch) == expected, "offset \(offset) limit \(limit)")
                #expect(try postgres.store.count(fetch) == (try fixture.memory.count(fetch)))
                fetch.includesPropertyValues = false
                #expect(try postgres.keys(fetch) == expected, "IDs, offset \(offset) limit \(limit)")
            }
        }
    }

    @Test("Rows read back with the values and relationships they were saved with")
    func rowsRoundTrip() throws {
        let postgres = try PostgreSQLTranslatorFixture.shared.get()
        let fixture = postgres.fixture
        for entity in fixture.model.entities where entity.superentity == nil {
            var fetch = StoreFetch(entity: entity)
            fetch.includesSubentities = true
            fetch.sortDescriptors = []
            let memory = try fixture.memory.fetchRows(fetch).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
            let stored = try postgres.store.fetchRows(fetch).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
            #expect(stored.map(\.objectID) == memory.map(\.objectID), "\(entity.name)")
            for (row, expected) in zip(stored, memory) {
                for (index, property) in row.objectID.entity.allProperties.enumerated() {
                    if let relationship = property as? RelationshipDescription, relationship.isToMany {
                        let ids = try postgres.store.relatedObjectIDs(of: row.objectID, relationship: relationship)
                        guard case .toMany(let expectedIDs?) = expected.values[index] else { continue }
                        if relationship.isOrdered {
                            #expect(ids == expectedIDs, "\(entity.name).\(property.name)")
                        } else {
                            #expect(Set(ids) == Set(expectedIDs), "\(entity.name).\(property.name)")
                        }
                    } else if let attribute = property as? AttributeDescription, case .attribute(let value) = expected.values[index] {
                        // The value as its attribute's type stores it (an integer given for a double...).
                        let type = attribute.attributeType
                        let stored = SQLiteValueEncoding.databaseValue(value, as: type).map { SQLiteValueEncoding.attributeValue($0, as: type) }
                        #expect(row.values[index] == .attribute(stored ?? value), "\(row.objectID.entity.name).\(property.name)")
                    } else {
                        #expect(row.values[index] == expected.values[index], "\(row.objectID.entity.name).\(property.name)")
                    }
                }
            }
        }
    }
}
#endif
