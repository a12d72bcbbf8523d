import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

/// Persistent history in a PostgreSQL store (opened with
/// `NSPersistentHistoryTrackingKey`): Core Data's tables `ATRANSACTION`,
/// `ACHANGE` and `ATRANSACTIONSTRING` (entity numbers 16002, 16001 and 16003 in
/// `Z_PRIMARYKEY`), written in the transaction of each save, read by
/// ``OpenCoreData/PersistentHistoryChangeRequest`` exactly as on SQLite.
///
/// Transaction numbers come from the `Z_PRIMARYKEY` row of `ATRANSACTION`, which
/// a save locks until it commits: saves that record history commit in the order
/// of their numbers, so a token never misses a transaction committed later with
/// a smaller number. Tombstone values (attributes marked
/// `preservesValueInHistoryOnDeletion`) go in `BYTEA` columns, each value tagged
/// with its storage class (`i`, `r`, `s`, `b` and its bytes).
struct PostgreSQLHistory: Sendable {
    /// The tombstone attributes of each entity, as the SQLite store lays them out.
    let layout: SQLiteHistory

    init(schema: SQLiteSchema, model: ManagedObjectModel, configurationName: String?) {
        layout = SQLiteHistory(schema: schema, model: model, configurationName: configurationName)
    }

    // MARK: Tables

    /// Creates the history tables and their `Z_PRIMARYKEY` rows when missing, and
    /// the tombstone columns the model needs.
    func prepareTables(_ session: PostgreSQLSession) throws {
        let tombstones = (0..<layout.tombstoneColumnCount).map { ", ZTOMBSTONE\($0) BYTEA" }.joined()
        try session.execute("""
            CREATE TABLE IF NOT EXISTS ACHANGE (Z_PK BIGINT PRIMARY KEY, Z_ENT BIGINT, Z_OPT BIGINT, ZCHANGETYPE BIGINT, \
            ZENTITY BIGINT, ZENTITYPK BIGINT, ZTRANSACTIONID BIGINT, ZCOLUMNS BYTEA\(tombstones))
            """)
        for index in 0..<layout.tombstoneColumnCount {
            try session.execute("ALTER TABLE ACHANGE ADD COLUMN IF NOT EXISTS ZTOMBSTONE\(index) BYTEA")
        }
        try session.execute("CREATE INDEX IF NOT EXISTS ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)")
        try session.execute("""
            CREATE TABLE IF NOT EXISTS ATRANSACTION (Z_PK BIGINT PRIMARY KEY, Z_ENT BIGINT, Z_OPT BIGINT, ZAUTHORTS BIGINT, \
            ZBUNDLEIDTS BIGINT, ZCONTEXTNAMETS BIGINT, ZPROCESSIDTS BIGINT, ZTIMESTAMP DOUBLE PRECISION, ZAUTHOR TEXT, \
            ZBUNDLEID TEXT, ZCONTEXTNAME TEXT, ZPROCESSID TEXT, ZQUERYGEN BYTEA)
            """)
        try session.execute("CREATE INDEX IF NOT EXISTS ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS)")
        try session.execute("CREATE INDEX IF NOT EXISTS Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP)")
        try session.execute("CREATE TABLE IF NOT EXISTS ATRANSACTIONSTRING (Z_PK BIGINT PRIMARY KEY, Z_ENT BIGINT, Z_OPT BIGINT, ZNAME TEXT)")
        try session.execute("CREATE UNIQUE INDEX IF NOT EXISTS Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME)")
        for (number, name) in [(SQLiteHistory.changeEntity, "CHANGE"), (SQLiteHistory.transactionEntity, "TRANSACTION"),
                               (SQLiteHistory.stringEntity, "TRANSACTIONSTRING")] {
            try session.execute("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) SELECT ?, ?, 0, 0 WHERE NOT EXISTS (SELECT 1 FROM Z_PRIMARYKEY WHERE Z_ENT = ?)",
                                [Int64(number).databaseValue, name.databaseValue, Int64(number).databaseValue])
        }
    }

    /// Whether the schema has the history tables.
    static func hasTables(_ session: PostgreSQLSession, schemaName: String) throws -> Bool {
        let count = try session.query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name IN ('atransaction', 'achange', 'atransactionstring')",
                                      [schemaName.databaseValue]).first?.int64(0) ?? 0
        return count == 3
    }

    /// Reserves `count` keys of a history entity (locking its row until the
    /// transaction ends); returns the first.
    private func reserveKeys(_ entity: Int, count: Int, _ session: PostgreSQLSession) throws -> Int64 {
        let max = try session.query("UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + ? WHERE Z_ENT = ? RETURNING Z_MAX",
                                    [Int64(count).databaseValue, Int64(entity).databaseValue]).first?.int64(0) ?? Int64(count)
        return max - Int64(count) + 1
    }

    /// The `ATRANSACTIONSTRING` key of `string`, interning it when new (another
    /// server interning it at the same moment keeps its row: the name is unique).
    private func intern(_ string: String?, _ session: PostgreSQLSession) throws -> Int64? {
        guard let string, !string.isEmpty else { return nil }
        let select = "SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?"
        if let row = try session.query(select, [string.databaseValue]).first { return row.int64(0) }
        let key = try reserveKeys(SQLiteHistory.stringEntity, count: 1, session)
        try session.execute("INSERT INTO ATRANSACTIONSTRING (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, NULL, ?) ON CONFLICT (ZNAME) DO NOTHING",
                            [key.databaseValue, Int64(SQLiteHistory.stringEntity).databaseValue, string.databaseValue])
        return try session.query(select, [string.databaseValue]).first?.int64(0) ?? key
    }

    // MARK: Recording

    /// The stored values of the tombstone attributes of objects about to be
    /// deleted, read before the rows go (one statement per entity).
    func tombstones(of deleted: [(ManagedObjectID, Int64)], store: PostgreSQLStore,
                    _ session: PostgreSQLSession) throws -> [ManagedObjectID: [DatabaseValue]] {
        var byEntity: [ObjectIdentifier: [ManagedObjectID]] = [:]
        for (id, _) in deleted where layout.tombstoneAttributes[id.entity.name] != nil && id.primaryKey != nil {
            byEntity[ObjectIdentifier(id.entity), default: []].append(id)
        }
        var result: [ManagedObjectID: [DatabaseValue]] = [:]
        for ids in byEntity.values {
            guard let entity = ids.first?.entity, let kept = layout.tombstoneAttributes[entity.name],
                  let table = store.schema.table(for: entity) else { continue }
            let columns = kept.map { ", " + SQLiteIdentifier.quoted($0.column) }.joined()
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(ids.compactMap(\.primaryKey))
            var values: [Int64: [DatabaseValue]] = [:]
            for row in try session.query(numbered: "SELECT Z_PK\(columns) FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK = ANY($1::int8[])",
                                         bindings: bindings) {
                let cells = row.makeRandomAccess()
                values[PostgreSQLValues.int64(cells[0])] = (1...kept.count).map { PostgreSQLValues.databaseValue(cells[$0]) }
            }
            for id in ids { if let pk = id.primaryKey, let row = values[pk] { result[id] = row } }
        }
        return result
    }

    /// Writes one transaction and its changes for a save; returns its number, or
    /// nil when the save changed nothing.
    func record(_ changes: SaveChanges, tombstones: [ManagedObjectID: [DatabaseValue]], store: PostgreSQLStore,
                _ session: PostgreSQLSession) throws -> Int64? {
        let total = changes.inserted.count + changes.updated.count + changes.deleted.count
        guard total > 0 else { return nil }
        let transaction = try reserveKeys(SQLiteHistory.transactionEntity, count: 1, session)
        let info = SQLiteHistory.processInfo
        try session.execute("""
            INSERT INTO ATRANSACTION (Z_PK, Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP) \
            VALUES (?, ?, NULL, ?, ?, ?, ?, ?)
            """, [transaction.databaseValue, Int64(SQLiteHistory.transactionEntity).databaseValue,
                  try intern(changes.transactionAuthor, session)?.databaseValue ?? .null,
                  try intern(info.bundleID, session)?.databaseValue ?? .null,
                  try intern(changes.contextName, session)?.databaseValue ?? .null,
                  try intern(info.processID, session)?.databaseValue ?? .null,
                  Date().timeIntervalSinceReferenceDate.databaseValue])
        let first = try reserveKeys(SQLiteHistory.changeEntity, count: total, session)
        // One column array each, one statement for every change.
        var types: [Int64] = [], entities: [Int64] = [], keys: [Int64] = [], bitmaps: [DatabaseValue] = []
        var tombstoneColumns = Array(repeating: [DatabaseValue](), count: layout.tombstoneColumnCount)
        func add(_ type: PersistentHistoryChangeType, _ id: ManagedObjectID, bitmap: Data?, tombstone: [DatabaseValue]) {
            guard let pk = id.primaryKey, let number = store.schema.entityNumber(id.entity) else { return }
            types.append(Int64(type.rawValue))
            entities.append(Int64(number))
            keys.append(pk)
            bitmaps.append(bitmap?.databaseValue ?? .null)
            for index in tombstoneColumns.indices {
                tombstoneColumns[index].append(index < tombstone.count ? Self.tombstoneBytes(tombstone[index]) : .null)
            }
        }
        for row in changes.inserted { add(.insert, row.objectID, bitmap: nil, tombstone: []) }
        for row in changes.updated {
            let changed = changes.changedProperties[row.objectID] ?? Array(row.values.indices)
            add(.update, row.objectID, bitmap: SQLiteHistory.columnBitmap(entity: row.objectID.entity, changed: changed), tombstone: [])
        }
        for (id, _) in changes.deleted { add(.delete, id, bitmap: nil, tombstone: tombstones[id] ?? []) }
        guard !keys.isEmpty else { return transaction }
        var bindings = PostgresBindings(capacity: 4 + tombstoneColumns.count)
        bindings.append(Array(first..<(first + Int64(keys.count))))
        bindings.append(types)
        bindings.append(entities)
        bindings.append(keys)
        for column in [bitmaps] + tombstoneColumns {
            guard let array = PostgreSQLBinaryArray(column: column, type: "BYTEA") else {
                throw CoreDataError(.persistentStoreSave, "A history column could not be written")
            }
            bindings.append(array)
        }
        let tombstoneNames = tombstoneColumns.indices.map { ", ZTOMBSTONE\($0)" }.joined()
        let tombstoneAliases = tombstoneColumns.indices.map { ", s\($0)" }.joined()
        let tombstoneParameters = tombstoneColumns.indices.map { ", $\($0 + 6)::bytea[]" }.joined()
        try session.execute(numbered: """
            INSERT INTO ACHANGE (Z_PK, Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(tombstoneNames)) \
            SELECT pk, \(SQLiteHistory.changeEntity), NULL, kind, entity, key, \(transaction), bitmap\(tombstoneAliases) \
            FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::bytea[]\(tombstoneParameters)) \
            AS v(pk, kind, entity, key, bitmap\(tombstoneAliases))
            """, bindings: bindings)
        return transaction
    }

    /// A tombstone value as bytes: its storage class's tag, then the value.
    static func tombstoneBytes(_ value: DatabaseValue) -> DatabaseValue {
        var bytes = Data()
        switch value.storage {
        case .null: return .null
        case .int64(let int):
            bytes.append(UInt8(ascii: "i"))
            withUnsafeBytes(of: int.bigEndian) { bytes.append(contentsOf: $0) }
        case .double(let double):
            bytes.append(UInt8(ascii: "r"))
            withUnsafeBytes(of: double.bitPattern.bigEndian) { bytes.append(contentsOf: $0) }
        case .string(let text):
            bytes.append(UInt8(ascii: "s"))
            bytes.append(contentsOf: Array(text.utf8))
        case .blob(let data):
            bytes.append(UInt8(ascii: "b"))
            bytes.append(data)
        }
        return bytes.databaseValue
    }

    /// The value of tombstone bytes (NULL for bytes of no known form).
    static func tombstoneValue(_ bytes: Data) -> DatabaseValue {
        guard let tag = bytes.first else { return .null }
        let body = bytes.dropFirst()
        func integer() -> UInt64? {
            guard body.count == 8 else { return nil }
            return body.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        switch tag {
        case UInt8(ascii: "i"): return integer().map { Int64(bitPattern: $0).databaseValue } ?? .null
        case UInt8(ascii: "r"): return integer().map { Double(bitPattern: $0).databaseValue } ?? .null
        case UInt8(ascii: "s"): return String(decoding: body, as: UTF8.self).databaseValue
        case UInt8(ascii: "b"): return Data(body).databaseValue
        default: return .null
        }
    }
}

extension PostgreSQLStore: HistoryTrackingStore {
    /// Whether the store records persistent history (opened with
    /// `NSPersistentHistoryTrackingKey`).
    public var isTrackingHistory: Bool { history != nil }

    private func requireHistory() throws -> PostgreSQLHistory {
        guard let history else {
            throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                "No history tracking option detected on the PostgreSQL store \(identifier): open it with NSPersistentHistoryTrackingKey",
                                url: url)
        }
        return history
    }

    package func currentHistoryToken() throws -> PersistentHistoryToken {
        _ = try requireHistory()
        let number = try withSession("reading the history token") { session in
            try session.query("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [Int64(SQLiteHistory.transactionEntity).databaseValue])
                .first?.int64(0) ?? 0
        }
        return PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: number)
    }

    package func fetchHistory(_ boundary: PersistentHistoryChangeRequest.Boundary, withChanges: Bool) throws -> [PersistentHistoryTransaction] {
        let history = try requireHistory()
        let (condition, arguments) = boundary.sqlCondition(storeIdentifier: identifier, deleting: false)
        return try withSession("fetching history") { session in
            // Read in one snapshot: the transactions and their changes agree.
            try session.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { _ = try? session.execute("COMMIT") }
            if case .token(let token?) = boundary, let number = token.transactionNumber(forStore: identifier) {
                let oldest = try session.query("SELECT MIN(Z_PK) FROM ATRANSACTION").first.flatMap { row -> Int64? in
                    let cell = row.makeRandomAccess()[0]
                    return cell.bytes == nil ? nil : PostgreSQLValues.int64(cell)
                }
                let purgedThrough = try oldest.map { $0 - 1 }
                    ?? session.query("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", [Int64(SQLiteHistory.transactionEntity).databaseValue])
                        .first?.int64(0) ?? 0
                if number < purgedThrough {
                    throw CoreDataError(.persistentHistoryTokenExpired,
                                        "The history token \(token) has expired: history through transaction \(purgedThrough) of store \(identifier) was deleted",
                                        url: url)
                }
            }
            var transactions: [PersistentHistoryTransaction] = []
            let rows = try session.query("""
                SELECT t.Z_PK, t.ZTIMESTAMP, COALESCE(a.ZNAME, t.ZAUTHOR), COALESCE(b.ZNAME, t.ZBUNDLEID), \
                COALESCE(c.ZNAME, t.ZCONTEXTNAME), COALESCE(p.ZNAME, t.ZPROCESSID) FROM ATRANSACTION t \
                LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS \
                LEFT JOIN ATRANSACTIONSTRING c ON c.Z_PK = t.ZCONTEXTNAMETS LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS \
                WHERE \(condition) ORDER BY t.Z_PK
                """, arguments)
            func text(_ cell: PostgresCell) -> String? {
                if case .string(let value) = PostgreSQLValues.databaseValue(cell).storage { return value }
                return nil
            }
            for row in rows {
                let cells = row.makeRandomAccess()
                let number = PostgreSQLValues.int64(cells[0])
                let seconds: Double
                if case .double(let value) = PostgreSQLValues.databaseValue(cells[1]).storage { seconds = value } else { seconds = 0 }
                transactions.append(PersistentHistoryTransaction(
                    timestamp: Date(timeIntervalSinceReferenceDate: seconds),
                    token: PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: number),
                    transactionNumber: number, author: text(cells[2]), contextName: text(cells[4]), storeID: identifier,
                    bundleID: text(cells[3]) ?? "", processID: text(cells[5]) ?? "", historyChanges: nil))
            }
            guard withChanges, !transactions.isEmpty else { return transactions }
            let headers = Dictionary(uniqueKeysWithValues: transactions.map { ($0.transactionNumber, $0) })
            var changes: [Int64: [PersistentHistoryChange]] = [:]
            let tombstoneCount = history.layout.tombstoneColumnCount
            let tombstones = (0..<tombstoneCount).map { ", c.ZTOMBSTONE\($0)" }.joined()
            for row in try session.query("""
                SELECT c.Z_PK, c.ZCHANGETYPE, c.ZENTITY, c.ZENTITYPK, c.ZTRANSACTIONID, c.ZCOLUMNS\(tombstones) \
                FROM ACHANGE c JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID WHERE \(condition) ORDER BY c.Z_PK
                """, arguments) {
                let cells = row.makeRandomAccess()
                let transaction = PostgreSQLValues.int64(cells[4])
                guard let type = PersistentHistoryChangeType(rawValue: Int(PostgreSQLValues.int64(cells[1]))),
                      let entity = entity(forNumber: Int(PostgreSQLValues.int64(cells[2]))) else { continue }
                var updated: [PropertyDescription]?
                if type == .update, case .blob(let bitmap) = PostgreSQLValues.databaseValue(cells[5]).storage {
                    updated = SQLiteHistory.properties(inBitmap: bitmap, entity: entity)
                }
                var tombstone: [String: AttributeValue]?
                if type == .delete {
                    var values: [String: AttributeValue] = [:]
                    for (index, kept) in (history.layout.tombstoneAttributes[entity.name] ?? []).enumerated() where index < tombstoneCount {
                        guard case .blob(let bytes) = PostgreSQLValues.databaseValue(cells[6 + index]).storage else { continue }
                        let value = PostgreSQLHistory.tombstoneValue(bytes)
                        if !value.isNull { values[kept.attribute.name] = try decode(value, for: kept.attribute) }
                    }
                    tombstone = values
                }
                changes[transaction, default: []].append(PersistentHistoryChange(
                    historyChangeID: PostgreSQLValues.int64(cells[0]),
                    changedObjectID: ManagedObjectID(entity: entity, in: idScopes, primaryKey: PostgreSQLValues.int64(cells[3])),
                    changeType: type, tombstone: tombstone, updatedProperties: updated, transaction: headers[transaction]?.withoutChanges))
            }
            return transactions.map { $0.with(changes: changes[$0.transactionNumber] ?? []) }
        }
    }

    package func deleteHistory(_ boundary: PersistentHistoryChangeRequest.Boundary) throws -> Int {
        _ = try requireHistory()
        if isReadOnly { throw CoreDataError(.persistentStoreSave, "The PostgreSQL store \(identifier) is read-only", url: url) }
        let (condition, arguments) = boundary.sqlCondition(storeIdentifier: identifier, deleting: true)
        return try withSession("deleting history", code: .persistentStoreSave) { session in
            try session.transaction {
                try session.execute("DELETE FROM ACHANGE WHERE ZTRANSACTIONID IN (SELECT t.Z_PK FROM ATRANSACTION t WHERE \(condition))", arguments)
                return try session.execute("DELETE FROM ATRANSACTION t WHERE \(condition)", arguments)
            }
        }
    }
}
