import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

@Suite("Uniqueness constraints at save")
struct ConstraintConflictTests {
    struct Stack {
        let coordinator: PersistentStoreCoordinator
        let tag: EntityDescription
        let note: EntityDescription

        init(_ storeType: PersistentStoreType) throws {
            let model = try ManagedObjectModel {
                Entity("Tag", className: "ManagedObject") {
                    Attribute("name", .string)
                    Attribute("color", .string)
                    Attribute("uses", .integer64, optional: false, defaultValue: 0)
                    Relationship("notes", to: "Note", inverse: "tags", toMany: true)
                    UniquenessConstraint("name")
                }
                Entity("Note", className: "ManagedObject") {
                    Attribute("text", .string)
                    Relationship("tags", to: "Tag", inverse: "notes", toMany: true)
                }
            }
            coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            if storeType == .sqlite {
                try coordinator.addPersistentStore(type: .sqlite, at: try Fixtures.temporaryDirectory().appendingPathComponent("Tags.sqlite"))
            } else {
                try Fixtures.addStore(type: storeType, to: coordinator)
            }
            tag = model.entitiesByName["Tag"]!
            note = model.entitiesByName["Note"]!
        }

        func context(_ policy: MergePolicy = .error) -> ManagedObjectContext {
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            context.mergePolicy = policy
            return context
        }

        /// Stores a tag "work" (color red, used 3 times) with one note; returns its ID.
        func storeWork() throws -> ManagedObjectID {
            let context = self.context()
            return try context.performAndWait {
                let work = ManagedObject(entity: tag, insertInto: context)
                work.setValue("work", forKey: "name")
                work.setValue("red", forKey: "color")
                work.setValue(3, forKey: "uses")
                let first = ManagedObject(entity: note, insertInto: context)
                first.setValue("first", forKey: "text")
                first.setValue(Set([work]), forKey: "tags")
                try context.save()
                return work.objectID
            }
        }

        /// Every stored tag: name → (color, uses, note texts).
        func storedTags() throws -> [String: (String?, Int?, Set<String>)] {
            let context = self.context()
            return try context.performAndWait {
                var result: [String: (String?, Int?, Set<String>)] = [:]
                for tag in try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag")) {
                    let notes = (tag.value(forKey: "notes") as? Set<ManagedObject> ?? []).compactMap { $0.value(forKey: "text") as? String }
                    result[tag.value(forKey: "name") as? String ?? ""] = (tag.value(forKey: "color") as? String, tag.value(forKey: "uses") as? Int, Set(notes))
                }
                return result
            }
        }

        /// Saves a new tag "work" (color blue) attached to a new note "second".
        func saveNewWork(_ context: ManagedObjectContext) throws {
            try context.performAndWait {
                let work = ManagedObject(entity: tag, insertInto: context)
                work.setValue("work", forKey: "name")
                work.setValue("blue", forKey: "color")
                let second = ManagedObject(entity: note, insertInto: context)
                second.setValue("second", forKey: "text")
                second.setValue(Set([work]), forKey: "tags")
                try context.save()
            }
        }
    }

    @Test("A new object repeating a stored one's constrained values fails the save with 133021; nothing is written", arguments: allStoreTypes)
    func errorPolicy(storeType: PersistentStoreType) throws {
        let stack = try Stack(storeType)
        let workID = try stack.storeWork()
        let context = stack.context()
        #expect {
            try stack.saveNewWork(context)
        } throws: { error in
            guard let error = error as? CoreDataError, error.code == .managedObjectConstraintMerge,
                  let detail = error.underlyingErrors.first else { return false }
            return detail.message.contains("name = work") && detail.message.contains(workID.description)
        }
        #expect(context.performAndWait { context.hasChanges })
        let stored = try stack.storedTags()
        #expect(stored.count == 1 && stored["work"]?.0 == "red")
    }

    @Test("New objects repeating each other's values conflict too; nil values never do")
    func amongNewObjects() throws {
        let stack = try Stack(.inMemory)
        let context = stack.context()
        #expect(throws: CoreDataError.self) {
            try context.performAndWait {
                for _ in 0..<2 {
                    ManagedObject(entity: stack.tag, insertInto: context).setValue("home", forKey: "name")
                }
                try context.save()
            }
        }
        context.performAndWait { context.rollback() }
        try context.performAndWait {
            for _ in 0..<3 { _ = ManagedObject(entity: stack.tag, insertInto: context) }
            try context.save()
        }
        #expect(try stack.storedTags().count == 1, "three tags without a name are stored")
    }

    @Test("Object trump: the new object's values update the stored row; its relationships move there", arguments: allStoreTypes)
    func objectTrump(storeType: PersistentStoreType) throws {
        let stack = try Stack(storeType)
        let workID = try stack.storeWork()
        let context = stack.context(.mergeByPropertyObjectTrump)
        try stack.saveNewWork(context)
        let stored = try stack.storedTags()
        #expect(stored.count == 1)
        #expect(stored["work"]?.0 == "blue")
        #expect(stored["work"]?.1 == 0, "every non-nil value of a new object wins, its defaults too")
        #expect(stored["work"]?.2 == ["first", "second"])
        // The context now holds the stored object, with its ID.
        try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Tag")
            let tags = try context.fetch(request)
            #expect(tags.map(\.objectID) == [workID])
            #expect(!context.hasChanges)
        }
    }

    @Test("Store trump: the stored values win; the new object's links still arrive", arguments: allStoreTypes)
    func storeTrump(storeType: PersistentStoreType) throws {
        let stack = try Stack(storeType)
        _ = try stack.storeWork()
        try stack.saveNewWork(stack.context(.mergeByPropertyStoreTrump))
        let stored = try stack.storedTags()
        #expect(stored.count == 1)
        #expect(stored["work"]?.0 == "red")
        #expect(stored["work"]?.2 == ["first", "second"])
    }

    @Test("Two new objects with the same values merge into one with the object-trump policy")
    func newObjectsMerge() throws {
        let stack = try Stack(.sqlite)
        let context = stack.context(.mergeByPropertyObjectTrump)
        try context.performAndWait {
            for color in ["green", "green"] {
                let tag = ManagedObject(entity: stack.tag, insertInto: context)
                tag.setValue("home", forKey: "name")
                tag.setValue(color, forKey: "color")
            }
            try context.save()
        }
        let stored = try stack.storedTags()
        #expect(stored.count == 1 && stored["home"]?.0 == "green")
    }

    @Test("Renaming a stored object onto another's values fails with every policy")
    func changedStoredObject() throws {
        let stack = try Stack(.inMemory)
        _ = try stack.storeWork()
        let context = stack.context(.mergeByPropertyObjectTrump)
        try context.performAndWait {
            ManagedObject(entity: stack.tag, insertInto: context).setValue("home", forKey: "name")
            try context.save()
        }
        #expect(throws: CoreDataError.self) {
            try context.performAndWait {
                let request = FetchRequest<ManagedObject>(entityName: "Tag")
                request.predicate = try CorePredicate(format: "name == 'home'")
                try context.fetch(request).first?.setValue("work", forKey: "name")
                try context.save()
            }
        }
    }
}
