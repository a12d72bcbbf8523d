import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

/// A custom policy: resolves by property with the object's changes winning, but
/// keeps the larger of the two counts.
final class KeepLargestCount: MergePolicy, @unchecked Sendable {
    override func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
        try super.resolve(optimisticLockingConflicts: conflicts)
        for conflict in conflicts {
            let stored = conflict.persistedSnapshot?["count"] as? Int ?? 0
            let mine = conflict.sourceObject.value(forKey: "count") as? Int ?? 0
            conflict.sourceObject.setValue(max(stored, mine), forKey: "count")
        }
    }
}

@Suite("Merge policies")
struct MergePolicyTests {
    /// Two contexts read the same item; `other` saves `count = 10, note = "store"`,
    /// then `mine` saves `count = 1, name = "mine"` with `policy`. Returns the stored
    /// item's (name, count, note) and the error of the second save, if any.
    func conflict(_ policy: MergePolicy, storeType: PersistentStoreType = .sqlite,
                  otherDeletes: Bool = false) throws -> (String?, Int?, String?, CoreDataError?, [MergeConflict]) {
        let stack = try QueueStack(storeType: storeType)
        let setup = stack.context()
        let id = try setup.performAndWait {
            let item = ManagedObject(entity: stack.item, insertInto: setup)
            item.setValue("original", forKey: "name")
            item.setValue("note", forKey: "note")
            try setup.save()
            return item.objectID
        }
        let mine = stack.context()
        let other = stack.context()
        let item = try mine.performAndWait { try mine.existingObject(with: id) }
        try other.performAndWait {
            let theirs = try other.existingObject(with: id)
            if otherDeletes {
                other.delete(theirs)
            } else {
                theirs.setValue(10, forKey: "count")
                theirs.setValue("store", forKey: "note")
            }
            try other.save()
        }
        final class Recorder: MergePolicy, @unchecked Sendable {
            let seen = QueueBound<[MergeConflict]>([])
            override func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
                seen.value += conflicts
                try super.resolve(optimisticLockingConflicts: conflicts)
            }
        }
        let recorder = Recorder(merge: policy.mergeType)
        mine.mergePolicy = policy === MergePolicy.error ? policy : (policy is KeepLargestCount ? policy : recorder)
        var failure: CoreDataError?
        mine.performAndWait {
            item.setValue(1, forKey: "count")
            item.setValue("mine", forKey: "name")
            do { try mine.save() } catch { failure = error as? CoreDataError }
        }
        let check = stack.context()
        let stored = check.performAndWait { () -> (String?, Int?, String?) in
            guard let object = try? check.existingObject(with: id) else { return (nil, nil, nil) }
            return (object.value(forKey: "name") as? String, object.value(forKey: "count") as? Int, object.value(forKey: "note") as? String)
        }
        return (stored.0, stored.1, stored.2, failure, recorder.seen.value)
    }

    @Test("The error policy (the default) fails the save with 133020 and writes nothing", arguments: allStoreTypes)
    func errorPolicy(storeType: PersistentStoreType) throws {
        let (name, count, note, error, _) = try conflict(.error, storeType: storeType)
        #expect(error?.code == .managedObjectMerge)
        #expect(error?.underlyingErrors.count == 1)
        #expect(name == "original" && count == 10 && note == "store")
    }

    @Test("Object trump: the object's changed properties win, the store's other changes stay", arguments: allStoreTypes)
    func objectTrump(storeType: PersistentStoreType) throws {
        let (name, count, note, error, conflicts) = try conflict(.mergeByPropertyObjectTrump, storeType: storeType)
        #expect(error == nil)
        #expect(name == "mine" && count == 1 && note == "store")
        let first = try #require(conflicts.first)
        #expect(conflicts.count == 1)
        #expect(first.oldVersionNumber == 1 && first.newVersionNumber == 2)
        #expect(first.cachedSnapshot?["count"] as? Int == 0)
        #expect(first.persistedSnapshot?["count"] as? Int == 10)
        #expect(first.objectSnapshot?["count"] as? Int == 1)
    }

    @Test("Store trump: properties changed in the store win, the object's other changes are saved", arguments: allStoreTypes)
    func storeTrump(storeType: PersistentStoreType) throws {
        let (name, count, note, error, _) = try conflict(.mergeByPropertyStoreTrump, storeType: storeType)
        #expect(error == nil)
        #expect(name == "mine" && count == 10 && note == "store")
    }

    @Test("Overwrite: the object replaces the stored row", arguments: allStoreTypes)
    func overwrite(storeType: PersistentStoreType) throws {
        let (name, count, note, error, _) = try conflict(.overwrite, storeType: storeType)
        #expect(error == nil)
        #expect(name == "mine" && count == 1 && note == "note")
    }

    @Test("Rollback: the object's changes are dropped for the stored state", arguments: allStoreTypes)
    func rollback(storeType: PersistentStoreType) throws {
        let (name, count, note, error, _) = try conflict(.rollback, storeType: storeType)
        #expect(error == nil)
        #expect(name == "original" && count == 10 && note == "store")
    }

    @Test("A custom policy decides per conflict")
    func customPolicy() throws {
        let (name, count, note, error, _) = try conflict(KeepLargestCount(merge: .mergeByPropertyObjectTrump))
        #expect(error == nil)
        #expect(name == "mine" && count == 10 && note == "store")
    }

    @Test("An object deleted from the store meanwhile is dropped from the save, except with the error policy")
    func deletedInStore() throws {
        let failed = try conflict(.error, otherDeletes: true)
        #expect(failed.3?.code == .managedObjectMerge)
        let resolved = try conflict(.mergeByPropertyObjectTrump, otherDeletes: true)
        #expect(resolved.3 == nil)
        #expect(resolved.0 == nil, "the object stays deleted")
        #expect(resolved.4.first?.persistedSnapshot == nil && resolved.4.first?.newVersionNumber == 0)
    }
}
