import Foundation
import GRDB
import GRDBSQLite
@testable import OpenCoreData
import Synchronization
import Testing

/// Classes that no other test registers: the registry of subclasses is global.
final class LateRegisteredWidget: ManagedObject {}
final class RacedRegisteredGadget: ManagedObject {}

/// How an entity's objects get their class (`ManagedObjectClasses`), read without
/// a lock by every object made (`ResolvedClassCache`), and how the store steps
/// through result rows with SQLite's C API (`Statement.forEachRow`).
@Suite("Object classes and result rows on the hot paths")
struct ManagedObjectClassesTests {
    private func model(className: String) throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Widget", className: className) {
                Attribute("name", .string)
            }
        }
    }

    @Test("An entity resolved before its class registers gets the class once it does")
    func resolvedAgainAfterRegistration() throws {
        let model = try model(className: "LateRegisteredWidget")
        let entity = try #require(model.entitiesByName["Widget"])
        // Not registered yet: plain objects, and the answer is cached.
        #expect(ManagedObjectClasses.type(for: entity) == ManagedObject.self)
        #expect(ManagedObjectClasses.type(for: entity) == ManagedObject.self)

        ManagedObjectClasses.register(LateRegisteredWidget.self)
        // The registration started a new generation: the cached answer is stale.
        #expect(ManagedObjectClasses.type(for: entity) == LateRegisteredWidget.self)
        #expect(ManagedObjectClasses.type(for: entity) == LateRegisteredWidget.self)

        // Objects made from rows get the class too.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let widget = ManagedObject(entity: entity, insertInto: context)
            widget.setValue("bolt", forKey: "name")
            try context.save()
            context.reset()
            let fetched = try context.fetch(FetchRequest<ManagedObject>(entityName: "Widget"))
            #expect(fetched.count == 1)
            #expect(fetched.allSatisfy { $0 is LateRegisteredWidget })
        }
    }

    @Test("Threads asking while a class registers see the old class or the new, then the new")
    func concurrentReadersDuringRegistration() throws {
        let model = try model(className: "RacedRegisteredGadget")
        let entity = try #require(model.entitiesByName["Widget"])
        let seen = Lock<Set<ObjectIdentifier>>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            if worker == 3 { ManagedObjectClasses.register(RacedRegisteredGadget.self) }
            var local = Set<ObjectIdentifier>()
            for _ in 0..<2_000 { local.insert(ObjectIdentifier(ManagedObjectClasses.type(for: entity))) }
            seen.withLock { $0.formUnion(local) }
        }
        let allowed: Set = [ObjectIdentifier(ManagedObject.self), ObjectIdentifier(RacedRegisteredGadget.self)]
        #expect(seen.withLock { $0 }.isSubset(of: allowed))
        // Once the registration returned, every reader sees the subclass.
        #expect(ManagedObjectClasses.type(for: entity) == RacedRegisteredGadget.self)
    }

    @Test("Stepping through rows with the C API: rows, a failing step's error, then the statement again")
    func forEachRowSteps() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            try db.execute(sql: "CREATE TABLE t (x INTEGER)")
            for x in 1...5 { try db.execute(sql: "INSERT INTO t VALUES (?)", arguments: [x]) }
            let statement = try db.makeStatement(sql: "SELECT abs(?) + x FROM t ORDER BY x")
            var values: [Int64] = []
            try statement.forEachRow(arguments: [-3]) { values.append(sqlite3_column_int64($0, 0)) }
            #expect(values == [4, 5, 6, 7, 8])

            // abs() of the smallest integer overflows: SQLite fails the first step.
            var stepped = 0
            #expect(throws: DatabaseError.self) {
                try statement.forEachRow(arguments: [Int64.min]) { _ in stepped += 1 }
            }
            // Arguments that do not fit the statement are refused before any step.
            #expect(throws: DatabaseError.self) {
                try statement.forEachRow(arguments: [1, 2]) { _ in stepped += 1 }
            }
            #expect(stepped == 0)

            // The statement was left reset: it runs again.
            values = []
            try statement.forEachRow(arguments: [0]) { values.append(sqlite3_column_int64($0, 0)) }
            #expect(values == [1, 2, 3, 4, 5])
        }
    }
}
