import Foundation
import GRDB
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Real Core Data stores open and read correctly")
struct FixtureStoreTests {
    /// Opens a copy of a fixture store with `model` and reads every object of every
    /// entity, comparing counts and values with the raw SQL rows.
    func readEverything(store: String, model: ManagedObjectModel) throws -> Int {
        let url = try Fixtures.copyStore(store)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let sqlite = try #require(try coordinator.addPersistentStore(type: .sqlite, at: url) as? SQLiteStore)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let raw = try DatabaseQueue(path: url.path)
        var objects = 0
        for entity in model.entities {
            let request = FetchRequest<ManagedObject>(entity: entity)
            request.includesSubentities = false
            let fetched = try context.fetch(request)
            let table = try #require(sqlite.schema.table(for: entity))
            let number = try #require(sqlite.schema.entityNumber(entity))
            let rows = try raw.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM \(table) WHERE Z_ENT = ? ORDER BY Z_PK", arguments: [number])
            }
            #expect(fetched.count == rows.count, "\(store) \(entity.name)")
            let byPK = Dictionary(uniqueKeysWithValues: fetched.compactMap { object in object.objectID.primaryKey.map { ($0, object) } })
            for row in rows {
                let pk: Int64 = row["Z_PK"]
                let object = try #require(byPK[pk])
                for case let attribute as AttributeDescription in entity.allProperties where !attribute.isTransient {
                    guard let column = sqlite.schema.column(for: attribute, in: entity) else { continue }
                    let stored = row[column] as DatabaseValue
                    let value = object.attributeValue(forKey: attribute.name)
                    #expect(stored.isNull == value.isNull, "\(entity.name).\(attribute.name) of p\(pk)")
                    switch attribute.attributeType {
                    case .date:
                        if let seconds = Double.fromDatabaseValue(stored) {
                            #expect(value == .date(Date(timeIntervalSinceReferenceDate: seconds)))
                        }
                    case .string:
                        #expect(value.stringValue == String.fromDatabaseValue(stored))
                    case .integer16, .integer32, .integer64:
                        #expect(value.int64Value == Int64.fromDatabaseValue(stored))
                    default:
                        break
                    }
                }
                for case let relationship as RelationshipDescription in entity.allProperties where !relationship.isToMany {
                    guard let column = sqlite.schema.column(for: relationship, in: entity) else { continue }
                    let key = Int64.fromDatabaseValue(row[column] as DatabaseValue)
                    let destination = object.value(forKey: relationship.name) as? ManagedObject
                    #expect(destination?.objectID.primaryKey == key, "\(entity.name).\(relationship.name) of p\(pk)")
                }
                objects += 1
            }
        }
        return objects
    }

    @Test("Every fixture store opens with its model; every object and value reads back as stored",
          arguments: Fixtures.storesWithModels.map(\.store))
    func withModel(store: String) throws {
        let entry = try #require(Fixtures.storesWithModels.first { $0.store == store })
        let model = try XcodeDataModel(contentsOf: Fixtures.url(entry.model)).model(forVersion: entry.version)
        let count = try readEverything(store: store, model: model)
        #expect(count >= 0)
    }

    @Test("Stores with a model cache open without their model file",
          arguments: Fixtures.storesWithModels.map(\.store).filter { !$0.hasSuffix("Model1.sqlite") })
    func withoutModel(store: String) throws {
        let url = try Fixtures.copyStore(store)
        let model = try SQLiteStore.storedModel(at: url)
        _ = try readEverything(store: store, model: model)
    }

    @Test("A store without a model cache says so; a wrong model is refused with 134100 naming entities")
    func refusals() throws {
        let old = try Fixtures.copyStore("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite")
        #expect { try SQLiteStore.storedModel(at: old) } throws: { ($0 as? CoreDataError)?.code == .migrationMissingSourceModel }
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        let model = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 3")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        do {
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            Issue.record("expected 134100")
        } catch let error as CoreDataError {
            #expect(error.code == .persistentStoreIncompatibleVersionHash)
            #expect(error.message.contains("entity '"))
        }
    }

    @Test("The Moody 5 store: moods with dates, ratings and countries; a new save round-trips and opens again")
    func moodyRoundTrip() throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody")
        let model = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let moods = try context.fetch(FetchRequest<ManagedObject>(entityName: "Mood"))
        let before = moods.count
        let countries = try context.fetch(FetchRequest<ManagedObject>(entityName: "Country"))
        let mood = ManagedObject(entity: try #require(model.entitiesByName["Mood"]), insertInto: context)
        mood.setValue(Date(timeIntervalSinceReferenceDate: 600_000_000), forKey: "date")
        mood.setValue(3, forKey: "rating")
        mood.setValue(Data([1, 2, 3]), forKey: "colors")
        if let country = countries.first { mood.setValue(country, forKey: "country") }
        try context.save()
        #expect(mood.objectID.primaryKey.map { $0 > Int64(before) } == true)

        let reopened = PersistentStoreCoordinator(managedObjectModel: try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5"))
        try reopened.addPersistentStore(type: .sqlite, at: url)
        let other = ManagedObjectContext(concurrencyType: .mainQueue)
        other.persistentStoreCoordinator = reopened
        let request = FetchRequest<ManagedObject>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "rating == 3 AND date == %@", Date(timeIntervalSinceReferenceDate: 600_000_000))
        let found = try other.fetch(request)
        #expect(found.count == 1)
        #expect(found.first?.value(forKey: "colors") as? Data == Data([1, 2, 3]))
        #expect(try other.count(for: FetchRequest<ManagedObject>(entityName: "Mood")) == before + 1)
    }
}
