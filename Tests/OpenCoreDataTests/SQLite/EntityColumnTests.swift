import Foundation
import GRDB
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// A row `SELECT` whose rows are all of one entity selects that entity's number in
/// place of `t0.Z_ENT` (Core Data's statements select `0` there) and its reader does
/// not read the column; reading the rows of many sources' to-many relationships
/// takes each row's source key from the inverse to-one's own column.
@Suite("SQLite: rows of one entity, and related rows' source keys")
struct EntityColumnTests {
    // MARK: The statements

    @Test("Z_ENT is selected when the rows may be of several entities, else the one entity's number")
    func selectedEntityColumn() throws {
        let fixture = try TranslatorFixture.make()
        let translator = fixture.translator
        // Mood (4) has a subentity, Celebration (5), in the same table.
        let moods = try translator.selectStatement(for: fixture.fetch("Mood"))
        #expect(moods.sql.hasPrefix("SELECT t0.Z_PK, t0.Z_ENT, t0.Z_OPT, "))
        #expect(moods.entityNumber == nil)
        // Mood alone: restricted to Z_ENT = 4, so every row is a Mood.
        let moodsOnly = try translator.selectStatement(for: fixture.fetch("Mood", includesSubentities: false))
        #expect(moodsOnly.sql.hasPrefix("SELECT t0.Z_PK, 4, t0.Z_OPT, "))
        #expect(moodsOnly.sql.contains(" WHERE t0.Z_ENT = 4 "))
        #expect(moodsOnly.entityNumber == 4)
        // A subentity without subentities of its own, in its parent's table.
        let celebrations = try translator.selectStatement(for: fixture.fetch("Celebration"))
        #expect(celebrations.sql.hasPrefix("SELECT t0.Z_PK, 5, t0.Z_OPT, "))
        #expect(celebrations.sql.contains(" WHERE t0.Z_ENT = 5 "))
        // Without the restriction (reads by key), only a table of one entity qualifies.
        #expect(translator.entityColumn(for: fixture.fetch("Celebration"), restricted: false) == ("t0.Z_ENT", nil))
        #expect(translator.entityColumn(for: fixture.fetch("Tag"), restricted: false) == ("6", 6))
        #expect(translator.entityColumn(for: fixture.fetch("Mood", includesSubentities: false), restricted: false) == ("t0.Z_ENT", nil))
    }

    // MARK: A store

    /// Owner -< Pet (abstract; Dog and Cat), Owner -< Toy with no inverse.
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Owner", className: "ManagedObject") {
                Attribute("name", .string)
                Relationship("pets", to: "Pet", inverse: "owner", toMany: true)
                Relationship("toys", to: "Toy", toMany: true)
            }
            Entity("Pet", className: "ManagedObject", abstract: true) {
                Attribute("name", .string)
                Relationship("owner", to: "Owner", inverse: "pets")
            }
            Entity("Dog", className: "ManagedObject", parent: "Pet") {
                Attribute("barks", .boolean)
            }
            Entity("Cat", className: "ManagedObject", parent: "Pet") {
                Attribute("lives", .integer16)
            }
            Entity("Toy", className: "ManagedObject") {
                Attribute("name", .string)
            }
        }
    }

    /// 30 owners; owner `i` has `i % 4` dogs, `i % 3` cats and `i % 5` toys.
    static func makeStore(_ url: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        _ = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let entities = coordinator.managedObjectModel.entitiesByName
            for i in 0..<30 {
                let owner = ManagedObject(entity: entities["Owner"]!, insertInto: context)
                owner.setValue("o\(i)", forKey: "name")
                var pets: [ManagedObject] = []
                for d in 0..<(i % 4) {
                    let dog = ManagedObject(entity: entities["Dog"]!, insertInto: context)
                    dog.setValue("d\(i).\(d)", forKey: "name")
                    dog.setValue(d % 2 == 0, forKey: "barks")
                    pets.append(dog)
                }
                for c in 0..<(i % 3) {
                    let cat = ManagedObject(entity: entities["Cat"]!, insertInto: context)
                    cat.setValue("c\(i).\(c)", forKey: "name")
                    cat.setValue(9 - c, forKey: "lives")
                    pets.append(cat)
                }
                owner.add(pets, toRelationship: "pets")
                let toys = (0..<(i % 5)).map { t -> ManagedObject in
                    let toy = ManagedObject(entity: entities["Toy"]!, insertInto: context)
                    toy.setValue("t\(i).\(t)", forKey: "name")
                    return toy
                }
                owner.add(toys, toRelationship: "toys")
            }
            try context.save()
            context.reset()
        }
        return (coordinator, context)
    }

    @Test("Fetched and prefetched rows keep their concrete entities and their owners")
    func rowsAndOwners() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (coordinator, context) = try Self.makeStore(directory.appendingPathComponent("Pets.sqlite"))
        try context.performAndWait {
            // Pets of both subentities, each its own entity, with its own attributes.
            let pets = try context.fetch(FetchRequest<ManagedObject>(entityName: "Pet"))
            #expect(pets.count == (0..<30).reduce(0) { $0 + $1 % 4 + $1 % 3 })
            for pet in pets {
                let name = try #require(pet.value(forKey: "name") as? String)
                #expect(pet.entity.name == (name.hasPrefix("d") ? "Dog" : "Cat"))
                if name.hasPrefix("c") { #expect(pet.value(forKey: "lives") as? Int != nil) }
            }
            // Dogs alone (a subentity in its parent's table).
            let dogs = try context.fetch(FetchRequest<ManagedObject>(entityName: "Dog"))
            #expect(dogs.count == (0..<30).reduce(0) { $0 + $1 % 4 })
            #expect(dogs.allSatisfy { $0.entity.name == "Dog" && ($0.value(forKey: "name") as? String)?.hasPrefix("d") == true })
            context.reset()

            // Owners with their pets and toys prefetched: each member with its owner.
            let request = FetchRequest<ManagedObject>(entityName: "Owner")
            request.relationshipKeyPathsForPrefetching = ["pets", "toys"]
            let owners = try context.fetch(request)
            #expect(owners.count == 30)
            for owner in owners {
                let name = try #require(owner.value(forKey: "name") as? String)
                let i = try #require(Int(name.dropFirst()))
                #expect(!owner.hasFault(forRelationshipNamed: "pets"))
                let pets = owner.objects(forRelationship: "pets")
                let petNames = pets.compactMap { $0.value(forKey: "name") as? String }.sorted()
                let expected = ((0..<(i % 3)).map { "c\(i).\($0)" } + (0..<(i % 4)).map { "d\(i).\($0)" }).sorted()
                #expect(petNames == expected)
                #expect(pets.allSatisfy { $0.entity.name == (($0.value(forKey: "name") as? String)?.hasPrefix("d") == true ? "Dog" : "Cat") })
                let toys = owner.objects(forRelationship: "toys").compactMap { $0.value(forKey: "name") as? String }.sorted()
                #expect(toys == (0..<(i % 5)).map { "t\(i).\($0)" })
            }
            // One dog by its ID, as a fault fires: the row is read by key, and
            // comes back a Dog.
            let dogID = try #require(dogs.first?.objectID)
            context.reset()
            let dog = try context.existingObject(with: dogID)
            #expect(dog.entity.name == "Dog" && (dog.value(forKey: "name") as? String)?.hasPrefix("d") == true)
        }
        withExtendedLifetime(coordinator) {}
    }

    @Test("The source key of a related row comes from the inverse's column, or is selected after the row's")
    func relatedRowsKeyColumn() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (coordinator, _) = try Self.makeStore(directory.appendingPathComponent("Pets.sqlite"))
        let store = try #require(coordinator.persistentStores.first as? SQLiteStore)
        let entities = coordinator.managedObjectModel.entitiesByName
        let owner = try #require(entities["Owner"])
        let petsRelationship = try #require(owner.relationshipsByName["pets"])
        let toysRelationship = try #require(owner.relationshipsByName["toys"])
        let toy = try #require(entities["Toy"])

        // Pets: the inverse `owner` is a column of the row; Pet has subentities.
        let pets = try #require(try store.relatedRowsQuery(petsRelationship, in: owner, keys: 8))
        let ownerColumn = try #require(pets.columns.first { $0.kind == .toOneKey && $0.property.name == "owner" })
        #expect(pets.keyColumn == CInt(ownerColumn.index))
        #expect(pets.sql.hasPrefix("SELECT t0.Z_PK, t0.Z_ENT, t0.Z_OPT, "))
        #expect(pets.sql.components(separatedBy: "t0.\(ownerColumn.columnName)").count - 1 == 3) // selected, matched, ordered
        // Toys: no inverse, the hidden foreign key selected last; Toy's table is its own.
        let toys = try #require(try store.relatedRowsQuery(toysRelationship, in: owner, keys: 8))
        #expect(toys.keyColumn == CInt(3 + toys.columns.count))
        let toyNumber = try #require(store.schema.entityNumber(toy))
        #expect(toys.sql.hasPrefix("SELECT t0.Z_PK, \(toyNumber), t0.Z_OPT, "))
        // One source: no key column.
        let one = try #require(try store.relatedRowsQuery(petsRelationship, in: owner, keys: 1))
        #expect(one.keyColumn == nil)

        // The store's grouped read: each source's rows in its own position.
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let owners = try context.fetch(FetchRequest<ManagedObject>(entityName: "Owner"))
            let byName = Dictionary(uniqueKeysWithValues: owners.map { ($0.value(forKey: "name") as? String ?? "", $0.objectID) })
            let sources = try ["o7", "o0", "o11", "o7"].map { try #require(byName[$0]) }
            let grouped = try #require(try store.relatedRows(of: sources, relationship: petsRelationship))
            let names = grouped.map { rows in rows.compactMap { row -> String? in
                if case .attribute(.string(let name))? = row.value(named: "name") { return name }
                return nil
            }.sorted() }
            #expect(names == [["c7.0", "d7.0", "d7.1", "d7.2"], [], ["c11.0", "c11.1", "d11.0", "d11.1", "d11.2"],
                              ["c7.0", "d7.0", "d7.1", "d7.2"]])
        }
    }
}
