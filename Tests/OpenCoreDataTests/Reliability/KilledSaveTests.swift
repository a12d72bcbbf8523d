import Foundation
import OpenCoreDataPredicates
import GRDB
import Testing
@testable import OpenCoreData

/// A process killed (SIGKILL) at a random moment while it saves leaves a SQLite
/// store that opens without repair and holds every save the process saw commit,
/// whole, and no part of any other: the guarantee an app killed by the system
/// relies on.
///
/// The child saves in a loop. Save `k` inserts batch `k` (five items, and a
/// payload stored in a file of its own every other save), deletes batch `k - 4`
/// (its items cascade, its file goes) and sets the counter to `k`; then it
/// appends `k` to a log. A timer in the child kills it. After each kill the
/// parent checks the store against the log, and the next child goes on from
/// where the store is.
@Suite("Killed saves (SQLite)", .serialized)
struct KilledSaveTests {
    /// The kills in one run: fewer under a sanitizer, where a process starts
    /// several times slower.
    static let kills = ProcessInfo.processInfo.environment["OCD_UNDER_SANITIZER"] == nil ? 250 : 20
    static let itemsPerBatch = 5
    static let keptBatches: Int64 = 4

    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Counter", className: "ManagedObject") {
                Attribute("value", .integer64, optional: false, defaultValue: 0)
            }
            Entity("Batch", className: "ManagedObject") {
                Attribute("number", .integer64, optional: false, defaultValue: 0)
                Attribute("payload", .binaryData, allowsExternalStorage: true)
                Relationship("items", to: "Item", inverse: "batch", toMany: true, deleteRule: .cascade)
            }
            Entity("Item", className: "ManagedObject") {
                Attribute("number", .integer64, optional: false, defaultValue: 0)
                Attribute("label", .string)
                Relationship("batch", to: "Batch", inverse: "items")
            }
        }
    }

    /// Batch `k`'s payload: large enough for a file of its own on even saves,
    /// small (in the row) on odd ones; its bytes depend on `k`.
    static func payload(_ k: Int64) -> Data {
        var data = Data(repeating: UInt8(truncatingIfNeeded: k), count: k % 2 == 0 ? 150_000 : 64)
        withUnsafeBytes(of: k.littleEndian) { data.replaceSubrange(0..<8, with: $0) }
        return data
    }

    static func open(_ url: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [NSPersistentHistoryTrackingKey: "1"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    /// The child: saves from the store's counter on until its timer kills it,
    /// logging `begin k` before save `k` and `k` once it returned.
    static func saveUntilKilled(storePath: String, logPath: String, killAfterMicroseconds: Int) throws {
        let (coordinator, context) = try open(URL(fileURLWithPath: storePath))
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        // The timer starts once the store is open: the kills land among the saves.
        Thread {
            usleep(useconds_t(killAfterMicroseconds))
            kill(getpid(), SIGKILL)
        }.start()
        let entities = coordinator.managedObjectModel.entitiesByName
        try context.performAndWait {
            while true {
                let counter = try context.fetch(FetchRequest<ManagedObject>(entityName: "Counter"))[0]
                let k = (counter.integer("value") ?? 0) + 1
                let batch = ManagedObject(entity: entities["Batch"]!, insertInto: context)
                batch.setValue(k, forKey: "number")
                batch.setValue(payload(k), forKey: "payload")
                for index in 0..<itemsPerBatch {
                    let item = ManagedObject(entity: entities["Item"]!, insertInto: context)
                    item.setValue(k, forKey: "number")
                    item.setValue("batch \(k) item \(index)", forKey: "label")
                    item.setValue(batch, forKey: "batch")
                }
                let old = FetchRequest<ManagedObject>(entityName: "Batch")
                old.predicate = try CorePredicate(format: "number == %lld", k - keptBatches)
                for gone in try context.fetch(old) { context.delete(gone) }
                counter.setValue(k, forKey: "value")
                log.seekToEndOfFile()
                log.write(Data("begin \(k)\n".utf8))
                try context.save()
                log.write(Data("\(k)\n".utf8))
                context.reset()
            }
        }
    }

    /// What a check found: the counter (the last save committed), the last save
    /// the log names as done, and whether the process was killed inside a save
    /// (after `begin k`, before `k`).
    struct State { var counter: Int64; var logged: Int64; var killedInSave: Bool }

    /// Checks the store against the log: the file is sound; the counter is the
    /// last logged save or the one after (committed, killed before it was
    /// logged); exactly the last four batches are there, each with its five
    /// items and its payload whole; no item without its batch; one history
    /// transaction per save.
    static func check(store: URL, log: URL) throws -> State {
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        let logged = lines.compactMap { Int64($0) }
        let killedInSave = lines.last?.hasPrefix("begin ") == true
        let last = logged.last ?? 0
        #expect(logged == Array(stride(from: 1, through: last, by: 1)), "the log: \(logged.suffix(5))")
        let (_, context) = try open(store)
        let state = try context.performAndWait {
            let counters = try context.fetch(FetchRequest<ManagedObject>(entityName: "Counter"))
            try #require(counters.count == 1)
            let value = counters[0].integer("value") ?? -1
            #expect(value == last || value == last + 1, "counter \(value), last logged save \(last)")
            let batches = try context.fetch(FetchRequest<ManagedObject>(entityName: "Batch"))
            let numbers = batches.compactMap { $0.integer("number") }.sorted()
            #expect(numbers == Array(stride(from: Swift.max(1, value - keptBatches + 1), through: value, by: 1)), "batches \(numbers), counter \(value)")
            for batch in batches {
                let number = batch.integer("number") ?? -1
                let items = batch.objects(forRelationship: "items")
                #expect(items.count == itemsPerBatch, "batch \(number)")
                #expect(items.allSatisfy { $0.integer("number") == number }, "batch \(number)")
                #expect(batch.value(forKey: "payload") as? Data == payload(number), "batch \(number)'s payload")
            }
            #expect(try context.count(for: FetchRequest<ManagedObject>(entityName: "Item")) == itemsPerBatch * batches.count)
            let history = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions ?? []
            #expect(history.count == Int(value) + 1, "history: \(history.count) transactions, \(value) saves and the first")
            if !killedInSave { #expect(value == last, "killed between saves, yet the counter is \(value), the last save \(last)") }
            return State(counter: value, logged: last, killedInSave: killedInSave)
        }
        let queue = try DatabaseQueue(path: store.path)
        #expect(try queue.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        return state
    }

    @Test("Killed at random moments while saving (with history and external data): every save the process saw commit is whole, nothing of another is there, the store opens without repair")
    func killedWhileSaving() async throws {
        let folder = try TestScratch.folder("killed")
        let store = folder.appendingPathComponent("Killed.sqlite")
        let log = folder.appendingPathComponent("saves.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        do {
            let (coordinator, context) = try Self.open(store)
            try context.performAndWait {
                _ = ManagedObject(entity: coordinator.managedObjectModel.entitiesByName["Counter"]!, insertInto: context)
                try context.save()
            }
        }
        var random = SeededGenerator(seed: 55)
        var committedUnlogged = 0, killedInSave = 0
        var state = State(counter: 0, logged: 0, killedInSave: false)
        for _ in 0..<Self.kills {
            let delay = Int.random(in: 0...100_000, using: &random)
            await #expect(processExitsWith: .signal(SIGKILL)) { [storePath = store.path as String, logPath = log.path as String, delay = delay as Int] in
                try KilledSaveTests.saveUntilKilled(storePath: storePath, logPath: logPath, killAfterMicroseconds: delay)
            }
            state = try Self.check(store: store, log: log)
            if state.killedInSave { killedInSave += 1 }
            if state.counter == state.logged + 1 {
                committedUnlogged += 1
                // The save committed before the kill: the log catches up, as the
                // process would have written it.
                let handle = try FileHandle(forWritingTo: log)
                handle.seekToEndOfFile()
                handle.write(Data("\(state.counter)\n".utf8))
                try handle.close()
            }
        }
        #expect(state.counter > 0, "no save ever committed: the kills came too early")
        #expect(killedInSave > 0, "no kill landed inside a save")
        print("Killed saves: \(Self.kills) kills, \(killedInSave) inside a save (\(committedUnlogged) of them after its commit), \(state.counter) saves committed")
    }
}

private extension ManagedObject {
    /// An integer attribute's value (key-value coding hands integers out as `Int`).
    func integer(_ key: String) -> Int64? {
        (value(forKey: key) as? Int).map(Int64.init)
    }
}
