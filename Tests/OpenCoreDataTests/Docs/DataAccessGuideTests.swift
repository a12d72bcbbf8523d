import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

// The examples of Sources/OpenCoreData/OpenCoreData.docc/DataAccess.md, as written
// (the class is `GuideUser` rather than `User`: managed object classes are
// registered by name).
@ManagedEntity final class GuideUser: ManagedObject {
    @Managed var firstname: String
    @Managed var lastname: String?
}

extension GuideUser: Managed {
    static var defaultSortDescriptors: [CoreSortDescriptor] { [CoreSortDescriptor(key: "firstname")] }
}

final class GuideSkopelosClient: DataAccessLayer, @unchecked Sendable {
    let errors = Lock<[String]>([])
    override func handleError(_ error: any Error) {
        errors.withLock { $0.append("\(error)") }
    }
}

@Suite("The data access guide's examples run as written")
struct DataAccessGuideTests {
    @Test func guide() async throws {
        let url = try TestScratch.folder("guide").appendingPathComponent("Users.sqlite")
        let model = try ManagedObjectModel(classes: [GuideUser.self])
        let dataAccess = try GuideSkopelosClient(sqliteStack: model, storeURL: url)
        let scratch = try DataAccessLayer(inMemoryStack: model)
        #expect(scratch.container.persistentStoreCoordinator.persistentStores.first?.type == .inMemory)

        dataAccess.writeSync { context in
            let user = GuideUser.create(in: context)
            user.firstname = "John"
            user.lastname = "Doe"
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            dataAccess.writeAsync({ context in
                GuideUser.create(in: context).firstname = "Jane"
            }, completion: { error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            })
        }
        var names: [String] = []
        dataAccess.read { context in
            let users = try GuideUser.all(in: context)
            names = users.map(\.firstname).sorted()
        }
        #expect(names == ["Jane", "John"])

        var user: GuideUser!
        var count = -1
        dataAccess.write { context in
            user = GuideUser.create(in: context)
            user.firstname = "Ada"
        }.write { context in
            try user.inContext(context)?.remove(in: context)
        }.read { context in
            count = try GuideUser.count(in: context)
        }
        #expect(count == 2)

        let id = try await dataAccess.writing { context in
            let user = GuideUser.create(in: context)
            user.firstname = "Grace"
            return user.objectID
        }
        let name = try await dataAccess.reading { context in
            (try context.existingObject(with: id) as? GuideUser)?.firstname
        }
        #expect(name == "Grace")

        dataAccess.writeSync { context in
            let john = try GuideUser.findOrCreate(in: context, matching: CorePredicate(format: "firstname == %@", "John")) {
                $0.firstname = "John"
            }
            john.lastname = "Appleseed"
        }
        var johns: [String?] = []
        dataAccess.read { context in
            johns = try GuideUser.all(predicate: CorePredicate(format: "firstname == 'John'"), in: context).map(\.lastname)
        }
        #expect(johns == ["Appleseed"], "findOrCreate found the stored John")
        #expect(dataAccess.errors.withLock { $0 }.isEmpty)
    }
}
