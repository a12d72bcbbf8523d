import Foundation
import GRDB
import OpenCoreDataPredicates

/// Core Data's persistent history in a SQLite store: the tables `ATRANSACTION`,
/// `ACHANGE` and `ATRANSACTIONSTRING` (entity numbers 16002, 16001 and 16003 in
/// `Z_PRIMARYKEY`), written in the same transaction as each save.
///
/// Layout (see OpenCoreData.docc/SQLiteFormat.md):
/// - `ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME)`: interned strings, unique on `ZNAME`.
/// - `ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS,
///   ZTIMESTAMP, ZAUTHOR, ZBUNDLEID, ZCONTEXTNAME, ZPROCESSID, ZQUERYGEN)`: the `…TS` columns
///   point into `ATRANSACTIONSTRING`; the plain string twins are left NULL, as Core Data does.
/// - `ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS,
///   ZTOMBSTONE0…)`: one row per changed object.
package struct SQLiteHistory: Sendable {
    package static let changeEntity = 16001
    package static let transactionEntity = 16002
    package static let stringEntity = 16003

    /// For each entity (by name), its attributes kept in tombstones: those marked
    /// `preservesValueInHistoryOnDeletion` stored in one column, sorted by name.
    package let tombstoneAttributes: [String: [(attribute: AttributeDescription, column: String)]]
    /// The number of `ZTOMBSTONE<n>` columns the model needs.
    package let tombstoneColumnCount: Int

    package init(schema: SQLiteSchema, model: ManagedObjectModel, configurationName: String?) {
        var attributes: [String: [(AttributeDescription, String)]] = [:]
        var count = 0
        for entity in model.entities(forConfigurationName: configurationName) ?? [] {
            let kept = entity.allProperties.compactMap { $0 as? AttributeDescription }
                .filter { $0.preservesValueInHistoryOnDeletion && !$0.isTransient && !$0.allowsExternalBinaryDataStorage }
                .sorted { $0.name < $1.name }
                .compactMap { attribute -> (AttributeDescription, String)? in
                    guard case .column(let column)? = schema.storage(for: attribute, in: entity) else { return nil }
                    return (attribute, column)
                }
            if !kept.isEmpty { attributes[entity.name] = kept }
            count = max(count, kept.count)
        }
        tombstoneAttributes = attributes
        tombstoneColumnCount = count
    }

    // MARK: Tables

    /// Creates the history tables and their `Z_PRIMARYKEY` rows when missing, and
    /// adds tombstone columns the model needs and the table lacks.
    func prepareTables(_ db: Database) throws {
        // Tables and indexes exactly as Core Data writes them (compared with the
        // Photos libraries, frameworks 973-1522: OpenCoreData.docc/SQLiteFormat.md).
        if try !db.tableExists("ACHANGE") {
            let tombstones = (0..<tombstoneColumnCount).map { ", ZTOMBSTONE\($0) BLOB" }.joined()
            try db.execute(sql: """
                CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, \
                ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB\(tombstones) )
                """)
            try db.execute(sql: "CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)")
        } else {
            let existing = Set(try db.columns(in: "ACHANGE").map { $0.name.uppercased() })
            for index in 0..<tombstoneColumnCount where !existing.contains("ZTOMBSTONE\(index)") {
                try db.execute(sql: "ALTER TABLE ACHANGE ADD COLUMN ZTOMBSTONE\(index) BLOB")
            }
        }
        if try !db.tableExists("ATRANSACTION") {
            try db.execute(sql: """
                CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, \
                ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, \
                ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )
                """)
            for column in ["ZAUTHORTS", "ZBUNDLEIDTS", "ZCONTEXTNAMETS", "ZPROCESSIDTS"] {
                try db.execute(sql: "CREATE INDEX ATRANSACTION_\(column)_INDEX ON ATRANSACTION (\(column))")
            }
            try db.execute(sql: "CREATE INDEX Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC)")
            try db.execute(sql: "CREATE INDEX Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC)")
        }
        if try !db.tableExists("ATRANSACTIONSTRING") {
            try db.execute(sql: "CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )")
            try db.execute(sql: "CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC)")
        }
        for (number, name) in [(Self.changeEntity, "CHANGE"), (Self.transactionEntity, "TRANSACTION"), (Self.stringEntity, "TRANSACTIONSTRING")] {
            try db.execute(sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) SELECT ?, ?, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM Z_PRIMARYKEY WHERE Z_ENT = ?)",
                           arguments: [number, name, number])
        }
    }

    /// Whether a store file has the history tables.
    static func hasTables(_ db: Database) throws -> Bool {
        try db.tableExists("ATRANSACTION") && db.tableExists("ACHANGE") && db.tableExists("ATRANSACTIONSTRING")
    }

    /// Whether a store file holds recorded history (a transaction not yet deleted).
    static func hasRecordedHistory(_ db: Database) throws -> Bool {
        try db.tableExists("ATRANSACTION") && (Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM ATRANSACTION)") ?? false)
    }

    /// Reserves `count` primary keys of a history entity; returns the first.
    private func reserveKeys(_ entity: Int, count: Int, _ db: Database) throws -> Int64 {
        try db.cachedStatement(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + ? WHERE Z_ENT = ?").execute(arguments: [count, entity])
        let max = try Int64.fetchOne(db.cachedStatement(sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?"), arguments: [entity]) ?? Int64(count)
        return max - Int64(count) + 1
    }

    /// The `ATRANSACTIONSTRING` key of `string`, interning it when new.
    private func intern(_ string: String?, _ db: Database) throws -> Int64? {
        guard let string, !string.isEmpty else { return nil }
        if let key = try Int64.fetchOne(db.cachedStatement(sql: "SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?"), arguments: [string]) {
            return key
        }
        let key = try reserveKeys(Self.stringEntity, count: 1, db)
        try db.cachedStatement(sql: "INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, NULL, ?)")
            .execute(arguments: [key, Self.stringEntity, string])
        return key
    }

    // MARK: Recording

    /// The stored values of the tombstone attributes of objects about to be
    /// deleted, read before the rows go.
    func tombstones(of deleted: [(ManagedObjectID, Int64)], schema: SQLiteSchema, _ db: Database) throws -> [ManagedObjectID: [DatabaseValue]] {
        var result: [ManagedObjectID: [DatabaseValue]] = [:]
        for (id, _) in deleted {
            guard let kept = tombstoneAttributes[id.entity.name], let pk = id.primaryKey,
                  let table = schema.table(for: id.entity) else { continue }
            let columns = kept.map { SQLiteIdentifier.quoted($0.column) }.joined(separator: ", ")
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK = ?"),
                                             arguments: [pk]) else { continue }
            result[id] = (0..<kept.count).map { row[$0] as DatabaseValue }
        }
        return result
    }

    /// Writes one transaction and its changes for a save; returns its number, or
    /// nil when the save changed nothing.
    @discardableResult
    func record(_ changes: SaveChanges, tombstones: [ManagedObjectID: [DatabaseValue]], schema: SQLiteSchema, _ db: Database) throws -> Int64? {
        let total = changes.inserted.count + changes.updated.count + changes.deleted.count
        guard total > 0 else { return nil }
        let transaction = try reserveKeys(Self.transactionEntity, count: 1, db)
        let info = SQLiteHistory.processInfo
        try db.cachedStatement(sql: """
            INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP) \
            VALUES (?, ?, NULL, ?, ?, ?, ?, ?)
            """).execute(arguments: [transaction, Self.transactionEntity, try intern(changes.transactionAuthor, db),
                                     try intern(info.bundleID, db), try intern(changes.contextName, db),
                                     try intern(info.processID, db), Date().timeIntervalSinceReferenceDate])
        var key = try reserveKeys(Self.changeEntity, count: total, db)
        let tombstoneColumns = (0..<tombstoneColumnCount).map { ", ZTOMBSTONE\($0)" }.joined()
        let tombstonePlaceholders = String(repeating: ", ?", count: tombstoneColumnCount)
        let insert = try db.cachedStatement(sql: """
            INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(tombstoneColumns)) \
            VALUES (?, ?, NULL, ?, ?, ?, ?, ?\(tombstonePlaceholders))
            """)
        func write(_ type: PersistentHistoryChangeType, _ id: ManagedObjectID, columns: Data?, tombstone: [DatabaseValue]) throws {
            guard let pk = id.primaryKey, let number = schema.entityNumber(id.entity) else { return }
            var arguments: [DatabaseValue] = [key.databaseValue, Self.changeEntity.databaseValue, type.rawValue.databaseValue,
                                              number.databaseValue, pk.databaseValue, transaction.databaseValue,
                                              columns?.databaseValue ?? .null]
            for index in 0..<tombstoneColumnCount { arguments.append(index < tombstone.count ? tombstone[index] : .null) }
            try insert.execute(arguments: StatementArguments(arguments))
            key += 1
        }
        for row in changes.inserted { try write(.insert, row.objectID, columns: nil, tombstone: []) }
        for row in changes.updated {
            let changed = changes.changedProperties[row.objectID] ?? Array(row.rowValues.indices)
            try write(.update, row.objectID, columns: Self.columnBitmap(entity: row.objectID.entity, changed: changed), tombstone: [])
        }
        for (id, _) in changes.deleted { try write(.delete, id, columns: nil, tombstone: tombstones[id] ?? []) }
        return transaction
    }

    /// The properties of an entity in `ZCOLUMNS` bit order: Core Data's property
    /// order (the superentity's properties first, then the entity's own, sorted by
    /// name as the model compiler orders them), transient ones included. Verified
    /// on the Photos libraries' history (frameworks 973-1522).
    static func bitmapProperties(of entity: EntityDescription) -> [PropertyDescription] {
        let own = entity.properties.sorted { ManagedObjectModel.compareNames($0.name, $1.name) }
        guard let superentity = entity.superentity else { return own }
        return bitmapProperties(of: superentity) + own
    }

    /// `ZCOLUMNS`: `count / 8 + 1` bytes for `count` properties; bit 0 (the most
    /// significant bit of the first byte) names no property (Core Data sets it
    /// alone for an update that changed none, a "touch"), bit n + 1 is the n-th of
    /// ``bitmapProperties(of:)``.
    package static func columnBitmap(entity: EntityDescription, changed: [Int]) -> Data {
        let properties = bitmapProperties(of: entity)
        var bytes = [UInt8](repeating: 0, count: properties.count / 8 + 1)
        let names = Set(changed.compactMap { $0 < entity.allProperties.count ? entity.allProperties[$0].name : nil })
        for (index, property) in properties.enumerated() where names.contains(property.name) {
            let bit = index + 1
            bytes[bit / 8] |= UInt8(0x80) >> UInt8(bit % 8)
        }
        if names.isEmpty { bytes[0] |= 0x80 }
        return Data(bytes)
    }

    /// The properties a `ZCOLUMNS` bitmap names, or nil when it names a property
    /// the entity does not have (the bitmap is then unknown, not partial: history
    /// written under an older model version).
    package static func properties(inBitmap data: Data, entity: EntityDescription) -> [PropertyDescription]? {
        let properties = bitmapProperties(of: entity)
        var result: [PropertyDescription] = []
        for (byteIndex, byte) in data.enumerated() where byte != 0 {
            for bit in 0..<8 where byte & (UInt8(0x80) >> UInt8(bit)) != 0 {
                let index = byteIndex * 8 + bit - 1
                guard index >= 0 else { continue }
                guard index < properties.count else { return nil }
                result.append(properties[index])
            }
        }
        return result
    }

    /// This process's bundle identifier and name, as recorded in transactions.
    package static let processInfo: (bundleID: String, processID: String) = {
        let name = ProcessInfo.processInfo.processName
        return (Bundle.main.bundleIdentifier ?? name, name)
    }()
}

/// Who a store-level change (a batch request) is recorded as in persistent
/// history: the executing context's author and name, bound for the duration of
/// the request.
package struct HistoryAttribution: Sendable {
    var author: String?
    var contextName: String?

    @TaskLocal static var current: HistoryAttribution?

    /// `changes` with the current attribution when they carry none.
    package static func attributed(_ changes: SaveChanges) -> SaveChanges {
        guard changes.transactionAuthor == nil, changes.contextName == nil, let current else { return changes }
        var changes = changes
        changes.transactionAuthor = current.author
        changes.contextName = current.contextName
        return changes
    }
}
