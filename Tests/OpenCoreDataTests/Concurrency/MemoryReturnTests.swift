import Foundation
import GRDB
@testable import OpenCoreData
import Testing

/// A server that opens its users' stores, each with the model from its own
/// `Z_MODELCACHE`, must get everything back when it closes them: the model, its
/// entities, the coordinator, the store, the contexts and their objects. (Whether
/// anything else is kept is LeakSanitizer's to say: `.ci/sanitizers address`.
/// The process's resident size is no measure here, with other suites running
/// at the same time.)
@Suite("Memory that comes back")
struct MemoryReturnTests {
    /// Weak references to everything one opening made.
    struct Made {
        weak var model: ManagedObjectModel?
        weak var cachedModel: ManagedObjectModel?
        weak var entity: EntityDescription?
        weak var coordinator: PersistentStoreCoordinator?
        weak var context: ManagedObjectContext?
        weak var object: ManagedObject?

        var allGone: Bool {
            model == nil && cachedModel == nil && entity == nil && coordinator == nil && context == nil && object == nil
        }
    }

    /// The stores are thrown away: no waiting for the disk.
    static let noSync = ["pragma.synchronous": "OFF"]

    /// Creates a store with a model of its own, saves objects, reopens the store
    /// with the model read from its `Z_MODELCACHE`, reads them, and lets it all go.
    static func openAndClose(_ index: Int, in folder: URL) throws -> Made {
        var made = Made()
        let url = folder.appendingPathComponent("store-\(index).sqlite")
        do {
            let model = try ManagedObjectModel {
                Entity("Note\(index % 7)", className: "ManagedObject") {
                    Attribute("title", .string)
                    Attribute("rank", .integer64, optional: false, defaultValue: 0)
                    Relationship("tags", to: "Tag", inverse: "notes", toMany: true)
                }
                Entity("Tag", className: "ManagedObject") {
                    Attribute("name", .string)
                    Relationship("notes", to: "Note\(index % 7)", inverse: "tags", toMany: true)
                }
            }
            made.model = model
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: Self.noSync)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                let tag = ManagedObject(entity: model.entitiesByName["Tag"]!, insertInto: context)
                tag.setValue("t\(index)", forKey: "name")
                for rank in 0..<3 {
                    let note = ManagedObject(entity: model.entitiesByName["Note\(index % 7)"]!, insertInto: context)
                    note.setValue("n\(rank)", forKey: "title")
                    note.setValue(rank, forKey: "rank")
                    note.mutableSetValue(forKey: "tags").add(tag)
                }
                try context.save()
            }
            for store in coordinator.persistentStores { coordinator.remove(store) }
        }
        do {
            // Opened again without the app's model, as `ocd` opens a store.
            let blob = try DatabaseQueue(path: url.path).read { db in
                try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")
            }
            let model = try ManagedObjectModel(modelCacheData: try #require(blob))
            made.cachedModel = model
            made.entity = model.entitiesByName["Tag"]
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            made.coordinator = coordinator
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: Self.noSync)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            made.context = context
            try context.performAndWait {
                let tags = try context.fetch(FetchRequest<ManagedObject>(entityName: "Tag"))
                #expect(tags.count == 1)
                made.object = tags.first
                let notes = tags.first?.value(forKey: "notes") as? Set<ManagedObject>
                #expect(notes?.count == 3)
            }
            for store in coordinator.persistentStores { coordinator.remove(store) }
        }
        try FileManager.default.removeItem(at: url)
        return made
    }

    /// Under a sanitizer (whose runs are several times slower), fewer rounds.
    static var rounds: Int {
        let environment = ProcessInfo.processInfo.environment
        return environment["TSAN_OPTIONS"] != nil || environment["ASAN_OPTIONS"] != nil ? 200 : 1000
    }

    @Test("1,000 stores opened and closed one after another, each with its own model: everything freed")
    func manyStores() throws {
        let folder = try Fixtures.temporaryDirectory()
        for index in 0..<Self.rounds {
            let made = try Self.openAndClose(index, in: folder)
            #expect(made.allGone, "round \(index): \(made)")
        }
        // Each store had a UUID of its own: the interned names of the closed
        // ones are dropped as the table grows (other tests' stores share it).
        #expect(ManagedObjectID.StoreName.tableCount < 1000)
    }
}
