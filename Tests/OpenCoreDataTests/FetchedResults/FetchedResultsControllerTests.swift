import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Fetched results controller")
struct FetchedResultsControllerTests {
    let byGroupThenRank = [CoreSortDescriptor(key: "group"), CoreSortDescriptor(key: "rank"), CoreSortDescriptor(key: "name")]
    let byRank = [CoreSortDescriptor(key: "rank"), CoreSortDescriptor(key: "name")]

    func names(_ controller: FetchedResultsController<ManagedObject>) -> [[String]] {
        (controller.sections ?? []).map { section in [section.name + ":"] + section.objects.map { $0.value(forKey: "name") as? String ?? "?" } }
    }

    @Test("Sections, index paths, objects and index titles", arguments: allStoreTypes)
    func sections(storeType: PersistentStoreType) throws {
        let stack = try ListStack(storeType: storeType)
        stack.item("b1", rank: 2, group: "beta")
        stack.item("a2", rank: 5, group: "alpha")
        stack.item("a1", rank: 1, group: "alpha")
        stack.item("g1", rank: 0, group: "gamma")
        stack.item("n1", rank: 3, group: nil)
        try stack.context.save()
        let controller = FetchedResultsController(fetchRequest: try stack.request(sort: byGroupThenRank),
                                                  managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: nil)
        #expect(controller.sections == nil && controller.fetchedObjects == nil)
        try controller.performFetch()
        #expect(names(controller) == [[":", "n1"], ["alpha:", "a1", "a2"], ["beta:", "b1"], ["gamma:", "g1"]])
        #expect(controller.fetchedObjects?.map { $0.value(forKey: "name") as? String } == ["n1", "a1", "a2", "b1", "g1"])
        #expect(controller.sections?.map(\.numberOfObjects) == [1, 2, 1, 1])
        #expect(controller.sections?.map(\.indexTitle) == [nil, "A", "B", "G"])
        #expect(controller.sectionIndexTitles == ["A", "B", "G"])
        #expect(controller.section(forSectionIndexTitle: "B", at: 1) == 2)
        #expect(controller.section(forSectionIndexTitle: "Z", at: 9) == 3)
        #expect(controller.sectionIndexTitle(forSectionName: "échelle") == "É")

        let a2 = try controller.object(at: IndexPath(row: 1, section: 1))
        #expect(a2.value(forKey: "name") as? String == "a2")
        #expect(controller.indexPath(forObject: a2) == IndexPath(row: 1, section: 1))
        let outsider = stack.item("x", rank: 1, group: "alpha", in: stack.newContext())
        #expect(controller.indexPath(forObject: outsider) == nil)
        #expect(throws: CoreDataError.self) { try controller.object(at: IndexPath(row: 5, section: 1)) }
        #expect(throws: CoreDataError.self) { try controller.object(at: IndexPath(index: 0)) }
    }

    @Test("A sort that does not group the sections fails as in Core Data; so does a request without sort")
    func outOfOrderSections() throws {
        let stack = try ListStack()
        stack.item("a", rank: 1, group: "x")
        stack.item("b", rank: 2, group: "y")
        stack.item("c", rank: 3, group: "x")
        let controller = FetchedResultsController(fetchRequest: try stack.request(sort: byRank),
                                                  managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: nil)
        let error = try #require(throws: CoreDataError.self) { try controller.performFetch() }
        #expect(error.code == .coreData)
        #expect(error.message.contains("The fetched object at index 2 has an out of order section name 'x'"))
        #expect(controller.sections == nil)

        let unsorted = FetchedResultsController(fetchRequest: try stack.request(sort: []),
                                                managedObjectContext: stack.context, sectionNameKeyPath: nil, cacheName: nil)
        #expect(throws: CoreDataError.self) { try unsorted.performFetch() }
    }

    @Test("Section key paths through to-one relationships")
    func sectionsThroughRelationships() throws {
        let stack = try ListStack()
        let ann = stack.owner("Ann"), bob = stack.owner("Bob")
        stack.item("i1", rank: 1, owner: bob)
        stack.item("i2", rank: 2, owner: ann)
        stack.item("i3", rank: 3, owner: bob)
        let request = try stack.request(sort: [CoreSortDescriptor(key: "owner.name"), CoreSortDescriptor(key: "rank")])
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: stack.context,
                                                  sectionNameKeyPath: "owner.name", cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)
        #expect(names(controller) == [["Ann:", "i2"], ["Bob:", "i1", "i3"]])

        // Changing an item's owner moves it to the other section.
        let i3 = try controller.object(at: IndexPath(row: 1, section: 1))
        i3.setValue(ann, forKey: "owner")
        stack.context.processPendingChanges()
        #expect(names(controller) == [["Ann:", "i2", "i3"], ["Bob:", "i1"]])
        #expect(delegate.reports == [.willChange, .object(name: "i3", from: IndexPath(row: 1, section: 1), .move, to: IndexPath(row: 1, section: 0)), .didChange])
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)
    }

    @Test("Reports in Core Data's order: will change, sections, deletes, inserts, moves, updates, did change")
    func reportOrder() throws {
        let stack = try ListStack()
        let a = stack.item("a", rank: 1, group: "g1")
        let b = stack.item("b", rank: 2, group: "g1")
        let c = stack.item("c", rank: 3, group: "g2")
        let d = stack.item("d", rank: 4, group: "g2")
        try stack.context.save()
        let controller = FetchedResultsController(fetchRequest: try stack.request(sort: byGroupThenRank),
                                                  managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)

        stack.context.delete(a)                     // g1 keeps b
        stack.item("e", rank: 0, group: "g0")       // a new first section
        c.setValue(9, forKey: "rank")               // moves after d
        b.setValue(true, forKey: "flag")            // updated in place
        _ = d
        stack.context.processPendingChanges()
        #expect(delegate.reports == [
            .willChange,
            .section(name: "g0", index: 0, .insert),
            .object(name: "a", from: IndexPath(row: 0, section: 0), .delete, to: nil),
            .object(name: "e", from: nil, .insert, to: IndexPath(row: 0, section: 0)),
            .object(name: "c", from: IndexPath(row: 0, section: 1), .move, to: IndexPath(row: 1, section: 2)),
            .object(name: "b", from: IndexPath(row: 1, section: 0), .update, to: IndexPath(row: 0, section: 1)),
            .didChange,
        ])
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)

        // The last object of a section leaves: the section is deleted too.
        delegate.reports = []
        stack.context.delete(b)
        stack.context.processPendingChanges()
        #expect(delegate.reports == [
            .willChange,
            .section(name: "g1", index: 1, .delete),
            .object(name: "b", from: IndexPath(row: 0, section: 1), .delete, to: nil),
            .didChange,
        ])
        #expect(names(controller) == [["g0:", "e"], ["g2:", "d", "c"]])
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)

        // Nothing of interest: nothing reported.
        delegate.reports = []
        _ = stack.owner("Zed")
        stack.context.processPendingChanges()
        #expect(delegate.reports.isEmpty)
    }

    @Test("Objects that start or stop matching the predicate are inserted and deleted", arguments: allStoreTypes)
    func predicateMatching(storeType: PersistentStoreType) throws {
        let stack = try ListStack(storeType: storeType)
        let items = (0..<6).map { stack.item("i\($0)", rank: $0, flag: $0.isMultiple(of: 2)) }
        try stack.context.save()
        let controller = FetchedResultsController(fetchRequest: try stack.request("flag == YES", sort: byRank),
                                                  managedObjectContext: stack.context, sectionNameKeyPath: nil, cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)
        #expect(names(controller) == [[":", "i0", "i2", "i4"]])

        items[3].setValue(true, forKey: "flag")
        items[2].setValue(false, forKey: "flag")
        stack.context.processPendingChanges()
        #expect(names(controller) == [[":", "i0", "i3", "i4"]])
        #expect(delegate.reports == [.willChange,
                                     .object(name: "i2", from: IndexPath(row: 1, section: 0), .delete, to: nil),
                                     .object(name: "i3", from: nil, .insert, to: IndexPath(row: 1, section: 0)),
                                     .didChange])
        // Every object leaves: the only section goes.
        for item in items { item.setValue(false, forKey: "flag") }
        stack.context.processPendingChanges()
        #expect(controller.sections?.isEmpty == true && controller.fetchedObjects?.isEmpty == true)
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)
        try stack.context.save()
        items[5].setValue(true, forKey: "flag")
        stack.context.processPendingChanges()
        #expect(names(controller) == [[":", "i5"]])
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)
    }

    @Test("Follows saves, undo and redo, refreshes, rollback and reset")
    func followsTheContext() throws {
        let stack = try ListStack(undo: true)
        let items = (0..<4).map { stack.item("i\($0)", rank: $0 * 10) }
        try stack.context.save()
        let controller = FetchedResultsController(fetchRequest: try stack.request(sort: byRank),
                                                  managedObjectContext: stack.context, sectionNameKeyPath: nil, cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)
        func check(_ expected: [String], _ comment: Comment) {
            #expect(names(controller) == [[":"] + expected], comment)
            #expect(delegate.tableIDs == controller.sectionIDs, comment)
            #expect(delegate.problems.isEmpty, comment)
            #expect(controller.fetchedObjects?.map(\.objectID) == (try? stack.context.fetch(controller.fetchRequest))?.map(\.objectID), comment)
        }

        items[0].setValue(25, forKey: "rank")
        stack.context.processPendingChanges()
        check(["i1", "i2", "i0", "i3"], "own change")
        stack.context.undo()
        check(["i0", "i1", "i2", "i3"], "undo of an update")
        stack.context.redo()
        check(["i1", "i2", "i0", "i3"], "redo")

        stack.context.delete(items[1])
        stack.context.processPendingChanges()
        check(["i2", "i0", "i3"], "delete")
        stack.context.undo()
        check(["i1", "i2", "i0", "i3"], "undo of a delete")

        let new = stack.item("new", rank: 1)
        stack.context.processPendingChanges()
        check(["new", "i1", "i2", "i0", "i3"], "insert")
        new.setValue(35, forKey: "rank")
        stack.context.processPendingChanges()
        check(["i1", "i2", "i0", "i3", "new"], "update of an unsaved object")
        stack.context.undo()
        stack.context.undo()
        check(["i1", "i2", "i0", "i3"], "undo of an insert")
        stack.context.redo()
        check(["new", "i1", "i2", "i0", "i3"], "redo of an insert")

        try stack.context.save()
        check(["new", "i1", "i2", "i0", "i3"], "save")

        // Another context saves; refreshing brings its values in.
        let other = stack.newContext()
        let remote = try other.existingObject(with: items[3].objectID)
        remote.setValue(-1, forKey: "rank")
        try other.save()
        stack.context.refresh(items[3], mergeChanges: false)
        stack.context.processPendingChanges()
        check(["i3", "new", "i1", "i2", "i0"], "refresh")

        items[2].setValue(100, forKey: "rank")
        stack.item("gone", rank: 0)
        stack.context.processPendingChanges()
        check(["i3", "gone", "new", "i1", "i0", "i2"], "before rollback")
        stack.context.rollback()
        check(["i3", "new", "i1", "i2", "i0"], "rollback")

        stack.context.reset()
        check(["i3", "new", "i1", "i2", "i0"], "reset")
        #expect(controller.fetchedObjects?.allSatisfy { $0.managedObjectContext === stack.context } == true)
    }

    @Test("Follows merges of another context's saves, for faults and loaded objects alike", arguments: allStoreTypes)
    func followsMerges(storeType: PersistentStoreType) async throws {
        let stack = try ListStack(storeType: storeType)
        for index in 0..<10 { stack.item("i\(index)", rank: index * 10) }
        try stack.context.save()
        stack.context.reset()
        let request = try stack.request(sort: byRank)
        request.fetchBatchSize = 5
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: stack.context,
                                                  sectionNameKeyPath: nil, cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)
        _ = try controller.object(at: IndexPath(row: 2, section: 0)).value(forKey: "rank")   // loaded; the rest are faults

        let background = stack.newContext()
        let saves = background.saves
        let theirs = try background.fetch(request)
        theirs[2].setValue(95, forKey: "rank")      // the loaded object moves to the end
        theirs[7].setValue(-5, forKey: "rank")      // a fault moves to the front
        background.delete(theirs[4])
        stack.item("new", rank: 55, in: background)
        try background.save()
        var iterator = saves.makeAsyncIterator()
        let save = try #require(await iterator.next())
        stack.context.mergeChanges(from: save)

        #expect(names(controller) == [[":", "i7", "i0", "i1", "i3", "i5", "new", "i6", "i8", "i9", "i2"]])
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)
        #expect(controller.fetchedObjects?.map(\.objectID) == (try stack.context.fetch(request)).map(\.objectID))
    }

    @Test("fetchLimit is kept after changes; objects beyond it move in")
    func fetchLimit() throws {
        let stack = try ListStack()
        let items = (0..<6).map { stack.item("i\($0)", rank: $0) }
        try stack.context.save()
        let request = try stack.request(sort: byRank)
        request.fetchLimit = 3
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: stack.context,
                                                  sectionNameKeyPath: nil, cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        delegate.load(controller)
        #expect(names(controller) == [[":", "i0", "i1", "i2"]])
        stack.context.delete(items[1])
        stack.context.processPendingChanges()
        #expect(names(controller) == [[":", "i0", "i2", "i3"]])
        stack.item("first", rank: -1)
        stack.context.processPendingChanges()
        #expect(names(controller) == [[":", "first", "i0", "i2"]])
        #expect(delegate.tableIDs == controller.sectionIDs && delegate.problems.isEmpty)
    }

    @Test("Batch size: the results stay faults until read", arguments: allStoreTypes)
    func batchSize(storeType: PersistentStoreType) throws {
        let stack = try ListStack(storeType: storeType)
        for index in 0..<50 { stack.item(String(format: "i%02d", index), rank: index) }
        try stack.context.save()
        stack.context.reset()
        let request = try stack.request(sort: byRank)
        request.fetchBatchSize = 20
        let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: stack.context,
                                                  sectionNameKeyPath: nil, cacheName: nil)
        try controller.performFetch()
        #expect(controller.fetchedObjects?.count == 50)
        let object = try controller.object(at: IndexPath(row: 30, section: 0))
        object.setValue(-1, forKey: "rank")
        stack.context.processPendingChanges()
        #expect(controller.indexPath(forObject: object) == IndexPath(row: 0, section: 0))
        // One change touched a few objects (binary searches), not all 50.
        #expect((controller.fetchedObjects ?? []).filter { !$0.isFault }.count < 20)
    }

    @Test("Snapshots: the delegate's snapshot form, the differences per section, and the asynchronous sequence")
    func snapshots() async throws {
        let stack = try ListStack()
        let a = stack.item("a", rank: 1, group: "x")
        stack.item("b", rank: 2, group: "x")
        try stack.context.save()
        let controller = FetchedResultsController(fetchRequest: try stack.request(sort: byGroupThenRank),
                                                  managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: nil)
        final class SnapshotRecorder: FetchedResultsControllerSnapshotDelegate {
            var snapshots: [FetchedResultsSnapshot] = []
            var individualChanges = 0
            func controller(_ controller: FetchedResultsController<ManagedObject>, didChangeContentWith snapshot: FetchedResultsSnapshot) {
                snapshots.append(snapshot)
            }
            func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) { individualChanges += 1 }
        }
        let recorder = SnapshotRecorder()
        controller.delegate = recorder
        let stream = controller.snapshots
        try controller.performFetch()
        #expect(recorder.snapshots.count == 1)
        let first = try #require(recorder.snapshots.first)
        #expect(first.sectionIdentifiers == ["x"] && first.numberOfItems == 2)

        let c = stack.item("c", rank: 0, group: "y")
        a.setValue(3, forKey: "rank")
        stack.context.processPendingChanges()
        #expect(recorder.individualChanges == 0)
        let second = try #require(recorder.snapshots.last)
        #expect(second.sectionIdentifiers == ["x", "y"])
        let difference = second.difference(from: first)
        #expect(difference.sections.insertions.count == 1)
        let moved = try #require(difference.items["x"])
        #expect(try #require(first.itemIdentifiers(inSection: "x").applying(moved)) == second.itemIdentifiers(inSection: "x"))
        #expect(difference.items["y"]?.insertions.count == 1)

        // A save makes c's ID permanent: a new snapshot with the new ID.
        try stack.context.save()
        let third = try #require(recorder.snapshots.last)
        #expect(recorder.snapshots.count == 3)
        #expect(third.itemIdentifiers(inSection: "y") == [c.objectID] && !c.objectID.isTemporaryID)

        var received: [FetchedResultsSnapshot] = []
        for await snapshot in stream {
            received.append(snapshot)
            if received.count == 3 { break }
        }
        #expect(received == recorder.snapshots)
    }

    @Test("The section cache is written to disk, used while the request and store are unchanged, and deleted")
    func sectionCache() throws {
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("Cache.sqlite")
        let cacheName = "frc-test-\(UUID().uuidString)"
        defer { FetchedResultsController<ManagedObject>.deleteCache(withName: cacheName) }
        let stack = try ListStack(storeType: .sqlite, at: url)
        stack.item("a", rank: 1, group: "x")
        stack.item("b", rank: 2, group: "y")
        stack.item("c", rank: 3, group: "y")
        try stack.context.save()
        let first = FetchedResultsController(fetchRequest: try stack.request(sort: byGroupThenRank),
                                             managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: cacheName)
        try first.performFetch()
        let cache = SectionInfoCache(name: cacheName)
        #expect(FileManager.default.fileExists(atPath: cache.file.path))
        #expect(cache.file.path.contains("SectionInfoCaches"))

        // In a fresh context the sections come from the cache, without reading a
        // section key: the objects stay faults.
        let fresh = stack.newContext()
        let controller = FetchedResultsController(fetchRequest: try stack.request(sort: byGroupThenRank),
                                                  managedObjectContext: fresh, sectionNameKeyPath: "group", cacheName: cacheName)
        try controller.performFetch()
        #expect(controller.sections?.map(\.name) == ["x", "y"])
        #expect(controller.sections?.map(\.numberOfObjects) == [1, 2])
        #expect(controller.fetchedObjects?.allSatisfy(\.isFault) == true)

        // Another request: the cache does not apply, the sections are computed.
        let other = FetchedResultsController(fetchRequest: try stack.request("rank > 1", sort: byGroupThenRank),
                                             managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: cacheName)
        try other.performFetch()
        #expect(other.sections?.map(\.numberOfObjects) == [2])

        // A tampered cache for the current request is read only if it matches; a
        // corrupt file is ignored.
        try Data("not json".utf8).write(to: cache.file)
        let again = FetchedResultsController(fetchRequest: try stack.request(sort: byGroupThenRank),
                                             managedObjectContext: stack.context, sectionNameKeyPath: "group", cacheName: cacheName)
        try again.performFetch()
        #expect(again.sections?.map(\.numberOfObjects) == [1, 2])

        // The store changes (a save elsewhere): the old cache no longer applies.
        let entity = try #require(again.entity)
        let key = try #require(again.cacheKey(entity: entity))
        let writer = stack.newContext()
        stack.item("d", rank: 4, group: "z", in: writer)
        try writer.save()
        #expect(again.cacheKey(entity: entity) != key)

        FetchedResultsController<ManagedObject>.deleteCache(withName: cacheName)
        #expect(!FileManager.default.fileExists(atPath: cache.directory.path))
    }
}
