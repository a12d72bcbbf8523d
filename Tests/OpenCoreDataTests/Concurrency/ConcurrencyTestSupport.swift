import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization

/// A small model for the concurrency tests: lists of items, each with a counter.
enum QueueModel {
    static func make() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("List", className: "ManagedObject") {
                Attribute("title", .string)
                Relationship("items", to: "Item", inverse: "list", toMany: true, deleteRule: .cascade)
            }
            Entity("Item", className: "ManagedObject") {
                Attribute("name", .string)
                Attribute("count", .integer64, optional: false, defaultValue: 0)
                Attribute("note", .string)
                Attribute("writer", .integer64, optional: false, defaultValue: 0)
                Relationship("list", to: "List", inverse: "items")
            }
        }
    }
}

/// A coordinator on a fresh store (SQLite in a temporary folder, or in memory).
struct QueueStack {
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator
    let url: URL?

    /// A stack on an SQLite store at `url`.
    init(url: URL) throws {
        model = try QueueModel.make()
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url)
        self.url = url
    }

    init(storeType: PersistentStoreType = .sqlite) throws {
        model = try QueueModel.make()
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        if storeType == .sqlite {
            let url = try Fixtures.temporaryDirectory().appendingPathComponent("Queue.sqlite")
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            self.url = url
        } else {
            try Fixtures.addStore(type: storeType, to: coordinator)
            url = nil
        }
    }

    func context(_ type: ManagedObjectContext.ConcurrencyType = .privateQueue, name: String? = nil) -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: type)
        context.persistentStoreCoordinator = coordinator
        context.name = name
        return context
    }

    var item: EntityDescription { model.entitiesByName["Item"]! }
    var list: EntityDescription { model.entitiesByName["List"]! }
}

extension ManagedObjectContext {
    /// The items of the context, by name.
    func itemsByName() throws -> [String: ManagedObject] {
        let items = try fetch(FetchRequest<ManagedObject>(entityName: "Item"))
        return Dictionary(items.map { ($0.value(forKey: "name") as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
    }
}

/// Objects kept between `perform` blocks of one context.
///
/// `@unchecked Sendable`: the tests read and write `value` only inside blocks
/// running on the one context's queue, which serializes them.
final class QueueBound<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Counters shared by the tasks of a test.
final class SharedCounters: Sendable {
    let running: Atomic<Int>
    let conflicts = Atomic(0)
    init(running: Int) { self.running = Atomic(running) }
}
