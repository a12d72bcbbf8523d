import Foundation
import GRDB
import Testing
@testable import OpenCoreData

@Suite("SQLite schema: reading existing stores")
struct SQLiteSchemaReadingTests {
    static let stores = Fixtures.storesWithModels.map(\.store)

    @Test("Reading a fixture's schema maps every entity and stored property to real tables and columns", arguments: stores)
    func readsMapping(store: String) throws {
        let entry = try #require(SQLiteTestSupport.entry(store))
        let model = try SQLiteTestSupport.model(for: entry)
        let url = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(url) }
        let before = SQLiteTestSupport.fileContents(url)
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        let (schema, primaryKeys, columns) = try queue.read { db in
            let schema = try SQLiteSchema(reading: db, model: model)
            let primaryKeys = try Row.fetchAll(db, sql: "SELECT Z_NAME, Z_ENT, Z_SUPER FROM Z_PRIMARYKEY")
                .map { (name: $0[0] as String, number: $0[1] as Int, superNumber: $0[2] as Int) }
            var columns: [String: Set<String>] = [:]
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") {
                columns[table] = Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]))
            }
            return (schema, primaryKeys, columns)
        }
        try queue.close()
        SQLiteTestSupport.expectUnchanged(url, before: before)
        #expect(schema.creationStatements.isEmpty)

        // Entity numbers are the store's.
        for row in primaryKeys {
            #expect(schema.entityNumber(forEntityNamed: row.name) == row.number)
            #expect(schema.mapping(forEntityNamed: row.name)?.superentityNumber == row.superNumber)
        }
        for entity in model.entities {
            let table = try #require(schema.table(for: entity))
            #expect(table == "Z" + entity.rootEntity.name.uppercased())
            #expect(schema.entityNumber(entity) != nil)
            let tableColumns = try #require(columns[table])
            for property in entity.allProperties {
                let storage = try #require(schema.storage(for: property, in: entity), "\(entity.name).\(property.name)")
                switch storage {
                case .column(let column):
                    #expect(tableColumns.contains(column))
                    #expect(schema.column(for: property, in: entity) == column)
                case .toOne(let column, let entityColumn, let order):
                    for name in [column, entityColumn, order].compactMap({ $0 }) { #expect(tableColumns.contains(name)) }
                case .toMany(let other, let column, let order):
                    for name in [column, order].compactMap({ $0 }) { #expect(columns[other]?.contains(name) == true) }
                case .joinTable(let join):
                    #expect(columns[join.tableName]?.contains(join.sourceColumn) == true)
                    #expect(columns[join.tableName]?.contains(join.destinationColumn) == true)
                    let relationship = try #require(property as? RelationshipDescription)
                    #expect(schema.joinTable(for: relationship) == join)
                case .composite(let map):
                    for name in map.values { #expect(tableColumns.contains(name)) }
                case .notStored:
                    #expect(property.isTransient || property is FetchedPropertyDescription)
                }
            }
        }
    }

    @Test("The Moody 2 store: numbers, tables and columns as Core Data laid them out")
    func moodyMapping() throws {
        let store = "objcio+core-data/Migrations/MigrationsTests/Moody 2.moody"
        let model = try SQLiteTestSupport.model(for: try #require(SQLiteTestSupport.entry(store)))
        let url = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(url) }
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        let schema = try queue.read { db in try SQLiteSchema(reading: db, model: model) }
        try queue.close()
        #expect(schema.entities.map(\.entityName) == ["GeographicRegion", "Continent", "Country", "Mood"])
        #expect(schema.mapping(forEntityNamed: "GeographicRegion")?.entityNumbersIncludingSubentities == [1, 2, 3])
        #expect(schema.table(forEntityNamed: "Country") == "ZGEOGRAPHICREGION")
        #expect(schema.column(forProperty: "numberOfMoods", ofEntityNamed: "Continent") == "ZNUMBEROFMOODS")
        #expect(schema.storage(forProperty: "continent", ofEntityNamed: "Country")
                == .toOne(column: "ZCONTINENT", entityColumn: nil, orderColumn: nil))
        #expect(schema.storage(forProperty: "countries", ofEntityNamed: "Continent")
                == .toMany(tableName: "ZGEOGRAPHICREGION", foreignKeyColumn: "ZCONTINENT", orderColumn: nil))
        #expect(schema.storage(forProperty: "moods", ofEntityNamed: "Country")
                == .toMany(tableName: "ZMOOD", foreignKeyColumn: "ZCOUNTRY", orderColumn: nil))
        #expect(schema.column(forProperty: "remoteID", ofEntityNamed: "Mood") == "ZREMOTEID")
        #expect(schema.tableDescription(named: "ZMOOD")?.column(named: "zcolors")?.declaredType == "BLOB")
        #expect(schema.indexes.contains { $0.name == "ZMOOD_ZCOUNTRY_INDEX" && $0.columns.map(\.name) == ["ZCOUNTRY"] })
    }

    @Test("The TestModel store's many-to-many join table, seen from both sides")
    func joinTable() throws {
        let store = "bignerdranch+CoreDataStack/Sample Model/Deprecated/TestModel.sqlite"
        let model = try SQLiteTestSupport.model(for: try #require(SQLiteTestSupport.entry(store)))
        let url = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(url) }
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        let schema = try queue.read { db in try SQLiteSchema(reading: db, model: model) }
        try queue.close()
        let books = try #require(model.entitiesByName["Author"]?.relationshipsByName["books"])
        let authors = try #require(model.entitiesByName["Book"]?.relationshipsByName["authors"])
        #expect(schema.joinTable(for: books) == .init(tableName: "Z_1BOOKS", sourceColumn: "Z_1AUTHORS",
                                                      destinationColumn: "Z_2BOOKS", orderColumn: nil))
        #expect(schema.joinTable(for: authors) == .init(tableName: "Z_1BOOKS", sourceColumn: "Z_2BOOKS",
                                                        destinationColumn: "Z_1AUTHORS", orderColumn: nil))
    }

    @Test("A store read with another model version: 134020 naming the entities and columns that differ")
    func incompatibleSchema() throws {
        let bundle = try XcodeDataModel(contentsOf: Fixtures.moodyModel)
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        defer { SQLiteTestSupport.remove(url) }
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        defer { try? queue.close() }

        // Moody 4 has no GeographicRegion: Continent and Country are roots.
        let moody4 = try bundle.model(forVersion: "Moody 4")
        let hierarchy = #expect(throws: CoreDataError.self) {
            try queue.read { db in try SQLiteSchema(reading: db, model: moody4) }
        }
        #expect(hierarchy?.code == .persistentStoreIncompatibleSchema)
        #expect(hierarchy?.message.contains("'Continent'") == true)
        #expect(hierarchy?.message.contains("'Country'") == true)

        // Moody 3 adds Mood.continent: the column ZMOOD.ZCONTINENT is missing.
        let moody3 = try bundle.model(forVersion: "Moody 3")
        let column = #expect(throws: CoreDataError.self) {
            try queue.read { db in try SQLiteSchema(reading: db, model: moody3) }
        }
        #expect(column?.code == .persistentStoreIncompatibleSchema)
        #expect(column?.entityName == "Mood")
        #expect(column?.key == "continent")
        #expect(column?.message.contains("ZCONTINENT") == true)

        // A model with an entity the store doesn't have.
        let extra = moody3.copy()
        extra.entities.append(EntityDescription(name: "Weather"))
        let missing = #expect(throws: CoreDataError.self) {
            try queue.read { db in try SQLiteSchema(reading: db, model: extra) }
        }
        #expect(missing?.message.contains("entity 'Weather' is in the model but not in the store") == true)
    }

    @Test("A column declared with another type, or with none, is read by value (SQLite columns hold any value)")
    func otherColumnTypes() throws {
        let model = try ManagedObjectModel {
            Entity("Note") {
                Attribute("title", .string)
                Attribute("kind", .string)
            }
        }
        let url = try Fixtures.temporaryDirectory().appendingPathComponent("Odd.sqlite")
        defer { SQLiteTestSupport.remove(url) }
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE ZNOTE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE INTEGER, ZKIND )")
            try db.execute(sql: "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)")
            try db.execute(sql: "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)")
            try db.execute(sql: "INSERT INTO Z_PRIMARYKEY VALUES (1, 'Note', 0, 0)")
        }
        let schema = try queue.read { db in try SQLiteSchema(reading: db, model: model) }
        #expect(schema.column(forProperty: "title", ofEntityNamed: "Note") == "ZTITLE")
        #expect(schema.column(forProperty: "kind", ofEntityNamed: "Note") == "ZKIND")
        #expect(schema.tableDescription(named: "ZNOTE")?.column(named: "ZKIND")?.declaredType == "")
        try queue.close()
    }

    @Test("A database without Z_PRIMARYKEY is not a Core Data store")
    func noPrimaryKeyTable() throws {
        let queue = try DatabaseQueue()
        let model = try ManagedObjectModel { Entity("Note") { Attribute("title", .string) } }
        let error = #expect(throws: CoreDataError.self) {
            try queue.read { db in try SQLiteSchema(reading: db, model: model) }
        }
        #expect(error?.code == .persistentStoreIncompatibleSchema)
    }
}
