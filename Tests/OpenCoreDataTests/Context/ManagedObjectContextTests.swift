import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Managed objects and the context, on the in-memory store")
struct ManagedObjectContextTests {
    @Test("Inserting sets defaults, calls awakeFromInsert once, and tracks the object as inserted", arguments: allStoreTypes)
    func inserting(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let mood = stack.mood()
        #expect(mood.isInserted && !mood.isUpdated && !mood.isDeleted && mood.hasChanges)
        #expect(mood.awakeFromInsertCalls == 1)
        #expect(mood.value(forKey: "rating") as? Int == 3)
        #expect(mood.value(forKey: "date") as? Date == Date(timeIntervalSinceReferenceDate: 0))
        #expect(mood.objectID.isTemporaryID)
        #expect(mood.objectID.uriRepresentation().absoluteString.hasPrefix("x-coredata:///Mood/t"))
        #expect(stack.context.insertedObjects == [mood])
        #expect(stack.context.hasChanges)
        #expect(mood.managedObjectContext === stack.context)
        #expect(type(of: mood) == Mood.self)
    }

    @Test("Object IDs: equal for equal store identifiers however the strings were made, different across stores and keys")
    func objectIDIdentity() throws {
        let stack = try TestStack(storeType: .inMemory)
        let entity = try #require(stack.coordinator.managedObjectModel.entitiesByName["Mood"])
        let identifier = stack.coordinator.persistentStores[0].identifier
        // The same identifier built at run time (other string storage).
        let rebuilt = String(identifier.prefix(10)) + String(identifier.dropFirst(10))
        let a = ManagedObjectID(entity: entity, storeIdentifier: identifier, primaryKey: 7)
        let b = ManagedObjectID(entity: entity, storeIdentifier: rebuilt, primaryKey: 7)
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(b.storeIdentifier == identifier)
        #expect(a != ManagedObjectID(entity: entity, storeIdentifier: "another-store", primaryKey: 7))
        #expect(a != ManagedObjectID(entity: entity, storeIdentifier: identifier, primaryKey: 8))
        #expect(stack.coordinator.managedObjectID(forURIRepresentation: b.uriRepresentation()) == a)
        #expect(ManagedObjectID(entity: entity, storeIdentifier: "another-store", primaryKey: 7).uriRepresentation().absoluteString
                == "x-coredata://another-store/Mood/p7")
        // A store's IDs share one scope per entity; an ID built from the parts
        // has a scope of its own, and is the same ID all the same.
        let mood = stack.mood(rating: 1)
        try stack.context.save()
        let saved = mood.objectID
        let fetched = try stack.newContext().fetch(FetchRequest<Mood>(entityName: "Mood"))[0].objectID
        let built = ManagedObjectID(entity: entity, storeIdentifier: identifier, primaryKey: try #require(saved.primaryKey))
        #expect(saved == fetched && saved == built)
        #expect(Set([saved, fetched, built]).count == 1)
        #expect(saved.entity === entity && built.entity === entity)
        #expect(built != ManagedObjectID(entity: try #require(stack.coordinator.managedObjectModel.entitiesByName["Country"]),
                                  storeIdentifier: identifier, primaryKey: try #require(saved.primaryKey)))
    }

    @Test("Saving gives permanent IDs, clears changes, calls willSave/didSave, and the store has the rows", arguments: allStoreTypes)
    func saving(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let mood = stack.mood(rating: 4)
        let temporary = mood.objectID
        try stack.context.save()
        #expect(!mood.objectID.isTemporaryID)
        #expect(mood.objectID != temporary)
        #expect(mood.objectID.primaryKey == 1)
        let store = try #require(stack.coordinator.persistentStores.first)
        #expect(mood.objectID.uriRepresentation().absoluteString == "x-coredata://\(store.identifier)/Mood/p1")
        #expect(!mood.hasChanges && !stack.context.hasChanges)
        #expect(mood.willSaveCalls == 1 && mood.didSaveCalls == 1)
        #expect(stack.coordinator.managedObjectID(forURIRepresentation: mood.objectID.uriRepresentation()) == mood.objectID)
        #expect(try store.row(for: mood.objectID)?.version == 1)

        let other = stack.newContext()
        let fetched = try other.fetch(FetchRequest<Mood>(entityName: "Mood"))
        #expect(fetched.count == 1)
        #expect(fetched[0].value(forKey: "rating") as? Int == 4)
    }

    @Test("Uniquing: one object per record per context, however it was reached", arguments: allStoreTypes)
    func uniquing(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let country = Country(context: stack.context)
        let mood = stack.mood()
        mood.setValue(country, forKey: "country")
        try stack.context.save()

        let other = stack.newContext()
        let moods = try other.fetch(FetchRequest<Mood>(entityName: "Mood"))
        let countries = try other.fetch(FetchRequest<Country>(entityName: "Country"))
        let viaRelationship = try #require(moods[0].value(forKey: "country") as? Country)
        #expect(viaRelationship === countries[0])
        #expect(other.object(with: mood.objectID) === moods[0])
        #expect(try other.existingObject(with: country.objectID) === countries[0])
        #expect(other.registeredObject(for: mood.objectID) === moods[0])
        let again = try other.fetch(FetchRequest<Mood>(entityName: "Mood"))
        #expect(again[0] === moods[0])
    }

    @Test("Fetched objects are faults until a property is read; to-many relationships are faults until accessed", arguments: allStoreTypes)
    func faulting(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let country = Country(context: stack.context)
        for _ in 0..<3 { stack.mood().setValue(country, forKey: "country") }
        try stack.context.save()

        let other = stack.newContext()
        let countries = try other.fetch(FetchRequest<Country>(entityName: "Country"))
        let fetched = countries[0]
        #expect(fetched.isFault)
        #expect(fetched.value(forKey: "numericISO3166Code") as? Int == 0)
        #expect(!fetched.isFault)
        #expect(fetched.hasFault(forRelationshipNamed: "moods"))
        let moods = try #require(fetched.value(forKey: "moods") as? Set<ManagedObject>)
        #expect(moods.count == 3)
        #expect(!fetched.hasFault(forRelationshipNamed: "moods"))
        #expect(moods.allSatisfy { $0.isFault })
        let first = try #require(moods.first as? Mood)
        _ = first.value(forKey: "rating")
        #expect(first.awakeFromFetchCalls == 1)

        let eager = FetchRequest<Mood>(entityName: "Mood")
        eager.returnsObjectsAsFaults = false
        let third = stack.newContext()
        let eagerMoods = try third.fetch(eager)
        #expect(eagerMoods.allSatisfy { !$0.isFault })

        // A fault made from a fetched row that another context's save changed since
        // fires with the saved values, not the fetched ones.
        let fourth = stack.newContext()
        let faults = try fourth.fetch(FetchRequest<Mood>(entityName: "Mood"))
        let target = try #require(faults.first { $0.isFault })
        let editor = stack.newContext()
        let edited = try editor.existingObject(with: target.objectID)
        edited.setValue(5, forKey: "rating")
        try editor.save()
        #expect(target.isFault)
        #expect(target.attributeValue(forKey: "rating") == .int(5))

        // refresh turns an object back into a fault.
        other.refresh(fetched, mergeChanges: false)
        #expect(fetched.isFault)
        #expect(fetched.value(forKey: "numericISO3166Code") as? Int == 0)
    }

    @Test("To-ones read back from SQLite name the destination's own entity: a subentity, the declared one, none")
    func toOneToSubentities() throws {
        let model = try ManagedObjectModel {
            Entity("Pet") {
                Attribute("name", .string)
                Relationship("owners", to: "Owner", inverse: "pet", toMany: true)
            }
            Entity("Dog", parent: "Pet") {}
            Entity("Owner") {
                Attribute("name", .string)
                Relationship("pet", to: "Pet", inverse: "owners")
                Relationship("friend", to: "Owner", inverse: "friendOf")
                Relationship("friendOf", to: "Owner", inverse: "friend", toMany: true)
            }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: try Fixtures.temporaryDirectory().appendingPathComponent("Pets.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let dog = ManagedObject(entity: model.entitiesByName["Dog"]!, insertInto: context)
        let pet = ManagedObject(entity: model.entitiesByName["Pet"]!, insertInto: context)
        var owners: [ManagedObject] = []
        for (index, destination) in [dog, pet, nil].enumerated() {
            let owner = ManagedObject(entity: model.entitiesByName["Owner"]!, insertInto: context)
            owner.setValue("o\(index)", forKey: "name")
            owner.setValue(destination, forKey: "pet")
            owners.append(owner)
        }
        owners[0].setValue(owners[1], forKey: "friend")
        try context.save()

        let other = ManagedObjectContext(concurrencyType: .mainQueue)
        other.persistentStoreCoordinator = coordinator
        let request = FetchRequest<ManagedObject>(entityName: "Owner")
        request.sortDescriptors = [CoreSortDescriptor(key: "name")]
        let fetched = try other.fetch(request)
        #expect(fetched.map { ($0.value(forKey: "pet") as? ManagedObject)?.objectID } == [dog.objectID, pet.objectID, nil])
        #expect((fetched[0].value(forKey: "pet") as? ManagedObject)?.entity.name == "Dog")
        #expect((fetched[1].value(forKey: "pet") as? ManagedObject)?.entity.name == "Pet")
        #expect((fetched[0].value(forKey: "friend") as? ManagedObject)?.objectID == owners[1].objectID)
        #expect(fetched[1].value(forKey: "friend") == nil)
    }

    @Test("Firing a to-many fault on the SQLite store reads the destination rows with it: one-to-many, many-to-many, ordered")
    func toManyFaultCachesDestinationRows() throws {
        let stack = try TestStack(storeType: .sqlite)
        do {
            let country = Country(context: stack.context)
            for rating in 1...3 { stack.mood(rating: rating).setValue(country, forKey: "country") }
            let tags = ["a", "b", "c"].map { stack.tag($0) }
            tags[0].add(Array(tags[1...].reversed()), toRelationship: "ordered")
            let moods = try stack.context.fetch(FetchRequest<Mood>(entityName: "Mood"))
            tags[1].add(moods, toRelationship: "moods")
            try stack.context.save()
            stack.context.reset()
        }
        #expect(stack.coordinator.rowCacheCount == 0)

        let other = stack.newContext()
        let fetchedCountry = try #require(try other.fetch(FetchRequest<Country>(entityName: "Country")).first)
        let tagRequest = FetchRequest<ManagedObject>(entityName: "Tag")
        tagRequest.sortDescriptors = [CoreSortDescriptor(key: "name", ascending: true)]
        let fetchedTags = try other.fetch(tagRequest)
        let countryMoods = fetchedCountry.objects(forRelationship: "moods")
        let tagMoods = fetchedTags[1].objects(forRelationship: "moods")
        let ordered = fetchedTags[0].objects(forRelationship: "ordered")
        #expect(countryMoods.count == 3 && tagMoods.count == 3 && ordered.count == 2)
        #expect((countryMoods + tagMoods).allSatisfy { $0.isFault } && ordered[0].isFault)   // "b" fired for its moods

        // Another coordinator changes every row: the destinations fire from the rows
        // read with their relationship, not from the store.
        let url = try #require(stack.coordinator.persistentStores.first?.url)
        let writer = PersistentStoreCoordinator(managedObjectModel: stack.model)
        try writer.addPersistentStore(type: .sqlite, at: url)
        let writing = ManagedObjectContext(concurrencyType: .privateQueue)
        writing.persistentStoreCoordinator = writer
        try writing.performAndWait {
            for mood in try writing.fetch(FetchRequest<Mood>(entityName: "Mood")) { mood.setValue(5, forKey: "rating") }
            for tag in try writing.fetch(FetchRequest<ManagedObject>(entityName: "Tag")) { tag.setValue("z", forKey: "name") }
            try writing.save()
        }
        #expect(Set(countryMoods.compactMap { $0.value(forKey: "rating") as? Int }) == [1, 2, 3])
        #expect(Set(tagMoods.compactMap { $0.value(forKey: "rating") as? Int }) == [1, 2, 3])
        #expect(ordered.compactMap { $0.value(forKey: "name") as? String } == ["c", "b"])
    }

    @Test("Setting either side of a relationship updates the inverse: one-to-many, many-to-many, ordered", arguments: allStoreTypes)
    func inverses(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let germany = Country(context: stack.context)
        let france = Country(context: stack.context)
        let mood = stack.mood()
        mood.setValue(germany, forKey: "country")
        #expect((germany.value(forKey: "moods") as? Set<ManagedObject>) == [mood])
        mood.setValue(france, forKey: "country")
        #expect((germany.value(forKey: "moods") as? Set<ManagedObject>)?.isEmpty == true)
        #expect((france.value(forKey: "moods") as? Set<ManagedObject>) == [mood])
        france.setValue(Set<ManagedObject>(), forKey: "moods")
        #expect(mood.value(forKey: "country") == nil)
        germany.mutableSetValue(forKey: "moods").add(mood)
        #expect(mood.value(forKey: "country") as? Country === germany)

        let europe = Continent(context: stack.context)
        germany.setValue(europe, forKey: "continent")
        france.setValue(europe, forKey: "continent")
        #expect((europe.value(forKey: "countries") as? Set<ManagedObject>)?.count == 2)

        let happy = stack.tag("happy")
        let calm = stack.tag("calm")
        mood.setValue(Set([happy, calm]), forKey: "tags")
        #expect((happy.value(forKey: "moods") as? Set<ManagedObject>) == [mood])
        let other = stack.mood()
        happy.add([other], toRelationship: "moods")
        #expect((other.value(forKey: "tags") as? Set<ManagedObject>) == [happy])
        happy.remove([mood], fromRelationship: "moods")
        #expect((mood.value(forKey: "tags") as? Set<ManagedObject>) == [calm])

        let a = stack.tag("a"), b = stack.tag("b"), c = stack.tag("c")
        a.setValue([b, c], forKey: "ordered")
        a.insert(calm, at: 1, inRelationship: "ordered")
        #expect((a.value(forKey: "ordered") as? [ManagedObject]) == [b, calm, c])
        #expect(calm.value(forKey: "orderedBy") as? ManagedObject === a)
        a.removeObject(at: 0, fromRelationship: "ordered")
        #expect(b.value(forKey: "orderedBy") == nil)
        try stack.context.save()

        let fresh = stack.newContext()
        let reloaded = try fresh.existingObject(with: a.objectID)
        #expect((reloaded.value(forKey: "ordered") as? [ManagedObject])?.compactMap { $0.value(forKey: "name") as? String } == ["calm", "c"])
        let reloadedMood = try fresh.existingObject(with: mood.objectID)
        #expect((reloadedMood.value(forKey: "tags") as? Set<ManagedObject>)?.compactMap { $0.value(forKey: "name") as? String } == ["calm"])
    }

    @Test("Delete rules: cascade deletes, nullify clears the inverse, deny refuses the save", arguments: allStoreTypes)
    func deleteRules(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let europe = Continent(context: stack.context)
        let germany = Country(context: stack.context)
        germany.setValue(europe, forKey: "continent")
        let moods = (0..<3).map { _ in stack.mood() }
        for mood in moods { mood.setValue(germany, forKey: "country") }
        try stack.context.save()

        // Deny: a continent with countries can't be deleted.
        stack.context.delete(europe)
        #expect {
            try stack.context.save()
        } throws: { ($0 as? CoreDataError)?.code == .validationRelationshipDeniedDelete }
        #expect(europe.isDeleted)
        stack.context.rollback()
        #expect(!europe.isDeleted)

        // Cascade: deleting the country deletes its moods; nullify clears the continent's side.
        stack.context.delete(germany)
        stack.context.processPendingChanges()
        #expect(moods.allSatisfy { $0.isDeleted })
        #expect(moods.allSatisfy { $0.prepareForDeletionCalls == 1 })
        #expect((europe.value(forKey: "countries") as? Set<ManagedObject>)?.isEmpty == true)
        try stack.context.save()
        let other = stack.newContext()
        #expect(try other.count(for: FetchRequest<Mood>(entityName: "Mood")) == 0)
        #expect(try other.count(for: FetchRequest<Country>(entityName: "Country")) == 0)
        #expect(try other.count(for: FetchRequest<Continent>(entityName: "Continent")) == 1)
        // Now the continent can go.
        stack.context.delete(europe)
        try stack.context.save()
        #expect(try other.count(for: FetchRequest<ManagedObject>(entityName: "GeographicRegion")) == 0)
    }

    @Test("Validation: every failure of a save comes back as one error listing object, key, value and reason", arguments: allStoreTypes)
    func validation(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let mood = stack.mood(rating: 9)
        mood.setValue(nil, forKey: "date")
        mood.setValue("NOT lowercase and too long", forKey: "creatorID")
        let tag = stack.tag("x")
        tag.setValue(nil, forKey: "name")
        do {
            try stack.context.save()
            Issue.record("the save should fail")
        } catch let error as CoreDataError {
            #expect(error.code == .validationMultipleErrors)
            let codes = Set(error.underlyingErrors.map(\.code))
            #expect(codes.isSuperset(of: [.validationMissingMandatoryProperty, .validationNumberTooLarge,
                                          .validationStringTooLong, .validationStringPatternMatching]))
            #expect(error.underlyingErrors.contains { $0.key == "rating" && $0.valueDescription == "9" })
            #expect(error.underlyingErrors.contains { $0.key == "name" && $0.entityName == "Tag" })
            #expect(error.underlyingErrors.allSatisfy { $0.objectDescription != nil })
        }
        // Nothing was written and the changes are intact.
        #expect(mood.isInserted && stack.context.hasChanges)
        #expect(try stack.newContext().count(for: FetchRequest<Mood>(entityName: "Mood")) == 0)

        // A single failure is its own code; a custom validateValue hook runs too.
        mood.setValue(2, forKey: "rating")
        mood.setValue(Date(), forKey: "date")
        mood.setValue("forbidden", forKey: "creatorID")
        tag.setValue("ok", forKey: "name")
        #expect {
            try stack.context.save()
        } throws: { ($0 as? CoreDataError)?.code == .managedObjectValidation && ($0 as? CoreDataError)?.key == "creatorID" }
        mood.setValue("fine", forKey: "creatorID")
        try stack.context.save()
        // A value of the wrong type is an error, not a crash.
        mood.setValue("three", forKey: "rating")
        #expect(throws: CoreDataError.self) { try stack.context.save() }
        stack.context.rollback()
        #expect(mood.value(forKey: "rating") as? Int == 2)
    }

    @Test("changedValues, changedValuesForCurrentEvent and committedValues", arguments: allStoreTypes)
    func changeTracking(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let mood = stack.mood(rating: 1)
        try stack.context.save()
        #expect(mood.changedValues().isEmpty)
        mood.setValue(2, forKey: "rating")
        #expect(mood.isUpdated)
        #expect(mood.changedValues()["rating"] as? Int == 2)
        #expect(mood.changedValuesForCurrentEvent()["rating"] as? Int == 2)
        #expect(mood.committedValues(forKeys: ["rating"])["rating"] as? Int == 1)
        stack.context.processPendingChanges()
        #expect(mood.changedValuesForCurrentEvent().isEmpty)
        #expect(mood.changedValues()["rating"] as? Int == 2)
        #expect(stack.context.updatedObjects == [mood])
        // The next event records the object's first change in it again.
        nonisolated(unsafe) var updatedInEvent: [Int] = []
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification,
                                                           object: stack.context, queue: nil) { note in
            updatedInEvent.append((note.userInfo?[ManagedObjectContext.NotificationKey.updatedObjects] as? Set<ManagedObject>)?.count ?? 0)
        }
        mood.setValue(3, forKey: "rating")
        #expect(mood.changedValuesForCurrentEvent()["rating"] as? Int == 3)
        stack.context.processPendingChanges()
        #expect(mood.changedValuesForCurrentEvent().isEmpty)
        stack.context.processPendingChanges()
        NotificationCenter.default.removeObserver(token)
        #expect(updatedInEvent == [1])
        mood.setValue(1, forKey: "rating")
        #expect(!mood.isUpdated)
        mood.setValue("x", forKey: "scratch")
        #expect(mood.hasChanges && !mood.hasPersistentChangedValues)
    }

    @Test("rollback discards inserts, deletes and updates; reset forgets everything", arguments: allStoreTypes)
    func rollbackAndReset(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let kept = stack.mood(rating: 1)
        try stack.context.save()
        kept.setValue(5, forKey: "rating")
        let added = stack.mood()
        stack.context.rollback()
        #expect(kept.value(forKey: "rating") as? Int == 1)
        #expect(added.managedObjectContext == nil)
        #expect(!stack.context.hasChanges)
        stack.context.delete(kept)
        stack.context.rollback()
        #expect(!kept.isDeleted)
        stack.context.reset()
        #expect(stack.context.registeredObjects.isEmpty)
        #expect(kept.managedObjectContext == nil)
        #expect(try stack.context.count(for: FetchRequest<Mood>(entityName: "Mood")) == 1)
    }

    @Test("Fetches see unsaved inserts, updates and deletes, filtered and sorted like stored objects", arguments: allStoreTypes)
    func pendingChanges(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        for rating in [1, 2, 3, 4] { _ = stack.mood(rating: rating) }
        try stack.context.save()
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "rating >= 3")
        request.sortDescriptors = [CoreSortDescriptor(key: "rating", ascending: false)]
        func ratings() throws -> [Int] { try stack.context.fetch(request).compactMap { $0.value(forKey: "rating") as? Int } }
        #expect(try ratings() == [4, 3])
        _ = stack.mood(rating: 5)
        #expect(try ratings() == [5, 4, 3])
        let all = try stack.context.fetch(FetchRequest<Mood>(entityName: "Mood"))
        let one = try #require(all.first { $0.value(forKey: "rating") as? Int == 1 })
        one.setValue(4, forKey: "rating")
        #expect(try ratings() == [5, 4, 4, 3])
        let three = try #require(all.first { $0.value(forKey: "rating") as? Int == 3 })
        stack.context.delete(three)
        #expect(try ratings() == [5, 4, 4])
        #expect(try stack.context.count(for: request) == 3)
        request.fetchLimit = 2
        #expect(try ratings() == [5, 4])
        request.includesPendingChanges = false
        request.fetchLimit = 0
        #expect(try ratings().count == 2)

        let ids = FetchRequest<ManagedObjectID>(entityName: "Mood")
        #expect(try stack.context.fetch(ids).count == 4)
        let predicateOnRelationship = FetchRequest<Mood>(entityName: "Mood")
        let country = Country(context: stack.context)
        one.setValue(country, forKey: "country")
        try stack.context.save()
        predicateOnRelationship.predicate = try CorePredicate(format: "country == %@", country)
        #expect(try stack.context.fetch(predicateOnRelationship) == [one])
        predicateOnRelationship.predicate = try CorePredicate(format: "country.numericISO3166Code == 0")
        #expect(try stack.newContext().fetch(predicateOnRelationship).count == 1)
    }

    @Test("Optimistic locking: a row changed since it was read fails the save with 133020, and nothing is written", arguments: allStoreTypes)
    func optimisticLocking(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let mood = stack.mood(rating: 1)
        try stack.context.save()
        let other = stack.newContext()
        let copy = try other.existingObject(with: mood.objectID)
        copy.setValue(2, forKey: "rating")
        try other.save()
        mood.setValue(3, forKey: "rating")
        let added = stack.mood(rating: 4)
        do {
            try stack.context.save()
            Issue.record("expected a merge conflict")
        } catch let error as CoreDataError {
            #expect(error.code == .managedObjectMerge)
            #expect(error.underlyingErrors.first?.objectDescription == mood.objectID.description)
        }
        #expect(added.isInserted && mood.isUpdated)
        #expect(try stack.newContext().count(for: FetchRequest<Mood>(entityName: "Mood")) == 1)
        stack.context.refresh(mood, mergeChanges: false)
        #expect(mood.value(forKey: "rating") as? Int == 2)
    }

    @Test("Undo and redo of inserts, deletes, attribute and relationship changes", arguments: allStoreTypes)
    func undoRedo(storeType: PersistentStoreType) throws {
        let stack = try TestStack(undo: true, storeType: storeType)
        let context = stack.context
        let mood = stack.mood(rating: 1)
        context.processPendingChanges()
        mood.setValue(2, forKey: "rating")
        context.processPendingChanges()
        let country = Country(context: context)
        mood.setValue(country, forKey: "country")
        context.processPendingChanges()

        context.undo()
        #expect(mood.value(forKey: "country") == nil)
        #expect(country.managedObjectContext == nil)
        context.undo()
        #expect(mood.value(forKey: "rating") as? Int == 1)
        context.redo()
        #expect(mood.value(forKey: "rating") as? Int == 2)
        context.redo()
        #expect(mood.value(forKey: "country") as? Country === country)
        #expect((country.value(forKey: "moods") as? Set<ManagedObject>) == [mood])

        try context.save()
        context.delete(mood)
        context.processPendingChanges()
        #expect(mood.isDeleted)
        context.undo()
        #expect(!mood.isDeleted)
        #expect((country.value(forKey: "moods") as? Set<ManagedObject>) == [mood])
        try context.save()
        #expect(try stack.newContext().count(for: FetchRequest<Mood>(entityName: "Mood")) == 1)
    }

    @Test("Notifications: objects-did-change, will-save and did-save with Core Data's names and keys, and an async sequence", arguments: allStoreTypes)
    func notifications(storeType: PersistentStoreType) async throws {
        let stack = try TestStack(storeType: storeType)
        let context = stack.context
        final class Box: @unchecked Sendable { var names: [String] = []; var inserted = 0; var savedIDs = 0 }
        let box = Box()
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(forName: ManagedObjectContext.objectsDidChangeNotification, object: context, queue: nil) { note in
                box.names.append(note.name.rawValue)
                box.inserted += (note.userInfo?["inserted"] as? Set<ManagedObject>)?.count ?? 0
            },
            center.addObserver(forName: ManagedObjectContext.willSaveNotification, object: context, queue: nil) { note in
                box.names.append(note.name.rawValue)
            },
            center.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) { note in
                box.names.append(note.name.rawValue)
                box.savedIDs = (note.userInfo?["inserted_objectIDs"] as? Set<ManagedObjectID>)?.count ?? 0
            },
        ]
        defer { tokens.forEach(center.removeObserver) }
        let saves = context.saves
        let changes = context.changes
        _ = stack.mood()
        _ = stack.mood()
        try context.save()
        var changeIterator = changes.makeAsyncIterator()
        #expect(await changeIterator.next()?.insertedObjectIDs.count == 2)
        #expect(box.names == ["NSManagedObjectContextObjectsDidChangeNotification",
                              "NSManagedObjectContextWillSaveNotification",
                              "NSManagedObjectContextDidSaveNotification"])
        #expect(box.inserted == 2)
        #expect(box.savedIDs == 2)
        var iterator = saves.makeAsyncIterator()
        let summary = await iterator.next()
        #expect(summary?.insertedObjectIDs.count == 2)
        #expect(summary?.insertedObjectIDs.allSatisfy { !$0.isTemporaryID } == true)
    }

    @Test("Registration is weak: unchanged objects nobody holds are released", arguments: allStoreTypes)
    func memoryIsFreed(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        for rating in 0..<200 { _ = stack.mood(rating: rating % 5) }
        try stack.context.save()
        let before = Mood.deinitCount
        let other = stack.newContext()
        do {
            let fetched = try other.fetch(FetchRequest<Mood>(entityName: "Mood"))
            #expect(fetched.count == 200)
            for mood in fetched { _ = mood.value(forKey: "rating") }
        }
        // No longer registered; and freed once the context looks at its
        // registrations (here, listing them).
        #expect(other.registeredObjects.isEmpty)
        #expect(Mood.deinitCount - before >= 200)
        // Changed objects are kept until saved.
        do {
            let fetched = try other.fetch(FetchRequest<Mood>(entityName: "Mood"))
            fetched[0].setValue("changed", forKey: "creatorID")
        }
        #expect(other.registeredObjects.count == 1)
        #expect(other.hasChanges)
        try other.save()
        #expect(other.registeredObjects.isEmpty)
        // retainsRegisteredObjects keeps them.
        other.retainsRegisteredObjects = true
        _ = try other.fetch(FetchRequest<Mood>(entityName: "Mood"))
        #expect(other.registeredObjects.count == 200)
    }

    @Test("obtainPermanentIDs gives new objects their final IDs before saving", arguments: allStoreTypes)
    func permanentIDs(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let mood = stack.mood()
        let country = Country(context: stack.context)
        mood.setValue(country, forKey: "country")
        try stack.context.obtainPermanentIDs(for: [mood, country])
        #expect(!mood.objectID.isTemporaryID && !country.objectID.isTemporaryID)
        #expect(mood.isInserted)
        let id = mood.objectID
        try stack.context.save()
        #expect(mood.objectID == id)
        let other = stack.newContext()
        let reloaded = try other.existingObject(with: id)
        #expect(reloaded.value(forKey: "country") != nil)
    }

    @Test("Predicates evaluate on managed objects, through relationships", arguments: allStoreTypes)
    func predicatesOnObjects(storeType: PersistentStoreType) throws {
        let stack = try TestStack(storeType: storeType)
        let country = Country(context: stack.context)
        country.setValue(276, forKey: "numericISO3166Code")
        let mood = stack.mood(rating: 4)
        mood.setValue(country, forKey: "country")
        #expect(try CorePredicate(format: "rating == 4 AND country.numericISO3166Code == 276").evaluate(with: mood))
        #expect(try CorePredicate(format: "ANY moods.rating > 3").evaluate(with: country))
        #expect(try CorePredicate(format: "moods.@count == 1").evaluate(with: country))
        #expect(mood.value(forKeyPath: "country.numericISO3166Code") as? AttributeValue == .int(276))
    }

    @Test("Relationship counts are validated: minimum (1580) and maximum (1590)")
    func relationshipCounts() throws {
        let model = try ManagedObjectModel {
            Entity("Team") {
                Relationship("players", to: "Player", inverse: "team", toMany: true, optional: false, minCount: 2, maxCount: 3)
            }
            Entity("Player") {
                Relationship("team", to: "Team", inverse: "players")
            }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let team = ManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context)
        let players = (0..<4).map { _ in ManagedObject(entity: model.entitiesByName["Player"]!, insertInto: context) }
        team.setValue([players[0]], forKey: "players")
        #expect { try context.save() } throws: { ($0 as? CoreDataError)?.code == .validationRelationshipLacksMinimumCount }
        team.setValue(Set(players), forKey: "players")
        #expect { try context.save() } throws: { ($0 as? CoreDataError)?.code == .validationRelationshipExceedsMaximumCount }
        team.remove([players[3]], fromRelationship: "players")
        try context.save()
        #expect(team.objects(forRelationship: "players").count == 3)
    }

    @Test("Explicit undo groups with action names, levels and removeAllActions through the context", arguments: allStoreTypes)
    func undoGroups(storeType: PersistentStoreType) throws {
        let stack = try TestStack(undo: true, storeType: storeType)
        let context = stack.context
        let undoManager = try #require(context.undoManager)
        let mood = stack.mood(rating: 1)
        context.processPendingChanges()
        undoManager.beginUndoGrouping()
        mood.setValue(2, forKey: "rating")
        mood.setValue("abc", forKey: "creatorID")
        undoManager.setActionName("Edit Mood")
        undoManager.endUndoGrouping()
        #expect(undoManager.undoActionName == "Edit Mood")
        context.undo()
        #expect(mood.value(forKey: "rating") as? Int == 1)
        #expect(mood.value(forKey: "creatorID") == nil)
        #expect(undoManager.redoActionName == "Edit Mood")
        undoManager.removeAllActions()
        #expect(!undoManager.canUndo && !undoManager.canRedo)
        undoManager.levelsOfUndo = 1
        mood.setValue(3, forKey: "rating")
        context.processPendingChanges()
        mood.setValue(4, forKey: "rating")
        context.processPendingChanges()
        context.undo()
        #expect(mood.value(forKey: "rating") as? Int == 3)
        context.undo()
        #expect(mood.value(forKey: "rating") as? Int == 3)
    }

    @Test("Configurations route entities to their stores; fetches see every store holding the entity")
    func configurations() throws {
        let model = try ManagedObjectModel {
            Entity("Note") { Attribute("title", .string) }
            Entity("Cache") { Attribute("key", .string) }
            ModelConfiguration("Local", entities: ["Note"])
            ModelConfiguration("Scratch", entities: ["Cache"])
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let local = try coordinator.addPersistentStore(type: .inMemory, configuration: "Local")
        let scratch = try coordinator.addPersistentStore(type: .inMemory, configuration: "Scratch")
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let note = ManagedObject(entity: model.entitiesByName["Note"]!, insertInto: context)
        note.setValue("b", forKey: "title")
        let cache = ManagedObject(entity: model.entitiesByName["Cache"]!, insertInto: context)
        cache.setValue("k", forKey: "key")
        try context.save()
        #expect(note.objectID.storeIdentifier == local.identifier)
        #expect(cache.objectID.storeIdentifier == scratch.identifier)
        // One save across two stores: each row went to its own store.
        let reader = ManagedObjectContext(concurrencyType: .mainQueue)
        reader.persistentStoreCoordinator = coordinator
        #expect(try reader.fetch(FetchRequest<ManagedObject>(entityName: "Cache")).map { $0.value(forKey: "key") as? String } == ["k"])
        #expect(try reader.fetch(FetchRequest<ManagedObject>(entityName: "Note")).map { $0.value(forKey: "title") as? String } == ["b"])
        #expect(try local.fetchRows(StoreFetch(entity: model.entitiesByName["Cache"]!)).isEmpty)
        #expect(throws: CoreDataError.self) { try coordinator.addPersistentStore(type: .inMemory, configuration: "Nope") }

        // A second store for the same configuration: a sorted fetch merges both.
        let second = try coordinator.addPersistentStore(type: .inMemory, configuration: "Local")
        #expect(coordinator.persistentStores.count == 3)
        _ = second
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.sortDescriptors = [CoreSortDescriptor(key: "title", ascending: true)]
        let other = ManagedObject(entity: model.entitiesByName["Note"]!, insertInto: context)
        other.setValue("a", forKey: "title")
        try context.save()
        request.fetchLimit = 1
        #expect(try context.fetch(request).map { $0.value(forKey: "title") as? String } == ["a"])
    }
}
