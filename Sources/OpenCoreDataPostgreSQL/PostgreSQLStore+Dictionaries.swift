import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

extension PostgreSQLStore {
    /// Dictionary results (`propertiesToFetch`, aggregates, `propertiesToGroupBy`,
    /// distinct) computed by the server in one `SELECT ... GROUP BY`, written by
    /// the translator the fetches use; a `havingPredicate` then filters the groups
    /// as on SQLite. A request PostgreSQL cannot say in one statement (a column the
    /// translator cannot write, or a grouping PostgreSQL refuses: a sort or column
    /// that is neither grouped nor aggregated) is computed in memory over the
    /// fetched rows instead, as the in-memory store does.
    ///
    /// ```swift
    /// let request = FetchRequest<[String: Any]>(entityName: "Mood")   // dictionary results
    /// request.propertiesToGroupBy = ["creatorID"]
    /// request.propertiesToFetch = ["creatorID", .expression(ExpressionDescription(
    ///     name: "n", expression: .function("count:", arguments: [.keyPath("rating")]), resultType: .integer64))]
    /// let counts = try context.fetch(request)   // SELECT t0.ZCREATORID, COUNT(t0.ZRATING) ... GROUP BY t0.ZCREATORID
    /// ```
    public func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        try fetchDictionaries(request, in: nil)
    }

    /// Dictionary results read in a query generation's snapshot (nil: now); the
    /// in-memory fallback, for groupings PostgreSQL refuses, reads its rows in
    /// the snapshot too.
    func fetchDictionaries(_ request: StoreDictionaryFetch, in snapshot: PostgreSQLGenerationSnapshot?) throws -> [[String: SnapshotValue]] {
        if let results = try sqlDictionaries(request, in: snapshot) { return results }
        guard let snapshot else { return try evaluateDictionaries(request) }
        return try evaluateDictionaries(request, reading: StoreRowReads(
            fetchRows: { try self.fetchRows($0, in: snapshot) },
            row: { try self.rows(for: [$0], of: $0.entity, in: snapshot)?.first },
            relatedObjectIDs: { try self.relatedObjectIDs(of: $0, relationship: $1, in: snapshot) }))
    }

    /// The results from one statement, or nil when the request cannot be one.
    func sqlDictionaries(_ request: StoreDictionaryFetch, in snapshot: PostgreSQLGenerationSnapshot? = nil) throws -> [[String: SnapshotValue]]? {
        let statement: SQLDictionaryStatement
        do {
            statement = try translator.dictionaryStatement(for: request)
        } catch let error as CoreDataError where error.code == .persistentStoreUnsupportedRequestType {
            return nil
        }
        let rows: [PostgresRow]
        do {
            let body = { (session: PostgreSQLSession) throws -> [PostgresRow] in
                try self.prepareCollations(statement.collations, session)
                if snapshot != nil {
                    // A failed statement would abort the snapshot's transaction.
                    try session.execute("SAVEPOINT ocd_dictionary")
                    do {
                        let rows = try session.query(statement.sql.text, statement.sql.arguments)
                        try session.execute("RELEASE SAVEPOINT ocd_dictionary")
                        return rows
                    } catch {
                        _ = try? session.execute("ROLLBACK TO SAVEPOINT ocd_dictionary")
                        throw error
                    }
                }
                return try session.query(statement.sql.text, statement.sql.arguments)
            }
            rows = try snapshot.map { try $0.withSession(body) } ?? pool.withSession(body)
        } catch where PostgreSQLErrors.sqlState(error) == "42803" {
            // A grouping error: a selected or sorted value neither grouped nor aggregated.
            return nil
        } catch {
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOperation,
                                                 doing: "fetching dictionaries of \(request.fetch.entity.name)", url: url)
        }
        var results: [[String: SnapshotValue]] = []
        results.reserveCapacity(rows.count)
        for row in rows {
            let cells = row.makeRandomAccess()
            var dictionary: [String: SnapshotValue] = [:]
            for column in statement.columns {
                let value = try dictionaryValue(cells, column)
                dictionary[column.name] = StoreDictionaryEvaluation.coerce(value, to: column.resultType)
            }
            results.append(dictionary)
        }
        return try StoreDictionaryEvaluation.having(results, request)
    }

    /// One column of a result row as a value.
    private func dictionaryValue(_ cells: PostgresRandomAccessRow, _ column: SQLDictionaryColumn) throws -> SnapshotValue {
        switch column.decoding {
        case .attribute(let attribute):
            return .attribute(try decode(PostgreSQLValues.databaseValue(cells[column.index]), for: attribute))
        case .object(let declared):
            let key = PostgreSQLValues.databaseValue(cells[column.index])
            guard case .int64(let pk) = key.storage else { return .toOne(nil) }
            let number = Int(PostgreSQLValues.int64(cells[column.index + 1]))
            let entity = self.entity(forNumber: number) ?? declared
            return .toOne(ManagedObjectID(entity: entity, in: idScopes, primaryKey: pk))
        case .value:
            return .attribute(Self.computedValue(cells[column.index]))
        case .constant(let constant):
            return .attribute(constant)
        }
    }

    /// A computed value (an aggregate, arithmetic) as SQLite would give it:
    /// PostgreSQL's `NUMERIC` results (`SUM` of integers, `AVG`) become an integer
    /// when whole, a double otherwise.
    static func computedValue(_ cell: PostgresCell) -> AttributeValue {
        let value = PostgreSQLValues.databaseValue(cell)
        if cell.dataType == .numeric, case .string(let text) = value.storage {
            if let integer = Int64(text) { return .int(integer) }
            if let double = Double(text) { return .double(double) }
        }
        return SQLiteValueEncoding.attributeValue(value)
    }
}
