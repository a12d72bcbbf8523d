import Foundation
@testable import OpenCoreData
import Testing

/// A row's version (`Z_OPT`) moves only when the save writes the row: a save whose
/// only change to an object is transient must not make the object's next save look
/// like a conflict.
@Suite("Saving: versions follow the rows written")
struct SaveVersionTests {
    @Test("A transient-only change, saved, then a real change: saved without a conflict", arguments: [PersistentStoreType.sqlite, .inMemory])
    func transientChangeKeepsVersion(storeType: PersistentStoreType) throws {
        let model = try ManagedObjectModel {
            Entity("Note", className: "ManagedObject") {
                Attribute("text", .string)
                Attribute("scratch", .string, transient: true)
            }
        }
        let (coordinator, folder) = try Fixtures.coordinator(for: model, storeType: storeType)
        defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let note = ManagedObject(entity: model.entitiesByName["Note"]!, insertInto: context)
            note.setValue("first", forKey: "text")
            try context.save()
            note.setValue("only transient", forKey: "scratch")
            try context.save()
            note.setValue("second", forKey: "text")
            try context.save()

            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.persistentStoreCoordinator = coordinator
            let stored = try other.performAndWait { try other.existingObject(with: note.objectID).value(forKey: "text") as? String }
            #expect(stored == "second")
        }
    }
}
