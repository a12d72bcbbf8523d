import Foundation
import GRDB
import Testing
@testable import OpenCoreData

/// What a SQLite file contains, read through sqlite_master and the PRAGMAs, for
/// comparing a store OpenCoreData writes with one Core Data wrote.
struct StoreDump {
    /// Table name → ["COLUMN TYPE", ...] in declaration order.
    var tables: [String: [String]] = [:]
    /// Table or index name → its SQL in sqlite_master.
    var sql: [String: String] = [:]
    /// "Z_ENT|Z_NAME|Z_SUPER" rows of Z_PRIMARYKEY.
    var primaryKeys: [String] = []
    /// Index name → "TABLE(COL, COL) unique?" (SQLite's automatic indexes included).
    var indexes: [String: String] = [:]
    var journalMode = ""
    var autoVacuum = 0

    static func read(_ url: URL) throws -> StoreDump {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var dump = StoreDump()
            for row in try Row.fetchAll(db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master") {
                let type: String = row[0], name: String = row[1], table: String = row[2]
                if let sql: String = row[3] { dump.sql[name] = sql }
                if type == "table" {
                    dump.tables[name] = try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_info(?)", arguments: [name])
                        .map { "\($0[0] as String) \($0[1] as String)" }
                    for index in try Row.fetchAll(db, sql: "SELECT name, \"unique\" FROM pragma_index_list(?)", arguments: [name]) {
                        let indexName: String = index[0]
                        let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_info(?) ORDER BY seqno",
                                                          arguments: [indexName])
                        dump.indexes[indexName] = "\(table)(\(columns.joined(separator: ", ")))\((index[1] as Int) == 1 ? " unique" : "")"
                    }
                }
            }
            if dump.tables["Z_PRIMARYKEY"] != nil {
                dump.primaryKeys = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT")
                    .map { "\($0[0] as Int)|\($0[1] as String)|\($0[2] as Int)" }
            }
            dump.journalMode = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? ""
            dump.autoVacuum = try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? -1
            return dump
        }
    }
}

enum SQLiteTestSupport {
    /// The model version that wrote a fixture store.
    static func model(for entry: (store: String, model: String, version: String)) throws -> ManagedObjectModel {
        try XcodeDataModel(contentsOf: Fixtures.url(entry.model)).model(forVersion: entry.version)
    }

    static func entry(_ store: String) -> (store: String, model: String, version: String)? {
        Fixtures.storesWithModels.first { $0.store == store }
    }

    /// A new store for `model` in a temporary folder.
    static func createdStore(_ model: ManagedObjectModel, name: String = "New.sqlite",
                             metadata: [String: Any] = [:]) throws -> (url: URL, schema: SQLiteSchema) {
        let url = try Fixtures.temporaryDirectory().appendingPathComponent(name)
        let schema = try SQLiteStoreFile.createStore(at: url, model: model, metadata: metadata)
        return (url, schema)
    }

    static func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
    }

    /// The bytes of a store and its sidecar files, to check that reading changed nothing.
    static func fileContents(_ url: URL) -> [String: Data] {
        var result: [String: Data] = [:]
        for suffix in ["", "-wal"] {
            if let data = FileManager.default.contents(atPath: url.path + suffix) { result[suffix] = data }
        }
        return result
    }

    /// The store's bytes are what they were. SQLite's WAL machinery may create an
    /// empty `-wal` (and a `-shm` index) beside a WAL-mode store it opens, even
    /// read-only, as Core Data's own reads do; the database content is untouched.
    static func expectUnchanged(_ url: URL, before: [String: Data],
                                sourceLocation: SourceLocation = #_sourceLocation) {
        let after = fileContents(url)
        #expect(after[""] == before[""], "main file changed", sourceLocation: sourceLocation)
        if let wal = before["-wal"] {
            #expect(after["-wal"] == wal, "-wal changed", sourceLocation: sourceLocation)
        } else {
            #expect(after["-wal"]?.isEmpty ?? true, "-wal written", sourceLocation: sourceLocation)
        }
    }

    static func readOnlyQueue(_ url: URL) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: url.path, configuration: configuration)
    }
}
