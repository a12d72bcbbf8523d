import Foundation
import OpenCoreData
import OpenCoreDataPredicates

/// OpenCoreData on its SQLite store, used the way an app uses Core Data: objects
/// created with `ManagedObject(entity:insertInto:)` and key-value coding, one
/// `save()`, fetch requests with predicates.
enum OpenCoreDataPeer {
    /// The model: `Person` with 5 attributes and a fetch index on `age`; `Parent`
    /// and `Child` for W6.
    static let model: ManagedObjectModel = {
        do {
            return try ManagedObjectModel {
                Entity("Person") {
                    Attribute("name", .string)
                    Attribute("age", .integer32, defaultValue: 0)
                    Attribute("score", .double, defaultValue: 0)
                    Attribute("email", .string)
                    Attribute("joined", .date)
                    FetchIndex("byAge", "age")
                }
                Entity("Parent") {
                    Attribute("name", .string)
                    Relationship("children", to: "Child", inverse: "parent", toMany: true, deleteRule: .cascade)
                }
                Entity("Child") {
                    Attribute("name", .string)
                    Relationship("parent", to: "Parent", inverse: "children")
                }
            }
        } catch {
            fatalError("The benchmark model is invalid: \(error)")
        }
    }()

    /// Store options: the durability of the fairness rules, set explicitly. The
    /// store creates its files in WAL mode (journal_mode is persistent).
    static let storeOptions = ["pragma.synchronous": "NORMAL"]

    /// A coordinator with the SQLite store at `path` and a context on it.
    static func open(path: String, synchronous: String = "NORMAL") throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: ["pragma.synchronous": synchronous])
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    static func entity(_ name: String) -> EntityDescription {
        guard let entity = model.entitiesByName[name] else { fatalError("no \(name) entity") }
        return entity
    }

    static var personEntity: EntityDescription { entity("Person") }

    /// Inserts persons `range` into `context` (no save).
    static func insertPersons(_ range: Range<Int>, into context: ManagedObjectContext) {
        let entity = personEntity
        for i in range {
            let person = ManagedObject(entity: entity, insertInto: context)
            person.setValue(PersonData.name(i), forKey: "name")
            person.setValue(PersonData.age(i), forKey: "age")
            person.setValue(PersonData.score(i), forKey: "score")
            person.setValue(PersonData.email(i), forKey: "email")
            person.setValue(Date(timeIntervalSinceReferenceDate: PersonData.joined(i)), forKey: "joined")
        }
    }

    /// Adds every attribute of a person to a checksum.
    static func add(_ person: ManagedObject, to c: inout Checksum) {
        c.rows += 1
        if case .int(let age) = person.attributeValue(forKey: "age") { c.ages += Int(age) }
        if case .double(let score) = person.attributeValue(forKey: "score") { c.scores2 += Int(score * 2) }
        if case .date(let joined) = person.attributeValue(forKey: "joined") { c.joined += Int(joined.timeIntervalSinceReferenceDate) }
        if case .string(let name) = person.attributeValue(forKey: "name") { c.textBytes &+= PersonData.byteSum(name) }
        if case .string(let email) = person.attributeValue(forKey: "email") { c.textBytes &+= PersonData.byteSum(email) }
    }

    /// Creates the store at `path` holding persons `0..<count`, saved in chunks.
    static func populate(count: Int, path: String) throws {
        let (coordinator, context) = try open(path: path)
        try populate(count: count, into: context)
        withExtendedLifetime(coordinator) {}
    }

    /// Inserts and saves persons `0..<count` in chunks of 50,000 (any store).
    static func populate(count: Int, into context: ManagedObjectContext) throws {
        var first = 0
        while first < count {
            let end = min(count, first + 50_000)
            insertPersons(first..<end, into: context)
            try context.save()
            context.reset()
            first = end
        }
    }

    /// Creates the store at `path` holding `parents` parents with 10 children each.
    static func populateFamilies(parents: Int, path: String) throws {
        let (coordinator, context) = try open(path: path)
        try populateFamilies(parents: parents, into: context)
        withExtendedLifetime(coordinator) {}
    }

    /// Inserts and saves `parents` parents with 10 children each, in chunks (any store).
    static func populateFamilies(parents: Int, into context: ManagedObjectContext) throws {
        let parentEntity = entity("Parent"), childEntity = entity("Child")
        var first = 0
        while first < parents {
            let end = min(parents, first + 5_000)
            for p in first..<end {
                let parent = ManagedObject(entity: parentEntity, insertInto: context)
                parent.setValue(FamilyData.parentName(p), forKey: "name")
                for c in 0..<FamilyData.childrenPerParent {
                    let child = ManagedObject(entity: childEntity, insertInto: context)
                    child.setValue(FamilyData.childName(p, c), forKey: "name")
                    child.setValue(parent, forKey: "parent")
                }
            }
            try context.save()
            context.reset()
            first = end
        }
    }

    /// Creates an empty store at `path` (write runs start from copies of it).
    static func createEmpty(path: String) throws {
        let (coordinator, _) = try open(path: path)
        withExtendedLifetime(coordinator) {}
    }
}

/// The deterministic data of W6: parent `p` is "p p", its children "c p-j".
enum FamilyData {
    static let childrenPerParent = 10
    static func parentName(_ p: Int) -> String { "p \(p)" }
    static func childName(_ p: Int, _ c: Int) -> String { "c \(p)-\(c)" }
}
