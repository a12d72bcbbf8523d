import Foundation
import Testing
import OpenCoreData
import OpenCoreDataPredicates

@Suite("Typed key paths, sort descriptors and the key-path forms of requests")
struct TypedKeyPathTests {
    @Test func keyPathsNameModelProperties() throws {
        #expect(TQMood.predicateKey(for: \TQMood.name) == "name")
        #expect(TQMood.predicateKey(for: \TQMood.country) == "country")
        #expect(TQMood.predicateKey(for: \TQMood.objectID) == "objectID")
        #expect(try TQMood.key(for: \.tags) == "tags")
        // Inherited properties, rooted at the subclass, with and without @ManagedEntity.
        #expect(TQDerived.predicateKey(for: \TQDerived.title) == "title")
        #expect(TQDerived.predicateKey(for: \TQDerived.extra) == "extra")
        #expect(TQPlainDerived.predicateKey(for: \TQPlainDerived.title) == "title")
        #expect(TQPlainDerived.predicateKey(for: \TQPlainDerived.extra) == "extra")
        #expect(TQBase.predicateKey(for: \TQBase.title) == "title")
        // A renamed key.
        #expect(TypedSample.predicateKey(for: \TypedSample.alias) == "renamed")
    }

    @Test func aComputedPropertyIsAClearError() throws {
        #expect(TQDerived.predicateKey(for: \TQDerived.computed) == nil)
        do {
            _ = try CorePredicate(#Predicate<TQDerived> { $0.computed > 3 })
            Issue.record("expected an error")
        } catch let error as TypedPredicateError {
            guard case .unknownKeyPath = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(error.description.contains("names no modeled property"))
        }
        #expect(throws: TypedPredicateError.self) { try TQDerived.key(for: \.computed) }
    }

    @Test func unsupportedExpressionsNameTheirType() throws {
        do {
            _ = try CorePredicate(#Predicate<TQMood> { $0.name.contains(/S.n/) })
            Issue.record("expected an error")
        } catch let error as TypedPredicateError {
            #expect(error.description.contains("StringContainsRegex"), "\(error)")
        }
    }

    @Test func aStringsCountIsAnError() throws {
        // Swift counts characters; Core Data's length: counts UTF-16 units.
        #expect(throws: TypedPredicateError.self) { try CorePredicate(#Predicate<TQMood> { $0.name.count > 3 }) }
    }

    @Test func predicateFormatPrintsTheCoreDataEquivalent() throws {
        let p = try CorePredicate(#Predicate<TQMood> { $0.rating > 3 && $0.name.contains("a") })
        #expect(p.predicateFormat == #"rating > 3 AND name CONTAINS "a""#)
        let q = try CorePredicate(#Predicate<TQMood> { $0.country?.name == "France" || $0.tags.isEmpty })
        #expect(q.predicateFormat == #"country.name == "France" OR tags.@count == 0"#)
        let r = try CorePredicate(#Predicate<TQMood> { $0.tags.contains { $0.label == "w" } })
        #expect(r.predicateFormat == #"SUBQUERY(tags, $x, $x.label == "w").@count > 0"#)
    }

    @Test func sortDescriptors() throws {
        let byDate = try CoreSortDescriptor(SortDescriptor(\TQMood.date, order: .reverse))
        #expect(byDate.key == "date")
        #expect(byDate.ascending == false)
        #expect(byDate.selector == .compare)
        let byName = try CoreSortDescriptor(SortDescriptor(\TQMood.name, comparator: .lexical))
        #expect(byName.key == "name" && byName.ascending && byName.selector == .compare)
        #expect(throws: TypedPredicateError.self) { try CoreSortDescriptor(SortDescriptor(\TQDerived.computed)) }
    }

    @Test func requestsTakeKeyPaths() throws {
        let context = try TypedDataSet.populatedContext("typed-kp").context

        let request = try FetchRequest<TQMood>(predicate: #Predicate { $0.rating >= 3 },
                                               sortBy: [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)])
        try request.setRelationshipKeyPathsForPrefetching([\.country, \.tags])
        #expect(request.relationshipKeyPathsForPrefetching == ["country", "tags"])
        #expect(try context.fetch(request).map(\.name) == ["Sunny", "Calm", "Snowy", "Foggy", "Windy"])

        // The data access helpers.
        #expect(try TQMood.all(in: context, where: #Predicate { $0.isFavorite }, sortedBy: [SortDescriptor(\.name)])
            .map(\.name) == ["Foggy", "Stormy", "Sunny"])
        #expect(try TQMood.first(in: context, sortedBy: [SortDescriptor(\.date)])?.name == "Foggy")
        #expect(try TQMood.first(in: context, where: #Predicate { $0.rating == 4 }, sortedBy: [SortDescriptor(\.name)])?.name == "Calm")
        #expect(try TQMood.count(in: context, where: #Predicate { $0.note == nil }) == 2)

        // Dictionary results: properties to fetch and group by.
        let grouped = FetchRequest<[String: Any]>(entityName: "TQMood")
        try grouped.setPropertiesToFetch([\TQMood.rating])
        try grouped.setPropertiesToGroupBy([\TQMood.rating])
        grouped.sortDescriptors = [try CoreSortDescriptor(SortDescriptor(\TQMood.rating))]
        #expect(try context.fetch(grouped).compactMap { ($0["rating"] as? NSNumber)?.intValue ?? ($0["rating"] as? Int) }
            == [1, 2, 3, 4, 5])

        // A fetched results controller sectioned by a key path.
        let controller = try FetchedResultsController(
            fetchRequest: try FetchRequest<TQMood>(sortBy: [SortDescriptor(\.rating), SortDescriptor(\.name)]),
            managedObjectContext: context, sectionNameKeyPath: \.rating, cacheName: nil)
        #expect(controller.sectionNameKeyPath == "rating")
        try controller.performFetch()
        #expect(controller.sections?.count == 5)

        // Batch update and delete.
        let update = try BatchUpdateRequest(predicate: #Predicate<TQMood> { $0.rating < 2 }, propertiesToUpdate: [\TQMood.rating: 2])
        update.resultType = .count
        #expect(try context.execute(update).count == 1)
        let delete = try BatchDeleteRequest(predicate: #Predicate<TQMood> { $0.rating == 2 })
        delete.resultType = .count
        #expect(try context.execute(delete).count == 3)
        context.reset()
        #expect(try TQMood.count(in: context, where: #Predicate { $0.rating <= 2 }) == 0)
        #expect(try TQMood.removeAll(in: context, where: #Predicate { $0.name.starts(with: "S") }) == 2)
    }
}

/// Predicates.md, "Typed queries": the article's example as written (its `Mood`,
/// `Country` and `Tag` are `TQMood`, `TQCountry` and `TQTag` here: class names are
/// unique in the test process).
@Suite struct TypedQueriesArticleTests {
    @Test("Predicates.md, Typed queries: a request, the helpers, the key-path options")
    func typedQueriesSection() throws {
        let context = try TypedDataSet.populatedContext("typed-doc").context

        let cutoff = Date(timeIntervalSinceReferenceDate: 500_000_000)
        let request = try FetchRequest<TQMood>(
            predicate: #Predicate { $0.rating > 3 && $0.date > cutoff && $0.country?.name == "France" },
            sortBy: [SortDescriptor(\.date, order: .reverse)])
        let format = request.predicate!.predicateFormat
        #expect(format.hasPrefix("rating > 3 AND date > CAST("), "\(format)")
        #expect(format.hasSuffix(#"AND country.name == "France""#), "\(format)")
        let moods = try context.fetch(request)
        #expect(moods.map(\.name) == ["Sunny", "Calm"])

        let tagged = try TQMood.all(in: context, where: #Predicate { $0.tags.contains { $0.label == "work" } })
        #expect(tagged.count == 3)
        let latest = try TQMood.first(in: context, sortedBy: [SortDescriptor(\.date, order: .reverse)])
        #expect(latest?.name == "Stormy")
        try request.setRelationshipKeyPathsForPrefetching([\.country])
        #expect(request.relationshipKeyPathsForPrefetching == ["country"])
    }
}

/// Typed faces of the Moody app's entities, for typed predicates over its real
/// stores (no object of these classes is made: the stores' models name other
/// classes).
@ManagedEntity("Mood")
final class FixtureMood: ManagedObject {
    @Managed var date: Date
    @Managed(inverse: "moods") var country: FixtureCountry?
}

@ManagedEntity("Country")
final class FixtureCountry: ManagedObject {
    @Managed var numericISO3166Code: Int16
    @Managed(inverse: "country") var moods: Set<FixtureMood>
}

@Suite struct TypedQueriesOnRealStoresTests {
    /// Every Moody store Core Data wrote (five model versions): a typed predicate
    /// and a typed sort give what their format-string equivalents give.
    @Test(arguments: ["Moody.moody", "Moody 2.moody", "Moody 3.moody", "Moody 4.moody", "Moody 5.moody"])
    func moodyStores(_ name: String) throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/" + name)
        let model = try SQLiteStore.storedModel(at: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.readOnly: "1"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            func fetch(_ predicate: CorePredicate?, _ sort: [CoreSortDescriptor]) throws -> [ManagedObjectID] {
                let request = FetchRequest<ManagedObject>(entityName: "Mood")
                request.predicate = predicate
                request.sortDescriptors = sort
                return try context.fetch(request).map(\.objectID)
            }
            let typedSort = [try CoreSortDescriptor(SortDescriptor(\FixtureMood.date, order: .reverse))]
            let formatSort = [CoreSortDescriptor(key: "date", ascending: false)]
            let all = try fetch(nil, formatSort)
            #expect(!all.isEmpty, "\(name)")
            #expect(try fetch(nil, typedSort) == all)
            let south = try fetch(try CorePredicate(#Predicate<FixtureMood> { $0.country?.numericISO3166Code == 710 }), typedSort)
            #expect(south == (try fetch(try CorePredicate(format: "country.numericISO3166Code == 710"), formatSort)))
            let cutoff = Date(timeIntervalSinceReferenceDate: 0)
            let recent = try fetch(try CorePredicate(#Predicate<FixtureMood> { $0.date > cutoff && $0.country != nil }), typedSort)
            #expect(recent == (try fetch(try CorePredicate(format: "date > %@ AND country != nil", cutoff), formatSort)))
            let crowded = FetchRequest<ManagedObject>(entityName: "Country")
            crowded.predicate = try CorePredicate(#Predicate<FixtureCountry> { $0.moods.count >= 1 })
            let viaFormat = FetchRequest<ManagedObject>(entityName: "Country")
            viaFormat.predicate = try CorePredicate(format: "moods.@count >= 1")
            #expect(try context.fetch(crowded).map(\.objectID).sorted { $0.uriString < $1.uriString }
                == context.fetch(viaFormat).map(\.objectID).sorted { $0.uriString < $1.uriString })
        }
    }
}
