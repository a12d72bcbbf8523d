import Foundation
import OpenCoreDataPredicates
import Testing
@testable import OpenCoreData

/// Several processes write one store at once, as an app and its extensions do
/// on a SQLite file and as app servers do on a PostgreSQL database: each has its
/// own coordinator, they conflict on shared objects, and Core Data's optimistic
/// locking and merge policies keep every update.
@Suite("Processes writing one store", .serialized)
struct ProcessWritersTests {
    static let processes = 4
    static let saves = 25
    static let tallies = 3
    /// Each process's merge policy: one retries after the conflict error, the
    /// others merge property by property (each process changes a property of
    /// its own, so either side's trump keeps every update).
    static let policies: [MergePolicy] = [.error, .mergeByPropertyObjectTrump, .mergeByPropertyStoreTrump, .mergeByPropertyObjectTrump]

    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Tally", className: "ManagedObject") {
                Attribute("name", .string)
                Attribute("n0", .integer64, optional: false, defaultValue: 0)
                Attribute("n1", .integer64, optional: false, defaultValue: 0)
                Attribute("n2", .integer64, optional: false, defaultValue: 0)
                Attribute("n3", .integer64, optional: false, defaultValue: 0)
                Relationship("items", to: "Item", inverse: "tally", toMany: true, deleteRule: .cascade)
            }
            Entity("Item", className: "ManagedObject") {
                Attribute("label", .string)
                Relationship("tally", to: "Tally", inverse: "items")
            }
        }
    }

    /// History, and remote-change notifications: a SQLite store polls the file
    /// for other processes' saves; a PostgreSQL store always listens.
    static let options = [
        NSPersistentHistoryTrackingKey: "1",
        NSPersistentStoreRemoteChangeNotificationPostOptionKey: "1",
        SQLiteStore.Option.remoteChangePollInterval: "0.05",
    ]

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// One process: waits until every process has the store open, then saves
    /// `saves` times (tally `save % 3`'s counter of its own incremented, an item
    /// inserted); then waits until the store holds every process's saves and it
    /// has been told of other processes' saves by remote-change notifications.
    static func writer(store: StoreUnderTest, folder: String, process: Int) throws {
        let coordinator = try store.open(model())
        let notes = Lock(0)
        let observer = NotificationCenter.default.addObserver(forName: .persistentStoreRemoteChange, object: coordinator, queue: nil) { _ in
            notes.withLock { $0 += 1 }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        context.mergePolicy = policies[process]
        let item = coordinator.managedObjectModel.entitiesByName["Item"]!
        // Everyone open before anyone saves: each then sees the others' saves.
        _ = FileManager.default.createFile(atPath: folder + "/ready-\(process)", contents: nil)
        let deadline = Date().addingTimeInterval(120)
        while (try FileManager.default.contentsOfDirectory(atPath: folder)).filter({ $0.hasPrefix("ready-") }).count < processes {
            guard Date() < deadline else { throw Failure(description: "process \(process): the others never opened the store") }
            usleep(2_000)
        }
        var conflicts = 0
        for save in 0..<saves {
            while true {
                do {
                    try context.performAndWait {
                        let request = FetchRequest<ManagedObject>(entityName: "Tally")
                        request.predicate = try CorePredicate(format: "name == %@", "t\(save % tallies)")
                        let tally = try context.fetch(request)[0]
                        tally.setValue((tally.integer("n\(process)") ?? 0) + 1, forKey: "n\(process)")
                        let object = ManagedObject(entity: item, insertInto: context)
                        object.setValue("process \(process) save \(save)", forKey: "label")
                        object.setValue(tally, forKey: "tally")
                        try context.save()
                    }
                    break
                } catch let error as CoreDataError where error.code == .managedObjectMerge && conflicts < 1_000 {
                    conflicts += 1
                    context.performAndWait { context.rollback(); context.refreshAllObjects() }
                }
            }
            context.performAndWait { context.refreshAllObjects() }
        }
        let expected = saves * processes
        while try context.performAndWait({ try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")) }) < expected {
            guard Date() < deadline else { throw Failure(description: "process \(process): the store never held \(expected) items") }
            usleep(10_000)
        }
        // At least one notification for other processes' saves (a SQLite store
        // also posts one after each of its own).
        let own = store.kind == .sqlite ? saves : 0
        while notes.withLock({ $0 }) <= own {
            guard Date() < deadline else { throw Failure(description: "process \(process): no remote-change notification for the other processes' saves") }
            usleep(10_000)
        }
        try Data("\(conflicts) \(notes.withLock { $0 } - own)".utf8).write(to: URL(fileURLWithPath: folder + "/figures-\(process)"))
    }

    @Test("Four processes update shared objects under different merge policies: no update lost, every item kept, each told of the others' saves", arguments: StoreUnderTest.Kind.availableForTests)
    func fourWriters(_ kind: StoreUnderTest.Kind) async throws {
        let folder = try TestScratch.folder("writers")
        let store: StoreUnderTest
        switch kind {
        case .sqlite: store = .sqlite(folder.appendingPathComponent("Shared.sqlite").path, options: Self.options)
        case .postgreSQL:
            #if PostgreSQLTests
            store = try .postgreSQL(options: Self.options)
            #else
            return
            #endif
        }
        do {
            let coordinator = try store.open(Self.model())
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                for index in 0..<Self.tallies {
                    let tally = ManagedObject(entity: coordinator.managedObjectModel.entitiesByName["Tally"]!, insertInto: context)
                    tally.setValue("t\(index)", forKey: "name")
                }
                try context.save()
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for process in 0..<Self.processes {
                group.addTask {
                    await #expect(processExitsWith: .success) { [store = store as StoreUnderTest, folder = folder.path as String, process = process as Int] in
                        try ProcessWritersTests.writer(store: store, folder: folder, process: process)
                    }
                }
            }
        }
        // Each process's conflicts (retried after the error, for the one on `.error`)
        // and remote-change notifications beyond its own saves.
        let figures = (0..<Self.processes).map { process in
            (try? String(contentsOf: folder.appendingPathComponent("figures-\(process)"), encoding: .utf8)) ?? "?"
        }
        print("Processes writing one store (\(store.kind)): conflicts and remote notifications per process: \(figures)")
        let coordinator = try store.open(Self.model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let tallies = try context.fetch(FetchRequest<ManagedObject>(entityName: "Tally"))
            #expect(tallies.count == Self.tallies)
            for tally in tallies {
                let index = Int((tally.value(forKey: "name") as? String ?? "t-1").dropFirst()) ?? -1
                let expected = (0..<Self.saves).filter { $0 % Self.tallies == index }.count
                for process in 0..<Self.processes {
                    #expect(tally.integer("n\(process)") == Int64(expected), "tally \(index), process \(process)")
                }
                #expect(tally.objects(forRelationship: "items").count == expected * Self.processes)
            }
            let labels = try context.fetch(FetchRequest<ManagedObject>(entityName: "Item")).compactMap { $0.value(forKey: "label") as? String }
            #expect(labels.count == Self.saves * Self.processes)
            #expect(Set(labels).count == labels.count)
            let history = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions ?? []
            #expect(history.count == Self.saves * Self.processes + 1)
        }
    }
}

private extension ManagedObject {
    /// An integer attribute's value (key-value coding hands integers out as `Int`).
    func integer(_ key: String) -> Int64? {
        (value(forKey: key) as? Int).map(Int64.init)
    }
}
