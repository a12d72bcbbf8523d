import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

/// The non-blocking `performBackgroundTask(_:)`.
func backgroundTask(_ container: PersistentContainer, _ block: @escaping @Sendable (ManagedObjectContext) -> Void) {
    container.performBackgroundTask(block)
}

@Suite("Persistent container")
struct PersistentContainerTests {
    func container(in folder: URL) throws -> PersistentContainer {
        let container = PersistentContainer(name: "Lists", managedObjectModel: try QueueModel.make())
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("nested/Lists.sqlite"))]
        return container
    }

    @Test("The container loads its stores, creating folders, and gives a view context and background contexts")
    func loadAndUse() async throws {
        let folder = try Fixtures.temporaryDirectory()
        let container = try container(in: folder)
        try await container.loadPersistentStores()
        #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("nested/Lists.sqlite").path))
        #expect(container.viewContext.concurrencyType == .mainQueue)

        let background = container.newBackgroundContext()
        #expect(background.concurrencyType == .privateQueue)
        #expect(background.persistentStoreCoordinator === container.persistentStoreCoordinator)

        let model = container.managedObjectModel
        try await container.performBackgroundTask { context in
            let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
            item.setValue("from the background", forKey: "name")
            try context.save()
        }
        let done = DispatchSemaphore(value: 0)
        backgroundTask(container) { context in
            let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context)
            item.setValue("from a closure", forKey: "name")
            try? context.save()
            done.signal()
        }
        done.wait()
        let names = try await container.viewContext.perform {
            try container.viewContext.itemsByName().keys.sorted()
        }
        #expect(names == ["from a closure", "from the background"])
    }

    @Test("loadPersistentStores calls the handler per description, also asynchronously, with errors for bad ones")
    func completionHandler() throws {
        let folder = try Fixtures.temporaryDirectory()
        let container = try container(in: folder)
        var async = PersistentStoreDescription(type: .inMemory)
        async.shouldAddStoreAsynchronously = true
        var missing = PersistentStoreDescription(url: folder.appendingPathComponent("absent.sqlite"))
        missing.isReadOnly = true
        container.persistentStoreDescriptions += [async, missing]
        let results = Lock<[String: String]>([:])
        let done = DispatchSemaphore(value: 0)
        container.loadPersistentStores { description, error in
            results.withLock { $0[description.url?.lastPathComponent ?? "memory"] = error.map { "\($0)" } ?? "ok" }
            if description.shouldAddStoreAsynchronously { done.signal() }
        }
        #expect(results.withLock { $0["Lists.sqlite"] } == "ok")
        #expect(results.withLock { $0["absent.sqlite"] }?.contains("read-only") == true)
        done.wait()
        #expect(results.withLock { $0["memory"] } == "ok")
        #expect(container.persistentStoreCoordinator.persistentStores.count == 2)
    }

    @Test("Descriptions keep their flags as Core Data's options and pass pragmas to SQLite")
    func descriptionOptions() async throws {
        var description = PersistentStoreDescription(url: URL(fileURLWithPath: "/tmp/x.sqlite"))
        #expect(description.shouldMigrateStoreAutomatically && description.shouldInferMappingModelAutomatically)
        description.isHistoryTrackingEnabled = true
        description.postsRemoteChangeNotifications = true
        description.isReadOnly = true
        description.timeout = 5
        description.sqlitePragmas = ["journal_mode": "WAL", "cache_size": "-4000"]
        #expect(description.options["NSPersistentHistoryTrackingKey"] == "1")
        #expect(description.options["NSPersistentStoreRemoteChangeNotificationPostOptionKey"] == "1")
        #expect(description.options["NSReadOnlyPersistentStoreOption"] == "1")
        #expect(description.options["pragma.cache_size"] == "-4000")
        #expect(description.sqlitePragmas == ["journal_mode": "WAL", "cache_size": "-4000"])
        #expect(description.timeout == 5)
        description.isReadOnly = false
        #expect(description.options["NSReadOnlyPersistentStoreOption"] == nil)

        // A pragma reaches the store; a malformed one is refused with an error.
        let folder = try Fixtures.temporaryDirectory()
        let container = try container(in: folder)
        container.persistentStoreDescriptions[0].sqlitePragmas = ["cache_size": "-4000"]
        try await container.loadPersistentStores()
        let bad = try self.container(in: try Fixtures.temporaryDirectory())
        bad.persistentStoreDescriptions[0].sqlitePragmas = ["cache_size; DROP TABLE ZITEM": "1"]
        await #expect(throws: CoreDataError.self) { try await bad.loadPersistentStores() }
    }

    @Test("A description's history-tracking flag reaches the store: background saves are recorded with their author and context")
    func historyTracking() async throws {
        let container = try container(in: try Fixtures.temporaryDirectory())
        container.persistentStoreDescriptions[0].isHistoryTrackingEnabled = true
        try await container.loadPersistentStores()
        let model = container.managedObjectModel
        try await container.performBackgroundTask { context in
            context.name = "importer"
            context.transactionAuthor = "sync"
            ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context).setValue("a", forKey: "name")
            try context.save()
        }
        let recorded = try await container.viewContext.perform {
            let transactions = try container.viewContext.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions ?? []
            return transactions.map { "\($0.author ?? "-")/\($0.contextName ?? "-")" }
        }
        #expect(recorded == ["sync/importer"])
    }

    @Test("init(name:) finds <name>.xcdatamodeld on a search path; a missing model is an error at loading, not a crash")
    func modelLookup() async throws {
        let folder = try Fixtures.temporaryDirectory()
        try FileManager.default.copyItem(at: Fixtures.moodyModel, to: folder.appendingPathComponent("Moody.xcdatamodeld"))
        let container = PersistentContainer(name: "Moody", searchPaths: [folder])
        #expect(container.managedObjectModel.entitiesByName["Mood"] != nil)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("Moody.sqlite"))]
        try await container.loadPersistentStores()

        let missing = PersistentContainer(name: "NoSuchModel", searchPaths: [folder])
        #expect(missing.managedObjectModel.entities.isEmpty)
        missing.persistentStoreDescriptions = [PersistentStoreDescription(type: .inMemory)]
        await #expect {
            try await missing.loadPersistentStores()
        } throws: { error in
            (error as? CoreDataError)?.code == .fileReadNoSuchFile && "\(error)".contains("NoSuchModel")
        }
    }

    @Test("The default directory follows XDG_DATA_HOME, and the default store is <name>.sqlite in it")
    func defaultDirectory() throws {
        #if os(Linux)
        let directory = PersistentContainer.defaultDirectoryURL()
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            #expect(directory.path == xdg)
        } else {
            #expect(directory.path.hasSuffix("/.local/share"))
        }
        #endif
        let container = PersistentContainer(name: "Lists", managedObjectModel: try QueueModel.make())
        #expect(container.persistentStoreDescriptions.first?.url
                == PersistentContainer.defaultDirectoryURL().appendingPathComponent("Lists.sqlite"))
    }

    @Test("A subclass moves the default directory")
    func subclassDirectory() throws {
        final class Moved: PersistentContainer, @unchecked Sendable {
            override class func defaultDirectoryURL() -> URL { URL(fileURLWithPath: "/srv/data", isDirectory: true) }
        }
        let container = Moved(name: "Lists", managedObjectModel: try QueueModel.make())
        #expect(container.persistentStoreDescriptions.first?.url?.path == "/srv/data/Lists.sqlite")
    }
}
