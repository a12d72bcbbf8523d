import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

// The README's quick start, as written (the class is `ReadmeMood`: managed object
// classes are registered by name; the store goes to a temporary folder rather
// than the default location).
@ManagedEntity final class ReadmeMood: ManagedObject {
    @Managed var date: Date
    @Managed(default: Int16(0)) var rating: Int16
}

@Suite("The README's quick start runs as written")
struct ReadmeQuickStartTests {
    @Test func quickStart() async throws {
        let folder = try TestScratch.folder("readme")
        let model = try ManagedObjectModel(classes: [ReadmeMood.self])
        let container = PersistentContainer(name: "Moody", managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("Moody.sqlite"))]
        try await container.loadPersistentStores()
        container.viewContext.automaticallyMergesChangesFromParent = true

        try await container.performBackgroundTask { context in
            let mood = ReadmeMood(context: context)
            mood.date = Date()
            mood.rating = 4
            try context.save()
        }

        let ratings = try await container.viewContext.perform {
            let request = ReadmeMood.fetchRequest()
            request.predicate = try CorePredicate(format: "rating >= %d", 3)
            request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
            return try container.viewContext.fetch(request).map(\.rating)
        }
        #expect(ratings == [4])

        let url = folder.appendingPathComponent("Other.sqlite")
        let dataAccess = try DataAccessLayer(sqliteStack: model, storeURL: url)
        dataAccess.writeSync { context in
            ReadmeMood.create(in: context).date = Date()
        }
        var count = -1
        dataAccess.read { context in
            count = try ReadmeMood.count(in: context)
        }
        #expect(count == 1)

        let fetched = try container.viewContext.performAndWait {
            let request = ReadmeMood.fetchRequest()
            request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
            let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: container.viewContext,
                                                      sectionNameKeyPath: nil, cacheName: nil)
            try controller.performFetch()
            return controller.fetchedObjects?.count
        }
        #expect(fetched == 1)
    }
}
