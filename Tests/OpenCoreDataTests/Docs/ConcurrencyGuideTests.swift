import Foundation
import Testing
import OpenCoreData

// The first program of Sources/OpenCoreData/OpenCoreData.docc/ContextsAndConcurrency.md
// (class names prefixed to keep them apart from other tests' classes).
@ManagedEntity final class GuideEntry: ManagedObject {
    @Managed var title: String
    @Managed(default: Int64(0)) var views: Int64
}

@Suite("The concurrency guide's first program runs as written")
struct ConcurrencyGuideTests {
    @Test func firstProgram() async throws {
        let model = try ManagedObjectModel(classes: [GuideEntry.self])
        let container = PersistentContainer(name: "Journal", managedObjectModel: model)
        // The one change: a temporary folder instead of ~/.local/share.
        container.persistentStoreDescriptions = [
            PersistentStoreDescription(url: try Fixtures.temporaryDirectory().appendingPathComponent("Journal.sqlite")),
        ]
        try await container.loadPersistentStores()
        let viewContext = container.viewContext
        viewContext.automaticallyMergesChangesFromParent = true

        let id = try await container.performBackgroundTask { context in
            let entry = GuideEntry(context: context)
            entry.title = "Hello"
            try context.save()
            return entry.objectID
        }

        let title = await viewContext.perform {
            (viewContext.object(with: id) as? GuideEntry)?.title
        }
        #expect(title == "Hello")

        try await container.performBackgroundTask { context in
            (try context.existingObject(with: id) as? GuideEntry)?.views += 1
            try context.save()
        }
        let views = await viewContext.perform(schedule: .enqueued) {
            (viewContext.object(with: id) as? GuideEntry)?.views
        }
        #expect(views == 1)
    }
}
