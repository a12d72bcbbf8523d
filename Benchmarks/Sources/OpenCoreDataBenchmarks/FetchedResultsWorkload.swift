import Foundation
import OpenCoreData
import OpenCoreDataPredicates

// The fetched results controller workload (issue 8, item 4):
//
//   OpenCoreDataBenchmarks frc --count 100000 --runs 7 --dir D
//
// A SQLite store of `count` items in 100 sections (sort: section, then rank;
// batch size 20). Measures `performFetch()` (what a list would pay to refetch)
// against reacting to one change: one object's sort key changes (a move), one
// object is inserted, one deleted, each followed by `processPendingChanges()`
// with the controller and a delegate attached. Prints one JSON object. The
// reaction must cost a small fraction of a refetch and not grow with `count`.
//
// Self-contained (its own model and timer) so that it is hooked into main.swift
// by one line.

enum FetchedResultsWorkload {
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel {
                Entity("Item") {
                    Attribute("section", .integer32, defaultValue: 0)
                    Attribute("rank", .integer64, defaultValue: 0)
                    Attribute("title", .string)
                    FetchIndex("bySectionAndRank", "section", "rank")
                }
            }
        } catch {
            fatalError("The FRC benchmark model is invalid: \(error)")
        }
    }()

    static func open(_ path: String) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: ["pragma.synchronous": "NORMAL"])
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    /// Items 0..<count: section i % 100, rank i * 2 (even, so odd ranks fall between).
    static func populate(count: Int, path: String) throws {
        let (coordinator, context) = try open(path)
        guard let entity = model.entitiesByName["Item"] else { throw BenchmarkError("no Item entity") }
        var first = 0
        while first < count {
            let end = min(count, first + 50_000)
            for i in first..<end {
                let item = ManagedObject(entity: entity, insertInto: context)
                item.setValue(i % 100, forKey: "section")
                item.setValue(i * 2, forKey: "rank")
                item.setValue("item \(i)", forKey: "title")
            }
            try context.save()
            context.reset()
            first = end
        }
        withExtendedLifetime(coordinator) {}
    }

    final class CountingDelegate: FetchedResultsControllerDelegate {
        typealias Result = ManagedObject
        var changes = 0
        func controller(_ controller: FetchedResultsController<ManagedObject>, didChange object: ManagedObject,
                        at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {
            changes += 1
        }
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) * 1e-9
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func run(count: Int, runs: Int, dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/frc-\(count).sqlite"
        if !FileManager.default.fileExists(atPath: path) {
            let start = DispatchTime.now().uptimeNanoseconds
            try populate(count: count, path: path)
            log("prepared \(path) in \(String(format: "%.2f", Double(DispatchTime.now().uptimeNanoseconds - start) * 1e-9)) s")
        }
        let (coordinator, context) = try open(path)
        guard let entity = model.entitiesByName["Item"] else { throw BenchmarkError("no Item entity") }
        let request = FetchRequest<ManagedObject>(entity: entity)
        request.sortDescriptors = [CoreSortDescriptor(key: "section"), CoreSortDescriptor(key: "rank")]
        request.fetchBatchSize = 20

        var refetches: [Double] = []
        var controller: FetchedResultsController<ManagedObject>?
        for _ in 0..<(runs + 1) {
            context.reset()
            let fresh = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                 sectionNameKeyPath: "section", cacheName: nil)
            refetches.append(try seconds { try fresh.performFetch() })
            controller = fresh
        }
        refetches.removeFirst()   // warm-up
        guard let controller, controller.fetchedObjects?.count == count, controller.sections?.count == min(100, count) else {
            throw BenchmarkError("the controller fetched \(controller?.fetchedObjects?.count ?? -1) objects in \(controller?.sections?.count ?? -1) sections")
        }
        let delegate = CountingDelegate()
        controller.delegate = delegate

        // One change at a time, each a separate event.
        var moves: [Double] = [], inserts: [Double] = [], deletes: [Double] = []
        var generator = SystemRandomNumberGenerator()
        let changes = max(20, runs * 10)
        for step in 0..<changes {
            // Picked by index path, holding no copy of a section's objects (which
            // would make the next change copy that section).
            let counts = controller.sections?.map(\.numberOfObjects) ?? []
            guard let section = counts.indices.randomElement(using: &generator), counts[section] > 0 else { break }
            let object = try controller.object(at: IndexPath(indexes: [section, Int.random(in: 0..<counts[section], using: &generator)]))
            object.setValue(Int.random(in: 0..<(count * 2), using: &generator) | 1, forKey: "rank")
            moves.append(seconds { context.processPendingChanges() })

            let item = ManagedObject(entity: entity, insertInto: context)
            item.setValue(step % 100, forKey: "section")
            item.setValue(Int.random(in: 0..<(count * 2), using: &generator) | 1, forKey: "rank")
            item.setValue("new \(step)", forKey: "title")
            inserts.append(seconds { context.processPendingChanges() })

            context.delete(item)
            deletes.append(seconds { context.processPendingChanges() })
        }
        guard delegate.changes == changes * 3, controller.fetchedObjects?.count == count else {
            throw BenchmarkError("the delegate saw \(delegate.changes) changes for \(changes * 3); \(controller.fetchedObjects?.count ?? -1) objects")
        }
        let refetch = median(refetches)
        let reaction = median(moves + inserts + deletes)
        log("FRC count \(count): performFetch \(String(format: "%.4f", refetch)) s; one change: move \(String(format: "%.6f", median(moves))) s, insert \(String(format: "%.6f", median(inserts))) s, delete \(String(format: "%.6f", median(deletes))) s (\(String(format: "%.2f", reaction / refetch * 100)) % of a refetch)")
        let result: [String: Any] = [
            "workload": "FRC",
            "count": count,
            "runs": runs,
            "batch_size": 20,
            "sections": 100,
            "perform_fetch_median_s": refetch,
            "perform_fetch_samples": refetches,
            "one_change_median_s": reaction,
            "move_median_s": median(moves),
            "insert_median_s": median(inserts),
            "delete_median_s": median(deletes),
            "one_change_fraction_of_refetch": reaction / refetch,
        ]
        let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
        withExtendedLifetime(coordinator) {}
    }
}
