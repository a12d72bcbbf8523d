import Foundation
import OpenCoreData
import Testing

/// `assignObjectIDs(_:to:)`: new objects saved under primary keys the caller
/// chose (what copying a store with its keys needs), on both store types.
@Suite("Object IDs chosen by the caller")
struct AssignObjectIDsTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Note", className: "ManagedObject") {
                Attribute("text", .string)
            }
            Entity("Other", className: "ManagedObject") {
                Attribute("text", .string)
            }
        }
    }

    @Test("Objects keep the chosen keys; keys handed out later are greater", arguments: allStoreTypes)
    func chosenKeys(type: PersistentStoreType) throws {
        let folder = try TestScratch.folder("assign")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        let store = type == .sqlite ? try coordinator.addPersistentStore(type: type, at: folder.appendingPathComponent("n.sqlite"))
            : try Fixtures.addStore(type: type, to: coordinator)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let entity = coordinator.managedObjectModel.entitiesByName["Note"]!
            // A key reserved by an earlier allocation, then keys chosen above it.
            let early = ManagedObject(entity: entity, insertInto: context)
            try context.obtainPermanentIDs(for: [early])
            let chosen = [Int64(40), 7, 1000]
            let notes = chosen.map { _ in ManagedObject(entity: entity, insertInto: context) }
            let ids = chosen.map { ManagedObjectID(entity: entity, storeIdentifier: store.identifier, primaryKey: $0) }
            try context.assignObjectIDs(ids, to: notes)
            #expect(notes.map(\.objectID) == ids)
            #expect(context.registeredObject(for: ids[0]) === notes[0])
            try context.save()
            context.reset()
            let fetched = try context.fetch(FetchRequest<ManagedObjectID>(entityName: "Note")).compactMap(\.primaryKey).sorted()
            #expect(fetched == [early.objectID.primaryKey!, 7, 40, 1000].sorted())
            let later = ManagedObject(entity: entity, insertInto: context)
            try context.save()
            #expect(later.objectID.primaryKey! > 1000)

            // Refused: a registered ID, a temporary or foreign-entity ID, a saved object, counts that differ.
            let fresh = ManagedObject(entity: entity, insertInto: context)
            #expect(throws: CoreDataError.self) { try context.assignObjectIDs([later.objectID], to: [fresh]) }
            #expect(throws: CoreDataError.self) { try context.assignObjectIDs([fresh.objectID], to: [fresh]) }
            let other = ManagedObjectID(entity: coordinator.managedObjectModel.entitiesByName["Other"]!, storeIdentifier: store.identifier, primaryKey: 5000)
            #expect(throws: CoreDataError.self) { try context.assignObjectIDs([other], to: [fresh]) }
            #expect(throws: CoreDataError.self) {
                try context.assignObjectIDs([ManagedObjectID(entity: entity, storeIdentifier: store.identifier, primaryKey: 5001)], to: [later])
            }
            #expect(throws: CoreDataError.self) { try context.assignObjectIDs([], to: [fresh]) }
            #expect(fresh.objectID.isTemporaryID)
        }
    }
}
