import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Batch insert, update and delete requests, on every store kind.
@Suite("Batch requests")
struct BatchRequestTests {
    let seed = FetchSeed()

    func ratings(_ context: ManagedObjectContext, _ format: String = "TRUEPREDICATE") throws -> [Int] {
        let request = FetchRequest<[String: Any]>(entityName: "Mood")
        request.propertiesToFetch = ["rating"]
        request.predicate = try CorePredicate(format: format)
        request.sortDescriptors = [CoreSortDescriptor(key: "date")]
        return try context.fetch(request).compactMap { $0.int("rating") }
    }

    @Test("batch insert: dictionaries, a dictionary handler, an object handler", arguments: allStoreTypes)
    func insert(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let request = BatchInsertRequest(entityName: "Mood", objects: (0..<10).map {
            ["rating": $0 % 6, "date": Date(timeIntervalSinceReferenceDate: Double($0)), "creatorID": "b"]
        })
        request.resultType = .objectIDs
        let result = try stack.context.execute(request)
        #expect(result.objectIDs?.count == 10)
        #expect(try ratings(stack.context) == (0..<10).map { $0 % 6 })

        var n = 0
        let handler = BatchInsertRequest(entityName: "Mood") { (values: inout [String: Any]) -> Bool in
            guard n < 5 else { return true }
            values = ["rating": 5, "date": Date(timeIntervalSinceReferenceDate: Double(100 + n))]
            n += 1
            return false
        }
        handler.resultType = .count
        #expect(try stack.context.execute(handler).count == 5)
        var m = 0
        let objects = BatchInsertRequest(entityName: "Mood") { (object: ManagedObject) -> Bool in
            guard m < 3 else { return true }
            object.setValue(1, forKey: "rating")
            object.setValue(Date(timeIntervalSinceReferenceDate: Double(200 + m)), forKey: "date")
            m += 1
            return false
        }
        #expect(try stack.context.execute(objects).result as? Bool == true)
        #expect(try ratings(stack.context) == (0..<10).map { $0 % 6 } + [5, 5, 5, 5, 5, 1, 1, 1])
        // Fetched as objects, with the values given and defaults elsewhere.
        let mood = try stack.context.existingObject(with: result.objectIDs![3])
        #expect(mood.value(forKey: "creatorID") as? String == "b")
        #expect(mood.value(forKey: "rating") as? Int == 3)

        let bad = BatchInsertRequest(entityName: "Mood", objects: [["country": 1]])
        do { try stack.context.execute(bad); Issue.record("no error") } catch let error as CoreDataError {
            #expect(error.code == .persistentStoreUnsupportedRequestType)
            #expect(error.key == "country")
        }
        let wrongType = BatchInsertRequest(entityName: "Mood", objects: [["rating": "five"]])
        #expect(throws: CoreDataError.self) { try stack.context.execute(wrongType) }
        #expect(try ratings(stack.context).count == 18)
    }

    @Test("batch update: constants and expressions, Z_OPT bumped, merged into contexts", arguments: allStoreTypes)
    func update(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let low = objects.moods.filter { ($0.value(forKey: "rating") as? Int ?? 0) < 2 }
        let version = try #require(try stack.coordinator.row(for: low[0].objectID)).version
        let request = BatchUpdateRequest(entityName: "Mood")
        request.predicate = try CorePredicate(format: "rating < 2")
        request.propertiesToUpdate = ["rating": try CoreExpression(format: "rating + 3"), "creatorID": "batch"]
        request.resultType = .objectIDs
        let result = try stack.context.execute(request)
        #expect(Set(result.objectIDs ?? []) == Set(low.map(\.objectID)))
        #expect(try ratings(stack.context) == seed.moods.map { $0.rating < 2 ? $0.rating + 3 : $0.rating })
        let store = try #require(stack.coordinator.persistentStores.first)
        #expect(try store.row(for: low[0].objectID)?.version == version + 1)
        // Registered objects keep their old values until merged.
        #expect(low[0].value(forKey: "creatorID") as? String != "batch")
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [RemoteChangeKey.updated: result.objectIDs ?? []], into: [stack.context])
        #expect(low.allSatisfy { $0.value(forKey: "creatorID") as? String == "batch" })
        #expect(low.map { $0.value(forKey: "rating") as? Int } == seed.moods.filter { $0.rating < 2 }.map { $0.rating + 3 })

        // A context that read before the batch update conflicts when it saves.
        let other = stack.newContext()
        let stale = try other.existingObject(with: objects.moods[1].objectID)
        _ = stale.value(forKey: "rating")
        let all = BatchUpdateRequest(entityName: "Mood")
        all.propertiesToUpdate = ["rating": 0]
        all.resultType = .count
        #expect(try stack.context.execute(all).count == seed.moods.count)
        stale.setValue("zed", forKey: "creatorID")
        do { try other.save(); Issue.record("no conflict") } catch let error as CoreDataError {
            #expect(error.code == .managedObjectMerge)
        }
        let bad = BatchUpdateRequest(entityName: "Mood")
        bad.propertiesToUpdate = ["tags": 1]
        #expect(throws: CoreDataError.self) { try stack.context.execute(bad) }
        bad.propertiesToUpdate = ["rating": "x"]
        #expect(throws: CoreDataError.self) { try stack.context.execute(bad) }
        // Computed values out of the attribute's type fail, with nothing changed.
        bad.propertiesToUpdate = ["rating": try CoreExpression(format: "rating + 40000")]
        #expect(throws: CoreDataError.self) { try stack.context.execute(bad) }
        bad.propertiesToUpdate = ["rating": try CoreExpression(format: "rating + 0.5")]
        #expect(throws: CoreDataError.self) { try stack.context.execute(bad) }
        #expect(try ratings(stack.context).allSatisfy { $0 == 0 })
    }

    @Test("batch delete: predicate, cascade, join-table rows, merge into contexts", arguments: allStoreTypes)
    func delete(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        // Country.moods cascades: deleting a country deletes its moods.
        let request = BatchDeleteRequest(entityName: "Country", predicate: try CorePredicate(format: "numericISO3166Code == %d", seed.countryCodes[1]))
        request.resultType = .objectIDs
        let result = try stack.context.execute(request)
        let cascaded = objects.moods.enumerated().filter { seed.moods[$0.offset].country == 1 }.map(\.element.objectID)
        #expect(Set(result.objectIDs ?? []) == Set([objects.countries[1].objectID] + cascaded))
        #expect(try ratings(stack.context) == seed.moods.filter { $0.country != 1 }.map(\.rating))
        // Join-table rows went with the moods: tags count only the moods left.
        let other = stack.newContext()
        for (index, tag) in objects.tags.enumerated() {
            let fresh = try other.existingObject(with: tag.objectID)
            let moods = (fresh.value(forKey: "moods") as? Set<ManagedObject>) ?? []
            #expect(moods.count == seed.moods.filter { $0.country != 1 && $0.tags.contains(index) }.count)
        }
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [RemoteChangeKey.deleted: result.objectIDs ?? []], into: [stack.context])
        #expect(stack.context.registeredObject(for: objects.countries[1].objectID) == nil)
        #expect(objects.countries[1].managedObjectContext == nil)
        #expect(stack.context.registeredObject(for: objects.countries[0].objectID) === objects.countries[0])

        let byIDs = BatchDeleteRequest(objectIDs: [objects.moods[0].objectID, objects.moods[2].objectID])
        byIDs.resultType = .count
        #expect(try stack.context.execute(byIDs).count == 2)
        #expect(try stack.context.count(for: FetchRequest<Mood>(entityName: "Mood")) == seed.moods.filter { $0.country != 1 }.count - 2)
        let mixed = BatchDeleteRequest(objectIDs: [objects.moods[3].objectID, objects.tags[0].objectID])
        #expect(throws: CoreDataError.self) { try stack.context.execute(mixed) }
    }

    @Test("batch delete: deny fails with nothing deleted, nullify clears inverse to-ones", arguments: allStoreTypes)
    func deleteRules(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let deny = BatchDeleteRequest(entityName: "Continent")
        do { try stack.context.execute(deny); Issue.record("no error") } catch let error as CoreDataError {
            #expect(error.code == .validationRelationshipDeniedDelete)
            #expect(error.key == "countries")
        }
        #expect(try stack.context.count(for: FetchRequest<ManagedObject>(entityName: "Continent")) == 1)
        #expect(try stack.context.count(for: FetchRequest<ManagedObject>(entityName: "Country")) == seed.countryCodes.count)

        // Tag.ordered nullifies its destinations' orderedBy: by IDs (over rows),
        // then by predicate (in SQL on the SQLite store).
        let parent = objects.tags[0]
        let middle = objects.tags[1]
        parent.setValue([middle], forKey: "ordered")
        middle.setValue([objects.tags[2]], forKey: "ordered")
        try stack.context.save()
        let delete = BatchDeleteRequest(objectIDs: [parent.objectID])
        try stack.context.execute(delete)
        let other = stack.newContext()
        #expect(try other.existingObject(with: middle.objectID).value(forKey: "orderedBy") == nil)
        #expect(try other.existingObject(with: objects.tags[2].objectID).value(forKey: "orderedBy") != nil)
        #expect(throws: CoreDataError.self) { try other.existingObject(with: parent.objectID) }
        let byName = BatchDeleteRequest(entityName: "Tag", predicate: try CorePredicate(format: "name == %@", seed.tagNames[1]))
        byName.resultType = .objectIDs
        #expect(try stack.context.execute(byName).objectIDs == [middle.objectID])
        let third = stack.newContext()
        #expect(try third.existingObject(with: objects.tags[2].objectID).value(forKey: "orderedBy") == nil)
        let tagged = FetchRequest<Mood>(entityName: "Mood")
        tagged.predicate = try CorePredicate(format: "tags.@count > 0")
        #expect(try third.count(for: tagged) == seed.moods.filter { !$0.tags.filter { $0 != 0 && $0 != 1 }.isEmpty }.count)
    }
    @Test("batch delete without relationships: a predicate, a subentity, a whole table", arguments: allStoreTypes)
    func deleteWithoutRelationships(storeType: PersistentStoreType) throws {
        let model = try ManagedObjectModel {
            Entity("Shape") { Attribute("size", .integer32, optional: false, defaultValue: 0) }
            Entity("Circle", parent: "Shape") {}
            Entity("Square", parent: "Shape") {}
        }
        let (coordinator, _) = try Fixtures.coordinator(for: model, storeType: storeType)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        var circles: [ManagedObject] = []
        var squares: [ManagedObject] = []
        for size in 0..<6 {
            let circle = ManagedObject(entity: model.entitiesByName["Circle"]!, insertInto: context)
            circle.setValue(size, forKey: "size")
            circles.append(circle)
            let square = ManagedObject(entity: model.entitiesByName["Square"]!, insertInto: context)
            square.setValue(size, forKey: "size")
            squares.append(square)
        }
        try context.save()
        func count(_ entity: String) throws -> Int {
            try context.count(for: FetchRequest<ManagedObject>(entityName: entity))
        }

        let small = BatchDeleteRequest(entityName: "Circle", predicate: try CorePredicate(format: "size < 2"))
        small.resultType = .objectIDs
        #expect(Set(try context.execute(small).objectIDs ?? []) == Set(circles.prefix(2).map(\.objectID)))
        #expect(try count("Circle") == 4)
        #expect(try count("Square") == 6)

        // By IDs of two subentities (one table).
        let pair = BatchDeleteRequest(objectIDs: [circles[3].objectID, squares[5].objectID])
        pair.resultType = .objectIDs
        #expect(try context.execute(pair).objectIDs == [circles[3].objectID, squares[5].objectID])
        #expect(try count("Circle") == 3)
        #expect(try count("Square") == 5)

        let rest = BatchDeleteRequest(entityName: "Circle")
        rest.resultType = .count
        #expect(try context.execute(rest).count == 3)
        #expect(try count("Circle") == 0)
        #expect(try count("Square") == 5)

        let all = BatchDeleteRequest(entityName: "Shape")
        all.resultType = .objectIDs
        #expect(Set(try context.execute(all).objectIDs ?? []) == Set(squares.prefix(5).map(\.objectID)))
        #expect(try count("Shape") == 0)
        // Nothing left to delete: an empty result, no error.
        #expect(try context.execute(all).objectIDs == [])
    }

    @Test("batch results: status only and counts without IDs, IDs when asked", arguments: allStoreTypes)
    func resultTypes(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        try seed.insert(into: stack)
        func stored(_ format: String) throws -> Int {
            let request = FetchRequest<ManagedObject>(entityName: "Mood")
            request.predicate = try CorePredicate(format: format)
            return try stack.newContext().count(for: request)
        }
        // Updates: a count, then only a status; the rows change either way.
        let high = BatchUpdateRequest(entityName: "Mood")
        high.predicate = try CorePredicate(format: "rating >= 4")
        high.propertiesToUpdate = ["creatorID": "high"]
        high.resultType = .count
        let counted = try stack.context.execute(high)
        #expect(counted.count == seed.moods.filter { $0.rating >= 4 }.count)
        #expect(counted.objectIDs == nil)
        #expect(try stored("creatorID == 'high'") == seed.moods.filter { $0.rating >= 4 }.count)
        let low = BatchUpdateRequest(entityName: "Mood")
        low.predicate = try CorePredicate(format: "rating < 4")
        low.propertiesToUpdate = ["rating": try CoreExpression(format: "rating + 1")]
        let status = try stack.context.execute(low)
        #expect(status.result as? Bool == true)
        #expect(status.count == nil && status.objectIDs == nil)
        #expect(try stored("rating == 0") == 0)
        #expect(try stored("rating == 4") == seed.moods.filter { $0.rating == 3 || $0.rating == 4 }.count)

        // Deletes (moods have join-table rows): status only, a count, IDs.
        let expected = seed.moods.map { $0.rating < 4 ? $0.rating + 1 : $0.rating }
        let few = BatchDeleteRequest(entityName: "Mood", predicate: try CorePredicate(format: "rating == 1"))
        #expect(try stack.context.execute(few).result as? Bool == true)
        #expect(try stored("rating == 1") == 0)
        #expect(try stored("TRUEPREDICATE") == expected.filter { $0 != 1 }.count)
        let some = BatchDeleteRequest(entityName: "Mood", predicate: try CorePredicate(format: "rating == 2"))
        some.resultType = .count
        #expect(try stack.context.execute(some).count == expected.filter { $0 == 2 }.count)
        #expect(try stack.context.execute(some).count == 0)
        let tagged = FetchRequest<ManagedObject>(entityName: "Tag")
        let reader = stack.newContext()
        let tags = try reader.fetch(tagged)
        let remaining = seed.moods.indices.filter { expected[$0] > 2 }
        for (index, tag) in tags.sorted(by: { ($0.value(forKey: "name") as? String ?? "") < ($1.value(forKey: "name") as? String ?? "") }).enumerated() {
            let moods = (tag.value(forKey: "moods") as? Set<ManagedObject>) ?? []
            let name = seed.tagNames.sorted()[index]
            let tagIndex = try #require(seed.tagNames.firstIndex(of: name))
            #expect(moods.count == remaining.filter { seed.moods[$0].tags.contains(tagIndex) }.count)
        }
        let rest = BatchDeleteRequest(entityName: "Mood")
        rest.resultType = .objectIDs
        let ids = try #require(try stack.context.execute(rest).objectIDs)
        #expect(ids.count == remaining.count)
        #expect(ids.allSatisfy { $0.entityName == "Mood" && !$0.isTemporaryID })
        #expect(try stored("TRUEPREDICATE") == 0)
    }

    @Test("batch delete by IDs: the objects that exist, once each, in order; join-table rows go", arguments: allStoreTypes)
    func deleteByIDs(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let objects = try seed.insert(into: stack)
        let moods = objects.moods
        // Deleted already: its ID is left out of the result.
        let gone = BatchDeleteRequest(objectIDs: [moods[4].objectID])
        gone.resultType = .count
        #expect(try stack.context.execute(gone).count == 1)
        let request = BatchDeleteRequest(objectIDs: [moods[6], moods[1], moods[4], moods[6], moods[9]].map(\.objectID))
        request.resultType = .objectIDs
        #expect(try stack.context.execute(request).objectIDs == [moods[6], moods[1], moods[9]].map(\.objectID))
        let reader = stack.newContext()
        let left = try reader.fetch(FetchRequest<ManagedObject>(entityName: "Mood")).map(\.objectID)
        #expect(Set(left) == Set(moods.indices.filter { ![1, 4, 6, 9].contains($0) }.map { moods[$0].objectID }))
        // The deleted moods left their tags.
        for (index, tag) in objects.tags.enumerated() {
            let members = (try reader.existingObject(with: tag.objectID).value(forKey: "moods") as? Set<ManagedObject>) ?? []
            let expected = seed.moods.indices.filter { ![1, 4, 6, 9].contains($0) && seed.moods[$0].tags.contains(index) }
            #expect(Set(members.map(\.objectID)) == Set(expected.map { moods[$0].objectID }))
        }
        let counted = BatchDeleteRequest(objectIDs: [moods[0], moods[1], moods[2]].map(\.objectID))
        counted.resultType = .count
        #expect(try stack.context.execute(counted).count == 2)
        let status = BatchDeleteRequest(objectIDs: [moods[3].objectID])
        #expect(try stack.context.execute(status).result as? Bool == true)
        #expect(try stack.newContext().count(for: FetchRequest<ManagedObject>(entityName: "Mood")) == seed.moods.count - 7)
    }
}
