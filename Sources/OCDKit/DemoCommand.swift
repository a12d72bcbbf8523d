import ArgumentParser
import Foundation
import OpenCoreData
import OpenCoreDataPredicates

/// `ocd demo`: the book's Moody app in a few steps, on an embedded SQLite store,
/// narrating what Core Data does at each one.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the Moody demo on an embedded SQLite store."
    )

    @Option(help: "Keep the store at this path (default: a temporary file).")
    var store: String?

    func run() throws {
        do {
            try Demo(storePath: store).run()
        } catch let error as CoreDataError {
            throw CommandFailure(error.description)
        }
    }
}

/// The demo's steps.
struct Demo {
    let storePath: String?

    /// The book's Moody model, declared in code.
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("GeographicRegion", abstract: true) {
                Attribute("numericISO3166Code", .integer16, optional: false, defaultValue: 0)
                Attribute("numberOfMoods", .integer64, optional: false, defaultValue: 0)
                Attribute("updatedAt", .date)
            }
            Entity("Continent", parent: "GeographicRegion") {
                Relationship("countries", to: "Country", inverse: "continent", toMany: true)
            }
            Entity("Country", parent: "GeographicRegion") {
                Relationship("continent", to: "Continent", inverse: "countries")
                Relationship("moods", to: "Mood", inverse: "country", toMany: true, deleteRule: .cascade)
            }
            Entity("Mood") {
                Attribute("date", .date, optional: false)
                Attribute("colors", .transformable)
                Attribute("rating", .integer16, optional: false, defaultValue: 0, minValue: 0, maxValue: 5)
                Relationship("country", to: "Country", inverse: "moods")
                FetchIndex("byDate", "date", ascending: false)
            }
        }
    }

    func step(_ text: String) { emit("\n== " + text) }
    func say(_ text: String) { emit("   " + text) }

    func run() throws {
        let url: URL
        if let storePath {
            url = URL(fileURLWithPath: storePath)
        } else {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("Moody-\(UUID().uuidString).sqlite")
        }
        defer {
            if storePath == nil {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
            }
        }

        step("The stack: model → coordinator → SQLite store → context")
        let model = try Demo.model()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let sqlite = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        context.undoManager = CoreUndoManager()
        say("store \(url.lastPathComponent), UUID \(sqlite.identifier), \(model.entities.count) entities, in Core Data's own SQLite format")
        for entity in model.entities {
            say("\(entity.name) version hash \(entity.versionHash.prefix(4).map { String(format: "%02x", $0) }.joined())…")
        }

        step("Inserting: new objects have temporary IDs until they are saved")
        let entities = model.entitiesByName
        guard let continentEntity = entities["Continent"], let countryEntity = entities["Country"], let moodEntity = entities["Mood"] else {
            throw CoreDataError(.coreData, "the demo model is missing an entity")
        }
        let europe = ManagedObject(entity: continentEntity, insertInto: context)
        europe.setValue(150, forKey: "numericISO3166Code")
        var countries: [ManagedObject] = []
        for code in [276, 250, 752] {
            let country = ManagedObject(entity: countryEntity, insertInto: context)
            country.setValue(code, forKey: "numericISO3166Code")
            country.setValue(europe, forKey: "continent")          // the inverse, europe.countries, follows
            countries.append(country)
        }
        let start = Date(timeIntervalSinceReferenceDate: 780_000_000)
        for index in 0..<9 {
            let mood = ManagedObject(entity: moodEntity, insertInto: context)
            mood.setValue(start.addingTimeInterval(Double(index) * 3600), forKey: "date")
            mood.setValue(index % 6, forKey: "rating")
            mood.setValue(["red", "blue"].map { AttributeValue.string($0) }, forKey: "colors")
            mood.setValue(countries[index % 3], forKey: "country")
        }
        say("inserted: \(context.insertedObjects.count) objects; one mood's ID: \(context.insertedObjects.first { $0.entity.name == "Mood" }?.objectID.description ?? "")")
        say("europe.countries has \(europe.objects(forRelationship: "countries").count) members: inverses are maintained")

        step("Saving: validation, then one transaction; IDs become permanent")
        try context.save()
        say("saved; a mood's ID now: \(countries[0].objects(forRelationship: "moods").first?.objectID.description ?? "")")

        step("Fetching in a fresh context: faults until a value is read, one object per record")
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = coordinator
        let request = FetchRequest<ManagedObject>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "rating >= %d AND country.numericISO3166Code == %d", 2, 276)
        request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
        say("predicate: \(request.predicate?.predicateFormat ?? "")")
        let moods = try reader.fetch(request)
        say("\(moods.count) moods; first is a fault: \(moods.first?.isFault ?? false)")
        if let first = moods.first {
            say("reading its rating (\(first.value(forKey: "rating") ?? "nil")) fired the fault: isFault = \(first.isFault)")
            let country = first.value(forKey: "country") as? ManagedObject
            let again = try reader.existingObject(with: try requireID(country))
            say("uniquing: the country reached through the relationship is the registered one: \(country === again)")
        }

        step("Deleting with a cascade rule, and undoing it")
        context.delete(countries[2])
        context.processPendingChanges()
        say("deleting country 752 also deleted its moods: \(context.deletedObjects.count) objects marked deleted")
        context.undo()
        say("undo: \(context.deletedObjects.count) objects marked deleted, \(countries[2].objects(forRelationship: "moods").count) moods back")
        context.delete(countries[2])
        try context.save()
        let remaining = try reader.count(for: FetchRequest<ManagedObject>(entityName: "Mood"))
        say("deleted and saved: \(remaining) moods remain in the store")

        step("Validation: a rating of 9 is refused, and the store is unchanged")
        let bad = ManagedObject(entity: moodEntity, insertInto: context)
        bad.setValue(9, forKey: "rating")
        bad.setValue(Date(), forKey: "date")
        do {
            try context.save()
        } catch let error as CoreDataError {
            say("error \(error.code.rawValue): \(error.message)")
            context.rollback()
        }
        say("after rollback: \(try reader.count(for: FetchRequest<ManagedObject>(entityName: "Mood"))) moods; try OPENCOREDATA_SQL_DEBUG=1 to see the SQL")
        if storePath != nil { say("the store is kept at \(url.path): try `ocd store info \(url.path)`") }
    }

    private func requireID(_ object: ManagedObject?) throws -> ObjectID {
        guard let object else { throw CoreDataError(.coreData, "the mood has no country") }
        return object.objectID
    }
}
