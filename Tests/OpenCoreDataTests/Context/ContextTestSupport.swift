import Foundation
@testable import OpenCoreData
#if PostgreSQLTests
import OpenCoreDataPostgreSQL
#endif
import OpenCoreDataPredicates

/// Subclasses used by the context tests, with lifecycle hooks that record calls.
final class Mood: ManagedObject {
    nonisolated(unsafe) static var deinitCount = 0
    var awakeFromInsertCalls = 0
    var awakeFromFetchCalls = 0
    var willSaveCalls = 0
    var didSaveCalls = 0
    var prepareForDeletionCalls = 0

    override func awakeFromInsert() {
        super.awakeFromInsert()
        awakeFromInsertCalls += 1
        setPrimitiveValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "date")
    }
    override func awakeFromFetch() { super.awakeFromFetch(); awakeFromFetchCalls += 1 }
    override func willSave() { super.willSave(); willSaveCalls += 1 }
    override func didSave() { super.didSave(); didSaveCalls += 1 }
    override func prepareForDeletion() { super.prepareForDeletion(); prepareForDeletionCalls += 1 }
    override func validateValue(_ value: inout Any?, forKey key: String) throws {
        if key == "creatorID", let text = value as? String, text == "forbidden" {
            throw CoreDataError(.managedObjectValidation, "creatorID must not be 'forbidden'", key: key)
        }
    }
    deinit { Mood.deinitCount += 1 }
}

final class Country: ManagedObject {}
final class Continent: ManagedObject {}

/// A stack on the in-memory store: the book's Moody model plus a few entities for
/// relationship rules.
struct TestStack {
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator
    let context: ManagedObjectContext

    /// A stack on a store of `storeType`: the behaviour tests run unchanged on every
    /// store kind.
    init(undo: Bool = false, storeType: PersistentStoreType = .inMemory) throws {
        ManagedObjectClasses.register(Mood.self, Country.self, Continent.self)
        model = try ManagedObjectModel {
            Entity("GeographicRegion", abstract: true) {
                Attribute("numericISO3166Code", .integer16, optional: false, defaultValue: 0)
                Attribute("numberOfMoods", .integer64, optional: false, defaultValue: 0)
                Attribute("updatedAt", .date)
            }
            Entity("Country", parent: "GeographicRegion") {
                Relationship("moods", to: "Mood", inverse: "country", toMany: true, deleteRule: .cascade)
                Relationship("continent", to: "Continent", inverse: "countries")
            }
            Entity("Continent", parent: "GeographicRegion") {
                Relationship("countries", to: "Country", inverse: "continent", toMany: true, deleteRule: .deny)
            }
            Entity("Mood") {
                Attribute("date", .date, optional: false)
                Attribute("rating", .integer16, optional: false, defaultValue: 0, minValue: 0, maxValue: 5)
                Attribute("creatorID", .string, maxValue: 10, regularExpression: "[a-z]*")
                Attribute("colors", .transformable)
                Attribute("scratch", .string, transient: true)
                Relationship("country", to: "Country", inverse: "moods")
                Relationship("tags", to: "Tag", inverse: "moods", toMany: true)
            }
            Entity("Tag", className: "ManagedObject") {
                Attribute("name", .string, optional: false)
                Relationship("moods", to: "Mood", inverse: "tags", toMany: true)
                Relationship("ordered", to: "Tag", inverse: "orderedBy", toMany: true, ordered: true)
                Relationship("orderedBy", to: "Tag", inverse: "ordered")
            }
        }
        (coordinator, _) = try Fixtures.coordinator(for: model, storeType: storeType)
        context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        if undo { context.undoManager = CoreUndoManager() }
    }

    func newContext() -> ManagedObjectContext {
        let other = ManagedObjectContext(concurrencyType: .privateQueue)
        other.persistentStoreCoordinator = coordinator
        return other
    }

    func mood(rating: Int = 3, in context: ManagedObjectContext? = nil) -> Mood {
        let mood = Mood(context: context ?? self.context)
        mood.setValue(rating, forKey: "rating")
        return mood
    }

    func tag(_ name: String, in context: ManagedObjectContext? = nil) -> ManagedObject {
        let entity = model.entitiesByName["Tag"]!
        let tag = ManagedObject(entity: entity, insertInto: context ?? self.context)
        tag.setValue(name, forKey: "name")
        return tag
    }
}

/// The store kinds every behaviour test runs on: PostgreSQL's when a server is
/// available (see ``PostgreSQLTestServer``).
#if PostgreSQLTests
let allStoreTypes: [PersistentStoreType] = [.inMemory, .sqlite] + (PostgreSQLTestServer.isAvailable ? [.postgreSQL] : [])
#else
let allStoreTypes: [PersistentStoreType] = [.inMemory, .sqlite]
#endif
