import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// A note whose lifecycle hooks run what a test gives them (user code changing the
/// context in the middle of a save or a fetch).
final class HookedNote: ManagedObject {
    nonisolated(unsafe) static var onWillSave: ((HookedNote) -> Void)?
    nonisolated(unsafe) static var onValidateForInsert: ((HookedNote) -> Void)?
    nonisolated(unsafe) static var onAwakeFromFetch: ((HookedNote) -> Void)?

    override func willSave() { super.willSave(); HookedNote.onWillSave?(self) }
    override func validateForInsert() throws { try super.validateForInsert(); HookedNote.onValidateForInsert?(self) }
    override func awakeFromFetch() { super.awakeFromFetch(); HookedNote.onAwakeFromFetch?(self) }

    static func resetHooks() { onWillSave = nil; onValidateForInsert = nil; onAwakeFromFetch = nil }
}

/// The save's bookkeeping when user code it calls (`willSave()`, validation)
/// changes what the context holds, and uniquing when a fetch's `awakeFromFetch()`
/// fetches: the fast paths of a save (one sorting pass, change sets emptied at
/// once and handed to the notification) and of a first fetch (no lookups) must
/// step aside.
@Suite("Save bookkeeping and fetch uniquing under user code", .serialized)
struct SaveBookkeepingTests {
    static func stack(_ storeType: PersistentStoreType) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        ManagedObjectClasses.register(HookedNote.self)
        let model = try ManagedObjectModel {
            Entity("Note", className: "HookedNote") {
                Attribute("title", .string)
                Attribute("stamp", .integer64, defaultValue: 0)
            }
        }
        let (coordinator, _) = try Fixtures.coordinator(for: model, storeType: storeType)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    static func note(_ title: String, in context: ManagedObjectContext) -> HookedNote {
        let note = HookedNote(entity: context.persistentStoreCoordinator!.managedObjectModel.entitiesByName["Note"]!, insertInto: context)
        note.setValue(title, forKey: "title")
        return note
    }

    static func storedTitles(_ coordinator: PersistentStoreCoordinator) throws -> [String] {
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = coordinator
        return try reader.performAndWait {
            try reader.fetch(FetchRequest<ManagedObject>(entityName: "Note")).compactMap { $0.value(forKey: "title") as? String }.sorted()
        }
    }

    @Test("willSave() deleting one object and inserting another: the save sorts again", arguments: allStoreTypes)
    func willSaveChangesTheSets(storeType: PersistentStoreType) throws {
        defer { HookedNote.resetHooks() }
        let (coordinator, context) = try Self.stack(storeType)
        let doomed = Self.note("doomed", in: context)
        try context.save()
        for i in 0..<5 { _ = Self.note("n\(i)", in: context) }
        nonisolated(unsafe) var added: HookedNote?
        HookedNote.onWillSave = { note in
            guard added == nil, note.value(forKey: "title") as? String == "n0" else { return }
            context.delete(doomed)
            added = Self.note("added", in: context)
        }
        try context.save()
        // The deletion and the insertion made by willSave() are in the save.
        #expect(try Self.storedTitles(coordinator) == ["added", "n0", "n1", "n2", "n3", "n4"])
        #expect(!context.hasChanges)
        #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty)
        #expect(added?.objectID.isTemporaryID == false)
    }

    @Test("willSave() stamping updated objects: the stamps are saved", arguments: allStoreTypes)
    func willSaveStampsUpdatedObjects(storeType: PersistentStoreType) throws {
        defer { HookedNote.resetHooks() }
        let (coordinator, context) = try Self.stack(storeType)
        let notes = (0..<4).map { Self.note("n\($0)", in: context) }
        try context.save()
        HookedNote.onWillSave = { note in
            if note.isUpdated { note.setValue(Int64(42), forKey: "stamp") }
        }
        for note in notes.prefix(2) { note.setValue("changed", forKey: "title") }
        try context.save()
        #expect(!context.hasChanges)
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = coordinator
        let stamps = try reader.performAndWait {
            try reader.fetch(FetchRequest<ManagedObject>(entityName: "Note")).map {
                ($0.value(forKey: "title") as? String ?? "", $0.attributeValue(forKey: "stamp").int64Value ?? -1)
            }.sorted { $0.0 < $1.0 }
        }
        #expect(stamps.map(\.1) == [42, 42, 0, 0])
        #expect(stamps.map(\.0) == ["changed", "changed", "n2", "n3"])
    }

    @Test("An object inserted during validation stays inserted, unsaved, after the save", arguments: allStoreTypes)
    func validationInsertsAnObject(storeType: PersistentStoreType) throws {
        defer { HookedNote.resetHooks() }
        let (coordinator, context) = try Self.stack(storeType)
        for i in 0..<3 { _ = Self.note("n\(i)", in: context) }
        nonisolated(unsafe) var late: HookedNote?
        HookedNote.onValidateForInsert = { _ in
            if late == nil { late = Self.note("late", in: context) }
        }
        try context.save()
        HookedNote.resetHooks()
        #expect(try Self.storedTitles(coordinator) == ["n0", "n1", "n2"])
        // Validation ran after the save sorted its objects: the late one is still new.
        let pending = try #require(late)
        #expect(context.insertedObjects == [pending])
        #expect(pending.isInserted && pending.objectID.isTemporaryID)
        #expect(context.hasChanges)
        try context.save()
        #expect(try Self.storedTitles(coordinator) == ["late", "n0", "n1", "n2"])
        #expect(!context.hasChanges)
    }

    @Test("Validation changing new objects validated before: their rows have the new values", arguments: allStoreTypes)
    func validationChangesValidatedObjects(storeType: PersistentStoreType) throws {
        defer { HookedNote.resetHooks() }
        let (coordinator, context) = try Self.stack(storeType)
        let notes = (0..<6).map { Self.note("n\($0)", in: context) }
        nonisolated(unsafe) var validated: [HookedNote] = []
        HookedNote.onValidateForInsert = { note in
            // Each validation renames every note validated before it.
            for earlier in validated { earlier.setValue("renamed", forKey: "title") }
            validated.append(note)
        }
        try context.save()
        HookedNote.resetHooks()
        let last = try #require(validated.last)
        #expect(validated.count == notes.count)
        let expected = notes.map { $0 === last ? ($0.value(forKey: "title") as? String ?? "") : "renamed" }.sorted()
        #expect(try Self.storedTitles(coordinator) == expected)
        #expect(Set(try Self.storedTitles(coordinator)).count == 2)
    }

    @Test("Validation swapping one deletion for another, the counts unchanged: the new deletion stays pending", arguments: allStoreTypes)
    func validationSwapsDeletions(storeType: PersistentStoreType) throws {
        defer { HookedNote.resetHooks() }
        let (coordinator, context) = try Self.stack(storeType)
        let first = Self.note("first", in: context), second = Self.note("second", in: context)
        try context.save()
        context.delete(first)
        _ = Self.note("new", in: context)
        HookedNote.onValidateForInsert = { _ in
            // The change sets keep their sizes; their members change.
            context.insert(first)
            context.delete(second)
        }
        try context.save()
        HookedNote.resetHooks()
        // The save had sorted `first` as deleted before validation ran; `second`,
        // deleted by validation, was not in it and is still to be deleted.
        #expect(second.isDeleted)
        #expect(context.deletedObjects == [second])
        #expect(context.hasChanges)
        try context.save()
        #expect(try Self.storedTitles(coordinator) == ["new"])
        #expect(!context.hasChanges)
    }

    @Test("The did-save notification's sets are the saved objects, unaffected by later changes", arguments: allStoreTypes)
    func didSaveSets(storeType: PersistentStoreType) throws {
        let (_, context) = try Self.stack(storeType)
        let kept = Self.note("kept", in: context)
        try context.save()
        let notes = (0..<20).map { Self.note("n\($0)", in: context) }
        context.delete(kept)
        nonisolated(unsafe) var inserted: Set<ManagedObject> = [], deleted: Set<ManagedObject> = []
        let token = NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification, object: context, queue: nil) { note in
            inserted = note.userInfo?[ManagedObjectContext.NotificationKey.insertedObjects] as? Set<ManagedObject> ?? []
            deleted = note.userInfo?[ManagedObjectContext.NotificationKey.deletedObjects] as? Set<ManagedObject> ?? []
        }
        defer { NotificationCenter.default.removeObserver(token) }
        try context.save()
        #expect(inserted == Set(notes))
        #expect(deleted == [kept])
        // The context's sets start empty again; the notification's do not change.
        let after = Self.note("after", in: context)
        #expect(context.insertedObjects == [after])
        #expect(inserted.count == 20 && !inserted.contains(after))
    }

    @Test("A first fetch whose awakeFromFetch() fetches keeps one object per row", arguments: allStoreTypes)
    func fetchUniquingUnderAwakeFromFetch(storeType: PersistentStoreType) throws {
        defer { HookedNote.resetHooks() }
        let (coordinator, writer) = try Self.stack(storeType)
        for i in 0..<30 { _ = Self.note("n\(i)", in: writer) }
        try writer.save()

        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        nonisolated(unsafe) var inner: [ManagedObject] = []
        HookedNote.onAwakeFromFetch = { _ in
            guard inner.isEmpty else { return }
            inner = (try? context.fetch(FetchRequest<ManagedObject>(entityName: "Note"))) ?? []
        }
        let request = FetchRequest<ManagedObject>(entityName: "Note")
        request.returnsObjectsAsFaults = false
        let outer = try context.fetch(request)
        #expect(outer.count == 30 && inner.count == 30)
        // The same object for each ID, whichever fetch made it.
        let innerByID = Dictionary(uniqueKeysWithValues: inner.map { ($0.objectID, $0) })
        for object in outer {
            #expect(innerByID[object.objectID] === object)
            #expect(context.registeredObject(for: object.objectID) === object)
        }
        #expect(Set(outer.map(ObjectIdentifier.init)).count == 30)
    }
}
