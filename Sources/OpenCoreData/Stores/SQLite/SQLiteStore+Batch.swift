import Foundation
import GRDB
import GRDBSQLite
import OpenCoreDataPredicates

extension SQLiteStore {
    /// Batch requests in SQL where it can say them: an update is one `UPDATE`
    /// (values computed by SQLite, `Z_OPT` bumped), a delete (by predicate or by
    /// object IDs) whose delete rules are only nullify and no-action is a few
    /// `DELETE`/`UPDATE` statements over the matching keys. Inserts, cascade or
    /// deny deletes, and updates whose values SQL cannot compute exactly as the
    /// evaluator does run over rows
    /// (``PersistentStore/executeOverRows(_:)``), still in one transaction; so do
    /// all batch requests on a store with persistent history tracking, so that
    /// their changes are recorded in the history like any save's.
    public func execute(_ request: StoreBatchRequest) throws -> [ManagedObjectID] {
        try execute(request, resultType: .objectIDs).objectIDs ?? []
    }

    /// A batch request run as ``execute(_:)`` runs it; the `UPDATE` and `DELETE`
    /// in SQL read the IDs of the rows they change only for
    /// ``BatchRequestResultType/objectIDs``, and count them with
    /// `sqlite3_changes` otherwise.
    public func execute(_ request: StoreBatchRequest, resultType: BatchRequestResultType) throws -> PersistentStoreResult {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The store \(url?.path ?? identifier) is read-only", url: url)
        }
        // With persistent history tracking, batch changes are recorded like any
        // save: they go through save(_:).
        switch history == nil ? request : nil {
        case let .update(fetch, values):
            if let result = try sqlUpdate(fetch, values, resultType: resultType) { return result }
        case .delete(let fetch):
            if let result = try sqlDelete(.fetch(fetch), resultType: resultType) { return result }
        case .deleteObjects(let ids):
            if let result = try sqlDelete(.objects(ids), resultType: resultType) { return result }
        default:
            break
        }
        return PersistentStoreResult(resultType, try executeOverRows(request))
    }

    /// The result of an SQL batch statement: the IDs read before it ran, or the
    /// number of rows it changed.
    private static func result(_ resultType: BatchRequestResultType, ids: [ManagedObjectID]?, changes: Int) -> PersistentStoreResult {
        if let ids { return PersistentStoreResult(resultType, ids) }
        return PersistentStoreResult(resultType, count: changes)
    }

    /// `SELECT t0.Z_PK FROM ... WHERE ...` for the rows of a fetch.
    private func keySelect(_ fetch: StoreFetch) throws -> SQLFragment {
        try translator.keySelect(for: fetch).select
    }

    private func matchingIDs(_ fetch: StoreFetch, _ db: Database) throws -> [ManagedObjectID] {
        var unsorted = fetch
        unsorted.sortDescriptors = []
        let statement = try translator.selectStatement(for: unsorted, properties: [])
        try statement.prepare(db)
        var ids: [ManagedObjectID] = []
        let prepared = try db.makeStatement(sql: statement.sql)
        // Keys and entity numbers straight from the C API; the entity looked up
        // once per run of rows of the same entity.
        var last: (number: Int64, scope: ManagedObjectID.Scope?) = (-1, nil)
        try prepared.forEachRow(arguments: statement.statementArguments) { sqliteStatement in
            guard sqlite3_column_type(sqliteStatement, 1) != SQLITE_NULL else { return }
            let number = sqlite3_column_int64(sqliteStatement, 1)
            if number != last.number { last = (number, entity(forNumber: Int(number)).map(idScopes.scope(for:))) }
            guard let scope = last.scope else { return }
            ids.append(ManagedObjectID(scope: scope, primaryKey: sqlite3_column_int64(sqliteStatement, 0)))
        }
        return ids
    }

    // MARK: Update

    private func sqlUpdate(_ fetch: StoreFetch, _ values: [Int: CoreExpression], resultType: BatchRequestResultType) throws -> PersistentStoreResult? {
        let entity = fetch.entity
        guard let table = schema.table(for: entity),
              let update = try translator.batchUpdate(of: entity, table: table, values: values, encode: { try self.encode($0, for: $1) }) else {
            return nil
        }
        let keys = try keySelect(fetch)
        return try write("batch updating \(entity.name)") { db -> PersistentStoreResult in
            // The IDs only when they are asked for (reading a large batch's IDs costs
            // more than the UPDATE).
            let ids = resultType == .objectIDs ? try self.matchingIDs(fetch, db) : nil
            if ids?.isEmpty == true { return PersistentStoreResult(resultType, []) }
            var sql = SQLFragment("UPDATE \(SQLiteIdentifier.quoted(table)) SET ") + SQLFragment.joined(update.assignments, separator: ", ")
            sql += " , Z_OPT = Z_OPT + 1 WHERE Z_PK IN (" + keys + ")"
            try db.execute(sql: sql.text, arguments: StatementArguments(sql.arguments))
            let changes = db.changesCount
            // Values out of an integer type's range fail the request, as in memory.
            for (column, range) in update.checkedRanges {
                let check = "SELECT \(column) FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK IN (" + keys.text
                    + ") AND (\(column) < \(range.lowerBound) OR \(column) > \(range.upperBound)) LIMIT 1"
                if let bad = try DatabaseValue.fetchOne(db, sql: check, arguments: StatementArguments(keys.arguments)), !bad.isNull {
                    throw CoreDataError(.managedObjectValidation, "\(entity.name).\(column): \(bad) is out of the attribute's range",
                                        entityName: entity.name, valueDescription: "\(bad)")
                }
            }
            return SQLiteStore.result(resultType, ids: ids, changes: changes)
        }
    }

    // MARK: Delete

    /// A delete in SQL when every relationship of the deleted entities is nullify
    /// or no-action: nullified inverse to-ones and join-table rows are cleared with
    /// one statement each, then the rows go. The keys of the rows are put in a
    /// temporary table first, so that every statement works on the same rows (a
    /// nullification may change what the predicate matches); a delete with nothing
    /// to clear is a single `DELETE` over the fetch's condition (without one, of
    /// the whole table: SQLite then drops the rows and index entries wholesale).
    /// A delete by object IDs puts their keys in the temporary table one by one,
    /// with one prepared statement, instead of reading each row.
    private func sqlDelete(_ target: DeleteTarget, resultType: BatchRequestResultType) throws -> PersistentStoreResult? {
        let entities: [EntityDescription]
        let rootEntity: EntityDescription
        switch target {
        case .fetch(let fetch):
            entities = fetch.includesSubentities ? fetch.entity.selfAndDescendants : [fetch.entity]
            rootEntity = fetch.entity
        case .objects(let ids):
            guard let first = ids.first else { return PersistentStoreResult(resultType, []) }
            // One table: the IDs' entities share a root entity (and rows have keys).
            guard ids.allSatisfy({ $0.entity.rootEntity === first.entity.rootEntity && $0.primaryKey != nil }) else { return nil }
            var distinct: [EntityDescription] = []
            for id in ids where !distinct.contains(where: { $0 === id.entity }) { distinct.append(id.entity) }
            entities = distinct
            rootEntity = first.entity
        }
        // Statements over the keys in temp.ocd_batch_keys, with the mandatory
        // inverse a nullification would break and the table and column to probe.
        var statements: [(sql: String, mandatory: (RelationshipDescription, String)?)] = []
        for entity in entities {
            for property in entity.allProperties {
                guard let relationship = property as? RelationshipDescription else { continue }
                switch relationship.deleteRule {
                case .cascade, .deny:
                    return nil
                case .noAction:
                    continue
                case .nullify:
                    break
                }
                if case .joinTable(let join)? = schema.storage(for: relationship, in: entity) {
                    let sql = "DELETE FROM \(SQLiteIdentifier.quoted(join.tableName)) WHERE \(SQLiteIdentifier.quoted(join.sourceColumn)) IN (SELECT pk FROM temp.ocd_batch_keys)"
                    if !statements.contains(where: { $0.sql == sql }) { statements.append((sql, nil)) }
                    continue
                }
                guard let inverse = relationship.inverseRelationship, !inverse.isToMany,
                      let destination = relationship.destinationEntity else { continue }
                for owner in destination.selfAndDescendants {
                    guard case .toOne(let column, let entityColumn, let orderColumn)? = schema.storage(for: inverse, in: owner),
                          let table = schema.table(for: owner) else { continue }
                    var sets = "\(SQLiteIdentifier.quoted(column)) = NULL"
                    for extra in [entityColumn, orderColumn].compactMap({ $0 }) { sets += ", \(SQLiteIdentifier.quoted(extra)) = NULL" }
                    let matching = "\(SQLiteIdentifier.quoted(table)) WHERE \(SQLiteIdentifier.quoted(column)) IN (SELECT pk FROM temp.ocd_batch_keys)"
                    let sql = "UPDATE \(SQLiteIdentifier.quoted(table)) SET \(sets), Z_OPT = Z_OPT + 1 WHERE \(SQLiteIdentifier.quoted(column)) IN (SELECT pk FROM temp.ocd_batch_keys)"
                    if !statements.contains(where: { $0.sql == sql }) {
                        statements.append((sql, inverse.isOptional ? nil : (inverse, "SELECT 1 FROM " + matching + " LIMIT 1")))
                    }
                }
            }
        }
        guard let table = schema.table(for: rootEntity) else { return nil }
        if case .objects(let ids) = target {
            guard entities.allSatisfy({ schema.table(for: $0) == table }) else { return nil }
            return try write("batch deleting \(rootEntity.name) objects") { db -> PersistentStoreResult in
                try self.fillBatchKeys(ids.compactMap(\.primaryKey), db)
                defer { try? db.execute(sql: "DELETE FROM temp.ocd_batch_keys") }
                // The objects that have a row, each once, in the order given.
                var deleted: [ManagedObjectID]?
                if resultType == .objectIDs {
                    let existing = Set(try Int64.fetchAll(db, sql: "SELECT Z_PK FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK IN (SELECT pk FROM temp.ocd_batch_keys)"))
                    var seen = Set<Int64>()
                    deleted = ids.filter { id in id.primaryKey.map { existing.contains($0) && seen.insert($0).inserted } ?? false }
                }
                try self.runDeleteStatements(statements, db)
                try db.execute(sql: "DELETE FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK IN (SELECT pk FROM temp.ocd_batch_keys)")
                return SQLiteStore.result(resultType, ids: deleted, changes: db.changesCount)
            }
        }
        guard case .fetch(let fetch) = target else { return nil }
        let (keys, hasCondition) = try translator.keySelect(for: fetch)
        return try write("batch deleting \(fetch.entity.name)") { db -> PersistentStoreResult in
            // The IDs only when they are asked for: reading a large batch's IDs costs
            // more than deleting the rows.
            let ids = resultType == .objectIDs ? try self.matchingIDs(fetch, db) : nil
            if ids?.isEmpty == true { return PersistentStoreResult(resultType, []) }
            if statements.isEmpty {
                if hasCondition {
                    try db.execute(sql: "DELETE FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK IN (" + keys.text + ")",
                                   arguments: StatementArguments(keys.arguments))
                } else {
                    try db.execute(sql: "DELETE FROM \(SQLiteIdentifier.quoted(table))")
                }
                return SQLiteStore.result(resultType, ids: ids, changes: db.changesCount)
            }
            try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS ocd_batch_keys (pk INTEGER PRIMARY KEY)")
            try db.execute(sql: "DELETE FROM temp.ocd_batch_keys")
            defer { try? db.execute(sql: "DELETE FROM temp.ocd_batch_keys") }
            try db.execute(sql: "INSERT INTO temp.ocd_batch_keys (pk) " + keys.text, arguments: StatementArguments(keys.arguments))
            try self.runDeleteStatements(statements, db)
            try db.execute(sql: "DELETE FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK IN (SELECT pk FROM temp.ocd_batch_keys)")
            return SQLiteStore.result(resultType, ids: ids, changes: db.changesCount)
        }
    }

    /// What a batch delete deletes: the rows of a fetch, or of objects.
    private enum DeleteTarget {
        case fetch(StoreFetch)
        case objects([ManagedObjectID])
    }

    /// Puts `keys` in the (emptied) temporary table of a batch delete's keys, with
    /// one prepared statement bound through the C API.
    private func fillBatchKeys(_ keys: [Int64], _ db: Database) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS ocd_batch_keys (pk INTEGER PRIMARY KEY)")
        try db.execute(sql: "DELETE FROM temp.ocd_batch_keys")
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.ocd_batch_keys (pk) VALUES (?)")
        let statement = insert.sqliteStatement
        for key in keys {
            sqlite3_reset(statement)
            sqlite3_bind_int64(statement, 1, key)
            let code = sqlite3_step(statement)
            guard code == SQLITE_DONE else {
                sqlite3_reset(statement)
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                                    sql: "INSERT OR IGNORE INTO temp.ocd_batch_keys (pk) VALUES (?)")
            }
        }
        sqlite3_reset(statement)
    }

    /// The nullifications and join-table deletions of a batch delete, over the keys
    /// in the temporary table; a mandatory inverse to-one that would be nullified
    /// fails the delete (134030).
    private func runDeleteStatements(_ statements: [(sql: String, mandatory: (RelationshipDescription, String)?)], _ db: Database) throws {
        for (statement, mandatory) in statements {
            if let (mandatory, probe) = mandatory {
                // A mandatory inverse to-one cannot be nullified.
                if try Bool.fetchOne(db, sql: probe) == true {
                    throw CoreDataError(.persistentStoreSave,
                                        "Batch delete failed due to mandatory OTO nullify inverse on \(mandatory.entity?.name ?? "?")/\(mandatory.name)",
                                        entityName: mandatory.entity?.name, key: mandatory.name)
                }
            }
            try db.execute(sql: statement)
        }
    }
}
