import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

extension PostgreSQLStore {
    /// Batch requests: a delete by predicate whose entities have no relationship
    /// with a delete rule to apply (none, or no-action only) is one `DELETE ...
    /// RETURNING` in SQL; every other request runs over rows
    /// (``PersistentStore/executeOverRows(_:)``), in one transaction. Either way
    /// the changed IDs are announced to the other servers, as a save's are.
    public func execute(_ request: StoreBatchRequest) throws -> [ManagedObjectID] {
        try execute(request, resultType: .objectIDs).objectIDs ?? []
    }

    public func execute(_ request: StoreBatchRequest, resultType: BatchRequestResultType) throws -> PersistentStoreResult {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The PostgreSQL store \(identifier) is read-only", url: url)
        }
        if case .delete(let fetch) = request, let deleted = try sqlDelete(fetch, resultType: resultType) {
            return deleted
        }
        return PersistentStoreResult(resultType, try executeOverRows(request))
    }

    /// `DELETE FROM table WHERE Z_PK IN (keys of the fetch)`, announced in the same
    /// transaction; nil when a relationship of a deleted entity has a delete rule
    /// other than no-action (cascade, deny and nullify run over rows) or the rows
    /// are not in one table. The deleted keys come back to the store only for
    /// ``BatchRequestResultType/objectIDs``; otherwise the server itself writes the
    /// announcements from them (`string_agg` into `pg_notify`) and counts them.
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
        var sql = "DELETE FROM \(SQLiteIdentifier.quoted(table))"
        if hasCondition { sql += " WHERE Z_PK IN (" + keys.text + ")" }
        if resultType != .objectIDs {
            // Payloads `<origin> d<entity>=<pk>,...` of at most 300 keys (under
            // PostgreSQL's 8000 bytes whatever the keys' digits), written by the server.
            let announced = """
                WITH deleted AS (\(sql) RETURNING Z_PK, Z_ENT),
                parts AS (SELECT Z_ENT AS entity, Z_PK AS pk, (row_number() OVER (PARTITION BY Z_ENT) - 1) / 300 AS part FROM deleted),
                sent AS (SELECT pg_notify(?, ? || ' d' || entity || '=' || string_agg(pk::text, ',')) FROM parts GROUP BY entity, part)
                SELECT (SELECT COUNT(*) FROM deleted), (SELECT COUNT(*) FROM sent)
                """
            let arguments = (hasCondition ? keys.arguments : []) + [remoteChanges.channel.databaseValue, remoteChanges.origin.databaseValue]
            let count = try withSession("batch deleting \(fetch.entity.name)", code: .persistentStoreSave) { session in
                try session.transaction { try session.query(announced, arguments).first?.int64(0) ?? 0 }
            }
            return PersistentStoreResult(resultType, count: Int(count))
        }
        // The entity of every row when it is one (its own table), else each row's.
        // (The key select restricts the rows to the fetch's entities.)
        let single: EntityDescription? = translator.entityColumn(for: fetch, restricted: true).number.flatMap(entity(forNumber:))
        sql += single == nil ? " RETURNING Z_PK, Z_ENT" : " RETURNING Z_PK"
        return try withSession("batch deleting \(fetch.entity.name)", code: .persistentStoreSave) { session in
            try session.transaction {
                var ids: [ManagedObjectID] = []
                let rows = try session.query(sql, hasCondition ? keys.arguments : [])
                ids.reserveCapacity(rows.count)
                for row in rows {
                    if let single {
                        ids.append(ManagedObjectID(entity: single, storeIdentifier: identifier, primaryKey: try row.decode(Int64.self)))
                    } else {
                        let (pk, number) = try row.decode((Int64, Int64).self)
                        guard let entity = self.entity(forNumber: Int(number)) else { continue }
                        ids.append(ManagedObjectID(entity: entity, storeIdentifier: identifier, primaryKey: pk))
                    }
                }
                var changes = SaveChanges()
                changes.deleted = ids.map { ($0, 0) }
                try remoteChanges.announce(changes, of: self, session)
                return PersistentStoreResult(resultType, ids)
            }
        }
    }
}
