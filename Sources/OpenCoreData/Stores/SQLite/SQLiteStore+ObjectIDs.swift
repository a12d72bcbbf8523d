import Foundation
import GRDB
import GRDBSQLite

extension SQLiteStore {
    /// The rows of a fetch that needs object IDs only (``StoreFetch/includesPropertyValues``
    /// false: an object ID fetch, the ID query of batched fetch results, objects
    /// fetched without their values): each snapshot carries its ID, no values and
    /// version 0.
    ///
    /// The query reads what the IDs need and nothing more
    /// (``SQLFetchTranslator/objectIDStatement(for:)``): the keys, the entity
    /// numbers only when the rows may be of several entities, and no `ORDER BY`
    /// when the fetch has no sort descriptor, offset or limit — the keys are sorted
    /// here instead, the order `ORDER BY t0.Z_PK` gives. SQLite can then find the
    /// keys in an index on the predicate's columns without visiting the table: the
    /// IDs of 10,000 of 100,000 persons aged under 10 are a range of the `age`
    /// index rather than a scan of the whole table.
    ///
    /// ```swift
    /// let request = FetchRequest<ManagedObjectID>(entityName: "Person")
    /// request.predicate = try CorePredicate(format: "age < 10")
    /// let ids = try context.fetch(request)   // SELECT t0.Z_PK FROM ZPERSON t0 WHERE ...
    /// ```
    func fetchObjectIDRows(_ fetch: StoreFetch, in snapshot: SQLiteStoreSnapshot?) throws -> [RowSnapshot] {
        let (statement, selectsEntity, sortsKeys) = try translator.objectIDStatement(for: fetch)
        let entity = fetch.entity
        return try read("fetching \(entity.name) IDs", in: snapshot, singleStatement: true) { db in
            try statement.prepare(db)
            let start = SQLDebug.level > 0 ? DispatchTime.now().uptimeNanoseconds : 0
            let prepared = try db.cachedStatement(sql: statement.sql)
            // Keys (and entity numbers) straight from the C API; the entity looked up
            // once per run of rows of the same entity.
            var keys: [(key: Int64, entity: EntityDescription)] = []
            var last: (number: Int64, entity: EntityDescription?) = (-1, nil)
            try prepared.forEachRow(arguments: statement.statementArguments) { sqliteStatement in
                var rowEntity = entity
                if selectsEntity {
                    let number = sqlite3_column_int64(sqliteStatement, 1)
                    if number != last.number { last = (number, self.entity(forNumber: Int(number))) }
                    guard let known = last.entity else { return }
                    rowEntity = known
                }
                keys.append((sqlite3_column_int64(sqliteStatement, 0), rowEntity))
            }
            // A scan of the table hands the keys out in order already: checked first.
            if sortsKeys, zip(keys, keys.dropFirst()).contains(where: { $0.key > $1.key }) { keys.sort { $0.key < $1.key } }
            let idScopes = self.idScopes
            let rows = keys.map { RowSnapshot(objectID: ManagedObjectID(entity: $0.entity, in: idScopes, primaryKey: $0.key),
                                              version: 0, values: []) }
            if SQLDebug.level > 0 {
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                SQLDebug.annotateFetch(db, sql: statement.sql, arguments: statement.statementArguments, seconds: seconds, rows: rows.count)
            }
            return rows
        }
    }
}
