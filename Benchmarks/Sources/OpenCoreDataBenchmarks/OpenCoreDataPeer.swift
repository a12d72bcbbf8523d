import Foundation
import OpenCoreData
import OpenCoreDataPredicates

/// OpenCoreData on its SQLite store, used the way an app uses Core Data: objects
/// created with `ManagedObject(entity:insertInto:)` and key-value coding, one
/// `save()`, fetch requests with predicates.
enum OpenCoreDataPeer {
    /// The model: `Person` with 5 attributes and a fetch index on `age`.
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
            }
        } catch {
            fatalError("The benchmark model is invalid: \(error)")
        }
    }()

    /// Store options: the durability of the fairness rules, set explicitly. The
    /// store creates its files in WAL mode (journal_mode is persistent).
    static let storeOptions = ["pragma.synchronous": "NORMAL"]

    /// A coordinator with the SQLite store at `path` and a context on it.
    static func open(path: String) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: path), options: storeOptions)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    static var personEntity: EntityDescription {
        guard let entity = model.entitiesByName["Person"] else { fatalError("no Person entity") }
        return entity
    }

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

    /// W1: create `count` persons, then save; the two timed separately.
    static func insert(count: Int, path: String) throws -> Sample {
        let (coordinator, context) = try open(path: path)
        let start = now()
        insertPersons(0..<count, into: context)
        let created = now()
        try context.save()
        let saved = now()
        withExtendedLifetime(coordinator) {}
        return Sample(seconds: saved - start, parts: ["create": created - start, "save": saved - created], checksum: "")
    }

    /// W2: fetch every person with its values (`returnsObjectsAsFaults = false`)
    /// and read all 5 attributes.
    static func fetchAll(path: String) throws -> Sample {
        let (coordinator, context) = try open(path: path)
        let start = now()
        let request = FetchRequest<ManagedObject>(entityName: "Person")
        request.returnsObjectsAsFaults = false
        let people = try context.fetch(request)
        var c = Checksum()
        for person in people {
            c.rows += 1
            if case .int(let age) = person.attributeValue(forKey: "age") { c.ages += Int(age) }
            if case .double(let score) = person.attributeValue(forKey: "score") { c.scores2 += Int(score * 2) }
            if case .date(let joined) = person.attributeValue(forKey: "joined") { c.joined += Int(joined.timeIntervalSinceReferenceDate) }
            if case .string(let name) = person.attributeValue(forKey: "name") { c.textBytes &+= PersonData.byteSum(name) }
            if case .string(let email) = person.attributeValue(forKey: "email") { c.textBytes &+= PersonData.byteSum(email) }
        }
        let seconds = now() - start
        withExtendedLifetime((coordinator, people)) {}
        return Sample(seconds: seconds, checksum: c.text)
    }

    /// W3: 100 fetches `age == k` in one context, reading the score of each result
    /// (a default request: results are faults, fired from the row cache).
    static func fetchByAge(path: String) throws -> Sample {
        let (coordinator, context) = try open(path: path)
        let start = now()
        var c = Checksum()
        for k in 0..<100 {
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.predicate = try CorePredicate(format: "age == %d", k)
            for person in try context.fetch(request) {
                c.rows += 1
                if case .double(let score) = person.attributeValue(forKey: "score") { c.scores2 += Int(score * 2) }
            }
        }
        let seconds = now() - start
        withExtendedLifetime(coordinator) {}
        return Sample(seconds: seconds, checksum: c.text)
    }

    /// Creates the store at `path` holding persons `0..<count`, saved in chunks.
    static func populate(count: Int, path: String) throws {
        let (coordinator, context) = try open(path: path)
        let chunk = 50_000
        var first = 0
        while first < count {
            let end = min(count, first + chunk)
            insertPersons(first..<end, into: context)
            try context.save()
            context.reset()
            first = end
        }
        withExtendedLifetime(coordinator) {}
    }

    /// Creates an empty store at `path` (the raw peer's W1 starts from copies of it).
    static func createEmpty(path: String) throws {
        let (coordinator, _) = try open(path: path)
        withExtendedLifetime(coordinator) {}
    }
}
