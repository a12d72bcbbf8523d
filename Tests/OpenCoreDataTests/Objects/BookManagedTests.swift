import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

// The Moody code of *Core Data* (objc.io), chapter 1 and the sample code's
// `Managed` protocol, almost verbatim. The classes are `BookMood` and
// `BookCountry` rather than `Mood` and `Country`, which the context tests use:
// managed object classes are registered by name.

struct BookColor: Codable, Equatable {
    var red, green, blue: Double
}

@ManagedEntity
final class BookMood: ManagedObject {
    @Managed fileprivate(set) var date: Date
    @Managed fileprivate(set) var colors: [BookColor]
    @Managed(inverse: "moods") fileprivate(set) var country: BookCountry?

    static func insert(into context: ManagedObjectContext, colors: [BookColor]) -> BookMood {
        let mood: BookMood = context.insertObject()
        mood.colors = colors
        mood.date = Date()
        return mood
    }
}

extension BookMood: Managed {
    static var defaultSortDescriptors: [CoreSortDescriptor] {
        return [CoreSortDescriptor(key: "date", ascending: false)]
    }
}

@ManagedEntity
final class BookCountry: ManagedObject {
    @Managed var numericISO3166Code: Int16
    @Managed(deleteRule: .cascade) var moods: Set<BookMood>
}

extension BookCountry: Managed {}

/// The book's `createMoodyContainer`, on the in-memory store.
func createMoodyContext() throws -> ManagedObjectContext {
    let model = try ManagedObjectModel(classes: [BookMood.self, BookCountry.self])
    let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(type: .inMemory)
    let context = ManagedObjectContext(concurrencyType: .mainQueue)
    context.persistentStoreCoordinator = coordinator
    return context
}

@Suite("The book's Managed protocol")
struct BookManagedTests {
    @Test("Insert moods, save, and fetch them with the sorted fetch request")
    func moody() throws {
        let managedObjectContext = try createMoodyContext()
        let red = BookColor(red: 1, green: 0, blue: 0)
        let older = BookMood.insert(into: managedObjectContext, colors: [red])
        older.date = Date(timeIntervalSinceNow: -3600)
        let newer = BookMood.insert(into: managedObjectContext, colors: [red, red])
        #expect(managedObjectContext.saveOrRollback())

        #expect(BookMood.entityName == "BookMood")
        let request = BookMood.sortedFetchRequest
        request.fetchBatchSize = 20
        request.returnsObjectsAsFaults = false
        let moods = try managedObjectContext.fetch(request)
        #expect(moods == [newer, older])
        #expect(moods.first?.colors == [red, red])
    }

    @Test("findOrCreate finds in memory, then in the store, else creates")
    func findOrCreate() throws {
        let context = try createMoodyContext()
        let predicate = try CorePredicate(format: "numericISO3166Code == %d", 250)
        let france = try BookCountry.findOrCreate(in: context, matching: predicate) { country in
            country.numericISO3166Code = 250
        }
        #expect(france.isInserted)
        let again = try BookCountry.findOrCreate(in: context, matching: predicate) { _ in
            Issue.record("must not create a second country")
        }
        #expect(again === france)
        #expect(BookCountry.materializedObject(in: context, matching: predicate) === france)
        #expect(context.saveOrRollback())

        let other = ManagedObjectContext(concurrencyType: .privateQueue)
        other.persistentStoreCoordinator = context.persistentStoreCoordinator
        #expect(BookCountry.materializedObject(in: other, matching: predicate) == nil)
        let fetched = try BookCountry.findOrFetch(in: other, matching: predicate)
        #expect(fetched?.numericISO3166Code == 250)
        #expect(fetched?.objectID == france.objectID)
        #expect(try BookCountry.fetch(in: other).count == 1)
        let none = try BookCountry.findOrFetch(in: other, matching: try CorePredicate(format: "numericISO3166Code == 1"))
        #expect(none == nil)
    }

    @Test("sortedFetchRequest(with:) filters; relationships are typed")
    func sortedWithPredicate() throws {
        let context = try createMoodyContext()
        let country = try BookCountry.findOrCreate(in: context, matching: try CorePredicate(format: "numericISO3166Code == 578")) {
            $0.numericISO3166Code = 578
        }
        let mood = BookMood.insert(into: context, colors: [])
        mood.country = country
        _ = BookMood.insert(into: context, colors: [])
        #expect(context.saveOrRollback())
        #expect(country.moods == [mood])
        let request = BookMood.sortedFetchRequest(with: try CorePredicate(format: "country == %@", country))
        #expect(try context.fetch(request) == [mood])
    }

    @Test("saveOrRollback rolls back a save that fails validation")
    func saveOrRollback() throws {
        let context = try createMoodyContext()
        let country: BookCountry = context.insertObject()   // numericISO3166Code is required
        #expect(country.numericISO3166Code == 0)
        #expect(context.saveOrRollback() == false)
        #expect(!context.hasChanges)
        #expect(context.insertedObjects.isEmpty)
    }
}
