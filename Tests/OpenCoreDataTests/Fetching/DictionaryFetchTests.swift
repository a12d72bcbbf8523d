import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Dictionary and count results, on every store kind, against expectations
/// computed from the seed data.
@Suite("Dictionary fetches")
struct DictionaryFetchTests {
    let seed = FetchSeed()

    @Test("propertiesToFetch: attributes, sorted and filtered", arguments: allStoreTypes)
    func attributes(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        #expect(request.resultType == .dictionary)
        request.propertiesToFetch = ["rating", "creatorID"]
        request.predicate = try CorePredicate(format: "rating >= 2")
        request.sortDescriptors = [CoreSortDescriptor(key: "rating"), CoreSortDescriptor(key: "date", ascending: false)]
        let rows = try stack.context.fetch(request)
        let expected = seed.moods.enumerated().filter { $0.element.rating >= 2 }
            .sorted { ($0.element.rating, -$0.offset) < ($1.element.rating, -$1.offset) }
        #expect(rows.map { $0.int("rating") } == expected.map { $0.element.rating })
        #expect(rows.map { $0["creatorID"] as? String } == expected.map { $0.element.creator })
        // nil values are left out of the dictionary, as Core Data does.
        #expect(rows.allSatisfy { $0.keys.contains("creatorID") == ($0["creatorID"] != nil) })
        #expect(rows.allSatisfy { Set($0.keys).isSubset(of: ["rating", "creatorID"]) })
        #expect(try stack.context.count(for: request) == expected.count)
    }

    @Test("to-one relationships as object IDs, key paths through to-ones", arguments: allStoreTypes)
    func toOneAndKeyPaths(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        request.propertiesToFetch = ["country", "country.numericISO3166Code", .property(stack.model.entitiesByName["Mood"]!.propertiesByName["rating"]!)]
        request.sortDescriptors = [CoreSortDescriptor(key: "date")]
        let rows = try stack.context.fetch(request)
        #expect(rows.count == seed.moods.count)
        for (row, data) in zip(rows, seed.moods) {
            #expect(row["country"] as? ManagedObjectID == data.country.map { objects.countries[$0].objectID })
            #expect(row.int("country.numericISO3166Code") == data.country.map { seed.countryCodes[$0] })
            #expect(row.int("rating") == data.rating)
        }
    }

    @Test("aggregates grouped by a property, with a having predicate", arguments: allStoreTypes)
    func groupedAggregates(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        func aggregate(_ name: String, _ function: String, _ type: AttributeType) -> PropertyToFetch {
            .expression(ExpressionDescription(name: name, expression: .function(function, arguments: [.keyPath("rating")]), resultType: type))
        }
        request.propertiesToFetch = ["creatorID", aggregate("n", "count:", .integer64), aggregate("total", "sum:", .integer64),
                                     aggregate("mean", "average:", .double), aggregate("low", "min:", .integer16),
                                     aggregate("high", "max:", .integer16)]
        request.propertiesToGroupBy = ["creatorID"]
        request.sortDescriptors = [CoreSortDescriptor(key: "creatorID")]
        let rows = try stack.context.fetch(request)
        let groups = Dictionary(grouping: seed.moods, by: \.creator)
        let keys = groups.keys.sorted { ($0 ?? "") < ($1 ?? "") || ($0 == nil && $1 != nil) }
        #expect(rows.map { $0["creatorID"] as? String } == keys)
        for row in rows {
            let members = groups[row["creatorID"] as? String]!.map(\.rating)
            #expect(row.int("n") == members.count)
            #expect(row.int("total") == members.reduce(0, +))
            #expect(abs((row.double("mean") ?? -1) - Double(members.reduce(0, +)) / Double(members.count)) < 1e-9)
            #expect(row.int("low") == members.min())
            #expect(row.int("high") == members.max())
        }
        request.havingPredicate = try CorePredicate(format: "n > 5")
        let having = try stack.context.fetch(request)
        #expect(having.map { $0["creatorID"] as? String } == keys.filter { groups[$0]!.count > 5 })
        #expect(try stack.context.count(for: request) == having.count)
    }

    @Test("aggregates without grouping, arithmetic on aggregates, grouping by a to-one", arguments: allStoreTypes)
    func ungroupedAndArithmetic(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        let sum = CoreExpression.function("sum:", arguments: [.keyPath("rating")])
        let count = CoreExpression.function("count:", arguments: [.keyPath("rating")])
        request.propertiesToFetch = [
            .expression(ExpressionDescription(name: "double", expression: .function("multiply:by:", arguments: [sum, .constant(.int(2))]), resultType: .integer64)),
            .expression(ExpressionDescription(name: "mean", expression: .function("divide:by:", arguments: [sum, count]), resultType: .double)),
        ]
        request.predicate = try CorePredicate(format: "rating > 0")
        let rows = try stack.context.fetch(request)
        let ratings = seed.moods.map(\.rating).filter { $0 > 0 }
        #expect(rows.count == 1)
        #expect(rows.first?.int("double") == 2 * ratings.reduce(0, +))
        #expect(abs((rows.first?.double("mean") ?? 0) - Double(ratings.reduce(0, +)) / Double(ratings.count)) < 1e-9)

        let byCountry = FetchRequest<[String: Any]>(entityName: "Mood")
        byCountry.propertiesToFetch = ["country", .expression(ExpressionDescription(name: "n", expression: count, resultType: .integer64))]
        byCountry.propertiesToGroupBy = ["country"]
        let grouped = try stack.context.fetch(byCountry)
        var expected: [ManagedObjectID?: Int] = [:]
        for mood in seed.moods { expected[mood.country.map { objects.countries[$0].objectID }, default: 0] += 1 }
        #expect(grouped.count == expected.count)
        for row in grouped { #expect(row.int("n") == expected[row["country"] as? ManagedObjectID]) }
        // Groups come in the order of their first row (primary-key order unsorted).
        let unsorted = try stack.context.fetch(FetchRequest<Mood>(entityName: "Mood"))
        var firstSeen: [ManagedObjectID?] = []
        for mood in unsorted {
            let id = (mood.value(forKey: "country") as? ManagedObject)?.objectID
            if !firstSeen.contains(id) { firstSeen.append(id) }
        }
        #expect(grouped.map { $0["country"] as? ManagedObjectID } == firstSeen)
    }

    @Test("distinct results, offset and limit, count result type", arguments: allStoreTypes)
    func distinctAndCount(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        request.propertiesToFetch = ["creatorID"]
        request.returnsDistinctResults = true
        request.sortDescriptors = [CoreSortDescriptor(key: "creatorID", ascending: false)]
        let rows = try stack.context.fetch(request)
        let creators = Set(seed.moods.map(\.creator))
        #expect(rows.count == creators.count)
        #expect(rows.compactMap { $0["creatorID"] as? String } == creators.compactMap { $0 }.sorted(by: >))
        request.fetchOffset = 1
        request.fetchLimit = 2
        #expect(try stack.context.fetch(request).count == 2)
        #expect(try stack.context.count(for: request) == 2)

        let counting = FetchRequest<Int>(entityName: "Mood")
        #expect(counting.resultType == .count)
        counting.predicate = try CorePredicate(format: "rating == 0")
        #expect(try stack.context.fetch(counting) == [seed.moods.filter { $0.rating == 0 }.count])
        // Unsaved changes count for count results, not for dictionaries.
        _ = stack.mood(rating: 0)
        #expect(try stack.context.fetch(counting) == [seed.moods.filter { $0.rating == 0 }.count + 1])
        let dictionaries = FetchRequest<[String: Any]>(entityName: "Mood")
        dictionaries.predicate = counting.predicate
        #expect(try stack.context.fetch(dictionaries).count == seed.moods.filter { $0.rating == 0 }.count)
    }

    @Test("bad dictionary requests throw Core Data errors", arguments: allStoreTypes)
    func errors(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        request.propertiesToFetch = ["tags"]
        #expect(throws: CoreDataError.self) { try stack.context.fetch(request) }
        do { _ = try stack.context.fetch(request) } catch let error as CoreDataError {
            #expect(error.code == .persistentStoreUnsupportedRequestType)
            #expect(error.message.contains("tags"))
        }
        request.propertiesToFetch = ["country.nope"]
        do { _ = try stack.context.fetch(request); Issue.record("no error") } catch let error as CoreDataError {
            #expect(error.code == .coreData)
            #expect(error.message.contains("country.nope"))
        }
        request.propertiesToFetch = ["rating"]
        request.havingPredicate = try CorePredicate(format: "rating > 1")
        #expect(throws: CoreDataError.self) { try stack.context.fetch(request) }
    }
}
