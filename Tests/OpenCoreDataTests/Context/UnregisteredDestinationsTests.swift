import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Objects made for a to-many relationship's rows without a uniquing lookup, when
/// no object of the destination's root entity is registered and alive
/// (`ManagedObjectContext.UnregisteredDestinations`), and prefetched members that
/// stand for their relationship (`ManagedObject.PrefetchedMembers`).
@Suite("Destinations made without a lookup")
struct UnregisteredDestinationsTests {
    /// `countries` countries with `perCountry` moods each, saved; the context reset.
    /// Returns each country's code with its moods' ratings.
    static func seed(_ stack: TestStack, countries: Int, perCountry: Int) throws -> [Int: [Int]] {
        var expected: [Int: [Int]] = [:]
        let entity = try #require(stack.model.entitiesByName["Country"])
        for code in 0..<countries {
            let country = ManagedObject(entity: entity, insertInto: stack.context)
            country.setValue(code, forKey: "numericISO3166Code")
            for n in 0..<perCountry {
                let mood = stack.mood(rating: (code + n) % 6)
                mood.setValue(country, forKey: "country")
                expected[code, default: []].append((code + n) % 6)
            }
        }
        try stack.context.save()
        stack.context.reset()
        return expected
    }

    static func countries(_ stack: TestStack, prefetching: Bool = false) throws -> [ManagedObject] {
        let request = FetchRequest<ManagedObject>(entityName: "Country")
        request.sortDescriptors = [CoreSortDescriptor(key: "numericISO3166Code")]
        if prefetching { request.relationshipKeyPathsForPrefetching = ["moods"] }
        return try stack.context.fetch(request)
    }

    @Test("To-many faults fired one after another, their members dropped: right members, a bounded registry, lookups find them")
    func traversal() throws {
        let stack = try TestStack(storeType: .sqlite)
        let expected = try Self.seed(stack, countries: 500, perCountry: 20)
        let countries = try Self.countries(stack)
        let registry = stack.context.registry
        let moodEntity = try #require(stack.model.entitiesByName["Mood"])
        for country in countries {
            let code = try #require(country.value(forKey: "numericISO3166Code") as? Int)
            let moods = country.objects(forRelationship: "moods")
            #expect(moods.compactMap { $0.value(forKey: "rating") as? Int }.sorted() == expected[code]?.sorted())
        }
        // 10,000 members made and dropped, never looked up: the registry's list of
        // them was compacted as it grew.
        #expect(registry.entryCount < 4096 + 2 * countries.count)
        #expect(!registry.mayHoldLiveObjects(ofRoot: moodEntity))
        // Again, each member looked up while alive (the list entered in the table):
        // the table is swept as it grows.
        stack.context.reset()
        let again = try Self.countries(stack)
        for country in again {
            let moods = country.objects(forRelationship: "moods")
            #expect(moods.count == 20)
            for mood in moods { #expect(stack.context.registeredObject(for: mood.objectID) === mood) }
        }
        #expect(registry.entryCount < 2 * 4096 + 2 * again.count)
        let live = registry.objects
        #expect(Set(live.map(\.objectID)).count == live.count)
        #expect(live.count == again.count)
    }

    @Test("A live object of the destination's entity is the member a fault or a prefetch gives", arguments: [false, true])
    func uniquing(prefetching: Bool) throws {
        let stack = try TestStack(storeType: .sqlite)
        _ = try Self.seed(stack, countries: 5, perCountry: 4)
        // One mood fetched and held before the countries and their moods.
        let request = FetchRequest<Mood>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "country.numericISO3166Code == 3")
        request.fetchLimit = 1
        let held = try #require(try stack.context.fetch(request).first)
        let moodEntity = try #require(stack.model.entitiesByName["Mood"])
        #expect(stack.context.registry.mayHoldLiveObjects(ofRoot: moodEntity))
        for country in try Self.countries(stack, prefetching: prefetching) {
            let moods = country.objects(forRelationship: "moods")
            #expect(moods.count == 4)
            if country.value(forKey: "numericISO3166Code") as? Int == 3 {
                #expect(moods.contains { $0 === held })
            } else {
                #expect(!moods.contains { $0.objectID == held.objectID })
            }
            for mood in moods { #expect(stack.context.registeredObject(for: mood.objectID) === mood) }
        }
        let live = stack.context.registry.objects
        #expect(Set(live.map(\.objectID)).count == live.count)
    }

    @Test("Whether live objects of a root entity may be registered follows registrations, deaths and unregistering")
    func liveObjectsByRoot() throws {
        let stack = try TestStack(storeType: .sqlite)
        _ = try Self.seed(stack, countries: 2, perCountry: 3)
        let registry = stack.context.registry
        let moodEntity = try #require(stack.model.entitiesByName["Mood"])
        let countryEntity = try #require(stack.model.entitiesByName["Country"])
        #expect(!registry.mayHoldLiveObjects(ofRoot: moodEntity))
        var moods: [Mood]? = try stack.context.fetch(FetchRequest<Mood>(entityName: "Mood"))
        #expect(moods?.count == 6)
        #expect(registry.mayHoldLiveObjects(ofRoot: moodEntity))
        #expect(!registry.mayHoldLiveObjects(ofRoot: countryEntity))
        moods = nil
        #expect(!registry.mayHoldLiveObjects(ofRoot: moodEntity))
        // Alive but unregistered (a reset): none registered.
        let kept = try stack.context.fetch(FetchRequest<Mood>(entityName: "Mood"))
        #expect(registry.mayHoldLiveObjects(ofRoot: moodEntity))
        stack.context.reset()
        #expect(!registry.mayHoldLiveObjects(ofRoot: moodEntity))
        #expect(kept.count == 6)
    }

    @Test("Rows stop skipping lookups once anything else registers an object")
    func registrationsEndTheRun() throws {
        let stack = try TestStack(storeType: .sqlite)
        _ = try Self.seed(stack, countries: 1, perCountry: 1)
        let country = try #require(stack.model.entitiesByName["Country"])
        let relationship = try #require(country.relationshipsByName["moods"])
        let registry = stack.context.registry
        var unregistered = ManagedObjectContext.UnregisteredDestinations(of: relationship, in: registry)
        #expect(unregistered.skipsLookups)
        // Each row's object is registered before the next row asks.
        var skips = unregistered.next(in: registry)
        #expect(skips)
        _ = stack.context.makeFault(ManagedObjectID(entity: try #require(stack.model.entitiesByName["Mood"]), storeIdentifier: "s", primaryKey: 1),
                                    row: nil, unregistered: true)
        skips = unregistered.next(in: registry)
        #expect(skips)
        // Something else registers an object (an `awakeFromFetch()` fetching, say).
        _ = stack.context.makeFault(ManagedObjectID(entity: country, storeIdentifier: "s", primaryKey: 1), row: nil)
        _ = stack.context.makeFault(ManagedObjectID(entity: try #require(stack.model.entitiesByName["Mood"]), storeIdentifier: "s", primaryKey: 2),
                                    row: nil, unregistered: true)
        skips = unregistered.next(in: registry)
        #expect(!skips)
        skips = unregistered.next(in: registry)
        #expect(!skips)
        // A relationship whose inverse is a to-many (a destination may have many
        // sources) always looks its rows up.
        let tags = try #require(stack.model.entitiesByName["Tag"]?.relationshipsByName["moods"])
        #expect(try #require(tags.inverseRelationship).isToMany)
        #expect(!ManagedObjectContext.UnregisteredDestinations(of: tags, in: registry).skipsLookups)
    }

    @Test("Prefetched members stand for their relationship until it changes")
    func prefetchedMembers() throws {
        let stack = try TestStack(storeType: .sqlite)
        _ = try Self.seed(stack, countries: 3, perCountry: 4)
        let countries = try Self.countries(stack, prefetching: true)
        let country = try #require(countries.first)
        let members = country.objects(forRelationship: "moods")
        #expect(members.count == 4)
        let again = country.objects(forRelationship: "moods")
        #expect(again.count == members.count && zip(again, members).allSatisfy { $0 === $1 })
        // One member moved to another country: both relationships show it.
        let moved = members[1]
        moved.setValue(countries[1], forKey: "country")
        let remaining = country.objects(forRelationship: "moods")
        #expect(remaining.count == 3)
        #expect(!remaining.contains { $0 === moved })
        #expect(countries[1].objects(forRelationship: "moods").contains { $0 === moved })
        // Undone by hand: the members are the right ones again, not the stale list.
        moved.setValue(country, forKey: "country")
        #expect(Set(country.objects(forRelationship: "moods").map(ObjectIdentifier.init)) == Set(members.map(ObjectIdentifier.init)))
    }
}
