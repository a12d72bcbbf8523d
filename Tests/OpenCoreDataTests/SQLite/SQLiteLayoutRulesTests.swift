import Foundation
import GRDB
import Testing
@testable import OpenCoreData

/// Layout rules on models built in code, beyond what the fixture stores contain.
/// Rules marked [verified] are seen in real stores (the fixtures, or the public
/// dumps cited in docs/core-data-format.md); the others are Core Data's documented
/// or observed naming, with the exact choice a guess.
@Suite("SQLite schema: layout rules")
struct SQLiteLayoutRulesTests {
    /// Bear's `SFNoteFile` hierarchy: subentity columns after the root's, clashes suffixed.
    static func bearModel() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("SFNoteFile") {
                Attribute("fileSize", .integer64)
                Attribute("filename", .string)
                Attribute("creationDate", .date)
                Attribute("encryptedData", .binaryData)
                Relationship("note", to: "SFNote", inverse: "files")
                Relationship("serverData", to: "SFNoteFileServerData", inverse: "file")
            }
            Entity("SFNoteGenericFile", parent: "SFNoteFile")
            Entity("SFNoteImage", parent: "SFNoteFile") {
                Attribute("height", .integer32)
                Attribute("width", .integer32)
                Attribute("animated", .boolean)
            }
            Entity("SFNoteVideo", parent: "SFNoteFile") {
                Attribute("duration", .integer64)
                Attribute("height", .integer32)
                Attribute("width", .integer32)
            }
            Entity("SFNote") {
                Attribute("title", .string)
                Relationship("files", to: "SFNoteFile", inverse: "note", toMany: true)
                Relationship("tags", to: "SFNoteTag", inverse: "notes", toMany: true)
            }
            Entity("SFNoteTag") {
                Attribute("title", .string)
                Relationship("notes", to: "SFNote", inverse: "tags", toMany: true)
            }
            Entity("SFNoteFileServerData") {
                Relationship("file", to: "SFNoteFile", inverse: "serverData")
            }
        }
    }

    @Test("Entity numbers: roots by name, each followed by its subentities [verified: Bear]")
    func numbering() throws {
        let schema = try SQLiteSchema(model: Self.bearModel())
        #expect(schema.entities.map { "\($0.entityNumber) \($0.entityName) \($0.superentityNumber)" } == [
            "1 SFNote 0", "2 SFNoteFile 0", "3 SFNoteGenericFile 2", "4 SFNoteImage 2", "5 SFNoteVideo 2",
            "6 SFNoteFileServerData 0", "7 SFNoteTag 0",
        ])
        #expect(schema.mapping(forEntityNamed: "SFNoteFile")?.entityNumbersIncludingSubentities == [2, 3, 4, 5])
        #expect(schema.table(forEntityNamed: "SFNoteVideo") == "ZSFNOTEFILE")
    }

    @Test("Column order and clash suffixes in a hierarchy [verified: Bear, knowledgeC]")
    func hierarchyColumns() throws {
        let schema = try SQLiteSchema(model: Self.bearModel())
        let table = try #require(schema.tableDescription(named: "ZSFNOTEFILE"))
        #expect(table.columns.map(\.description) == [
            "Z_PK INTEGER", "Z_ENT INTEGER", "Z_OPT INTEGER",
            "ZFILESIZE INTEGER", "ZNOTE INTEGER", "ZSERVERDATA INTEGER",
            "ZANIMATED INTEGER", "ZHEIGHT INTEGER", "ZWIDTH INTEGER",
            "ZDURATION INTEGER", "ZHEIGHT1 INTEGER", "ZWIDTH1 INTEGER",
            "ZCREATIONDATE TIMESTAMP", "ZFILENAME VARCHAR", "ZENCRYPTEDDATA BLOB",
        ])
        #expect(schema.column(forProperty: "height", ofEntityNamed: "SFNoteImage") == "ZHEIGHT")
        #expect(schema.column(forProperty: "height", ofEntityNamed: "SFNoteVideo") == "ZHEIGHT1")
        #expect(schema.column(forProperty: "fileSize", ofEntityNamed: "SFNoteVideo") == "ZFILESIZE")
        // A to-one to an entity with subentities carries the destination's Z_ENT.
        let serverData = try #require(schema.tableDescription(named: "ZSFNOTEFILESERVERDATA"))
        #expect(serverData.columns.map(\.name) == ["Z_PK", "Z_ENT", "Z_OPT", "ZFILE", "Z2_FILE"])
        #expect(schema.storage(forProperty: "file", ofEntityNamed: "SFNoteFileServerData")
                == .toOne(column: "ZFILE", entityColumn: "Z2_FILE", orderColumn: nil))
        // Many-to-many: table named by the entity whose name sorts first.
        let tags = try #require(schema.tableDescription(named: "Z_1TAGS"))
        #expect(tags.columns.map(\.name) == ["Z_1NOTES", "Z_7TAGS"])
        #expect(schema.creationStatements.contains("CREATE TABLE Z_1TAGS ( Z_1NOTES INTEGER, Z_7TAGS INTEGER, PRIMARY KEY (Z_1NOTES, Z_7TAGS) )"))
        #expect(schema.creationStatements.contains("CREATE INDEX Z_1TAGS_Z_7TAGS_INDEX ON Z_1TAGS (Z_7TAGS, Z_1NOTES)"))
        #expect(schema.creationStatements.contains("CREATE INDEX ZSFNOTEFILE_Z_ENT_INDEX ON ZSFNOTEFILE (Z_ENT)"))
        #expect(schema.creationStatements.contains("CREATE INDEX ZSFNOTEFILESERVERDATA_ZFILE_INDEX ON ZSFNOTEFILESERVERDATA (ZFILE)"))
    }

    @Test("Reals and dates share a group, sorted by name; Decimal, UUID, URI types [verified: FLOAT/TIMESTAMP mix]")
    func typeGroups() throws {
        let model = try ManagedObjectModel {
            Entity("Record") {
                Attribute("weight", .double)
                Attribute("createdAt", .date)
                Attribute("oneRepMax", .float)
                Attribute("price", .decimal)
                Attribute("reps", .integer16)
                Attribute("done", .boolean)
                Attribute("id", .uuid)
                Attribute("link", .uri)
                Attribute("note", .string)
                Attribute("payload", .transformable)
                Attribute("scratch", .string, transient: true)
            }
        }
        let schema = try SQLiteSchema(model: model)
        #expect(schema.tableDescription(named: "ZRECORD")?.columns.dropFirst(3).map(\.description) == [
            "ZDONE INTEGER", "ZREPS INTEGER",
            "ZCREATEDAT TIMESTAMP", "ZONEREPMAX FLOAT", "ZPRICE DECIMAL", "ZWEIGHT FLOAT",
            "ZLINK VARCHAR", "ZNOTE VARCHAR",
            "ZID BLOB", "ZPAYLOAD BLOB",
        ])
        #expect(schema.storage(forProperty: "scratch", ofEntityNamed: "Record") == .notStored)
        #expect(schema.column(forProperty: "scratch", ofEntityNamed: "Record") == nil)
    }

    @Test("Ordered to-many: Z_FOK_ after the inverse's foreign key; ordered many-to-many: Z_FOK_ in the join table")
    func orderedRelationships() throws {
        let model = try ManagedObjectModel {
            Entity("Template") {
                Attribute("name", .string)
                Relationship("exercises", to: "Exercise", inverse: "template", toMany: true, ordered: true)
            }
            Entity("Exercise") {
                Attribute("orderIndex", .integer32)
                Relationship("template", to: "Template", inverse: "exercises")
            }
            Entity("Album") {
                Relationship("assets", to: "Asset", inverse: "albums", toMany: true, ordered: true)
            }
            Entity("Asset") {
                Relationship("albums", to: "Album", inverse: "assets", toMany: true)
            }
        }
        let schema = try SQLiteSchema(model: model)
        #expect(schema.tableDescription(named: "ZEXERCISE")?.columns.map(\.name)
                == ["Z_PK", "Z_ENT", "Z_OPT", "ZORDERINDEX", "ZTEMPLATE", "Z_FOK_TEMPLATE"])
        #expect(schema.storage(forProperty: "exercises", ofEntityNamed: "Template")
                == .toMany(tableName: "ZEXERCISE", foreignKeyColumn: "ZTEMPLATE", orderColumn: "Z_FOK_TEMPLATE"))
        #expect(schema.storage(forProperty: "template", ofEntityNamed: "Exercise")
                == .toOne(column: "ZTEMPLATE", entityColumn: nil, orderColumn: "Z_FOK_TEMPLATE"))
        // Album(1) < Asset(2): Z_1ASSETS(Z_1ALBUMS, Z_2ASSETS, Z_FOK_2ASSETS), as Photos' Z_26ASSETS.
        #expect(schema.tableDescription(named: "Z_1ASSETS")?.columns.map(\.name) == ["Z_1ALBUMS", "Z_2ASSETS", "Z_FOK_2ASSETS"])
        let assets = try #require(model.entitiesByName["Album"]?.relationshipsByName["assets"])
        let albums = try #require(model.entitiesByName["Asset"]?.relationshipsByName["albums"])
        #expect(schema.joinTable(for: assets) == .init(tableName: "Z_1ASSETS", sourceColumn: "Z_1ALBUMS",
                                                       destinationColumn: "Z_2ASSETS", orderColumn: "Z_FOK_2ASSETS"))
        #expect(schema.joinTable(for: albums) == .init(tableName: "Z_1ASSETS", sourceColumn: "Z_2ASSETS",
                                                       destinationColumn: "Z_1ALBUMS", orderColumn: nil))
    }

    @Test("To-many without inverse: hidden foreign key Z<source#><NAME> in the destination, indexed")
    func toManyWithoutInverse() throws {
        let model = try ManagedObjectModel {
            Entity("Meeting") {
                Attribute("title", .string)
                Relationship("transcripts", to: "TranscriptRecord", toMany: true)
            }
            Entity("TranscriptRecord") {
                Attribute("text", .string)
            }
        }
        let schema = try SQLiteSchema(model: model)
        #expect(schema.tableDescription(named: "ZTRANSCRIPTRECORD")?.columns.map(\.name)
                == ["Z_PK", "Z_ENT", "Z_OPT", "Z1TRANSCRIPTS", "ZTEXT"])
        #expect(schema.storage(forProperty: "transcripts", ofEntityNamed: "Meeting")
                == .toMany(tableName: "ZTRANSCRIPTRECORD", foreignKeyColumn: "Z1TRANSCRIPTS", orderColumn: nil))
        #expect(schema.indexes.contains { $0.name == "ZTRANSCRIPTRECORD_Z1TRANSCRIPTS_INDEX" })
    }

    @Test("Fetch indexes, uniqueness constraints, legacy indexed attributes")
    func indexes() throws {
        let model = try ManagedObjectModel {
            Entity("Asset") {
                Attribute("uuid", .string)
                Attribute("dateCreated", .date)
                Attribute("kind", .integer16)
                FetchIndex("byUuidIndex", "uuid")
                FetchIndex("byDate", "dateCreated", ascending: false)
                UniquenessConstraint("uuid")
                UniquenessConstraint("kind", "dateCreated")
            }
        }
        let schema = try SQLiteSchema(model: model)
        #expect(schema.creationStatements.contains("CREATE INDEX Z_Asset_byUuidIndex ON ZASSET (ZUUID COLLATE BINARY ASC)"))
        #expect(schema.creationStatements.contains("CREATE INDEX Z_Asset_byDate ON ZASSET (ZDATECREATED COLLATE BINARY DESC)"))
        #expect(schema.creationStatements.first == "CREATE TABLE ZASSET ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZKIND INTEGER, ZDATECREATED TIMESTAMP, ZUUID VARCHAR, CONSTRAINT ZUUID UNIQUE (ZUUID), CONSTRAINT ZKIND_ZDATECREATED UNIQUE (ZKIND, ZDATECREATED))")

        // The store really enforces the constraint and the indexes exist.
        let (url, _) = try SQLiteTestSupport.createdStore(model)
        defer { SQLiteTestSupport.remove(url) }
        let dump = try StoreDump.read(url)
        #expect(dump.indexes["Z_Asset_byUuidIndex"] == "ZASSET(ZUUID)")
        #expect(dump.indexes["sqlite_autoindex_ZASSET_1"] == "ZASSET(ZUUID) unique")
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        try queue.write { db in try db.execute(sql: "INSERT INTO ZASSET (Z_PK, Z_ENT, Z_OPT, ZUUID) VALUES (1, 1, 1, 'a')") }
        #expect(throws: DatabaseError.self) {
            try queue.write { db in try db.execute(sql: "INSERT INTO ZASSET (Z_PK, Z_ENT, Z_OPT, ZUUID) VALUES (2, 1, 1, 'a')") }
        }
    }

    @Test("Names that aren't plain identifiers are quoted, never spliced into SQL")
    func quoting() throws {
        let model = try ManagedObjectModel {
            Entity("Été") {
                Attribute("naïve\"; DROP TABLE Z_METADATA; --", .string)
                Attribute("order", .integer32)
            }
        }
        let schema = try SQLiteSchema(model: model)
        #expect(schema.table(forEntityNamed: "Été") == "ZÉTÉ")
        let (url, _) = try SQLiteTestSupport.createdStore(model)
        defer { SQLiteTestSupport.remove(url) }
        let dump = try StoreDump.read(url)
        #expect(dump.tables["ZÉTÉ"] == ["Z_PK INTEGER", "Z_ENT INTEGER", "Z_OPT INTEGER", "ZORDER INTEGER",
                                       "ZNAÏVE\"; DROP TABLE Z_METADATA; -- VARCHAR"])
        #expect(dump.tables["Z_METADATA"] != nil)
        #expect(try SQLiteStoreMetadata.read(at: url)["NSStoreType"] as? String == "SQLite")
        // And reading it back maps the quoted names.
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        let read = try queue.read { db in try SQLiteSchema(reading: db, model: model) }
        try queue.close()
        #expect(read.column(forProperty: "naïve\"; DROP TABLE Z_METADATA; --", ofEntityNamed: "Été")
                == "ZNAÏVE\"; DROP TABLE Z_METADATA; --")
    }

    @Test("A created store has Z_PRIMARYKEY rows with Z_MAX 0, WAL journal, incremental auto-vacuum, one Z_MODELCACHE row")
    func createdStoreBasics() throws {
        let (url, schema) = try SQLiteTestSupport.createdStore(Self.bearModel())
        defer { SQLiteTestSupport.remove(url) }
        let queue = try SQLiteTestSupport.readOnlyQueue(url)
        defer { try? queue.close() }
        let (maxes, cached, journal, vacuum) = try queue.read { db throws -> ([Int], Int?, String?, Int?) in
            (try Int.fetchAll(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY"),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM Z_MODELCACHE"),
             try String.fetchOne(db, sql: "PRAGMA journal_mode"),
             try Int.fetchOne(db, sql: "PRAGMA auto_vacuum"))
        }
        #expect(maxes == Array(repeating: 0, count: 7))
        #expect(cached == 1)
        #expect(journal == "wal")
        #expect(vacuum == 2)
        let read = try queue.read { db in try SQLiteSchema(reading: db, model: Self.bearModel()) }
        #expect(read.entities == schema.entities)
        #expect(read.propertyStorage == schema.propertyStorage)
    }

    @Test("An existing file is never overwritten")
    func noOverwrite() throws {
        let (url, _) = try SQLiteTestSupport.createdStore(Self.bearModel())
        defer { SQLiteTestSupport.remove(url) }
        let before = SQLiteTestSupport.fileContents(url)
        let error = #expect(throws: CoreDataError.self) {
            try SQLiteStoreFile.createStore(at: url, model: Self.bearModel())
        }
        #expect(error?.code == .persistentStoreOperation)
        #expect(SQLiteTestSupport.fileContents(url) == before)
    }

    @Test("Configurations: only the configuration's entities get tables and numbers")
    func configuration() throws {
        let model = try ManagedObjectModel {
            Entity("Local") { Attribute("a", .string) }
            Entity("Cloud") { Attribute("b", .string) }
            ModelConfiguration("CloudOnly", entities: ["Cloud"])
        }
        let schema = try SQLiteSchema(model: model, configurationName: "CloudOnly")
        #expect(schema.entities.map(\.entityName) == ["Cloud"])
        #expect(schema.tables.map(\.name) == ["ZCLOUD", "Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"])
        #expect(throws: CoreDataError.self) { try SQLiteSchema(model: model, configurationName: "Nope") }
    }
}
