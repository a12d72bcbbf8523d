import Foundation
import GRDB
import OpenCoreDataPredicates

extension SQLiteStore: HistoryTrackingStore {
    /// Whether the store records persistent history (opened with
    /// `NSPersistentHistoryTrackingKey`).
    public var isTrackingHistory: Bool { history != nil }

    func requireHistory() throws -> SQLiteHistory {
        guard let history else {
            throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                "No history tracking option detected on store \(url?.path ?? identifier): open it with NSPersistentHistoryTrackingKey",
                                url: url)
        }
        return history
    }

    /// The token of the store's last transaction (0 when it has none yet).
    package func currentHistoryToken() throws -> PersistentHistoryToken {
        _ = try requireHistory()
        let number = try read("reading the history token") { db in
            try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", arguments: [SQLiteHistory.transactionEntity]) ?? 0
        }
        return PersistentHistoryToken(storeIdentifier: identifier, transactionNumber: number)
    }

    /// Fetches the transactions after the request's boundary, with their changes
    /// when `withChanges`.
    package func fetchHistory(_ boundary: PersistentHistoryChangeRequest.Boundary, withChanges: Bool) throws -> [PersistentHistoryTransaction] {
        let history = try requireHistory()
        let (condition, arguments) = boundary.sqlCondition(storeIdentifier: identifier, deleting: false)
        return try read("fetching history") { db in
            guard try SQLiteHistory.hasTables(db) else {
                throw CoreDataError(.persistentStoreOpen, "The store \(self.url?.path ?? self.identifier) has no history tables (ATRANSACTION)", url: self.url)
            }
            if case .token(let token?) = boundary, let number = token.transactionNumber(forStore: self.identifier) {
                let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(Z_PK) FROM ATRANSACTION")
                let purgedThrough = try oldest.map { $0 - 1 }
                    ?? Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", arguments: [SQLiteHistory.transactionEntity]) ?? 0
                if number < purgedThrough {
                    throw CoreDataError(.persistentHistoryTokenExpired,
                                        "The history token \(token) has expired: history through transaction \(purgedThrough) of store \(self.identifier) was deleted",
                                        url: self.url)
                }
            }
            var transactions: [PersistentHistoryTransaction] = []
            let rows = try Row.fetchAll(db, sql: """
                SELECT t.Z_PK, t.ZTIMESTAMP, COALESCE(a.ZNAME, t.ZAUTHOR), COALESCE(b.ZNAME, t.ZBUNDLEID), \
                COALESCE(c.ZNAME, t.ZCONTEXTNAME), COALESCE(p.ZNAME, t.ZPROCESSID) FROM ATRANSACTION t \
                LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS \
                LEFT JOIN ATRANSACTIONSTRING c ON c.Z_PK = t.ZCONTEXTNAMETS LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS \
                WHERE \(condition) ORDER BY t.Z_PK
                """, arguments: StatementArguments(arguments))
            for row in rows {
                let number: Int64 = row[0]
                transactions.append(PersistentHistoryTransaction(
                    timestamp: Date(timeIntervalSinceReferenceDate: row[1] ?? 0),
                    token: PersistentHistoryToken(storeIdentifier: self.identifier, transactionNumber: number),
                    transactionNumber: number, author: row[2], contextName: row[4], storeID: self.identifier,
                    bundleID: row[3] ?? "", processID: row[5] ?? "", changes: nil))
            }
            guard withChanges, !transactions.isEmpty else { return transactions }
            let headers = Dictionary(uniqueKeysWithValues: transactions.map { ($0.transactionNumber, $0) })
            var changes: [Int64: [PersistentHistoryChange]] = [:]
            // A store opened read-only may have fewer tombstone columns than the model needs.
            let available = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pragma_table_info('ACHANGE') WHERE name LIKE 'ZTOMBSTONE%'") ?? 0
            let tombstoneCount = min(history.tombstoneColumnCount, available)
            let tombstones = (0..<tombstoneCount).map { ", c.ZTOMBSTONE\($0)" }.joined()
            let changeRows = try Row.fetchCursor(db, sql: """
                SELECT c.Z_PK, c.ZCHANGETYPE, c.ZENTITY, c.ZENTITYPK, c.ZTRANSACTIONID, c.ZCOLUMNS\(tombstones) \
                FROM ACHANGE c JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID WHERE \(condition) ORDER BY c.Z_PK
                """, arguments: StatementArguments(arguments))
            while let row = try changeRows.next() {
                guard let change = try self.change(row, history: history, tombstoneCount: tombstoneCount,
                                                   transaction: headers[row[4]]) else { continue }
                changes[row[4], default: []].append(change)
            }
            return transactions.map { $0.with(changes: changes[$0.transactionNumber] ?? []) }
        }
    }

    /// One `ACHANGE` row as a change; nil for entities the model does not have.
    private func change(_ row: Row, history: SQLiteHistory, tombstoneCount: Int,
                        transaction: PersistentHistoryTransaction?) throws -> PersistentHistoryChange? {
        guard let type = (row[1] as Int?).flatMap(PersistentHistoryChangeType.init(rawValue:)),
              let number: Int = row[2], let entity = entity(forNumber: number), let pk: Int64 = row[3] else { return nil }
        var updated: [PropertyDescription]?
        if type == .update, let bitmap: Data = row[5] { updated = SQLiteHistory.properties(inBitmap: bitmap, entity: entity) }
        var tombstone: [String: AttributeValue]?
        if type == .delete {
            var values: [String: AttributeValue] = [:]
            for (index, kept) in (history.tombstoneAttributes[entity.name] ?? []).enumerated() where index < tombstoneCount {
                let value = row[6 + index] as DatabaseValue
                if !value.isNull { values[kept.attribute.name] = try decode(value, for: kept.attribute, entity: entity) }
            }
            tombstone = values
        }
        return PersistentHistoryChange(changeID: row[0], changedObjectID: ManagedObjectID(entity: entity, in: idScopes, primaryKey: pk),
                                       changeType: type, tombstone: tombstone, updatedProperties: updated,
                                       transaction: transaction?.withoutChanges)
    }

    /// Deletes the transactions (and their changes) before the boundary; returns
    /// how many transactions went. Interned strings stay, as in Core Data.
    package func deleteHistory(_ boundary: PersistentHistoryChangeRequest.Boundary) throws -> Int {
        _ = try requireHistory()
        if isReadOnly { throw CoreDataError(.persistentStoreSave, "The store \(url?.path ?? identifier) is read-only", url: url) }
        let (condition, arguments) = boundary.sqlCondition(storeIdentifier: identifier, deleting: true)
        return try write("deleting history") { db in
            try db.execute(sql: "DELETE FROM ACHANGE WHERE ZTRANSACTIONID IN (SELECT t.Z_PK FROM ATRANSACTION t WHERE \(condition))",
                           arguments: StatementArguments(arguments))
            try db.execute(sql: "DELETE FROM ATRANSACTION WHERE Z_PK IN (SELECT t.Z_PK FROM ATRANSACTION t WHERE \(condition))",
                           arguments: StatementArguments(arguments))
            return db.changesCount
        }
    }
}
