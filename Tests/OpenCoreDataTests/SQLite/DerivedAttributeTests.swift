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

extension DerivedAttributeTests {
    @Test("A store created from Photos' cached model has Core Data's derived-attribute triggers, to the byte")
    func photosTriggersReproduced() throws {
        let url = try Fixtures.copyStore(Self.photos)
        defer { SQLiteTestSupport.remove(url) }
        let model = try SQLiteStore.storedModel(at: url)
        let real = try SQLiteTestSupport.readOnlyQueue(url).read { db in
            try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'Z\\_DA\\_%' ESCAPE '\\'")
                .map { ($0[0] as String, $0[1] as String) }
        }
        #expect(real.count == 8)
        let created = try SQLiteStoreFile.createStore(at: url.deletingLastPathComponent().appendingPathComponent("New.sqlite"), model: model)
        let ours = created.creationStatements.filter { $0.hasPrefix("CREATE TRIGGER") }
        #expect(Set(ours) == Set(real.map(\.1)))
    }
}

extension DerivedAttributeTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Shelf") {
                Attribute("name", .string)
                Attribute("searchName", .string, derivedFrom: "canonical:(name)")
                Attribute("lowerName", .string, derivedFrom: "lowercase:(name)")
                Attribute("upperName", .string, derivedFrom: "uppercase:(name)")
                Attribute("nameCopy", .string, derivedFrom: "name")
                Attribute("touched", .date, derivedFrom: "now()")
                Attribute("bookCount", .integer64, derivedFrom: "books.@count")
                Attribute("pageSum", .integer64, derivedFrom: "books.pages.@sum")
                Attribute("tagCount", .integer64, derivedFrom: "tags.@count")
                Relationship("books", to: "Book", inverse: "shelf", toMany: true)
                Relationship("tags", to: "Tag", inverse: "shelves", toMany: true)
            }
            Entity("Book") {
                Attribute("title", .string)
                Attribute("pages", .integer64)
                Attribute("shelfName", .string, derivedFrom: "shelf.name")
                Relationship("shelf", to: "Shelf", inverse: "books")
            }
            Entity("Tag") {
                Attribute("label", .string)
                Relationship("shelves", to: "Shelf", inverse: "tags", toMany: true)
            }
        }
    }

    @Test("Every form Core Data computes is kept up to date after each save", arguments: [PersistentStoreType.sqlite, .inMemory])
    func everyForm(storeType: PersistentStoreType) throws {
        let model = try Self.model()
        let (coordinator, folder) = try Fixtures.coordinator(for: model, storeType: storeType)
        defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let shelf = ManagedObject(entity: model.entitiesByName["Shelf"]!, insertInto: context)
        shelf.setValue("Élan Vital", forKey: "name")
        var books: [ManagedObject] = []
        for (title, pages) in [("A", 100), ("B", 250), ("C", 50)] {
            let book = ManagedObject(entity: model.entitiesByName["Book"]!, insertInto: context)
            book.setValue(title, forKey: "title")
            book.setValue(Int64(pages), forKey: "pages")
            book.setValue(shelf, forKey: "shelf")
            books.append(book)
        }
        let tag = ManagedObject(entity: model.entitiesByName["Tag"]!, insertInto: context)
        tag.setValue("old", forKey: "label")
        shelf.mutableSetValue(forKey: "tags").add(tag)
        let before = Date()
        try context.save()

        // A context of its own for each reading (kept alive with its objects).
        func reread() throws -> (context: ManagedObjectContext, shelf: ManagedObject, books: [String: ManagedObject]) {
            let fresh = ManagedObjectContext(concurrencyType: .mainQueue)
            fresh.persistentStoreCoordinator = coordinator
            let shelf = try #require(try fresh.fetch(FetchRequest<ManagedObject>(entityName: "Shelf")).first)
            let books = try fresh.fetch(FetchRequest<ManagedObject>(entityName: "Book"))
            return (fresh, shelf, Dictionary(uniqueKeysWithValues: books.map { ($0.value(forKey: "title") as? String ?? "", $0) }))
        }
        var read = try reread()
        #expect(read.shelf.value(forKey: "searchName") as? String == "elan vital")
        #expect(read.shelf.value(forKey: "lowerName") as? String == "élan vital")
        #expect(read.shelf.value(forKey: "upperName") as? String == "ÉLAN VITAL")
        #expect(read.shelf.value(forKey: "nameCopy") as? String == "Élan Vital")
        #expect((read.shelf.value(forKey: "touched") as? Date).map { $0 >= before.addingTimeInterval(-1) } == true)
        #expect(read.shelf.value(forKey: "bookCount") as? Int == 3)
        #expect(read.shelf.value(forKey: "pageSum") as? Int == 400)
        #expect(read.shelf.value(forKey: "tagCount") as? Int == 1)
        #expect(read.books["A"]?.value(forKey: "shelfName") as? String == "Élan Vital")

        // Change the sources: the shelf's name, a book's pages, one book gone, one moved off.
        shelf.setValue("Ödland", forKey: "name")
        books[0].setValue(Int64(120), forKey: "pages")
        context.delete(books[2])
        books[1].setValue(nil, forKey: "shelf")
        shelf.mutableSetValue(forKey: "tags").remove(tag)
        try context.save()
        read = try reread()
        #expect(read.shelf.value(forKey: "searchName") as? String == "odland")
        #expect(read.shelf.value(forKey: "bookCount") as? Int == 1)
        #expect(read.shelf.value(forKey: "pageSum") as? Int == 120)
        #expect(read.shelf.value(forKey: "tagCount") as? Int == 0)
        #expect(read.books["A"]?.value(forKey: "shelfName") as? String == "Ödland")
        #expect(read.books["B"]?.value(forKey: "shelfName") == nil)

        // The saving context's own objects read the new values once refreshed (as Core Data documents).
        context.refresh(shelf, mergeChanges: false)
        #expect(shelf.value(forKey: "bookCount") as? Int == 1)
    }
}
