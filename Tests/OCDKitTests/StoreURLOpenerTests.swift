import Foundation
import Testing
@testable import OCDKit
@testable import OpenCoreData

/// `ocd` opens stores named by URL through the openers its executable installs
/// (`ocd` built with the PostgreSQL trait installs PostgreSQL's); OCDKit itself
/// links none.
@Suite("ocd's store URL openers")
struct StoreURLOpenerTests {
    /// A model of one entity, `Note(text)`.
    static func model() -> ManagedObjectModel {
        let note = EntityDescription(name: "Note")
        note.properties = [AttributeDescription(name: "text", type: .string)]
        let model = ManagedObjectModel()
        model.entities = [note]
        return model
    }

    @Test("A store URL with an installed opener's scheme opens through it: ocd store info and fetch read it; the --model given reaches the opener")
    func installedOpener() throws {
        let folder = try TestScratch.folder("opener")
        let file = folder.appendingPathComponent("Notes.sqlite")
        let model = Self.model()
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: file)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                for text in ["one", "two", "three"] {
                    ManagedObject(entity: model.entitiesByName["Note"]!, insertInto: context).setValue(text, forKey: "text")
                }
                try context.save()
            }
        }
        let opened = Lock<[String]>([])
        // The scheme's store is a SQLite file named by the URL's path: what matters
        // is that ocd reaches it through the opener, with what it was given.
        OCD.install(StoreURLOpener(schemes: ["OCDTEST"], storeName: "Test") { location, model in
            opened.withLock { $0.append(location + (model == nil ? "" : " +model")) }
            let path = String(location.dropFirst("ocdtest://".count))
            let reading = try model ?? SQLiteStore.readingModel(at: URL(fileURLWithPath: path)).model
            let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: reading)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: [SQLiteStore.Option.readOnly: "1"])
            let context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.persistentStoreCoordinator = coordinator
            return (context, store)
        })
        let location = "ocdtest://" + file.path
        #expect(storeURLScheme(location) == "ocdtest")
        #expect(storeURLScheme(file.path) == nil)

        let info = try #require(try JSONSerialization.jsonObject(with: Data(runOCD(["store", "info", location, "--json"]).utf8)) as? [String: Any])
        let entities = try #require(info["entities"] as? [[String: Any]])
        #expect(entities.first { $0["name"] as? String == "Note" }?["rows"] as? Int == 3)
        let fetched = try #require(try JSONSerialization.jsonObject(
            with: Data(runOCD(["fetch", location, "--entity", "Note", "--predicate", "text BEGINSWITH 't'", "--json"]).utf8)) as? [[String: Any]])
        #expect(Set(fetched.compactMap { ($0["attributes"] as? [String: Any])?["text"] as? String }) == ["two", "three"])
        #expect(opened.withLock { $0 } == [location, location])
        // A command that reads store files refuses a URL instead of looking for a file by that name.
        #expect(throws: (any Error).self) { try runOCD(["store", "dump", location]) }
    }

    @Test("A PostgreSQL URL without the PostgreSQL opener is an error naming the trait that builds ocd with it, never a file lookup")
    func missingOpenerSaysWhichTrait() {
        #expect(storeURLScheme("postgres://me@localhost:5432/app") == "postgres")
        #expect(storeURLScheme("PostgreSQL://me@localhost/app") == "postgresql")
        let failure = missingOpener("postgres://me@localhost:5432/app", scheme: "postgres")
        #expect(failure.description.contains("PostgreSQL store"))
        #expect(failure.description.contains("swift run --traits PostgreSQL ocd"))
        #expect(missingOpener("nope://x", scheme: "nope").description.contains("nope://"))
    }
}
