import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

@ManagedEntity
final class DALUser: ManagedObject {
    @Managed var firstname: String
    @Managed var lastname: String?
    @Managed(default: Int64(0)) var age: Int64
    @Managed(inverse: "owner", deleteRule: .cascade) var notes: Set<DALNote>
}

@ManagedEntity
final class DALNote: ManagedObject {
    @Managed var text: String
    @Managed(inverse: "notes") var owner: DALUser?
}

extension DALUser: Managed {
    static var defaultSortDescriptors: [CoreSortDescriptor] { [CoreSortDescriptor(key: "firstname", ascending: true)] }
}

/// A data access layer that collects the errors it is handed.
final class CollectingDataAccess: DataAccessLayer, @unchecked Sendable {
    let errors = Lock<[String]>([])
    override func handleError(_ error: any Error) {
        errors.withLock { $0.append(String(describing: error)) }
    }
}

enum DALStack {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(classes: [DALUser.self, DALNote.self])
    }

    /// A data access layer on a fresh store of `type` (SQLite in a temporary folder).
    static func make(_ type: PersistentStoreType) throws -> (CollectingDataAccess, URL?) {
        switch type {
        case .sqlite:
            let url = try Fixtures.temporaryDirectory().appendingPathComponent("DAL.sqlite")
            return (try CollectingDataAccess(sqliteStack: try model(), storeURL: url), url)
        default:
            return (try CollectingDataAccess(inMemoryStack: try model()), nil)
        }
    }
}

@Suite("The data access layer (Skopelos)")
struct DataAccessLayerTests {
    static let storeTypes: [PersistentStoreType] = [.inMemory, .sqlite]

    @Test("writeSync saves to the store; read sees it on the main context; the helpers find it", arguments: storeTypes)
    func writeThenRead(type: PersistentStoreType) throws {
        let (dataAccess, _) = try DALStack.make(type)
        var completed: (any Error)?? = .none
        dataAccess.writeSync({ context in
            for (name, age) in [("John", 40), ("Anna", 31), ("Zoe", 25)] {
                let user = DALUser.create(in: context)
                user.firstname = name
                user.age = Int64(age)
            }
        }, completion: { error in completed = .some(error) })
        #expect(completed != nil && completed! == nil)

        var names: [String] = []
        var count = -1
        var older: [String] = []
        var first: String?
        var youngest: String?
        dataAccess.read { context in
            #expect(context === dataAccess.mainContext)
            names = try DALUser.all(in: context).map(\.firstname).sorted()
            count = try DALUser.count(in: context)
            older = try DALUser.all(predicate: CorePredicate(format: "age > 30"), in: context).map(\.firstname).sorted()
            first = try DALUser.first(in: context)?.firstname
            youngest = try DALUser.first(sortedBy: [CoreSortDescriptor(key: "age", ascending: true)], in: context)?.firstname
        }
        #expect(names == ["Anna", "John", "Zoe"])
        #expect(count == 3)
        #expect(older == ["Anna", "John"])
        #expect(first != nil)
        #expect(youngest == "Zoe")
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }

    @Test("Chained writes and reads run in order; inContext moves an object between blocks", arguments: storeTypes)
    func chaining(type: PersistentStoreType) throws {
        let (dataAccess, _) = try DALStack.make(type)
        var user: DALUser!
        var countAfterFirst = -1
        var countAfterRemove = -1
        dataAccess.write { context in
            user = DALUser.create(in: context)
            user.firstname = "John"
            user.lastname = "Doe"
            let note = DALNote.create(in: context)
            note.text = "hello"
            note.owner = user
        }.read { context in
            countAfterFirst = try DALUser.count(in: context)
            #expect(try DALNote.count(in: context) == 1)
        }.write { context in
            let again = try user.inContext(context)
            #expect(again?.firstname == "John")
            try again?.remove(in: context)
        }.read { context in
            countAfterRemove = try DALUser.count(in: context)
            let notes = try DALNote.count(in: context)
            #expect(notes == 0, "the cascade rule deleted the note")
        }
        #expect(countAfterFirst == 1)
        #expect(countAfterRemove == 0)
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }

    @Test("A failing block or save is rolled back; the error goes to the completion, else to handleError", arguments: storeTypes)
    func failures(type: PersistentStoreType) throws {
        let (dataAccess, _) = try DALStack.make(type)
        struct Refused: Error {}
        var received: (any Error)?
        dataAccess.writeSync({ context in
            DALUser.create(in: context).firstname = "Ghost"
            throw Refused()
        }, completion: { received = $0 })
        #expect(received is Refused)

        // A save that fails validation: firstname is required.
        dataAccess.writeSync { context in
            _ = DALUser.create(in: context)
        }
        let errors = dataAccess.errors.withLock { $0 }
        #expect(errors.count == 1)
        #expect(errors.first?.contains("firstname") == true)

        // Nothing reached the store, and the writer is clean for the next write.
        dataAccess.read { context in
            let value = try DALUser.count(in: context)
            #expect(value == 0)
        }
        dataAccess.writeSync { context in DALUser.create(in: context).firstname = "Real" }
        dataAccess.read { context in
            let value = try DALUser.count(in: context)
            #expect(value == 1)
        }
        dataAccess.read { _ in throw Refused() }
        #expect(dataAccess.errors.withLock { $0 }.count == 2)
    }

    @Test("writeAsync from many tasks at once: every write lands, completions run after the merge", arguments: storeTypes)
    func concurrentWrites(type: PersistentStoreType) async throws {
        let (dataAccess, _) = try DALStack.make(type)
        let writes = 120
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<writes {
                group.addTask {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        dataAccess.writeAsync({ context in
                            let user = DALUser.create(in: context)
                            user.firstname = "user\(index)"
                            user.age = Int64(index)
                        }, completion: { error in
                            if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                        })
                    }
                }
            }
            // Readers meanwhile, on the main context.
            for _ in 0..<4 {
                group.addTask {
                    let count = try await dataAccess.reading { context in try DALUser.count(in: context) }
                    #expect((0...writes).contains(count))
                }
            }
            try await group.waitForAll()
        }
        let (count, sum) = try await dataAccess.reading { context in
            let users = try DALUser.all(in: context)
            return (users.count, users.reduce(0) { $0 + $1.age })
        }
        #expect(count == writes)
        #expect(sum == Int64(writes * (writes - 1) / 2))
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }

    @Test("writing returns the permanent ID; the main context, holding the object, shows the change after a write", arguments: storeTypes)
    func asyncWriting(type: PersistentStoreType) async throws {
        let (dataAccess, _) = try DALStack.make(type)
        let id = try await dataAccess.writing { context in
            let user = DALUser.create(in: context)
            user.firstname = "Ada"
            user.age = 36
            return user.objectID
        }
        #expect(!id.isTemporaryID)
        let main = dataAccess.mainContext
        let held = try await main.perform {
            let user = try main.existingObject(with: id) as! DALUser
            return UnsafeObjectBox(user)
        }
        try await dataAccess.writing { context in
            let user = try context.existingObject(with: id) as! DALUser
            user.age = 37
        }
        let age = await main.perform { held.object.age }
        #expect(age == 37, "the main context merged the write into the object it holds")
    }

    @Test("removeAll is one batch delete, merged into the writing and the main context", arguments: storeTypes)
    func removeAll(type: PersistentStoreType) async throws {
        let (dataAccess, _) = try DALStack.make(type)
        dataAccess.writeSync { context in
            for index in 0..<6 {
                let user = DALUser.create(in: context)
                user.firstname = "u\(index)"
                user.age = Int64(index)
            }
        }
        let main = dataAccess.mainContext
        let held = try await main.perform {
            UnsafeObjectBox(try DALUser.first(predicate: CorePredicate(format: "age == 5"), in: main)!)
        }
        var removed = -1
        var remaining: [String] = []
        dataAccess.writeSync { context in
            removed = try DALUser.removeAll(predicate: CorePredicate(format: "age >= 3"), in: context)
            remaining = try DALUser.all(in: context).map(\.firstname).sorted()
        }
        #expect(removed == 3)
        #expect(remaining == ["u0", "u1", "u2"])
        let (count, heldIsDeleted) = await main.perform {
            ((try? DALUser.count(in: main)) ?? -1, held.object.isDeleted || held.object.managedObjectContext == nil)
        }
        #expect(count == 3)
        #expect(heldIsDeleted, "the main context merged the batch delete")
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }

    @Test("nuke wipes the store; the stack keeps working", arguments: storeTypes)
    func nuke(type: PersistentStoreType) throws {
        let (dataAccess, url) = try DALStack.make(type)
        dataAccess.writeSync { context in
            for index in 0..<10 { DALUser.create(in: context).firstname = "u\(index)" }
        }
        try dataAccess.nuke()
        dataAccess.read { context in
            let value = try DALUser.count(in: context)
            #expect(value == 0)
        }
        if let url { #expect(FileManager.default.fileExists(atPath: url.path)) }
        dataAccess.writeSync { context in DALUser.create(in: context).firstname = "after" }
        dataAccess.read { context in
            let value = try DALUser.all(in: context).map(\.firstname)
            #expect(value == ["after"])
        }
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }

    @Test("A stack from a model file found by name")
    func modelByName() throws {
        let folder = Fixtures.moodyModel.deletingLastPathComponent()
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("Moody.sqlite")
        let dataAccess = try DataAccessLayer(sqliteStack: "Moody", searchPaths: [folder], storeURL: url)
        #expect(dataAccess.container.managedObjectModel.entitiesByName["Mood"] != nil)
        #expect(FileManager.default.fileExists(atPath: url.path))
        #expect(throws: CoreDataError.self) { try DataAccessLayer(inMemoryStack: "NoSuchModel", searchPaths: [folder]) }
    }

    @Test("fetchSingleObject fetches once, then answers from the context's cache; two matches are an error")
    func singleObject() throws {
        let (dataAccess, _) = try DALStack.make(.sqlite)
        dataAccess.writeSync { context in
            for name in ["John", "John", "Anna"] { DALUser.create(in: context).firstname = name }
        }
        dataAccess.read { context in
            let anna = try DALUser.fetchSingleObject(in: context, cacheKey: "anna") { request in
                request.predicate = try? CorePredicate(format: "firstname == 'Anna'")
            }
            #expect(anna?.firstname == "Anna")
            #expect(context.object(forSingleObjectCacheKey: "anna") === anna)
            let again = try DALUser.fetchSingleObject(in: context, cacheKey: "anna") { _ in
                Issue.record("the cached object is returned without a new fetch")
            }
            #expect(again === anna)
            #expect(throws: CoreDataError.self) {
                try DALUser.fetchSingleObject(in: context, cacheKey: "john") { request in
                    request.predicate = try? CorePredicate(format: "firstname == 'John'")
                }
            }
            let nobody = try DALUser.fetchSingleObject(in: context, cacheKey: "nobody") { request in
                request.predicate = try? CorePredicate(format: "firstname == 'Nobody'")
            }
            #expect(nobody == nil)
        }
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }
}

/// Hands a main-context object to the test's task to read it later on the main
/// queue. `@unchecked Sendable`: the object is only touched inside the main
/// context's `perform`.
struct UnsafeObjectBox<Object: AnyObject>: @unchecked Sendable {
    let object: Object
    init(_ object: Object) { self.object = object }
}
