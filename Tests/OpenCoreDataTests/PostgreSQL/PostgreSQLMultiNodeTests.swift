#if PostgreSQLTests
import Foundation
import OpenCoreDataPredicates
import OpenCoreDataPostgreSQL
import Testing
@testable import OpenCoreData

/// Several app servers on one database, as processes: each has its own
/// coordinator and contexts on the same PostgreSQL store.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable), .serialized)
struct PostgreSQLMultiNodeTests {
    /// Saves each process makes: each increments one of three shared counters
    /// and inserts one item.
    static let saves = 30
    static let nodes = 4

    static func model() throws -> ManagedObjectModel { try PostgreSQLStoreTests.model() }

    static func coordinator(url: String, schema: String) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        try coordinator.addPersistentStore(type: .postgreSQL, at: URL(string: url)!,
                                           options: [PostgreSQLStore.Option.schema: schema])
        return coordinator
    }

    struct NodeFailure: Error, CustomStringConvertible { var description: String }

    /// The sum of the counters and the number of items, read from the database by
    /// a new context.
    static func totals(_ coordinator: PersistentStoreCoordinator) throws -> (sum: Int, items: Int) {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            let counters = try context.fetch(FetchRequest<ManagedObject>(entityName: "Counter"))
            let sum = counters.reduce(0) { $0 + ($1.value(forKey: "value") as? Int ?? 0) }
            return (sum, try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")))
        }
    }

    /// One server: `saves` saves, each retried after an optimistic-locking
    /// conflict; then its view context, which merges other servers' changes by
    /// itself, must show every server's increments.
    static func runNode(url: String, schema: String, node: Int) throws {
        let coordinator = try coordinator(url: url, schema: schema)
        let view = ManagedObjectContext(concurrencyType: .privateQueue)
        view.persistentStoreCoordinator = coordinator
        view.automaticallyMergesChangesFromParent = true
        let held = try view.performAndWait { try view.fetch(FetchRequest<ManagedObject>(entityName: "Counter")) }
        let worker = ManagedObjectContext(concurrencyType: .privateQueue)
        worker.persistentStoreCoordinator = coordinator
        let item = coordinator.managedObjectModel.entitiesByName["Item"]!
        for save in 0..<saves {
            var attempts = 0
            while true {
                attempts += 1
                do {
                    try worker.performAndWait {
                        let request = FetchRequest<ManagedObject>(entityName: "Counter")
                        request.predicate = try CorePredicate(format: "name == %@", "c\((save + node) % 3)")
                        let counter = try worker.fetch(request)[0]
                        counter.setValue((counter.value(forKey: "value") as? Int ?? 0) + 1, forKey: "value")
                        let object = ManagedObject(entity: item, insertInto: worker)
                        object.setValue("node \(node) save \(save)", forKey: "label")
                        object.setValue(counter, forKey: "counter")
                        try worker.save()
                    }
                    break
                } catch let error as CoreDataError where error.code == .managedObjectMerge && attempts < 500 {
                    worker.performAndWait { worker.rollback(); worker.refreshAllObjects() }
                }
            }
        }
        let expected = saves * nodes
        let deadline = Date().addingTimeInterval(60)
        while try totals(coordinator).sum < expected {
            guard Date() < deadline else { throw NodeFailure(description: "node \(node): the database never reached \(expected)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
        // The view context's objects were never refetched: merges brought them up to date.
        while view.performAndWait({ held.reduce(0) { $0 + ($1.value(forKey: "value") as? Int ?? 0) } }) != expected {
            guard Date() < deadline else {
                let seen = view.performAndWait { held.map { $0.value(forKey: "value") as? Int ?? -1 } }
                throw NodeFailure(description: "node \(node): its view context shows \(seen), the database \(expected)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    @Test("Four processes share counters and insert objects: no lost update, no duplicate key, every view up to date; a process killed mid-save leaves the database consistent")
    func fourProcesses() async throws {
        let url = try PostgreSQLTestServer.url().absoluteString
        let schema = PostgreSQLStoreTests.newSchema()
        let coordinator = try Self.coordinator(url: url, schema: schema)
        let setup = ManagedObjectContext(concurrencyType: .privateQueue)
        setup.persistentStoreCoordinator = coordinator
        try setup.performAndWait {
            for index in 0..<3 {
                let counter = ManagedObject(entity: coordinator.managedObjectModel.entitiesByName["Counter"]!, insertInto: setup)
                counter.setValue("c\(index)", forKey: "name")
            }
            try setup.save()
        }
        await withTaskGroup(of: Void.self) { group in
            for node in 0..<Self.nodes {
                group.addTask {
                    await #expect(processExitsWith: .success) { [url = url as String, schema = schema as String, node = node as Int] in
                        try PostgreSQLMultiNodeTests.runNode(url: url, schema: schema, node: node)
                    }
                }
            }
        }
        let expected = Self.saves * Self.nodes
        let (sum, items) = try Self.totals(coordinator)
        #expect(sum == expected)
        #expect(items == expected)
        // Every item's counter is one of the three; each counter's value is its items.
        try setup.performAndWait {
            setup.refreshAllObjects()
            for counter in try setup.fetch(FetchRequest<ManagedObject>(entityName: "Counter")) {
                #expect(counter.value(forKey: "value") as? Int == counter.objects(forRelationship: "items").count)
            }
            let labels = try setup.fetch(FetchRequest<ManagedObject>(entityName: "Item")).compactMap { $0.value(forKey: "label") as? String }
            #expect(Set(labels).count == expected)
        }

        // A server killed in the middle of a save: nothing of it is written, and
        // the others go on.
        await #expect(processExitsWith: .exitCode(75)) { [url = url as String, schema = schema as String] in
            FaultPoints.install { point in if point == "before-commit" { _exit(75) } }
            let coordinator = try PostgreSQLMultiNodeTests.coordinator(url: url, schema: schema)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                let counter = try context.fetch(FetchRequest<ManagedObject>(entityName: "Counter"))[0]
                counter.setValue(1_000_000, forKey: "value")
                for index in 0..<50 {
                    let item = ManagedObject(entity: coordinator.managedObjectModel.entitiesByName["Item"]!, insertInto: context)
                    item.setValue("killed \(index)", forKey: "label")
                }
                try context.save()
            }
        }
        let after = try Self.totals(coordinator)
        #expect(after.sum == expected)
        #expect(after.items == expected)
        try setup.performAndWait {
            let counter = try setup.fetch(FetchRequest<ManagedObject>(entityName: "Counter"))[0]
            counter.setValue((counter.value(forKey: "value") as? Int ?? 0) + 1, forKey: "value")
            try setup.save()
        }
        #expect(try Self.totals(coordinator).sum == expected + 1)
    }
}
#endif
