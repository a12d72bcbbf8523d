import Foundation
import GRDB
import Testing
@testable import OpenCoreData

/// An existing store's own table and column names win over the naming rule; a
/// store with no model reads through a model reconstructed from its schema; checks
/// Core Data does not make refuse nothing.
@Suite("The store's schema wins")
struct StoreSchemaWinsTests {
    /// Wire's case: two join tables whose column for `User` clash, the suffix on the
    /// table the rule would not put it on.
    static let clashModel = {
        try! ManagedObjectModel {
            Entity("Reaction") {
                Attribute("value", .string)
                Relationship("users", to: "User", inverse: "reactions", toMany: true)
            }
            Entity("SystemMessage") {
                Attribute("text", .string)
                Relationship("users", to: "User", inverse: "systemMessages", toMany: true)
            }
            Entity("User") {
                Attribute("name", .string)
                Relationship("reactions", to: "Reaction", inverse: "users", toMany: true)
                Relationship("systemMessages", to: "SystemMessage", inverse: "users", toMany: true)
            }
        }
    }()

    @Test("A join column's clash suffix is read where the store put it, not where the rule would")
    func joinColumnSuffixFromTheStore() throws {
        let model = Self.clashModel
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("Clash.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        // Write rows with the rule's layout, then move the suffix to the other table.
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.persistentStoreCoordinator = coordinator
            let user = ManagedObject(entity: model.entitiesByName["User"]!, insertInto: context)
            user.setValue("Ada", forKey: "name")
            let reaction = ManagedObject(entity: model.entitiesByName["Reaction"]!, insertInto: context)
            reaction.setValue("👍", forKey: "value")
            let message = ManagedObject(entity: model.entitiesByName["SystemMessage"]!, insertInto: context)
            message.setValue("joined", forKey: "text")
            reaction.mutableSetValue(forKey: "users").add(user)
            message.mutableSetValue(forKey: "users").add(user)
            try context.save()
        }
        let schema = try SQLiteSchema(model: model)
        let reactionJoin = try #require(schema.joinTable(for: model.entitiesByName["Reaction"]!.relationshipsByName["users"]!))
        let messageJoin = try #require(schema.joinTable(for: model.entitiesByName["SystemMessage"]!.relationshipsByName["users"]!))
        let suffixed = [reactionJoin, messageJoin].first { $0.destinationColumn.hasSuffix("1") }
        let plain = [reactionJoin, messageJoin].first { !$0.destinationColumn.hasSuffix("1") }
        let (withSuffix, without) = (try #require(suffixed), try #require(plain))
        try DatabaseQueue(path: url.path).write { db in
            try db.execute(sql: "ALTER TABLE \(withSuffix.tableName) RENAME COLUMN \(withSuffix.destinationColumn) TO \(without.destinationColumn)")
            try db.execute(sql: "ALTER TABLE \(without.tableName) RENAME COLUMN \(without.destinationColumn) TO \(withSuffix.destinationColumn)")
        }

        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try #require(try coordinator.addPersistentStore(type: .sqlite, at: url) as? SQLiteStore)
        let read = try #require(store.schema.joinTable(for: model.entitiesByName[withSuffix == reactionJoin ? "Reaction" : "SystemMessage"]!.relationshipsByName["users"]!))
        #expect(read.destinationColumn == without.destinationColumn)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let users = try context.fetch(FetchRequest<ManagedObject>(entityName: "User"))
        #expect(users.count == 1)
        #expect(users.first?.mutableSetValue(forKey: "reactions").count == 1)
        #expect(users.first?.mutableSetValue(forKey: "systemMessages").count == 1)
    }

    @Test("Photos on macOS 15.4.1: a suffixed join column (Z_3REPRESENTATIVEASSETS1) reads the pairs plain SQL reads")
    func photosSuffixedJoinColumn() throws {
        let url = try Fixtures.copyStore("tkanarsky+osxphotos/tests/Test-15.4.1.photoslibrary/database/Photos.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        let pairs = try SQLiteTestSupport.readOnlyQueue(url).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM Z_3MEMORIESBEINGREPRESENTATIVEASSETS") ?? 0
        }
        let model = try SQLiteStore.storedModel(at: url)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let store = try #require(try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.readOnly: "1"]) as? SQLiteStore)
        let memory = try #require(model.entitiesByName["Memory"])
        let relationship = try #require(memory.relationshipsByName["representativeAssets"])
        let join = try #require(store.schema.joinTable(for: relationship))
        #expect(join.tableName == "Z_3MEMORIESBEINGREPRESENTATIVEASSETS")
        #expect(Set([join.sourceColumn, join.destinationColumn]) == ["Z_3REPRESENTATIVEASSETS1", "Z_51MEMORIESBEINGREPRESENTATIVEASSETS"])
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        var read = 0
        for object in try context.fetch(FetchRequest<ManagedObject>(entity: memory)) {
            read += object.mutableSetValue(forKey: "representativeAssets").count
        }
        #expect(read == pairs)
    }

    @Test("A store written before Core Data cached its model reads through a model reconstructed from its schema")
    func reconstructedSurfJournal() throws {
        let path = "kodecocodes+cdt-materials/09-multiple-managed-object-contexts/projects/final/SurfJournal/SurfJournal/"
        let url = try Fixtures.copyStore(path + "CoreDataSeed/SurfJournalModel.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        #expect(throws: CoreDataError.self) { try SQLiteStore.storedModel(at: url) }
        let (model, source) = try SQLiteStore.readingModel(at: url)
        guard case .reconstructed = source else { Issue.record("expected a reconstruction, got \(source)"); return }
        #expect(model.isReconstructed)
        let entry = try #require(model.entitiesByName["JournalEntry"])
        // The columns of the real model's attributes, lower-cased.
        let real = try XcodeDataModel(contentsOf: Fixtures.url(path + "SurfJournalModel.xcdatamodeld")).currentModel()
        let realEntry = try #require(real.entitiesByName["JournalEntry"])
        #expect(Set(entry.attributesByName.keys) == Set(realEntry.attributesByName.keys.map { $0.lowercased() }))
        #expect(entry.attributesByName["date"]?.attributeType == .date)
        #expect(entry.attributesByName["height"]?.attributeType == realEntry.attributesByName["height"]?.attributeType)

        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        #expect(store.isReadOnly)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let rows = try SQLiteTestSupport.readOnlyQueue(url).read { db in
            try Row.fetchAll(db, sql: "SELECT Z_PK, ZLOCATION, ZDATE FROM ZJOURNALENTRY ORDER BY Z_PK")
        }
        #expect(rows.count > 1000)
        let objects = try context.fetch(FetchRequest<ManagedObject>(entity: entry))
            .sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
        #expect(objects.count == rows.count)
        for (object, row) in zip(objects, rows).prefix(50) {
            #expect(object.value(forKey: "location") as? String == row[1] as String?)
            #expect(object.value(forKey: "date") as? Date == (row[2] as Double?).map { Date(timeIntervalSinceReferenceDate: $0) })
        }
        // Nothing is written through it.
        objects[0].setValue("changed", forKey: "location")
        #expect(throws: CoreDataError.self) { try context.save() }
    }

    @Test("A reconstructed model finds to-one keys, their inverses and join tables of a store that has a model too")
    func reconstructedRelationships() throws {
        let url = try Fixtures.copyStore("bignerdranch+CoreDataStack/Sample Model/Deprecated/TestModel.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        let model = try SQLiteStore.reconstructedModel(at: url)
        let author = try #require(model.entitiesByName["Author"])
        let books = try #require(author.relationshipsByName["books"])
        #expect(books.isToMany)
        #expect(books.destinationEntityName == "Book")
        #expect(books.inverseRelationship?.name == "authors")
        _ = try PersistentStoreCoordinator.validated(managedObjectModel: model)

        let moody = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        defer { SQLiteTestSupport.remove(moody) }
        let rebuilt = try SQLiteStore.reconstructedModel(at: moody)
        let mood = try #require(rebuilt.entitiesByName["Mood"])
        #expect(mood.relationshipsByName["country"]?.destinationEntityName == "Country")
        #expect(mood.relationshipsByName["country"]?.inverseRelationship?.isToMany == true)
        #expect(rebuilt.entitiesByName["Country"]?.superentity?.name == "GeographicRegion")
    }

    @Test("Checks Core Data does not make refuse nothing: an ordered to-one, a composite with no elements")
    func acceptedModels() throws {
        let model = try ManagedObjectModel {
            Entity("Event") {
                Attribute("name", .string)
                Relationship("net", to: "Net", inverse: "events")
            }
            Entity("Net") {
                Relationship("events", to: "Event", inverse: "net", toMany: true)
            }
        }
        let net = try #require(model.entitiesByName["Event"]?.relationshipsByName["net"])
        net.isOrdered = true
        model.entitiesByName["Net"]?.properties.append(CompositeAttributeDescription(name: "kind", elements: []))
        #expect(model.validationProblems().isEmpty)
        let (coordinator, folder) = try Fixtures.coordinator(for: model, storeType: .sqlite)
        defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let event = ManagedObject(entity: model.entitiesByName["Event"]!, insertInto: context)
        event.setValue(ManagedObject(entity: model.entitiesByName["Net"]!, insertInto: context), forKey: "net")
        try context.save()
    }

    @Test("The Xcode model written for a model reads back with the same version hashes")
    func xcodeModelRoundTrip() throws {
        for entry in Fixtures.storesWithModels {
            let model = try XcodeDataModel(contentsOf: Fixtures.url(entry.model)).model(forVersion: entry.version)
            let target = try Fixtures.temporaryDirectory().appendingPathComponent("Written.xcdatamodel")
            defer { SQLiteTestSupport.remove(target) }
            try XcodeModelWriter().write(model, to: target)
            let again = try XcodeDataModel(contentsOf: target).currentModel()
            #expect(again.entityVersionHashesByName == model.entityVersionHashesByName, "\(entry.model) \(entry.version)")
            #expect(again.configurations == model.configurations)
        }
    }
}

extension StoreSchemaWinsTests {
    @Test("A model cache that cannot be decoded is read past: the model is reconstructed, with the reason")
    func undecodableCache() throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        defer { SQLiteTestSupport.remove(url) }
        // Cut the cache's DEFLATE stream short, as one real cache is (framework 1044).
        try DatabaseQueue(path: url.path).write { db in
            try db.execute(sql: "UPDATE Z_MODELCACHE SET Z_CONTENT = substr(Z_CONTENT, 1, length(Z_CONTENT) / 2)")
        }
        #expect(throws: CoreDataError.self) { try SQLiteStore.storedModel(at: url) }
        let (model, source) = try SQLiteStore.readingModel(at: url)
        guard case .reconstructed(let reason) = source else { Issue.record("expected a reconstruction, got \(source)"); return }
        #expect(reason.contains("cannot be read"))
        #expect(Set(model.entitiesByName.keys) == ["GeographicRegion", "Continent", "Country", "Mood"])
    }
}
