import Foundation
import GRDB
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

enum HistoryTestSupport {
    /// Authors with books; two book attributes are kept in tombstones, one is transient.
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Author") {
                Attribute("name", .string)
                Relationship("books", to: "Book", inverse: "author", toMany: true)
            }
            Entity("Book") {
                Attribute("title", .string, preservesValueOnDeletion: true)
                Attribute("isbn", .string, preservesValueOnDeletion: true)
                Attribute("pages", .integer32)
                Attribute("scratch", .string, transient: true)
                Relationship("author", to: "Author", inverse: "books")
            }
        }
    }

    static let trackingOptions = [NSPersistentHistoryTrackingKey: "1"]

    /// A coordinator on a new (or the given) store file, with `options`.
    static func stack(_ model: ManagedObjectModel, url: URL? = nil, options: [String: String] = trackingOptions)
        throws -> (url: URL, coordinator: PersistentStoreCoordinator, store: SQLiteStore, context: ManagedObjectContext) {
        let url = try url ?? Fixtures.temporaryDirectory().appendingPathComponent("History.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try #require(try coordinator.addPersistentStore(type: .sqlite, at: url, options: options) as? SQLiteStore)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (url, coordinator, store, context)
    }

    @discardableResult
    static func insertBook(_ context: ManagedObjectContext, title: String, isbn: String = "isbn", pages: Int = 100) throws -> ManagedObject {
        let entity = try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Book"])
        let book = ManagedObject(entity: entity, insertInto: context)
        book.setValue(title, forKey: "title")
        book.setValue(isbn, forKey: "isbn")
        book.setValue(pages, forKey: "pages")
        return book
    }

    static func fetchAll(_ context: ManagedObjectContext, _ entity: String = "Book") throws -> [ManagedObject] {
        let request = FetchRequest<ManagedObject>(entityName: entity)
        request.sortDescriptors = [CoreSortDescriptor(key: "title", ascending: true)]
        return try context.fetch(request)
    }

    static func raw(_ url: URL) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: url.path, configuration: configuration)
    }
}
