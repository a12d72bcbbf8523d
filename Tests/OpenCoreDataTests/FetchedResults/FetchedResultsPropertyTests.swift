import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Random sequences of inserts, deletes and updates (sort keys, section keys, the
/// predicate's attribute), with saves and undo between them: after every event,
/// applying the reported changes to the old list as a table view does must give
/// exactly the new fetch.
@Suite("Fetched results controller: reported changes rebuild the new fetch")
struct FetchedResultsPropertyTests {
    struct Configuration: CustomStringConvertible, Sendable {
        var seed: UInt64
        var sections: Bool
        var predicate: String?
        var storeType: PersistentStoreType
        var description: String { "seed \(seed), sections \(sections), predicate \(predicate ?? "none"), \(storeType.rawValue)" }
    }

    static let configurations: [Configuration] = [
        Configuration(seed: 1, sections: true, predicate: nil, storeType: .inMemory),
        Configuration(seed: 2, sections: true, predicate: "flag == NO", storeType: .inMemory),
        Configuration(seed: 3, sections: false, predicate: nil, storeType: .inMemory),
        Configuration(seed: 4, sections: false, predicate: "rank < 30", storeType: .inMemory),
        Configuration(seed: 5, sections: true, predicate: "rank >= 5 AND flag == NO", storeType: .sqlite),
        Configuration(seed: 6, sections: true, predicate: nil, storeType: .sqlite),
    ]

    @Test("Applying the reports to the old list gives the new fetch", arguments: configurations)
    func reportsRebuildTheFetch(configuration: Configuration) throws {
        var random = SeededGenerator(seed: configuration.seed)
        let stack = try ListStack(storeType: configuration.storeType, undo: true)
        let groups = ["a", "b", "c", "d", "e"]
        var serial = 0
        func newItem() {
            serial += 1
            stack.item(String(format: "n%04d", serial), rank: Int.random(in: 0..<40, using: &random),
                       group: groups.randomElement(using: &random), flag: Bool.random(using: &random))
        }
        for _ in 0..<25 { newItem() }
        try stack.context.save()

        var sort = [CoreSortDescriptor(key: "rank", ascending: false), CoreSortDescriptor(key: "name")]
        if configuration.sections { sort.insert(CoreSortDescriptor(key: "group"), at: 0) }
        let request = try stack.request(configuration.predicate, sort: sort)
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: stack.context,
                                                  sectionNameKeyPath: configuration.sections ? "group" : nil, cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)

        // Every item, in a fixed order, so that a seed always makes the same changes.
        let everything = try stack.request(sort: [CoreSortDescriptor(key: "name")])
        for step in 0..<60 {
            let live = try stack.context.fetch(everything)
            let operations = Int.random(in: 1...4, using: &random)
            var action = ""
            for _ in 0..<operations {
                let roll = Int.random(in: 0..<100, using: &random)
                let target = live.filter { !$0.isDeleted }.randomElement(using: &random)
                switch roll {
                case 0..<20: newItem(); action += "insert "
                case 20..<35: if let target { stack.context.delete(target); action += "delete " }
                case 35..<60: target?.setValue(Int.random(in: 0..<40, using: &random), forKey: "rank"); action += "rank "
                case 60..<75: target?.setValue(groups.randomElement(using: &random), forKey: "group"); action += "group "
                case 75..<85: target?.setValue(Bool.random(using: &random), forKey: "flag"); action += "flag "
                case 85..<90: target?.setValue(nil, forKey: "group"); action += "nil group "
                default:
                    serial += 1
                    target?.setValue(String(format: "r%04d", serial), forKey: "name"); action += "rename "
                }
            }
            let before = delegate.tableIDs
            switch Int.random(in: 0..<10, using: &random) {
            case 0: try stack.context.save(); action += "+ save"
            case 1: stack.context.processPendingChanges(); stack.context.undo(); action += "+ undo"
            default: stack.context.processPendingChanges()
            }
            let comment = Comment(rawValue: "\(configuration), step \(step): \(action)\nbefore \(before)\nreports \(delegate.reports.suffix(12))")
            let fetched = try stack.context.fetch(request)
            var expected: [[String]] = []
            for object in fetched {
                let name = configuration.sections ? ((object.value(forKey: "group") as? String) ?? "") : ""
                if expected.last?.first != name { expected.append([name]) }
                expected[expected.count - 1].append(object.objectID.description)
            }
            #expect(controller.sectionIDs == expected, comment)
            #expect(delegate.tableIDs == expected, comment)
            #expect(delegate.problems.isEmpty, comment)
            if !delegate.problems.isEmpty || delegate.tableIDs != expected { return }
        }
    }

    @Test("Longest increasing subsequence")
    func longestIncreasing() {
        let values = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
        let kept = FetchedResultsController<ManagedObject>.longestIncreasing(values)
        let subsequence = values.indices.filter(kept.contains).map { values[$0] }
        #expect(subsequence.count == 5)
        #expect(zip(subsequence, subsequence.dropFirst()).allSatisfy { $0 < $1 })
        #expect(FetchedResultsController<ManagedObject>.longestIncreasing([]).isEmpty)
    }
}
