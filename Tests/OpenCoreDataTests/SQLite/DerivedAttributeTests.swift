import Foundation
import GRDB
import OpenCoreDataPredicates
import Testing
@testable import OpenCoreData

/// Derived attributes: computed as Core Data computes them on SQLite (its triggers,
/// named as Core Data names them), in stores Core Data wrote and in stores made here.
@Suite("Derived attributes")
struct DerivedAttributeTests {
    static let photos = "tkanarsky+osxphotos/tests/Test-26.1.photoslibrary/database/Photos.sqlite"

    @Test("A save into a Photos library runs its derived-attribute triggers; the saved objects read the new values after a refresh")
    func photosTriggersRun() throws {
        let url = try Fixtures.copyStore(Self.photos)
        defer { SQLiteTestSupport.remove(url) }
        let model = try SQLiteStore.storedModel(at: url)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.persistentHistoryTracking: "1"])
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        let request = FetchRequest<ManagedObject>(entityName: "Asset")
        request.predicate = try CorePredicate(format: "additionalAttributes != nil")
        let asset = try #require(try context.fetch(request).first)
        let attributes = try #require(asset.value(forKey: "additionalAttributes") as? ManagedObject)
        attributes.setValue(Int64(7), forKey: "cameraCaptureDevice")
        try context.save()

        // Core Data's trigger Z_DA_ZADDITIONALASSETATTRIBUTES_Asset_derivedCameraCaptureDevice_PARAMETER_UPDATE.
        let stored = try SQLiteTestSupport.readOnlyQueue(url).read { db in
            try Int.fetchOne(db, sql: "SELECT ZDERIVEDCAMERACAPTUREDEVICE FROM ZASSET WHERE Z_PK = ?", arguments: [asset.objectID.primaryKey])
        }
        #expect(stored == 7)
        context.refresh(asset, mergeChanges: false)
        #expect((asset.value(forKey: "derivedCameraCaptureDevice") as? NSNumber)?.intValue == 7
                || asset.value(forKey: "derivedCameraCaptureDevice") as? Int64 == 7)
    }
}
