import Foundation
import OpenCoreDataPredicates
import GRDB
import Testing
@testable import OpenCoreData

/// A process killed (SIGKILL) at a random moment while it saves leaves a store
/// that opens without repair and holds every save the process saw commit, whole,
/// and no part of any other: the guarantee an app killed by the system relies on.
/// Run on a SQLite store (``KilledSaveTests``) and on a PostgreSQL store
/// (``PostgreSQLKilledSaveTests``), each half with persistent history and half
/// without.
///
/// The child saves in a loop. Save `k` inserts batch `k` (five items, and a
/// payload stored in a file of its own every other save on SQLite, a large
/// `bytea` on PostgreSQL), deletes batch `k - 4` (its items cascade, its file
/// goes) and sets the counter to `k`; then it appends `k` to a log. A timer in
/// the child kills it. After each kill the parent checks the store against the
/// log, and the next child goes on from where the store is.
enum KilledSaveHarness {
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

    static func open(_ target: StoreUnderTest) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = try target.open(model())
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    /// Makes the store with its counter at 0, and an empty log beside it.
    static func prepare(_ target: StoreUnderTest, log: URL) throws {
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let (coordinator, context) = try open(target)
        try context.performAndWait {
            _ = ManagedObject(entity: coordinator.managedObjectModel.entitiesByName["Counter"]!, insertInto: context)
            try context.save()
        }
    }

    /// The child: saves from the store's counter on until its timer kills it,
    /// logging `begin k` before save `k` and `k` once it returned.
    static func saveUntilKilled(_ target: StoreUnderTest, logPath: String, killAfterMicroseconds: Int) throws {
        let (coordinator, context) = try open(target)
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

    /// Checks the store against the log: the store opens; the counter is the
    /// last logged save or the one after (committed, killed before it was
    /// logged); exactly the last four batches are there, each with its five
    /// items and its payload whole; no item without its batch; with history, one
    /// history transaction per save; a SQLite file passes `integrity_check`.
    static func check(_ target: StoreUnderTest, log: URL) throws -> State {
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        let logged = lines.compactMap { Int64($0) }
        let killedInSave = lines.last?.hasPrefix("begin ") == true
        let last = logged.last ?? 0
        #expect(logged == Array(stride(from: 1, through: last, by: 1)), "the log: \(logged.suffix(5))")
        let (coordinator, context) = try open(target)
        defer { for store in coordinator.persistentStores { coordinator.remove(store) } }
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
            if target.tracksHistory {
                let history = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: nil as PersistentHistoryToken?)).transactions ?? []
                #expect(history.count == Int(value) + 1, "history: \(history.count) transactions, \(value) saves and the first")
            }
            if !killedInSave { #expect(value == last, "killed between saves, yet the counter is \(value), the last save \(last)") }
            return State(counter: value, logged: last, killedInSave: killedInSave)
        }
        if target.kind == .sqlite {
            let queue = try DatabaseQueue(path: target.location)
            #expect(try queue.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        }
        return state
    }

    /// The log catches up with a save that committed before the kill, as the
    /// process would have written it.
    static func logCommitted(_ counter: Int64, log: URL) throws {
        let handle = try FileHandle(forWritingTo: log)
        handle.seekToEndOfFile()
        handle.write(Data("\(counter)\n".utf8))
        try handle.close()
    }

    /// The figures of one run, over its two stores.
    struct Tally {
        var kills = 0, killedInSave = 0, committedUnlogged = 0, committed: Int64 = 0
    }
}

@Suite("Killed saves (SQLite)", .serialized)
struct KilledSaveTests {
    /// The kills in one run: fewer under a sanitizer, where a process starts
    /// several times slower.
    static let kills = ProcessInfo.processInfo.environment["OCD_UNDER_SANITIZER"] == nil ? 250 : 20

    @Test("Killed at random moments while saving (with and without history, with external data): every save the process saw commit is whole, nothing of another is there, the store opens without repair")
    func killedWhileSaving() async throws {
        let folder = try TestScratch.folder("killed")
        let targets = [true, false].map { history in
            StoreUnderTest.sqlite(folder.appendingPathComponent(history ? "History.sqlite" : "Plain.sqlite").path,
                                  options: history ? [NSPersistentHistoryTrackingKey: "1"] : [:])
        }
        try await KilledSaveHarness.run(targets, logs: folder, kills: Self.kills, seed: 55)
    }
}

#if PostgreSQLTests
/// The kill test on the PostgreSQL store: the client process is killed; the
/// server, which holds the data, rolls back whatever transaction the killed
/// connection left open.
@Suite("Killed saves (PostgreSQL)", .enabled(if: PostgreSQLTestServer.isAvailable), .serialized)
struct PostgreSQLKilledSaveTests {
    @Test("A client killed at random moments while saving to PostgreSQL (with and without history, large payloads): every save it saw commit is whole, nothing of another is there")
    func killedWhileSaving() async throws {
        let targets = try [true, false].map { history in
            try StoreUnderTest.postgreSQL(options: history ? [NSPersistentHistoryTrackingKey: "1"] : [:])
        }
        try await KilledSaveHarness.run(targets, logs: try TestScratch.folder("killed-postgresql"), kills: KilledSaveTests.kills, seed: 56)
    }
}
#endif

extension KilledSaveHarness {
    /// Kills a saving child `kills` times, alternately on each of `targets`
    /// (one with history, one without), checking its store after each kill.
    static func run(_ targets: [StoreUnderTest], logs folder: URL, kills: Int, seed: UInt64) async throws {
        let logs = targets.indices.map { folder.appendingPathComponent("saves-\($0).log") }
        for (target, log) in zip(targets, logs) { try prepare(target, log: log) }
        var random = SeededGenerator(seed: seed)
        var tallies = targets.map { _ in Tally() }
        for kill in 0..<kills {
            let which = kill % targets.count
            let (target, log) = (targets[which], logs[which])
            let delay = Int.random(in: 0...100_000, using: &random)
            await #expect(processExitsWith: .signal(SIGKILL)) { [target = target as StoreUnderTest, logPath = log.path as String, delay = delay as Int] in
                try KilledSaveHarness.saveUntilKilled(target, logPath: logPath, killAfterMicroseconds: delay)
            }
            tallies[which].record(try check(target, log: log), log: log)
        }
        for (tally, target) in zip(tallies, targets) {
            #expect(tally.committed > 0, "\(target): no save ever committed: the kills came too early")
            #expect(tally.killedInSave > 0, "\(target): no kill landed inside a save")
        }
        let kinds = zip(tallies, targets).map { "\($0.committed) \($1.tracksHistory ? "with" : "without") history" }
        print("Killed saves (\(targets[0].kind == .sqlite ? "SQLite" : "PostgreSQL")): \(tallies.map(\.kills).reduce(0, +)) kills, "
              + "\(tallies.map(\.killedInSave).reduce(0, +)) inside a save (\(tallies.map(\.committedUnlogged).reduce(0, +)) of them after its commit), "
              + "\(tallies.map(\.committed).reduce(0, +)) saves committed (\(kinds.joined(separator: ", ")))")
    }
}

extension KilledSaveHarness.Tally {
    /// Counts one kill, and brings the log up to a save that committed unlogged.
    mutating func record(_ state: KilledSaveHarness.State, log: URL) {
        kills += 1
        if state.killedInSave { killedInSave += 1 }
        committed = state.counter
        if state.counter == state.logged + 1 {
            committedUnlogged += 1
            #expect(throws: Never.self) { try KilledSaveHarness.logCommitted(state.counter, log: log) }
        }
    }
}

private extension ManagedObject {
    /// An integer attribute's value (key-value coding hands integers out as `Int`).
    func integer(_ key: String) -> Int64? {
        (value(forKey: key) as? Int).map(Int64.init)
    }
}
