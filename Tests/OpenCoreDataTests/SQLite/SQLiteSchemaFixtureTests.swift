import Foundation
import GRDB
import Testing
@testable import OpenCoreData

/// A store OpenCoreData creates for a model version has exactly the schema of the
/// store Core Data wrote with that version.
@Suite("SQLite schema: new stores match Core Data's fixture stores")
struct SQLiteSchemaFixtureTests {
    /// The Bookmarks stores (frameworks 1251-1333) name the indexes of indexed
    /// attributes `Z_<Entity>_<attribute>`, where framework 637 wrote
    /// `<TABLE>_<COLUMN>_INDEX`; new stores follow 637. Their tables and columns are
    /// compared in `RealStoreTests.bookmarksTables`.
    static let stores = Fixtures.storesWithModels.map(\.store).filter { !$0.hasPrefix("duckduckgo+") }

    @Test("Same tables, columns, Z_PRIMARYKEY rows and indexes as the fixture", arguments: stores)
    func sameSchema(store: String) throws {
        let entry = try #require(SQLiteTestSupport.entry(store))
        let model = try SQLiteTestSupport.model(for: entry)
        let real = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(real) }
        let (created, _) = try SQLiteTestSupport.createdStore(model)
        defer { SQLiteTestSupport.remove(created) }
        let expected = try StoreDump.read(real)
        let actual = try StoreDump.read(created)

        // Framework 419 (Model1.sqlite) had no Z_MODELCACHE; every later store has one.
        var actualTables = actual.tables
        if expected.tables["Z_MODELCACHE"] == nil { actualTables["Z_MODELCACHE"] = nil }
        #expect(actualTables.keys.sorted() == expected.tables.keys.sorted(), "tables of \(store)")
        for (table, columns) in expected.tables {
            #expect(actualTables[table] == columns, "columns of \(table) in \(store)")
        }
        #expect(actual.primaryKeys == expected.primaryKeys, "Z_PRIMARYKEY of \(store)")
        #expect(actual.indexes == expected.indexes, "indexes of \(store)")
        #expect(actual.journalMode == "wal")
        #expect(actual.autoVacuum == expected.autoVacuum)
    }

    @Test("Same CREATE TABLE and CREATE INDEX text as Core Data wrote", arguments: stores)
    func sameSQLText(store: String) throws {
        let entry = try #require(SQLiteTestSupport.entry(store))
        let model = try SQLiteTestSupport.model(for: entry)
        let real = try Fixtures.copyStore(store)
        defer { SQLiteTestSupport.remove(real) }
        let expected = try StoreDump.read(real)
        let schema = try SQLiteSchema(model: model)
        var created: [String: String] = [:]
        for statement in schema.creationStatements {
            // "CREATE TABLE NAME ( ..." / "CREATE INDEX NAME ON ..."
            let words = statement.split(separator: " ")
            guard words.count > 2 else { continue }
            created[String(words[2])] = statement
        }
        for (name, sql) in expected.sql where !name.hasPrefix("sqlite_") && !name.hasPrefix("Z_PRIMARYKEY")
            && name != "Z_METADATA" && name != "Z_MODELCACHE" {
            #expect(created[name] == sql, "\(name) in \(store)")
        }
        #expect(schema.creationStatements.count >= expected.sql.count - 1)
    }

    @Test("Core Data's creation order: entity and join tables, join indexes, bookkeeping tables, entity indexes")
    func creationOrder() throws {
        for store in ["bignerdranch+CoreDataStack/Sample Model/Deprecated/TestModel.sqlite",
                      "objcio+core-data/Migrations/MigrationsTests/Moody 3.moody"] {
            let entry = try #require(SQLiteTestSupport.entry(store))
            let real = try Fixtures.copyStore(store)
            defer { SQLiteTestSupport.remove(real) }
            let queue = try SQLiteTestSupport.readOnlyQueue(real)
            let names = try queue.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY rowid")
            }
            try queue.close()
            let schema = try SQLiteSchema(model: SQLiteTestSupport.model(for: entry))
            let created = schema.creationStatements.map { String($0.split(separator: " ")[2]) }
            #expect(created == names, "\(store)")
        }
    }
}
