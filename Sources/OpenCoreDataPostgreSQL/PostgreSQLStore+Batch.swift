import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

extension PostgreSQLStore {
    /// Batch requests: a delete by predicate whose entities have no relationship
    /// with a delete rule to apply (none, or no-action only) is one `DELETE ...
    /// RETURNING` in SQL, and an update of attributes to constants or to arithmetic
    /// over the row's numbers one `UPDATE ... RETURNING`; every other request runs
    /// over rows (``PersistentStore/executeOverRows(_:)``), in one transaction.
    /// Either way the changed IDs are announced to the other servers, as a save's
    /// are.
    public func execute(_ request: StoreBatchRequest) throws -> [ManagedObjectID] {
        try execute(request, resultType: .objectIDs).objectIDs ?? []
    }

    public func execute(_ request: StoreBatchRequest, resultType: BatchRequestResultType) throws -> PersistentStoreResult {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The PostgreSQL store \(identifier) is read-only", url: url)
        }
        // With persistent history, batch changes are recorded like any save: they
        // go through save(_:).
        switch history == nil ? request : nil {
        case .delete(let fetch)?:
            if let deleted = try sqlDelete(fetch, resultType: resultType) { return deleted }
        case let .update(fetch, values)?:
            if let updated = try sqlUpdate(fetch, values, resultType: resultType) { return updated }
        default:
            break
        }
        return PersistentStoreResult(resultType, try executeOverRows(request))
    }

    /// `DELETE FROM table WHERE Z_PK IN (keys of the fetch)`, announced in the same
    /// transaction; nil when a relationship of a deleted entity has a delete rule
    /// other than no-action (cascade, deny and nullify run over rows) or the rows
    /// are not in one table.
    private func sqlDelete(_ fetch: StoreFetch, resultType: BatchRequestResultType) throws -> PersistentStoreResult? {
        let entities = fetch.includesSubentities ? fetch.entity.selfAndDescendants : [fetch.entity]
        for entity in entities {
            for property in entity.allProperties {
                guard let relationship = property as? RelationshipDescription else { continue }
                if relationship.deleteRule != .noAction { return nil }
                if case .joinTable? = schema.storage(for: relationship, in: entity) { return nil }
            }
        }
        guard let table = schema.table(for: fetch.entity), entities.allSatisfy({ schema.table(for: $0) == table }) else { return nil }
        let (keys, hasCondition) = try translator.keySelect(for: fetch)
        var sql = SQLFragment("DELETE FROM \(SQLiteIdentifier.quoted(table))")
        if hasCondition { sql += " WHERE Z_PK IN (" + keys + ")" }
        if !hasCondition && resultType != .objectIDs {
            // The whole table: announced as `D<entity>,...` (every row of these
            // entities), without reading back a key.
            let numbers = model.entities.filter { schema.table(for: $0) == table }.compactMap { schema.entityNumber($0) }
            let count = try withSession("batch deleting \(fetch.entity.name)", code: .persistentStoreSave) { session in
                try session.transaction {
                    let count = try session.execute(sql.text, sql.arguments)
                    try remoteChanges.announceDeletionOfAll(entityNumbers: numbers, session)
                    return count
                }
            }
            return PersistentStoreResult(resultType, count: count)
        }
        return try announcedChange(sql, kind: "d", fetch: fetch, resultType: resultType, doing: "batch deleting \(fetch.entity.name)").result
    }

    /// `UPDATE table SET ..., Z_OPT = Z_OPT + 1 WHERE Z_PK IN (keys of the fetch)`
    /// (the assignments SQLite's store writes too), announced in the same
    /// transaction; nil when a value cannot be computed in SQL as in memory or
    /// the rows are not in one table. An integer computed out of its attribute's
    /// range fails the request with 1610, nothing changed.
    private func sqlUpdate(_ fetch: StoreFetch, _ values: [Int: CoreExpression], resultType: BatchRequestResultType) throws -> PersistentStoreResult? {
        let entity = fetch.entity
        let entities = fetch.includesSubentities ? entity.selfAndDescendants : [entity]
        guard let table = schema.table(for: entity), entities.allSatisfy({ schema.table(for: $0) == table }),
              let update = try translator.batchUpdate(of: entity, table: table, values: values, encode: { try self.encode($0, for: $1) }) else {
            return nil
        }
        let (keys, hasCondition) = try translator.keySelect(for: fetch)
        var sql = SQLFragment("UPDATE \(SQLiteIdentifier.quoted(table)) SET ") + SQLFragment.joined(update.assignments, separator: ", ")
        sql += ", Z_OPT = Z_OPT + 1"
        if hasCondition { sql += " WHERE Z_PK IN (" + keys + ")" }
        let checks = update.checkedRanges.map { "\($0.column) < \($0.range.lowerBound) OR \($0.column) > \($0.range.upperBound)" }
        let (result, outOfRange) = try announcedChange(sql, kind: "u", fetch: fetch, resultType: resultType, returning: update.checkedRanges.map(\.column),
                                                       outOfRange: checks.isEmpty ? nil : checks.joined(separator: " OR "),
                                                       doing: "batch updating \(entity.name)")
        if let outOfRange {
            throw CoreDataError(.managedObjectValidation, "\(entity.name): a value set by the batch update is out of its attribute's range (\(outOfRange))",
                                entityName: entity.name, valueDescription: outOfRange)
        }
        return result
    }

    /// Runs `change`, an `UPDATE` or `DELETE` of the fetch's table, in a
    /// transaction that announces the changed rows (`kind` `u` or `d`). The
    /// changed keys come back to the store only for
    /// ``BatchRequestResultType/objectIDs``; otherwise the server itself writes the
    /// announcements (`string_agg` into `pg_notify`) and counts the rows. When a
    /// changed row meets `outOfRange` (a condition on the `returning` columns) the
    /// transaction rolls back and the offending values come back instead.
    private func announcedChange(_ change: SQLFragment, kind: Character, fetch: StoreFetch, resultType: BatchRequestResultType,
                                 returning: [String] = [], outOfRange: String? = nil,
                                 doing: String) throws -> (result: PersistentStoreResult, outOfRange: String?) {
        struct OutOfRange: Error { let values: String }
        let extra = returning.map { ", " + $0 }.joined()
        do {
            return try pool.withSession { session in
                try session.transaction {
                    if resultType != .objectIDs {
                        // Payloads `<origin> <kind><entity>=<pk>,...` of at most 300 keys
                        // (under PostgreSQL's 8000 bytes whatever the keys' digits).
                        let bad = outOfRange.map { "(SELECT concat_ws(', '\(extra)) FROM changed WHERE \($0) LIMIT 1)" } ?? "NULL"
                        let announced = """
                            WITH changed AS (\(change.text) RETURNING Z_PK, Z_ENT\(extra)),
                            parts AS (SELECT Z_ENT AS entity, Z_PK AS pk, (row_number() OVER (PARTITION BY Z_ENT) - 1) / 300 AS part FROM changed),
                            sent AS (SELECT pg_notify(?, ? || ' \(kind)' || entity || '=' || string_agg(pk::text, ',')) FROM parts GROUP BY entity, part)
                            SELECT (SELECT COUNT(*) FROM changed), (SELECT COUNT(*) FROM sent), \(bad)
                            """
                        let arguments = change.arguments + [remoteChanges.channel.databaseValue, remoteChanges.origin.databaseValue]
                        let row = try session.query(announced, arguments).first?.makeRandomAccess()
                        if let cell = row?[2], cell.bytes != nil { throw OutOfRange(values: (try? cell.decode(String.self)) ?? "?") }
                        return (PersistentStoreResult(resultType, count: Int(row.map { PostgreSQLValues.int64($0[0]) } ?? 0)), nil)
                    }
                    // The entity of every row when it is one (its own table), else each row's.
                    let single: EntityDescription? = translator.entityColumn(for: fetch, restricted: true).number.flatMap(entity(forNumber:))
                    var ids: [ManagedObjectID] = []
                    let rows = try session.query(change.text + " RETURNING Z_PK, Z_ENT" + extra
                                                 + (outOfRange.map { ", (" + $0 + ")" } ?? ""), change.arguments)
                    ids.reserveCapacity(rows.count)
                    for row in rows {
                        let cells = row.makeRandomAccess()
                        if outOfRange != nil, PostgreSQLValues.int64(cells[2 + returning.count]) != 0 {
                            throw OutOfRange(values: (0..<returning.count).map { "\(PostgreSQLValues.databaseValue(cells[2 + $0]))" }.joined(separator: ", "))
                        }
                        let pk = PostgreSQLValues.int64(cells[0])
                        guard let entity = single ?? self.entity(forNumber: Int(PostgreSQLValues.int64(cells[1]))) else { continue }
                        ids.append(ManagedObjectID(entity: entity, in: idScopes, primaryKey: pk))
                    }
                    try remoteChanges.announce(updated: kind == "u" ? ids : [], deleted: kind == "d" ? ids : [], of: self, session)
                    return (PersistentStoreResult(resultType, ids), nil)
                }
            }
        } catch let error as OutOfRange {
            // The transaction rolled back: the values that were out of range.
            return (PersistentStoreResult(resultType, count: 0), error.values)
        } catch {
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreSave, doing: doing, url: url)
        }
    }

    /// The IDs among `ids` whose rows exist, read with one statement per table.
    func existingObjectIDs(_ ids: [ManagedObjectID]) throws -> Set<ManagedObjectID> {
        var byTable: [String: [ManagedObjectID]] = [:]
        for id in ids where id.primaryKey != nil {
            guard let table = schema.table(for: id.entity) else { continue }
            byTable[table, default: []].append(id)
        }
        var existing = Set<ManagedObjectID>()
        try withSession("checking which objects exist") { session in
            for (table, members) in byTable {
                var bindings = PostgresBindings(capacity: 1)
                bindings.append(members.compactMap(\.primaryKey))
                var keys = Set<Int64>()
                for row in try session.query(numbered: "SELECT Z_PK FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_PK = ANY($1::int8[])",
                                             bindings: bindings) {
                    keys.insert(row.int64(0))
                }
                for id in members where keys.contains(id.primaryKey ?? -1) { existing.insert(id) }
            }
        }
        return existing
    }
}
