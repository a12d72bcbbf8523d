import Foundation
import OpenCoreData
import Testing

/// Objects prefetched with each other (both sides of a many-to-many, fetched with
/// prefetching from each side) hold each other: `reset()` and the context going
/// away must still free them.
@Suite("Prefetched objects that hold each other are freed")
struct PrefetchCycleTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("CycleItem", className: "ManagedObject") {
                Attribute("name", .string)
                Relationship("tags", to: "CycleTag", inverse: "items", toMany: true)
            }
            Entity("CycleTag", className: "ManagedObject") {
                Attribute("name", .string)
                Relationship("items", to: "CycleItem", inverse: "tags", toMany: true)
            }
        }
    }

    /// Fetches items prefetching tags, and tags prefetching items, in `context`:
    /// weak references to every fetched object.
    static func fetchBothSides(_ context: ManagedObjectContext) throws -> [Weak] {
        let items = FetchRequest<ManagedObject>(entityName: "CycleItem")
        items.relationshipKeyPathsForPrefetching = ["tags"]
        let tags = FetchRequest<ManagedObject>(entityName: "CycleTag")
        tags.relationshipKeyPathsForPrefetching = ["items"]
        let fetched = try context.fetch(items) + context.fetch(tags)
        #expect(fetched.count == 6)
        return fetched.map(Weak.init)
    }

    final class Weak {
        weak var object: ManagedObject?
        init(_ object: ManagedObject) { self.object = object }
    }

    @Test("reset() and the context's end free objects that prefetched each other", arguments: allStoreTypes)
    func cyclesFreed(type: PersistentStoreType) throws {
        let folder = try TestScratch.folder("cycle")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        if type == .sqlite {
            try coordinator.addPersistentStore(type: type, at: folder.appendingPathComponent("c.sqlite"))
        } else {
            try Fixtures.addStore(type: type, to: coordinator)
        }
        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.persistentStoreCoordinator = coordinator
        try writer.performAndWait {
            let entities = coordinator.managedObjectModel.entitiesByName
            let tags = (0..<3).map { _ in ManagedObject(entity: entities["CycleTag"]!, insertInto: writer) }
            for _ in 0..<3 {
                let item = ManagedObject(entity: entities["CycleItem"]!, insertInto: writer)
                item.setValue(Set(tags), forKey: "tags")
            }
            try writer.save()
        }

        // reset()
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let weak = try Self.fetchBothSides(context)
            context.reset()
            #expect(weak.allSatisfy { $0.object == nil })
        }

        // The context's end.
        var weak: [Weak] = []
        do {
            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.persistentStoreCoordinator = coordinator
            try other.performAndWait { weak = try Self.fetchBothSides(other) }
        }
        #expect(weak.allSatisfy { $0.object == nil })
    }
}
