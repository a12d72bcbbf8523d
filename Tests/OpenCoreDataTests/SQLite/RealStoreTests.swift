import Foundation
import GRDB
import OpenCoreDataPredicates
import Synchronization
import Testing
@testable import OpenCoreData

/// Issue 32: every store Apple's tools wrote opens here, without its model (from
/// `Z_MODELCACHE`) and with it, read-only, with the same objects plain SQL counts;
/// the rules behind it (validation, default values, counts, entity and join-table
/// naming, persistent history) are checked on the real files or on small files
/// shaped like them.
@Suite("Real Apple stores open (issue 32)")
struct RealStoreTests {
    static let photosLibraries = ["10.15.1", "13.0.0", "26.1"].map {
        "tkanarsky+osxphotos/tests/Test-\($0).photoslibrary/database/Photos.sqlite"
    }
    static let bookmarksModel = "duckduckgo+BrowserServicesKit/Sources/Bookmarks/BookmarksModel.xcdatamodeld"
    static let bookmarksStores: [(store: String, version: String)] = [
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V1.sqlite", "BookmarksModel"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V2.sqlite", "BookmarksModel 2"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V3.sqlite", "BookmarksModel 3"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V4.sqlite", "BookmarksModel 4"),
        ("duckduckgo+BrowserServicesKit/Tests/BookmarksTests/Resources/Bookmarks_V5.sqlite", "BookmarksModel 5"),
    ]
    /// Every fixture store: path and, where the fixtures have it, the model (file and version).
    static let allStores: [(store: String, model: String?, version: String?)] =
        Fixtures.storesWithModels.map { ($0.store, $0.model, $0.version) }
        + photosLibraries.map { ($0, nil, nil) }

    static let readOnly = [SQLiteStore.Option.readOnly: "1"]

    /// Rows per entity number, counted with plain SQL in every entity table.
    static func sqlCounts(_ url: URL) throws -> [Int: Int] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in
            var counts: [Int: Int] = [:]
            let roots = try Row.fetchAll(db, sql: "SELECT Z_NAME FROM Z_PRIMARYKEY WHERE Z_SUPER = 0 AND Z_ENT < 16000")
            for row in roots {
                let name: String = row[0]
                let table = "Z" + name.uppercased()
                guard try db.tableExists(table) else { continue }
                for count in try Row.fetchAll(db, sql: "SELECT Z_ENT, COUNT(*) FROM \(table) GROUP BY Z_ENT") {
                    counts[count[0], default: 0] += count[1] as Int
                }
            }
            return counts
        }
    }

    /// Opens `url` read-only with `model` (validated: never a trap) and checks the
    /// object counts per entity against plain SQL.
    static func openAndCount(_ url: URL, model: ManagedObjectModel) throws {
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let store = try #require(try coordinator.addPersistentStore(type: .sqlite, at: url, options: readOnly) as? SQLiteStore)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let expected = try sqlCounts(url)
        let counts = try context.performAndWait { () throws -> [String: Int] in
            var counts: [String: Int] = [:]
            for entity in model.entities {
                let request = FetchRequest<ManagedObject>(entity: entity)
                request.includesSubentities = false
                counts[entity.name] = try context.count(for: request)
            }
            return counts
        }
        for entity in model.entities {
            let number = try #require(store.schema.entityNumber(entity))
            #expect(counts[entity.name] == expected[number] ?? 0, "\(entity.name) in \(url.lastPathComponent)")
        }
        try context.performAndWait { () throws -> Void in
            // Objects materialise: the first few of every entity with rows.
            for entity in model.entities where !entity.isAbstract {
                let request = FetchRequest<ManagedObject>(entity: entity)
                request.fetchLimit = 3
                for object in try context.fetch(request) {
                    for property in entity.allProperties where property is AttributeDescription {
                        _ = object.attributeValue(forKey: property.name)
                    }
                }
            }
        }
    }

    // MARK: Failure 1: the model in Z_MODELCACHE is valid, and nothing traps

    @Test("Every fixture store opens without its model (Z_MODELCACHE) and with it", arguments: allStores.map(\.store))
    func opensWithAndWithoutModel(store: String) throws {
        let entry = try #require(Self.allStores.first { $0.store == store })
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        if let cached = try? SQLiteStore.storedModel(at: copy) {
            #expect(cached.validationProblems().isEmpty, "\(cached.validationProblems())")
            try Self.openAndCount(copy, model: cached)
        } else {
            // Framework 419 wrote no model cache.
            #expect(store.hasSuffix("Model1.sqlite"))
        }
        if let modelPath = entry.model, let version = entry.version {
            let model = try XcodeDataModel(contentsOf: Fixtures.url(modelPath)).model(forVersion: version)
            try Self.openAndCount(copy, model: model)
        }
    }

    @Test("Every fixture store opens through PersistentContainer, read-only", arguments: allStores.map(\.store))
    func opensThroughContainer(store: String) async throws {
        let entry = try #require(Self.allStores.first { $0.store == store })
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        var models: [ManagedObjectModel] = []
        if let cached = try? SQLiteStore.storedModel(at: copy) { models.append(cached) }
        if let modelPath = entry.model, let version = entry.version {
            models.append(try XcodeDataModel(contentsOf: Fixtures.url(modelPath)).model(forVersion: version))
        }
        for model in models {
            let container = PersistentContainer(name: "Fixture", managedObjectModel: model)
            var description = PersistentStoreDescription(url: copy)
            description.isReadOnly = true
            container.persistentStoreDescriptions = [description]
            try await container.loadPersistentStores()
            #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
        }
    }

    @Test("An invalid model from a file is an error through the throwing paths, not a trap")
    func invalidModelThrows() throws {
        let model = ManagedObjectModel()
        let entity = EntityDescription(name: "Item")
        entity.properties = [RelationshipDescription(name: "owner", destination: "Nobody")]
        model.entities = [entity]
        #expect(throws: CoreDataError.self) { try PersistentStoreCoordinator.validated(managedObjectModel: model) }
        let container = PersistentContainer(name: "Invalid", managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(type: .inMemory)]
        let failure = Lock<(any Error)?>(nil)
        container.loadPersistentStores { _, error in failure.withLock { $0 = error } }
        #expect(failure.withLock { $0 } is CoreDataError)
    }

    @Test("Fetch indexes on expressions (NSIndexedProperty) read as expression elements")
    func expressionIndexElements() throws {
        let copy = try Fixtures.copyStore(Self.photosLibraries[0])
        defer { SQLiteTestSupport.remove(copy) }
        let model = try SQLiteStore.storedModel(at: copy)
        let asset = try #require(model.entitiesByName["GenericAsset"])
        let index = try #require(asset.indexes.first { $0.name == "forAllPhotos" })
        #expect(index.elements.contains { $0.expression != nil && $0.propertyName == nil })
        #expect(!asset.compoundIndexes.contains { $0.contains("entity") || $0.contains("self") })
    }

    // MARK: Failure 2: default values Xcode accepts

    static func xmlModel(_ attributes: String) throws -> ManagedObjectModel {
        let xml = """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Item" representedClassName="Item" syncable="YES">
                    \(attributes)
                </entity>
            </model>
            """
        let folder = try Fixtures.temporaryDirectory().appendingPathComponent("Item.xcdatamodel")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(xml.utf8).write(to: folder.appendingPathComponent("contents"))
        return try XcodeDataModel(contentsOf: folder).currentModel()
    }

    @Test("defaultValueString of another type loads: YES/NO as 1/0, a leading number, else no default")
    func lenientDefaults() throws {
        let model = try Self.xmlModel("""
            <attribute name="flag" attributeType="Integer 32" defaultValueString="YES" usesScalarValueType="YES"/>
            <attribute name="off" attributeType="Integer 16" defaultValueString="NO" usesScalarValueType="YES"/>
            <attribute name="big" attributeType="Integer 64" defaultValueString="12px" usesScalarValueType="YES"/>
            <attribute name="ratio" attributeType="Double" defaultValueString="TRUE" usesScalarValueType="YES"/>
            <attribute name="bool" attributeType="Boolean" defaultValueString="7" usesScalarValueType="YES"/>
            <attribute name="junk" attributeType="Integer 32" defaultValueString="abc" usesScalarValueType="YES"/>
            <attribute name="id" optional="YES" attributeType="UUID" defaultValueString="not-a-uuid" usesScalarValueType="NO"/>
            <attribute name="when" optional="YES" attributeType="Date" defaultDateTimeInterval="soon" usesScalarValueType="NO"/>
            <attribute name="plain" attributeType="Integer 32" defaultValueString="2" usesScalarValueType="YES"/>
            """)
        let item = try #require(model.entitiesByName["Item"])
        func value(_ name: String) -> AttributeValue? { item.attributesByName[name]?.defaultValue }
        #expect(value("flag") == .int(1))
        #expect(value("off") == .int(0))
        #expect(value("big") == .int(12))
        #expect(value("ratio") == .double(1))
        #expect(value("bool") == .bool(true))
        #expect(value("junk") == nil)
        #expect(value("id") == nil)
        #expect(value("when") == nil)
        #expect(value("plain") == .int(2))
        #expect(model.validationProblems().isEmpty)
        _ = try PersistentStoreCoordinator.validated(managedObjectModel: model)
    }

    @Test("XML defaults read as Xcode compiled them: each fixture store's Z_MODELCACHE agrees",
          arguments: Fixtures.storesWithModels.map(\.store))
    func defaultsMatchCompiledModel(store: String) throws {
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        guard let cached = try? SQLiteStore.storedModel(at: copy) else { return }
        let (modelPath, version) = Fixtures.storesWithModels.first { $0.store == store }.map { ($0.model, $0.version) }
            ?? (Self.bookmarksModel, Self.bookmarksStores.first { $0.store == store }?.version ?? "")
        let xml = try XcodeDataModel(contentsOf: Fixtures.url(modelPath)).model(forVersion: version)
        for entity in xml.entities {
            for attribute in entity.attributesByName.values {
                let compiled = cached.entitiesByName[entity.name]?.attributesByName[attribute.name]
                #expect(compiled?.defaultValue == attribute.defaultValue, "\(entity.name).\(attribute.name) in \(store)")
            }
        }
    }

    // MARK: Failure 3: counts

    @Test("maxCount -1 (framework 1344 and later) reads as unbounded, in model caches and in XML")
    func negativeMaxCount() throws {
        let model = ManagedObjectModel()
        let folder = EntityDescription(name: "Folder")
        let item = EntityDescription(name: "Item")
        let items = RelationshipDescription(name: "items", destination: "Item", inverse: "folder", toMany: true)
        items.maxCount = -1
        items.minCount = -1
        folder.properties = [items]
        item.properties = [RelationshipDescription(name: "folder", destination: "Folder", inverse: "items")]
        model.entities = [folder, item]
        let blob = try CompiledModelWriter().modelCacheData(for: model)
        let read = try ManagedObjectModel(modelCacheData: blob)
        let relationship = try #require(read.entitiesByName["Folder"]?.relationshipsByName["items"])
        #expect(relationship.isToMany)
        #expect(relationship.maxCount == 0)
        #expect(relationship.minCount == 0)
        _ = try PersistentStoreCoordinator.validated(managedObjectModel: read)

        let xml = try Self.xmlModel("""
            <relationship name="children" optional="YES" toMany="YES" maxCount="-1" minCount="-1" deletionRule="Nullify" destinationEntity="Item" inverseName="parent" inverseEntity="Item"/>
            <relationship name="parent" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Item" inverseName="children" inverseEntity="Item"/>
            """)
        let children = try #require(xml.entitiesByName["Item"]?.relationshipsByName["children"])
        #expect(children.isToMany && children.maxCount == 0 && children.minCount == 0)
    }

    // MARK: Failure 4: entities and join tables

    /// The join tables of a store: name → columns, as written.
    static func joinTables(_ url: URL) throws -> [String: [String]] {
        let dump = try StoreDump.read(url)
        return dump.tables.filter { name, _ in
            name.hasPrefix("Z_") && name.first(where: \.isNumber) != nil && !name.hasPrefix("Z_RT_")
                && Int(String(name.dropFirst(2).prefix { $0.isNumber })) != nil
        }
    }

    @Test("Join tables of a new store are Core Data's: name, columns (REFLEXIVE, suffixes) and order",
          arguments: photosLibraries + ["tkanarsky+osxphotos/tests/Test-15.4.1.photoslibrary/database/Photos.sqlite"]
            + bookmarksStores.map(\.store) + ["bignerdranch+CoreDataStack/Sample Model/Deprecated/TestModel.sqlite"])
    func joinTableRule(store: String) throws {
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        let model = try SQLiteStore.storedModel(at: copy)
        let real = try Self.joinTables(copy)
        // Numbered as the store numbers them (a migrated store may differ from a new one).
        let numbers = try DatabaseQueue(path: copy.path).read { db in
            try Dictionary(Row.fetchAll(db, sql: "SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY WHERE Z_ENT < 16000")
                .map { ($0[0] as String, $0[1] as Int) }, uniquingKeysWith: { first, _ in first })
        }
        let layout = try SQLiteLayout(model: model, configurationName: nil, storeNumbers: numbers).schema
        var computed: [String: [String]] = [:]
        for table in layout.tables where table.kind == .join {
            computed[table.name] = table.columns.map { "\($0.name) \($0.declaredType)" }
        }
        #expect(computed.keys.sorted() == real.keys.sorted(), "join tables of \(store)")
        for (name, columns) in real {
            #expect(computed[name] == columns, "columns of \(name) in \(store)")
        }
        // A new store of the same model: Core Data's numbering (names compared
        // ignoring case) and the same join tables.
        let fresh = try SQLiteLayout(model: model, configurationName: nil, storeNumbers: nil).schema
        #expect(Dictionary(uniqueKeysWithValues: fresh.entities.map { ($0.entityName, $0.entityNumber) }) == numbers,
                "entity numbers of a new store for \(store)")
        #expect(Set(fresh.tables.filter { $0.kind == .join }.map(\.name)) == Set(real.keys), "join tables of a new store for \(store)")
    }

    @Test("Core Data's private hash tables: the key orders the naming rule walks (vectors from a model of Core Data's code)")
    func namingRuleHashes() {
        // 32-bit CFString hashes, as Core Data's "Tiger" and "Leopard" dictionaries compute them.
        let vectors: [(String, UInt32, UInt32)] = [
            ("_ent", 2053296458, 3555739345), ("users", 872614679, 2504700954), ("reactions", 2288702929, 582141468),
            ("ZTRUSTEDBYCLIENTS", 650741059, 1432482463), ("memoriesBeingRepresentativeAssets", 1305837447, 1767184062),
            (String(repeating: "a", count: 30), 296447286, 3549538886), ("é", 1470, 2059764873),
        ]
        for (key, tiger, leopard) in vectors {
            #expect(TigerOrder.tigerHash(key) == tiger, "\(key)")
            #expect(LeopardOrder.hash(key) == leopard, "\(key)")
        }
        let keys = ["_ent", "_pk", "_opt", "name", "title", "date", "items", "owner", "_ZOWNER"]
        var leopard = LeopardOrder()
        for key in keys { leopard.add(key) }
        #expect(leopard.order == ["_ent", "owner", "name", "_pk", "_opt", "_ZOWNER", "title", "items", "date"])
        #expect(TigerOrder.order(keys, capacity: keys.count) == ["_ent", "_pk", "title", "_opt", "owner", "name", "_ZOWNER", "items", "date"])
    }

    @Test("An existing store's own join tables win over the naming rule")
    func storeJoinTablesWin() throws {
        // A store whose join table is named by the other side (as Core Data did for
        // GenericAlbum.albumLists), with a suffixed column.
        let model = ManagedObjectModel()
        let author = EntityDescription(name: "Author")
        let book = EntityDescription(name: "Book")
        author.properties = [AttributeDescription(name: "name", type: .string),
                             RelationshipDescription(name: "books", destination: "Book", inverse: "authors", toMany: true)]
        book.properties = [AttributeDescription(name: "title", type: .string),
                           RelationshipDescription(name: "authors", destination: "Author", inverse: "books", toMany: true)]
        model.entities = [author, book]
        let (url, _) = try SQLiteTestSupport.createdStore(model)
        defer { SQLiteTestSupport.remove(url) }
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "DROP TABLE Z_1BOOKS")
            try db.execute(sql: "CREATE TABLE Z_2AUTHORS ( Z_1AUTHORS1 INTEGER, Z_2BOOKS INTEGER, PRIMARY KEY (Z_1AUTHORS1, Z_2BOOKS) )")
            try db.execute(sql: "INSERT INTO ZAUTHOR (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 1, 1, 'Ann')")
            try db.execute(sql: "INSERT INTO ZBOOK (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (1, 2, 1, 'One'), (2, 2, 1, 'Two')")
            try db.execute(sql: "INSERT INTO Z_2AUTHORS VALUES (1, 1), (1, 2)")
        }
        try queue.close()
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: Self.readOnly)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let books = try context.performAndWait { () throws -> Int in
            let authors = try context.fetch(FetchRequest<ManagedObject>(entityName: "Author"))
            return authors.first?.objects(forRelationship: "books").count ?? -1
        }
        #expect(books == 2)
    }

    @Test("Bookmarks' self-referential many-to-many: Z_1FAVORITES, and the stores open with their model")
    func bookmarksFavorites() throws {
        let (store, version) = Self.bookmarksStores[4]
        let model = try XcodeDataModel(contentsOf: Fixtures.url(Self.bookmarksModel)).model(forVersion: version)
        let schema = try SQLiteSchema(model: model)
        #expect(schema.tables.contains { $0.name == "Z_1FAVORITES" })
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        try Self.openAndCount(copy, model: model)
    }

    @Test("A self-referential pair is named by the relationship whose name sorts last (blocking, not blockedBy)")
    func selfReferentialNaming() throws {
        let model = ManagedObjectModel()
        let list = EntityDescription(name: "List")
        let item = EntityDescription(name: "TodoItem")
        list.properties = [AttributeDescription(name: "name", type: .string)]
        item.properties = [RelationshipDescription(name: "blockedBy", destination: "TodoItem", inverse: "blocking", toMany: true),
                           RelationshipDescription(name: "blocking", destination: "TodoItem", inverse: "blockedBy", toMany: true),
                           RelationshipDescription(name: "twins", destination: "TodoItem", inverse: "twins", toMany: true)]
        model.entities = [list, item]
        let schema = try SQLiteSchema(model: model)
        let blocking = try #require(schema.tables.first { $0.name == "Z_2BLOCKING" })
        #expect(blocking.columns.map(\.name) == ["Z_2BLOCKEDBY", "Z_2BLOCKING"])
        let twins = try #require(schema.tables.first { $0.name == "Z_2TWINS" })
        #expect(twins.columns.map(\.name) == ["Z_2TWINS", "REFLEXIVE"])
    }

    @Test("An entity renamed through its renaming identifier matches Z_PRIMARYKEY's old name")
    func renamedEntity() throws {
        func model(renaming: String?) -> ManagedObjectModel {
            let model = ManagedObjectModel()
            let entity = EntityDescription(name: "Note")
            entity.renamingIdentifier = renaming
            entity.properties = [AttributeDescription(name: "text", type: .string)]
            let added = EntityDescription(name: "Tag")
            added.properties = [AttributeDescription(name: "label", type: .string)]
            model.entities = [entity, added]
            return model
        }
        let (url, _) = try SQLiteTestSupport.createdStore(model(renaming: "Memo"))
        defer { SQLiteTestSupport.remove(url) }
        // As Core Data's lightweight migration leaves it: the old name in Z_PRIMARYKEY,
        // and no row yet for the entity the model added.
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_NAME = 'Memo' WHERE Z_NAME = 'Note'")
            try db.execute(sql: "DELETE FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'")
            try db.execute(sql: "INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZTEXT) VALUES (1, 1, 1, 'hello')")
        }
        try queue.close()
        // By renaming identifier, then through the store's model cache.
        for candidate in [model(renaming: "Memo"), model(renaming: nil)] {
            let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: candidate)
            try coordinator.addPersistentStore(type: .sqlite, at: url, options: Self.readOnly)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            let counts = try context.performAndWait { () throws -> (Int, Int) in
                (try context.count(for: FetchRequest<ManagedObject>(entityName: "Note")),
                 try context.count(for: FetchRequest<ManagedObject>(entityName: "Tag")))
            }
            #expect(counts.0 == 1)
            #expect(counts.1 == 0)
        }
        // Should the table keep the old name too, it is found under it.
        let queue2 = try DatabaseQueue(path: url.path)
        try queue2.write { db in try db.execute(sql: "ALTER TABLE ZNOTE RENAME TO ZMEMO") }
        try queue2.close()
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model(renaming: "Memo"))
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: Self.readOnly)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let text = try context.performAndWait { () throws -> String? in
            try context.fetch(FetchRequest<ManagedObject>(entityName: "Note")).first?.value(forKey: "text") as? String
        }
        #expect(text == "hello")
    }

    // MARK: Failure 5: persistent history as Core Data writes it

    @Test("The Photos libraries' history reads through PersistentHistoryChangeRequest as plain SQL has it",
          arguments: photosLibraries)
    func photosHistory(store: String) throws {
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        let model = try SQLiteStore.storedModel(at: copy)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let sqlite = try #require(try coordinator.addPersistentStore(
            type: .sqlite, at: copy, options: [SQLiteStore.Option.readOnly: "1", "NSPersistentHistoryTrackingKey": "1"]) as? SQLiteStore)
        let (transactionCount, changeCount, authors, maxTransaction) = try DatabaseQueue(path: copy.path).read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ATRANSACTION") ?? 0,
             try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ACHANGE c JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID") ?? 0,
             try String.fetchAll(db, sql: "SELECT COALESCE(s.ZNAME, '') FROM ATRANSACTION t LEFT JOIN ATRANSACTIONSTRING s ON s.Z_PK = t.ZAUTHORTS ORDER BY t.Z_PK"),
             try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM ATRANSACTION") ?? 0)
        }
        #expect(transactionCount > 100)
        let result = try coordinator.execute(.fetchHistory(after: nil as PersistentHistoryToken?))
        let transactions = try #require(result.transactions)
        #expect(transactions.count == transactionCount)
        #expect(transactions.map { $0.author ?? "" } == authors)
        #expect(transactions.last?.transactionNumber == maxTransaction)
        let changes = transactions.flatMap { $0.changes ?? [] }
        // Every change of an entity the model has (all of them in these libraries).
        #expect(changes.count == changeCount)
        // Updates name the properties of their ZCOLUMNS bitmap. The oldest library
        // keeps transactions written under older model versions (its store was
        // migrated), whose bitmaps name properties the model no longer has.
        let updates = changes.filter { $0.changeType == .update }
        #expect(!updates.isEmpty)
        if !store.contains("10.15.1") {
            #expect(updates.allSatisfy { $0.updatedProperties != nil })
        }
        // Tombstones: the attributes kept on deletion, by name (binary order), in
        // ZTOMBSTONE0, 1...: InternalResource keeps cloudDeleteAssetUUIDWithResourceType
        // before cloudDeleteState.
        let rawTombstones = try DatabaseQueue(path: copy.path).read { db in
            try Row.fetchAll(db, sql: """
                SELECT c.ZENTITYPK, c.ZTOMBSTONE0, c.ZTOMBSTONE1 FROM ACHANGE c JOIN Z_PRIMARYKEY p ON p.Z_ENT = c.ZENTITY
                WHERE c.ZCHANGETYPE = 2 AND p.Z_NAME = 'InternalResource' AND c.ZTOMBSTONE0 IS NOT NULL ORDER BY c.Z_PK
                """).map { ($0[0] as Int64, $0[1] as String, $0[2] as Int64) }
        }
        let deletedResources = changes.filter { $0.changeType == .delete && $0.changedObjectID.entity.name == "InternalResource"
            && $0.tombstone?["cloudDeleteAssetUUIDWithResourceType"] != nil }
        #expect(deletedResources.count == rawTombstones.count)
        for (change, raw) in zip(deletedResources, rawTombstones) {
            #expect(change.changedObjectID.primaryKey == raw.0)
            #expect(change.tombstone?["cloudDeleteAssetUUIDWithResourceType"] == .string(raw.1))
            #expect(change.tombstone?["cloudDeleteState"] == .int(raw.2))
        }
        if store.contains("26.1") {
            #expect(!rawTombstones.isEmpty)
            // The last transaction moved an album into a folder.
            let last = try #require(transactions.last?.changes?.first { $0.changedObjectID.entity.name == "Album" })
            #expect(last.updatedProperties?.map(\.name) == ["lastModifiedDate", "parentFolder"])
        }
        #expect(sqlite.isTrackingHistory)
        let token = try #require(coordinator.currentPersistentHistoryToken(fromStores: nil))
        #expect(token.transactionNumber(forStore: sqlite.identifier) == maxTransaction)
    }

    @Test("History tables of a new store are Core Data's: columns, indexes, entity numbers")
    func historyTablesMatchPhotos() throws {
        let photos = try Fixtures.copyStore(Self.photosLibraries[2])
        defer { SQLiteTestSupport.remove(photos) }
        let model = ManagedObjectModel()
        let item = EntityDescription(name: "Item")
        item.properties = [AttributeDescription(name: "name", type: .string)]
        model.entities = [item]
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("History.sqlite")
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: ["NSPersistentHistoryTrackingKey": "1"])
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait { () throws -> Void in
            let object = ManagedObject(entity: item, insertInto: context)
            object.setValue("one", forKey: "name")
            try context.save()
            object.setValue("two", forKey: "name")
            try context.save()
        }
        func dump(_ url: URL) throws -> (sql: [String: String], keys: [String], opt: [Int?]) {
            try DatabaseQueue(path: url.path).read { db in
                var sql: [String: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE tbl_name IN ('ATRANSACTION', 'ATRANSACTIONSTRING', 'ACHANGE')") {
                    // Tombstone columns: as many as the model needs.
                    let text = (row[1] as String?) ?? ""
                    sql[row[0]] = text.replacingOccurrences(of: #", ZTOMBSTONE\d+ BLOB"#, with: "", options: .regularExpression)
                        .replacingOccurrences(of: " ,", with: ",").replacingOccurrences(of: " )", with: ")")
                }
                let keys = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT")
                    .map { "\($0[0] as Int)|\($0[1] as String)|\($0[2] as Int)" }
                let opt = try Int?.fetchAll(db, sql: "SELECT Z_OPT FROM ACHANGE UNION ALL SELECT Z_OPT FROM ATRANSACTION")
                return (sql, keys, opt)
            }
        }
        let real = try dump(photos)
        let ours = try dump(url)
        #expect(ours.sql == real.sql)
        #expect(ours.keys == real.keys)
        #expect(ours.opt.allSatisfy { $0 == nil })
        // ZCOLUMNS: count / 8 + 1 bytes; bit n + 1 (from the most significant bit) is property n.
        let bitmap = try DatabaseQueue(path: url.path).read { db in
            try Data.fetchOne(db, sql: "SELECT ZCOLUMNS FROM ACHANGE WHERE ZCHANGETYPE = 1")
        }
        #expect(bitmap == Data([0x40]))
    }

    @Test("A new store for each Bookmarks model version has the fixture's tables, columns and indexed columns",
          arguments: bookmarksStores.map(\.store))
    func bookmarksTables(store: String) throws {
        let entry = try #require(SQLiteTestSupport.entry(store))
        let model = try SQLiteTestSupport.model(for: entry)
        let real = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(real) }
        let (created, _) = try SQLiteTestSupport.createdStore(model)
        defer { SQLiteTestSupport.remove(created) }
        let expected = try StoreDump.read(real)
        let actual = try StoreDump.read(created)
        #expect(actual.tables == expected.tables)
        #expect(actual.primaryKeys == expected.primaryKeys)
        // Index names differ by framework (Core Data 1251+ names an indexed attribute's
        // index Z_<Entity>_<attribute>, 637 <TABLE>_<COLUMN>_INDEX); what is indexed does not.
        func shapes(_ dump: StoreDump) -> [String] {
            dump.indexes.values.map { $0.replacingOccurrences(of: " unique", with: "") }.sorted()
        }
        #expect(shapes(actual) == shapes(expected))
    }

    @Test("A new store for a Photos library's model has its tables and columns (as sets: migrations append columns)",
          arguments: photosLibraries)
    func photosTables(store: String) throws {
        let real = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(real) }
        let model = try SQLiteStore.storedModel(at: real)
        let (created, _) = try SQLiteTestSupport.createdStore(model)
        defer { SQLiteTestSupport.remove(created) }
        let expected = try StoreDump.read(real)
        let actual = try StoreDump.read(created)
        // Core Data's own tables besides the model's: history, R-tree indexes, SQLite's.
        func modelTables(_ dump: StoreDump) -> [String: Set<String>] {
            dump.tables.filter { name, _ in
                !name.hasPrefix("A") && !name.hasPrefix("Z_RT_") && !name.hasPrefix("sqlite_")
            }.mapValues { Set($0) }
        }
        let (ours, theirs) = (modelTables(actual), modelTables(expected))
        #expect(Set(ours.keys) == Set(theirs.keys), "tables of \(store)")
        for (table, columns) in theirs {
            #expect(ours[table] == columns, "columns of \(table): extra \(ours[table]?.subtracting(columns) ?? []), missing \(columns.subtracting(ours[table] ?? []))")
        }
    }

    @Test("Every many-to-many relationship of the Photos libraries and Bookmarks reads the rows of its join table",
          arguments: photosLibraries + [bookmarksStores[4].store])
    func manyToManyRowsRead(store: String) throws {
        let copy = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(copy) }
        let model = try SQLiteStore.storedModel(at: copy)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let sqlite = try #require(try coordinator.addPersistentStore(type: .sqlite, at: copy, options: Self.readOnly) as? SQLiteStore)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let queue = try DatabaseQueue(path: copy.path)
        var checked = 0
        for entity in model.entities {
            for case let relationship as RelationshipDescription in entity.properties where relationship.isToMany {
                guard let inverse = relationship.inverseRelationship, inverse.isToMany,
                      case .joinTable(let join)? = sqlite.schema.storage(for: relationship, in: entity) else { continue }
                // Rows whose two objects exist (Photos keeps rows naming deleted people).
                let source = try #require(sqlite.schema.table(for: entity))
                let destination = try #require(relationship.destinationEntity.flatMap { sqlite.schema.table(for: $0) })
                let pairs = try queue.read { db in
                    try Int.fetchOne(db, sql: """
                        SELECT COUNT(*) FROM \(join.tableName) j
                        WHERE EXISTS (SELECT 1 FROM \(source) s WHERE s.Z_PK = j.\(join.sourceColumn))
                        AND EXISTS (SELECT 1 FROM \(destination) d WHERE d.Z_PK = j.\(join.destinationColumn))
                        """) ?? 0
                }
                let read = try context.performAndWait { () throws -> Int in
                    try context.fetch(FetchRequest<ManagedObject>(entity: entity))
                        .reduce(0) { $0 + $1.objects(forRelationship: relationship.name).count }
                }
                #expect(read == pairs, "\(entity.name).\(relationship.name) (\(join.tableName)) in \(store)")
                checked += 1
            }
        }
        #expect(checked > 0)
    }
}
