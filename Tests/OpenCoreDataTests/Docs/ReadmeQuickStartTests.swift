import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

// The README's examples, as written, with two changes: the class is `ReadmeMood`
// (managed object classes are registered by name, and this module has a `Mood`),
// and the stores are in a scratch folder (a copy of the objc.io Moody fixture store
// for the app's store) rather than in ~/.local/share or the working directory.
// Statements the README has are marked `// README`; the rest are the checks.
@ManagedEntity final class ReadmeMood: ManagedObject {
    @Managed var date: Date
    @Managed(default: Int16(0)) var rating: Int16
}

@Suite("The README's examples run as written")
struct ReadmeQuickStartTests {
    @Test("Quick start: a container, a background write, a fetch; then the data access layer")
    func quickStart() async throws {
        let folder = try TestScratch.folder("readme")
        // README
        let model = try ManagedObjectModel(classes: [ReadmeMood.self])
        let container = PersistentContainer(name: "Moody", managedObjectModel: model)
        // (not in the README: the store goes to the scratch folder)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("Moody.sqlite"))]
        // README
        try await container.loadPersistentStores()
        container.viewContext.automaticallyMergesChangesFromParent = true

        try await container.performBackgroundTask { context in
            let mood = ReadmeMood(context: context)
            mood.date = Date()
            mood.rating = 4
            try context.save()
        }

        let ratings = try await container.viewContext.perform {
            let request = try FetchRequest<ReadmeMood>(predicate: #Predicate { $0.rating >= 3 },
                                                       sortBy: [SortDescriptor(\.date, order: .reverse)])
            return try container.viewContext.fetch(request).map(\.rating)
        }
        #expect(ratings == [4])

        // README, with the file in the scratch folder
        let url = folder.appendingPathComponent("Moods.sqlite")
        // README
        let dataAccess = try DataAccessLayer(sqliteStack: model, storeURL: url)
        dataAccess.writeSync { context in
            ReadmeMood.create(in: context).date = Date()
        }
        dataAccess.read { context in
            print(try ReadmeMood.count(in: context))
        }

        var count = -1
        dataAccess.read { context in
            count = try ReadmeMood.count(in: context)
        }
        #expect(count == 1)
        #expect(FileManager.default.fileExists(atPath: url.path))
    }

    @Test("An app's store opens without its model file, read-only, and answers a fetch")
    func appStoreWithoutItsModel() throws {
        // README, with a copy of a store Core Data wrote (objc.io's Moody app)
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody.moody")
        // README
        let model = try SQLiteStore.storedModel(at: url)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.readOnly: "1"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let dates = try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Mood")
            request.predicate = try CorePredicate(format: "country.numericISO3166Code == %d", 710)
            return try context.fetch(request).compactMap { $0.value(forKey: "date") as? Date }
        }

        // The fixture has 4 moods, 2 of them in South Africa (710).
        #expect(dates.count == 2)
        #expect(model.entitiesByName["Mood"] != nil)
    }

    @Test("Predicates on their own, on a dictionary")
    func predicatesOnTheirOwn() throws {
        // README
        let predicate = try CorePredicate(format: "name BEGINSWITH[cd] %@ AND age > %d", "sa", 30)
        print(predicate.predicateFormat)
        print(try predicate.evaluate(with: ["name": "Saint-Étienne", "age": 41] as [String: Any]))

        #expect(predicate.predicateFormat == #"name BEGINSWITH[cd] "sa" AND age > 30"#)
        #expect(try predicate.evaluate(with: ["name": "Saint-Étienne", "age": 41] as [String: Any]))
        #expect(try !predicate.evaluate(with: ["name": "Saint-Étienne", "age": 29] as [String: Any]))
    }
}
