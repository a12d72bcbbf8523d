import ArgumentParser
import Foundation
import OpenCoreData
import OpenCoreDataPredicates

/// `ocd demo`: the book's Moody app in a few steps, on an embedded SQLite store,
/// narrating what Core Data does at each one.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the Moody demo on an embedded SQLite store."
    )

    @Option(help: "Keep the store at this path (default: a temporary file).")
    var store: String?

    func run() async throws {
        do {
            try await Demo(storePath: store, output: CommandOutput.emitter()).run()
        } catch let error as CoreDataError {
            throw CommandFailure(error.description)
        }
    }
}

/// The demo's steps: the Moody app of *Core Data* (objc.io) — moods with a date
/// and colors, in countries on continents — shown through a fetched results
/// controller on the main context while the app inserts, deletes, undoes and
/// imports in the background.
struct Demo {
    let storePath: String?
    /// Where the narration goes (captured, so that main-queue callbacks write to
    /// the same place as the command).
    let output: @Sendable (String) -> Void

    /// The book's Moody model, declared in code: `Mood` (date, colors, rating) in a
    /// `Country`, countries on a `Continent`, both under the abstract
    /// `GeographicRegion`.
    static func model() throws -> ManagedObjectModel {
        ManagedObjectClasses.register(DemoMood.self, DemoCountry.self, DemoContinent.self, DemoRegion.self)
        return try ManagedObjectModel {
            Entity("GeographicRegion", className: "DemoRegion", abstract: true) {
                Attribute("numericISO3166Code", .integer16, optional: false, defaultValue: 0)
                Attribute("numberOfMoods", .integer64, optional: false, defaultValue: 0)
                Attribute("updatedAt", .date)
            }
            Entity("Continent", className: "DemoContinent", parent: "GeographicRegion") {
                Relationship("countries", to: "Country", inverse: "continent", toMany: true)
            }
            Entity("Country", className: "DemoCountry", parent: "GeographicRegion") {
                Relationship("continent", to: "Continent", inverse: "countries")
                Relationship("moods", to: "Mood", inverse: "country", toMany: true, deleteRule: .cascade)
            }
            Entity("Mood", className: "DemoMood") {
                Attribute("date", .date, optional: false)
                Attribute("colors", .transformable)
                Attribute("rating", .integer16, optional: false, defaultValue: 0, minValue: 0, maxValue: 5)
                Relationship("country", to: "Country", inverse: "moods")
                FetchIndex("byDate", "date", ascending: false)
            }
        }
    }

    static let countryNames: [Int: String] = [276: "Germany", 250: "France", 752: "Sweden", 380: "Italy"]
    static let start = Date(timeIntervalSinceReferenceDate: 780_000_000)   // 2025-09-19 18:40 UTC

    func step(_ text: String) { output("\n== " + text) }
    func say(_ text: String) { output("   " + text) }

    func run() async throws {
        let url: URL
        if let storePath {
            url = URL(fileURLWithPath: storePath)
        } else {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("Moody-\(UUID().uuidString).sqlite")
        }
        defer {
            if storePath == nil { try? PersistentStoreCoordinator(managedObjectModel: ManagedObjectModel()).destroyPersistentStore(at: url, type: .sqlite) }
        }

        // 1
        step("The stack: a container with a main context for the interface and a writing context")
        let model = try Demo.model()
        let dataAccess = try DataAccessLayer(sqliteStack: model, name: "Moody", storeURL: url)
        let main = dataAccess.mainContext
        let store = try requireStore(dataAccess)
        say("store \(url.lastPathComponent) in Core Data's own SQLite format, UUID \(store.identifier)")
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            say("entity \(entity.name)\(entity.isAbstract ? " (abstract)" : "")\(entity.superentity.map { " : \($0.name)" } ?? ""), version hash \(entity.versionHash.prefix(4).map { String(format: "%02x", $0) }.joined())…")
        }

        // 2
        step("A fetched results controller lists the moods by country, newest first")
        let request = FetchRequest<ManagedObject>(entityName: "Mood")
        // A key path through a relationship is a key string; one property, a typed key path.
        request.sortDescriptors = [CoreSortDescriptor(key: "country.numericISO3166Code"),
                                   try CoreSortDescriptor(SortDescriptor(\DemoMood.date, order: .reverse))]
        request.fetchBatchSize = 20
        let printer = ChangePrinter(output: output)
        let controller = try main.performAndWait {
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: main,
                                                      sectionNameKeyPath: "country.numericISO3166Code", cacheName: nil)
            controller.delegate = printer
            main.undoManager = CoreUndoManager()
            try controller.performFetch()
            return controller
        }
        say("performFetch: \(controller.sections?.count ?? 0) sections; from now on it reports every change as a table view applies it")

        // 3
        step("Inserting on the main context: temporary IDs, inverses, and the controller's report")
        let moods: [ManagedObject] = try main.performAndWait {
            let entities = main.persistentStoreCoordinator!.managedObjectModel.entitiesByName
            let europe = ManagedObject(entity: entities["Continent"]!, insertInto: main)
            europe.setValue(150, forKey: "numericISO3166Code")
            var countries: [ManagedObject] = []
            for code in [276, 250, 752] {
                let country = ManagedObject(entity: entities["Country"]!, insertInto: main)
                country.setValue(code, forKey: "numericISO3166Code")
                country.setValue(europe, forKey: "continent")      // europe.countries follows
                countries.append(country)
            }
            var moods: [ManagedObject] = []
            for index in 0..<6 {
                let mood = ManagedObject(entity: entities["Mood"]!, insertInto: main)
                mood.setValue(Demo.start.addingTimeInterval(Double(index) * 3600), forKey: "date")
                mood.setValue(index % 6, forKey: "rating")
                mood.setValue([AttributeValue.string("red"), .string("blue")], forKey: "colors")
                mood.setValue(countries[index % 3], forKey: "country")
                moods.append(mood)
            }
            say("inserted 1 continent, 3 countries, 6 moods; a mood's ID is temporary: \(moods[0].objectID)")
            say("europe.countries has \(europe.objects(forRelationship: "countries").count) members: inverses are maintained")
            main.processPendingChanges()          // the end of the event: the controller reports
            try main.save()
            say("saved in one transaction; the mood's ID is now permanent: \(moods[0].objectID)")
            return moods
        }
        printSections(controller)

        // 4
        step("Faulting and uniquing, in a fresh background context")
        let reader = dataAccess.container.newBackgroundContext()
        try reader.performAndWait {
            let fetch = try FetchRequest<DemoMood>(
                predicate: #Predicate { $0.rating >= 2 && $0.country?.numericISO3166Code == 250 },
                sortBy: [SortDescriptor(\.date, order: .reverse)])
            say("#Predicate { $0.rating >= 2 && $0.country?.numericISO3166Code == 250 }")
            say("is the predicate \(fetch.predicate?.predicateFormat ?? "") — run in SQL, one SELECT")
            let found = try reader.fetch(fetch)
            say("\(found.count) mood(s); the first is a fault: \(found.first?.isFault ?? false)")
            if let first = found.first {
                say("reading its rating (\(first.value(forKey: "rating") ?? "nil")) fired the fault: isFault = \(first.isFault)")
                if let country = first.value(forKey: "country") as? ManagedObject {
                    let again = try reader.existingObject(with: country.objectID)
                    say("uniquing: its country, fetched again by ID, is the same object: \(country === again)")
                }
            }
        }

        // 5
        step("Deleting a mood, and undoing it: the controller follows both")
        try main.performAndWait {
            main.delete(moods[5])
            main.processPendingChanges()
            say("undo")
            main.undo()
            main.processPendingChanges()
            try main.save()
        }

        // 6
        step("A background import: the writing context saves, the main context merges, the controller reports")
        let imported = try await dataAccess.writing { context in
            let entities = context.persistentStoreCoordinator!.managedObjectModel.entitiesByName
            let italy = ManagedObject(entity: entities["Country"]!, insertInto: context)
            italy.setValue(380, forKey: "numericISO3166Code")
            for index in 0..<2 {
                let mood = ManagedObject(entity: entities["Mood"]!, insertInto: context)
                mood.setValue(Demo.start.addingTimeInterval(Double(10 + index) * 3600), forKey: "date")
                mood.setValue(4, forKey: "rating")
                mood.setValue(italy, forKey: "country")
            }
            // And delete the oldest German mood.
            let german = FetchRequest<ManagedObject>(entityName: "Mood")
            german.predicate = try CorePredicate(format: "country.numericISO3166Code == 276")
            german.sortDescriptors = [CoreSortDescriptor(key: "date")]
            german.fetchLimit = 1
            if let oldest = try context.fetch(german).first { context.delete(oldest) }
            return context.insertedObjects.count
        }
        say("the writer saved \(imported) new objects and one deletion; the main context merged them")
        printSections(controller)

        // 7
        step("SQL debug output (OPENCOREDATA_SQL_DEBUG=1, or -com.apple.CoreData.SQLDebug 1)")
        try SQLDebug.withOutput(level: 1, to: output) {
            try reader.performAndWait {
                let fetch = try FetchRequest<DemoMood>(
                    predicate: #Predicate { $0.rating >= 2 && $0.country?.continent?.numericISO3166Code == 150 },
                    sortBy: [SortDescriptor(\.date, order: .reverse)])
                fetch.fetchLimit = 3
                let moods = try reader.fetch(fetch)
                say("→ the \(moods.count) latest moods rated 2 or more in Europe")
                let count = try reader.count(for: FetchRequest<ManagedObject>(entityName: "Mood"))
                say("→ \(count) moods in all")
            }
        }

        // 8
        step("Validation: a rating of 9 is refused, and nothing changes")
        try reader.performAndWait {
            let entity = reader.persistentStoreCoordinator!.managedObjectModel.entitiesByName["Mood"]!
            let bad = ManagedObject(entity: entity, insertInto: reader)
            bad.setValue(9, forKey: "rating")
            bad.setValue(Date(), forKey: "date")
            do {
                try reader.save()
            } catch let error as CoreDataError {
                say("error \(error.code.rawValue): \(error.message)")
                reader.rollback()
            }
            let stored = try reader.count(for: FetchRequest<ManagedObject>(entityName: "Mood"))
            say("after rollback: \(stored) moods, as before")
        }
        if storePath != nil { say("the store is kept at \(url.path): try `ocd store info \(url.path)`") }
    }

    private func requireStore(_ dataAccess: DataAccessLayer) throws -> any PersistentStore {
        guard let store = dataAccess.container.persistentStoreCoordinator.persistentStores.first else {
            throw CoreDataError(.persistentStoreOpen, "the demo store did not open")
        }
        return store
    }

    /// Prints the controller's sections, on the main context's queue.
    private func printSections(_ controller: FetchedResultsController<ManagedObject>) {
        controller.managedObjectContext.performAndWait {
            let sections = controller.sections ?? []
            let summary = sections.map { "\(Demo.countryName($0.name)) ×\($0.numberOfObjects)" }.joined(separator: ", ")
            say("the list now: \(summary)")
        }
    }

    static func countryName(_ sectionName: String) -> String {
        Int(sectionName).flatMap { countryNames[$0] } ?? sectionName
    }
}

/// The fetched results controller's delegate: prints each change as a table view
/// would apply it.
///
/// `@unchecked Sendable`: immutable; called only on the main context's queue.
final class ChangePrinter: FetchedResultsControllerDelegate, @unchecked Sendable {
    typealias Result = ManagedObject
    let output: @Sendable (String) -> Void
    private static let time: DateFormatter = {
        let formatter = DateFormatter()
        formatter.dateFormat = "HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }()

    init(output: @escaping @Sendable (String) -> Void) { self.output = output }

    func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) {
        output("   controller: will change")
    }

    func controller(_ controller: FetchedResultsController<ManagedObject>, didChange sectionInfo: FetchedResultsSectionInfo<ManagedObject>,
                    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType) {
        output("   controller:   \(type == .insert ? "insert" : "delete") section \(Demo.countryName(sectionInfo.name)) at \(sectionIndex)")
    }

    func controller(_ controller: FetchedResultsController<ManagedObject>, didChange object: ManagedObject,
                    at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {
        let date = (object.value(forKey: "date") as? Date).map { ChangePrinter.time.string(from: $0) } ?? "?"
        let place: String
        switch type {
        case .insert: place = "at \(Self.path(newIndexPath))"
        case .delete: place = "at \(Self.path(indexPath))"
        case .move: place = "from \(Self.path(indexPath)) to \(Self.path(newIndexPath))"
        case .update: place = "at \(Self.path(indexPath))"
        }
        output("   controller:     \(type) mood of \(date) \(place)")
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) {
        output("   controller: did change")
    }

    private static func path(_ indexPath: IndexPath?) -> String {
        guard let indexPath, indexPath.count == 2 else { return "-" }
        return "[\(indexPath[0]), \(indexPath[1])]"
    }
}

// The Moody model's classes: typed faces of its entities, for typed predicates
// and sort descriptors (`#Predicate<DemoMood> { $0.rating >= 2 }`).

@ManagedEntity("GeographicRegion", abstract: true)
class DemoRegion: ManagedObject {
    @Managed var numericISO3166Code: Int16
    @Managed var numberOfMoods: Int64
    @Managed var updatedAt: Date?
}

@ManagedEntity("Continent")
final class DemoContinent: DemoRegion {
    @Managed(inverse: "continent") var countries: Set<DemoCountry>
}

@ManagedEntity("Country")
final class DemoCountry: DemoRegion {
    @Managed(inverse: "countries") var continent: DemoContinent?
    @Managed(inverse: "country", deleteRule: .cascade) var moods: Set<DemoMood>
}

@ManagedEntity("Mood")
final class DemoMood: ManagedObject {
    @Managed var date: Date
    @Managed(default: Int16(0)) var rating: Int16
    @Managed(inverse: "moods") var country: DemoCountry?
}
