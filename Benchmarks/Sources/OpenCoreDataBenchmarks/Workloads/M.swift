import Foundation
import GRDBSQLite
import OpenCoreData
import OpenCoreDataPredicates

/// The migration workloads' models: version 1 is the suite's model; version 2
/// adds `Person.nickname`, renames `email` to `mail` and adds an entity `Tag`.
enum MigrationModels {
    static func version2() throws -> ManagedObjectModel {
        let model = try ManagedObjectModel {
            Entity("Person") {
                Attribute("name", .string)
                Attribute("age", .integer32, defaultValue: 0)
                Attribute("score", .double, defaultValue: 0)
                Attribute("mail", .string, renamingIdentifier: "email")
                Attribute("joined", .date)
                Attribute("nickname", .string)
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
            Entity("Tag") {
                Attribute("label", .string)
            }
        }
        try model.freeze()
        return model
    }

    /// A store of `count` persons in Core Data's layout (version 1), written with
    /// the C API: made once per size, copied for each run.
    static func sourceStore(_ env: BenchEnvironment, count: Int) throws -> String {
        let path = env.dir + "/migration-source-\(count).sqlite"
        if FileManager.default.fileExists(atPath: path) { return path }
        try FileManager.default.copyItem(atPath: env.emptyStore, toPath: path)
        let connection = try RawConnection(path: path)
        let entity = try connection.entityNumber("Person")
        try connection.execute("BEGIN")
        let insert = try connection.prepare(RawPersonWriter.insertSQL)
        let writer = RawPersonWriter()
        for i in 0..<count {
            writer.bind(i, entityNumber: entity, to: insert)
            try connection.stepDone(insert)
        }
        sqlite3_finalize(insert)
        try connection.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = \(count) WHERE Z_ENT = \(entity)")
        try connection.execute("COMMIT")
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return path
    }

    /// Every person of a migrated store (version 2's columns), summed as W1 sums them.
    static func checksum(path: String) throws -> Checksum {
        let connection = try RawConnection(path: path)
        let statement = try connection.prepare("SELECT Z_PK, Z_ENT, Z_OPT, ZNAME, ZAGE, ZSCORE, ZMAIL, ZJOINED FROM ZPERSON WHERE ZNICKNAME IS NULL")
        defer { sqlite3_finalize(statement) }
        var c = Checksum()
        while sqlite3_step(statement) == SQLITE_ROW { rawAddPerson(statement, to: &c) }
        guard try connection.integers("SELECT COUNT(*) FROM sqlite_master WHERE name = 'ZTAG'") == [1] else {
            throw BenchmarkError("the migrated store has no ZTAG table")
        }
        return c
    }
}

/// M1: lightweight migration of a store of 10 x n persons: an attribute added,
/// one renamed, an entity added. OpenCoreData infers the mapping and migrates a
/// copy in place with SQL, then swaps it in; raw SQLite does the same schema
/// change by hand in one transaction on the file: the person table rebuilt in the
/// layout a new store of version 2 has (as Core Data leaves it), the new table,
/// the bookkeeping rows.
struct M1: Workload {
    let name = "M1"
    let title = "lightweight migration of {10n} persons: add an attribute, rename one, add an entity"
    var peers: [Peer] { [.raw, .opencoredata] }

    func expectedChecksum(_ env: BenchEnvironment) throws -> String {
        Checksum.allAttributes(count: env.count * 10).text
    }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let source = try MigrationModels.sourceStore(env, count: env.count * 10)
        let path = try env.freshCopy(of: source, for: peer, workload: name)
        let version1 = OpenCoreDataPeer.model
        let version2 = try MigrationModels.version2()
        let start: Double
        switch peer {
        case .raw:
            // What the statements need, computed outside the timer: version 2's
            // layout and metadata, as a program with the schema change written by
            // hand would have them as constants.
            let layout = try SQLiteSchema(model: version2)
            guard let person = layout.tableDescription(named: "ZPERSON"), let tag = layout.tableDescription(named: "ZTAG") else {
                throw BenchmarkError("no ZPERSON/ZTAG in version 2's layout")
            }
            let createPerson = layout.creationStatements.first { $0.hasPrefix("CREATE TABLE ZPERSON") || $0.hasPrefix("CREATE TABLE \"ZPERSON\"") }
            let createTag = layout.creationStatements.first { $0.hasPrefix("CREATE TABLE ZTAG") || $0.hasPrefix("CREATE TABLE \"ZTAG\"") }
            let indexes = layout.creationStatements.filter { $0.hasPrefix("CREATE INDEX") && $0.contains("ZPERSON") }
            guard let createPerson, let createTag else { throw BenchmarkError("no CREATE TABLE statements") }
            let columns = person.columns.map(\.name)
            let selected = columns.map { column -> String in
                switch column { case "ZMAIL": return "ZEMAIL"; case "ZNICKNAME": return "NULL"; default: return column }
            }
            let metadata = try PropertyListSerialization.data(
                fromPropertyList: SQLiteStoreMetadata.metadata(for: version2).filter { $0.key != SQLiteStoreMetadata.storeUUIDKey },
                format: .binary, options: 0)
            let tagNumber = layout.entityNumber(forEntityNamed: "Tag") ?? 0
            _ = tag
            let connection = try RawConnection(path: path)
            start = now()
            try connection.execute("BEGIN")
            try connection.execute(createPerson.replacingOccurrences(of: "ZPERSON", with: "ZPERSON_NEW"))
            try connection.execute("INSERT INTO ZPERSON_NEW (\(columns.joined(separator: ", "))) SELECT \(selected.joined(separator: ", ")) FROM ZPERSON")
            try connection.execute("DROP TABLE ZPERSON")
            try connection.execute("ALTER TABLE ZPERSON_NEW RENAME TO ZPERSON")
            for index in indexes { try connection.execute(index) }
            try connection.execute(createTag)
            try connection.execute("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (\(tagNumber), 'Tag', 0, 0)")
            let update = try connection.prepare("UPDATE Z_METADATA SET Z_PLIST = ?")
            _ = metadata.withUnsafeBytes { sqlite3_bind_blob(update, 1, $0.baseAddress, Int32($0.count), nil) }
            try connection.stepDone(update)
            sqlite3_finalize(update)
            try connection.execute("COMMIT")
        case .opencoredata:
            start = now()
            let mapping = try MappingModel.inferredMappingModel(forSourceModel: version1, destinationModel: version2)
            let step = MigrationPlan.Step(sourceVersion: "1", destinationVersion: "2", sourceModel: version1, destinationModel: version2,
                                          mappingModel: mapping, mappingSource: .inferred)
            try StoreMigrator.migrateStore(at: URL(fileURLWithPath: path), plan: MigrationPlan(steps: [step]))
        case .grdb:
            throw BenchmarkError("M1 has no GRDB peer")
        }
        let seconds = now() - start
        return Sample(seconds: seconds, checksum: try MigrationModels.checksum(path: path).text)
    }
}

/// M2: a migration through objects with a mapping model (not inferable: a value
/// expression doubles each score) of n persons, by MigrationManager; its peak
/// memory (own process) must stay under a bound that does not grow with n.
struct M2: Workload {
    let name = "M2"
    let title = "migration through objects (mapping model, `score = $source.score * 2`) of {n} persons"
    var peers: [Peer] { [.opencoredata] }

    func expectedChecksum(_ env: BenchEnvironment) throws -> String {
        var c = Checksum.allAttributes(count: env.count)
        c.scores2 *= 2
        return c.text
    }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let source = try MigrationModels.sourceStore(env, count: env.count)
        let path = try env.freshCopy(of: source, for: peer, workload: name)
        let version1 = OpenCoreDataPeer.model
        let version2 = try MigrationModels.version2()
        var mapping = try MappingModel.inferredMappingModel(forSourceModel: version1, destinationModel: version2)
        for index in mapping.entityMappings.indices where mapping.entityMappings[index].destinationEntityName == "Person" {
            for property in mapping.entityMappings[index].attributeMappings.indices
            where mapping.entityMappings[index].attributeMappings[property].name == "score" {
                mapping.entityMappings[index].attributeMappings[property].valueExpression = try CoreExpression(format: "$source.score * 2")
            }
        }
        let step = MigrationPlan.Step(sourceVersion: "1", destinationVersion: "2", sourceModel: version1, destinationModel: version2,
                                      mappingModel: mapping, mappingSource: .mappingModel("M2"))
        guard !step.runsInPlace else { throw BenchmarkError("M2's mapping must run through objects") }
        let start = now()
        try StoreMigrator.migrateStore(at: URL(fileURLWithPath: path), plan: MigrationPlan(steps: [step]))
        let seconds = now() - start
        return Sample(seconds: seconds, checksum: try MigrationModels.checksum(path: path).text)
    }
}
