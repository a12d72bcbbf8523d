import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Fetch request options for objects, on every store kind.
@Suite("Fetch request options")
struct FetchOptionTests {
    let seed = FetchSeed()

    @Test("fetchBatchSize: a lazy collection loading a batch at a time", arguments: allStoreTypes)
    func batches(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        stack.context.reset()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
        request.fetchBatchSize = 5
        let moods = try stack.context.fetchInBatches(request)
        #expect(moods.count == seed.moods.count)
        #expect(moods.loadedBatchCount == 0)
        #expect(moods[0].value(forKey: "rating") as? Int == seed.moods.last?.rating)
        #expect(moods.loadedBatchCount == 1)
        #expect(!moods[4].isFault)
        #expect(moods.loadedBatchCount == 1)
        // Reading on into the next batch: one batch, or two where the store reads
        // ahead (PostgreSQL: the read doubles).
        let readsAhead = (stack.coordinator.persistentStores.first?.batchReadAheadRows ?? 0) > 0
        _ = moods[7]
        #expect(moods.loadedBatchCount == (readsAhead ? 3 : 2))
        #expect(moods.map { $0.value(forKey: "rating") as? Int } == seed.moods.reversed().map(\.rating))
        #expect(moods.loadedBatchCount == 5)
        // The same objects as a plain fetch, unsaved changes included.
        stack.context.delete(moods[0])
        let inserted = stack.mood(rating: 1)
        inserted.setValue(Date(timeIntervalSinceReferenceDate: 1e9), forKey: "date")
        let again = try stack.context.fetchInBatches(request)
        #expect(again.count == seed.moods.count)
        #expect(again[0] === inserted)
        #expect(Array(again.map(\.objectID)) == (try stack.context.fetch(request)).map(\.objectID))
    }

    @Test("includesPropertyValues false: faults with values on first access", arguments: allStoreTypes)
    func propertyValues(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        stack.context.reset()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.includesPropertyValues = false
        request.returnsObjectsAsFaults = false
        request.sortDescriptors = [CoreSortDescriptor(key: "date")]
        let moods = try stack.context.fetch(request)
        #expect(moods.allSatisfy { $0.isFault })
        #expect(moods.map { $0.value(forKey: "rating") as? Int } == seed.moods.map(\.rating))
        request.includesPropertyValues = true
        stack.context.reset()
        #expect(try stack.context.fetch(request).allSatisfy { !$0.isFault })
    }

    @Test("shouldRefreshRefetchedObjects", arguments: allStoreTypes)
    func refreshRefetched(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let mood = objects.moods[0]
        let other = stack.newContext()
        let copy = try other.existingObject(with: mood.objectID)
        copy.setValue(5, forKey: "rating")
        try other.save()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "SELF == %@", mood.objectID)
        #expect(try stack.context.fetch(request).first?.value(forKey: "rating") as? Int == seed.moods[0].rating)
        mood.setValue("ann", forKey: "creatorID")
        request.shouldRefreshRefetchedObjects = true
        let refreshed = try stack.context.fetch(request)
        #expect(refreshed.first === mood)
        #expect(mood.value(forKey: "rating") as? Int == 5)
        #expect(mood.value(forKey: "creatorID") as? String == "ann")   // unsaved change kept
        try stack.context.save()   // no conflict: the object is at the stored version
    }

    @Test("relationshipKeyPathsForPrefetching: to-one, nested, to-many", arguments: allStoreTypes)
    func prefetching(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        stack.context.reset()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.sortDescriptors = [CoreSortDescriptor(key: "date")]
        request.relationshipKeyPathsForPrefetching = ["country.continent", "tags"]
        let moods = try stack.context.fetch(request)
        for (mood, data) in zip(moods, seed.moods) {
            let country = mood.value(forKey: "country") as? ManagedObject
            #expect((country?.value(forKey: "numericISO3166Code") as? Int) == data.country.map { seed.countryCodes[$0] })
            if let country {
                let registered = stack.context.registeredObject(for: country.objectID)
                #expect(registered?.isFault == false)
                if let continent = country.value(forKey: "continent") as? ManagedObject {
                    #expect(stack.context.registeredObject(for: continent.objectID)?.isFault == false)
                }
            }
            let tags = (mood.value(forKey: "tags") as? Set<ManagedObject>) ?? []
            #expect(Set(tags.compactMap { $0.value(forKey: "name") as? String }) == Set(data.tags.map { seed.tagNames[$0] }))
        }
        // A to-many with a to-one inverse is filled in without a fault.
        let countries = FetchRequest<ManagedObject>(entityName: "Country")
        countries.relationshipKeyPathsForPrefetching = ["moods"]
        countries.sortDescriptors = [CoreSortDescriptor(key: "numericISO3166Code")]
        stack.context.reset()
        for country in try stack.context.fetch(countries) {
            let index = country.entity.propertyIndex(named: "moods")!
            guard case .toMany(let ids?)? = country.storage?[index] else { Issue.record("moods not prefetched"); continue }
            let code = country.value(forKey: "numericISO3166Code") as? Int
            let position = seed.countryCodes.firstIndex(of: code ?? -1)
            #expect(ids.count == seed.moods.filter { $0.country == position }.count)
            #expect(ids.allSatisfy { stack.context.registeredObject(for: $0)?.isFault == false })
        }
        let bad = FetchRequest<Mood>(entityName: "Mood")
        bad.relationshipKeyPathsForPrefetching = ["nope"]
        #expect(throws: CoreDataError.self) { try stack.context.fetch(bad) }
    }

    @Test("Prefetching to-many relationships of many objects on SQLite: each filled in, in order, many-to-many too")
    func prefetchingManySources() throws {
        let stack = try TestStack(storeType: .sqlite)
        // 200 tags with two ordered members each (in reverse creation order), 400
        // members with none: 600 sources, more than one query's worth of keys.
        var expected: [String: [String]] = [:]
        do {
            let parents = (0..<200).map { stack.tag("p\($0)") }
            for (index, parent) in parents.enumerated() {
                let members = [stack.tag("m\(index)a"), stack.tag("m\(index)b")]
                parent.add(members.reversed(), toRelationship: "ordered")
                expected[parent.value(forKey: "name") as? String ?? ""] = ["m\(index)b", "m\(index)a"]
            }
            try seed.insert(into: stack)
            stack.context.reset()
        }
        let request = FetchRequest<ManagedObject>(entityName: "Tag")
        request.relationshipKeyPathsForPrefetching = ["ordered", "moods"]
        let tags = try stack.context.fetch(request)
        #expect(tags.count == 600 + seed.tagNames.count)
        for tag in tags {
            let name = tag.value(forKey: "name") as? String ?? ""
            #expect(!tag.hasFault(forRelationshipNamed: "ordered"))
            #expect(!tag.hasFault(forRelationshipNamed: "moods"))
            let members = tag.objects(forRelationship: "ordered")
            #expect(members.allSatisfy { !$0.isFault })
            #expect(members.compactMap { $0.value(forKey: "name") as? String } == expected[name] ?? [])
            if let position = seed.tagNames.firstIndex(of: name) {
                // Many-to-many: each tag's moods, from the join table.
                let ratings = tag.objects(forRelationship: "moods").compactMap { $0.value(forKey: "rating") as? Int }
                #expect(ratings.sorted() == seed.moods.filter { $0.tags.contains(position) }.map(\.rating).sorted())
            }
        }
        // Nothing changed: the filled-in relationships are not changes.
        #expect(!stack.context.hasChanges)

        // The store's read for many sources: each source's rows in its position,
        // an object listed twice in both, one without members empty.
        let store = try #require(stack.coordinator.persistentStores.first)
        let ordered = try #require(tags[0].entity.relationshipsByName["ordered"])
        let named = Dictionary(tags.map { ($0.value(forKey: "name") as? String ?? "", $0.objectID) }, uniquingKeysWith: { a, _ in a })
        let sources = try ["p5", "m5a", "p7", "p5", "p199"].map { try #require(named[$0]) }
        let grouped = try #require(try store.relatedRows(of: sources, relationship: ordered))
        let names = grouped.map { rows in rows.compactMap { row -> String? in
            if case .attribute(.string(let name))? = row.value(named: "name") { return name }
            return nil
        } }
        #expect(names == [["m5b", "m5a"], [], ["m7b", "m7a"], ["m5b", "m5a"], ["m199b", "m199a"]])

        // Prefetched members are the registered objects; once the relationship
        // changes, reading it shows the change.
        let parent = try #require(tags.first { ($0.value(forKey: "name") as? String) == "p0" })
        let before = parent.objects(forRelationship: "ordered")
        #expect(before.allSatisfy { stack.context.registeredObject(for: $0.objectID) === $0 })
        let newcomer = stack.tag("new")
        parent.setValue([newcomer, before[1]], forKey: "ordered")
        let after = parent.objects(forRelationship: "ordered")
        #expect(after.map(\.objectID) == [newcomer.objectID, before[1].objectID])
        #expect(after[0] === newcomer && after[1] === before[1])
        #expect(before[0].value(forKey: "orderedBy") == nil)
    }

    @Test("managedObjectID results and count(for:) include pending changes", arguments: allStoreTypes)
    func pendingChanges(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let request = FetchRequest<ManagedObjectID>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "rating == 5")
        let stored = seed.moods.filter { $0.rating == 5 }.count
        #expect(try stack.context.fetch(request).count == stored)
        let new = stack.mood(rating: 5)
        let changed = objects.moods.first { ($0.value(forKey: "rating") as? Int) != 5 }!
        changed.setValue(5, forKey: "rating")
        let deleted = objects.moods.first { ($0.value(forKey: "rating") as? Int) == 5 && $0 !== changed }!
        stack.context.delete(deleted)
        let ids = try stack.context.fetch(request)
        #expect(ids.count == stored + 1)
        #expect(ids.contains(new.objectID) && ids.contains(changed.objectID) && !ids.contains(deleted.objectID))
        #expect(try stack.context.count(for: request) == stored + 1)
        request.includesPendingChanges = false
        #expect(try stack.context.count(for: request) == stored)
    }

    @Test("object ID fetches: the IDs and order of object fetches, from an index, with subentities", arguments: allStoreTypes)
    func objectIDFetches(storeType: PersistentStoreType) throws {
        let model = try ManagedObjectModel {
            Entity("Shape") {
                Attribute("size", .integer32, optional: false, defaultValue: 0)
                FetchIndex("bySize", "size")
            }
            Entity("Circle", parent: "Shape") {}
            Entity("Square", parent: "Shape") {}
        }
        let (coordinator, _) = try Fixtures.coordinator(for: model, storeType: storeType)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        // Sizes that do not follow the insertion (primary key) order: an index on
        // size hands the keys out in another order than the table.
        for i in 0..<40 {
            let shape = ManagedObject(entity: model.entitiesByName[["Square", "Circle", "Shape"][i % 3]]!, insertInto: context)
            shape.setValue((i * 17) % 11, forKey: "size")
        }
        try context.save()
        context.reset()
        func check(_ entity: String, _ format: String, subentities: Bool = true, sort: [CoreSortDescriptor] = [], limit: Int = 0) throws {
            func configured<Result>(_ request: FetchRequest<Result>) throws -> FetchRequest<Result> {
                request.predicate = try CorePredicate(format: format)
                request.includesSubentities = subentities
                request.sortDescriptors = sort
                request.fetchLimit = limit
                return request
            }
            let ids = try configured(FetchRequest<ManagedObjectID>(entityName: entity))
            let objects = try configured(FetchRequest<ManagedObject>(entityName: entity))
            let fetched = try context.fetch(ids)
            let expected = try context.fetch(objects)
            #expect(fetched == expected.map(\.objectID), "\(entity) \(format)")
            #expect(!fetched.isEmpty)
            // Each ID names its object's own entity.
            #expect(zip(fetched, expected).allSatisfy { $0.entity === $1.entity })
        }
        try check("Circle", "size < 5")
        try check("Shape", "size < 5")
        try check("Shape", "size >= 3", subentities: false)
        try check("Shape", "size >= 3", sort: [CoreSortDescriptor(key: "size", ascending: false)], limit: 7)
        try check("Square", "TRUEPREDICATE", limit: 5)
        // In primary-key order when unsorted, whatever the index's order.
        let keys = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Shape")).compactMap(\.primaryKey)
        #expect(keys.count == 40 && keys == keys.sorted())
        let request = FetchRequest<ManagedObject>(entityName: "Circle")
        request.predicate = try CorePredicate(format: "size < 5")
        request.fetchBatchSize = 4
        let batched = try context.fetchInBatches(request)
        #expect(batched.map { $0.value(forKey: "size") as? Int } == (try context.fetch(request)).map { $0.value(forKey: "size") as? Int })
    }

    @Test("object ID fetches sorted through a to-one relationship, offset and limited", arguments: allStoreTypes)
    func objectIDFetchesThroughRelationships(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        stack.context.reset()
        func configured<Result>(_ request: FetchRequest<Result>) throws -> FetchRequest<Result> {
            request.predicate = try CorePredicate(format: "country != nil AND ANY tags.name != nil")
            request.sortDescriptors = [CoreSortDescriptor(key: "country.numericISO3166Code", ascending: false),
                                       CoreSortDescriptor(key: "rating")]
            request.fetchOffset = 1
            request.fetchLimit = 6
            return request
        }
        let ids = try stack.context.fetch(try configured(FetchRequest<ManagedObjectID>(entityName: "Mood")))
        let objects = try stack.context.fetch(try configured(FetchRequest<ManagedObject>(entityName: "Mood")))
        #expect(ids.count == 6)
        #expect(ids == objects.map(\.objectID))
        let lazy = try configured(FetchRequest<ManagedObject>(entityName: "Mood"))
        lazy.fetchBatchSize = 4
        #expect(try stack.context.fetchInBatches(lazy).map(\.objectID) == ids)
    }

    @Test("a child context's ID fetches, batches and prefetching read its parent", arguments: allStoreTypes)
    func childContext(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let added = stack.mood(rating: 5)
        objects.moods[0].setValue(5, forKey: "rating")
        let child = ManagedObjectContext(concurrencyType: .privateQueue)
        child.parent = stack.context
        let expected = seed.moods.enumerated().filter { $0.offset == 0 || $0.element.rating == 5 }.count + 1
        try child.performAndWait {
            let ids = FetchRequest<ManagedObjectID>(entityName: "Mood")
            ids.predicate = try CorePredicate(format: "rating == 5")
            #expect(try child.fetch(ids).count == expected)
            #expect(try child.fetch(ids).contains(added.objectID))
            let request = FetchRequest<Mood>(entityName: "Mood")
            request.predicate = ids.predicate
            request.fetchBatchSize = 3
            request.relationshipKeyPathsForPrefetching = ["country"]
            let lazy = try child.fetchInBatches(request)
            #expect(lazy.count == expected)
            #expect(lazy.allSatisfy { $0.value(forKey: "rating") as? Int == 5 })
            #expect(try child.fetch(request).count == expected)
        }
    }

    @Test("asynchronous fetch: progress, completion, cancellation", arguments: allStoreTypes)
    func asynchronous(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.fetchBatchSize = 4
        request.sortDescriptors = [CoreSortDescriptor(key: "date")]
        var completed: [Mood]?
        var steps: [Int64] = []
        let asynchronous = AsynchronousFetchRequest(fetchRequest: request) { result in completed = result.finalResult }
        asynchronous.progressHandler = { steps.append($0.completedUnitCount) }
        let result = try stack.context.execute(asynchronous)
        #expect(result.finalResult?.count == seed.moods.count)
        #expect(completed?.map(\.objectID) == result.finalResult?.map(\.objectID))
        #expect(result.progress.totalUnitCount == Int64(seed.moods.count))
        #expect(result.progress.completedUnitCount == Int64(seed.moods.count))
        #expect(steps == stride(from: 4, to: seed.moods.count + 3, by: 4).map { Int64(min($0, seed.moods.count)) })

        var called = false
        let cancelled = AsynchronousFetchRequest(fetchRequest: request) { result in
            called = true
            #expect(result.finalResult == nil)
        }
        cancelled.progressHandler = { progress in if progress.completedUnitCount >= 8 { progress.cancel() } }
        let outcome = try stack.context.execute(cancelled)
        #expect(called)
        #expect(outcome.operationError?.code == .userCancelled)
        #expect(outcome.progress.completedUnitCount == 8)
    }
}

/// Fetch request templates and fetched properties.
@Suite("Fetch templates and fetched properties")
struct FetchTemplateTests {
    func stack(_ storeType: PersistentStoreType) throws -> (ManagedObjectContext, ManagedObjectModel) {
        let model = try ManagedObjectModel {
            Entity("Author", className: "ManagedObject") {
                Attribute("name", .string)
                Attribute("minimum", .integer64, defaultValue: 0)
                FetchedProperty("goodBooks", entity: "Book", predicate: "author == $FETCH_SOURCE AND stars >= $FETCH_SOURCE.minimum")
                FetchedProperty("named", entity: "Book", predicate: "title == $FETCHED_PROPERTY.name")
            }
            Entity("Book", className: "ManagedObject") {
                Attribute("title", .string)
                Attribute("stars", .integer64, defaultValue: 0)
                Relationship("author", to: "Author")
            }
        }
        var template = FetchRequestTemplate(entityName: "Book", predicateFormat: "stars >= $MIN AND title BEGINSWITH $PREFIX")
        template.fetchLimit = 10
        model.setFetchRequestTemplate(template, forName: "Starred")
        let (coordinator, _) = try Fixtures.coordinator(for: model, storeType: storeType)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (context, model)
    }

    @Test("templates with substitution variables", arguments: allStoreTypes)
    func templates(storeType: PersistentStoreType) throws {
        let (context, model) = try stack(storeType)
        let books = (0..<8).map { i -> ManagedObject in
            let book = ManagedObject(entity: model.entitiesByName["Book"]!, insertInto: context)
            book.setValue(i % 2 == 0 ? "A\(i)" : "B\(i)", forKey: "title")
            book.setValue(i, forKey: "stars")
            return book
        }
        try context.save()
        let request = try #require(try model.fetchRequestFromTemplate(withName: "Starred", substitutionVariables: ["MIN": 3, "PREFIX": "A"]))
        #expect(request.fetchLimit == 10)
        let titles = Set(try context.fetch(request).compactMap { $0.value(forKey: "title") as? String })
        #expect(titles == Set(books.filter { ($0.value(forKey: "stars") as! Int) >= 3 && ($0.value(forKey: "title") as! String).hasPrefix("A") }
            .map { $0.value(forKey: "title") as! String }))
        #expect(try model.fetchRequestFromTemplate(withName: "Nope", substitutionVariables: [:]) == nil)
        do { _ = try model.fetchRequestFromTemplate(withName: "Starred", substitutionVariables: ["MIN": 3]); Issue.record("no error") }
        catch let error as CoreDataError { #expect(error.message.contains("$PREFIX")) }
    }

    @Test("fetched properties with $FETCH_SOURCE and $FETCHED_PROPERTY", arguments: allStoreTypes)
    func fetchedProperties(storeType: PersistentStoreType) throws {
        let (context, model) = try stack(storeType)
        let author = ManagedObject(entity: model.entitiesByName["Author"]!, insertInto: context)
        author.setValue(2, forKey: "minimum")
        let other = ManagedObject(entity: model.entitiesByName["Author"]!, insertInto: context)
        for i in 0..<6 {
            let book = ManagedObject(entity: model.entitiesByName["Book"]!, insertInto: context)
            book.setValue(i == 5 ? "named" : "T\(i)", forKey: "title")
            book.setValue(i, forKey: "stars")
            book.setValue(i % 2 == 0 ? author : other, forKey: "author")
        }
        try context.save()
        let good = (author.value(forKey: "goodBooks") as? [ManagedObject]) ?? []
        #expect(Set(good.compactMap { $0.value(forKey: "stars") as? Int }) == [2, 4])
        let named = (author.value(forKey: "named") as? [ManagedObject]) ?? []
        #expect(named.compactMap { $0.value(forKey: "title") as? String } == ["named"])
        // Evaluated on access: a new matching book shows up.
        let book = ManagedObject(entity: model.entitiesByName["Book"]!, insertInto: context)
        book.setValue(9, forKey: "stars")
        book.setValue(author, forKey: "author")
        #expect(((author.value(forKey: "goodBooks") as? [ManagedObject]) ?? []).count == 3)
        // $FETCH_SOURCE.minimum follows the source's current value.
        author.setValue(3, forKey: "minimum")
        #expect(Set(((author.value(forKey: "goodBooks") as? [ManagedObject]) ?? []).compactMap { $0.value(forKey: "stars") as? Int }) == [4, 9])
    }
}
