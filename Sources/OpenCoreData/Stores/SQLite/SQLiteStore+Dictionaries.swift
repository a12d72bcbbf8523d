import Foundation
import GRDB
import OpenCoreDataPredicates

extension SQLiteStore {
    /// Dictionary results in one `SELECT`: the columns, `GROUP BY`, aggregates
    /// (`SUM`, `AVG`, `MIN`, `MAX`, `COUNT`) and arithmetic computed by SQLite;
    /// a having predicate is applied to the result dictionaries (then offset and
    /// limit), as in memory.
    public func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        try fetchDictionaries(request, in: nil)
    }

    /// Dictionary results read in a query generation's snapshot (nil: the
    /// current state).
    func fetchDictionaries(_ request: StoreDictionaryFetch, in snapshot: SQLiteStoreSnapshot?) throws -> [[String: SnapshotValue]] {
        let statement = try translator.dictionaryStatement(for: request)
        let results = try read("fetching dictionaries of \(request.fetch.entity.name)", in: snapshot) { db -> [[String: SnapshotValue]] in
            for collation in statement.collations { SQLiteFunctions.ensureCollation(collation, in: db) }
            let rows = try Row.fetchCursor(db, sql: statement.sql.text, arguments: StatementArguments(statement.sql.arguments))
            var results: [[String: SnapshotValue]] = []
            while let row = try rows.next() {
                var dictionary: [String: SnapshotValue] = [:]
                for column in statement.columns {
                    let value = try self.decode(row, column)
                    dictionary[column.name] = StoreDictionaryEvaluation.coerce(value, to: column.resultType)
                }
                results.append(dictionary)
            }
            return results
        }
        return try StoreDictionaryEvaluation.having(results, request)
    }

    private func decode(_ row: Row, _ column: SQLDictionaryColumn) throws -> SnapshotValue {
        let value = row[column.index] as DatabaseValue
        switch column.decoding {
        case .attribute(let attribute):
            return .attribute(try decode(value, for: attribute, entity: attribute.entity ?? model.entities[0]))
        case .object(let declared):
            guard let key = Int64.fromDatabaseValue(value) else { return .toOne(nil) }
            let number = Int.fromDatabaseValue(row[column.index + 1] as DatabaseValue)
            let entity = number.flatMap { self.entity(forNumber: $0) } ?? declared
            return .toOne(ManagedObjectID(entity: entity, in: idScopes, primaryKey: key))
        case .value:
            return .attribute(SQLiteValueEncoding.attributeValue(value))
        case .constant(let constant):
            return .attribute(constant)
        }
    }
}

/// One value of a dictionary `SELECT`: its key, where it is in the row and how it
/// is read back.
package struct SQLDictionaryColumn {
    package enum Decoding {
        /// An attribute's column (or `MIN`/`MAX` of one): read as the attribute.
        case attribute(AttributeDescription)
        /// An object: its primary key, then its `Z_ENT` in the next column.
        case object(EntityDescription)
        /// A computed value, read by its storage class.
        case value
        /// A value known without SQL.
        case constant(AttributeValue)
    }
    package var name: String
    package var index: Int
    package var decoding: Decoding
    package var resultType: AttributeType?
}

/// A dictionary fetch's statement.
package struct SQLDictionaryStatement {
    package var sql: SQLFragment
    package var columns: [SQLDictionaryColumn]
    package var collations: [SQLiteSortCollation]
}

extension SQLFetchTranslator {
    /// The `SELECT` of a dictionary fetch.
    package func dictionaryStatement(for request: StoreDictionaryFetch) throws -> SQLDictionaryStatement {
        let context = try SQLTranslationContext(translator: self, fetch: request.fetch)
        var terms: [SQLFragment] = []
        var columns: [SQLDictionaryColumn] = []
        for column in request.columns {
            let (sql, decoding) = try context.dictionaryValue(column.expression)
            switch decoding {
            case .object:
                columns.append(SQLDictionaryColumn(name: column.name, index: terms.count, decoding: decoding, resultType: column.resultType))
                terms.append(contentsOf: sql)
            default:
                columns.append(SQLDictionaryColumn(name: column.name, index: terms.count, decoding: decoding, resultType: column.resultType))
                terms.append(sql.first ?? "NULL")
            }
        }
        let groupColumns = request.distinct && request.groupBy.isEmpty
            ? request.columns.filter { !StoreColumn.containsAggregate($0.expression) } : request.groupBy
        var groupTerms: [SQLFragment] = []
        for column in groupColumns {
            let (sql, decoding) = try context.dictionaryValue(column.expression)
            if case .constant = decoding { continue }
            // An object groups by its key (its entity number follows from it).
            if let key = sql.first { groupTerms.append(key) }
        }
        let condition = try context.whereCondition()
        let grouped = !groupTerms.isEmpty
        let order: SQLFragment?
        if grouped {
            order = try context.orderBy(request.fetch.sortDescriptors, tieBreaker: "MIN(t0.Z_PK)")
        } else if request.aggregates {
            order = nil
        } else {
            order = try context.orderBy(request.fetch.sortDescriptors)
        }
        var sql = "SELECT " + SQLFragment.joined(terms.isEmpty ? ["NULL"] : terms, separator: ", ")
            + " FROM " + context.fromClause()
        if let condition { sql += " WHERE " + condition }
        if grouped { sql += " GROUP BY " + SQLFragment.joined(groupTerms, separator: ", ") }
        if let order { sql += " ORDER BY " + order }
        if request.havingPredicate == nil {
            let offset = max(request.fetch.fetchOffset, 0)
            if request.fetch.fetchLimit > 0 {
                sql.text += " LIMIT \(request.fetch.fetchLimit)" + (offset > 0 ? " OFFSET \(offset)" : "")
            } else if offset > 0 {
                sql.text += dialect.offsetOnly(offset)
            }
        }
        return SQLDictionaryStatement(sql: sql, columns: columns, collations: context.collations)
    }
}

extension SQLTranslationContext {
    /// The SQL of one dictionary value (two terms for an object: key and entity)
    /// and how to read it back.
    func dictionaryValue(_ expression: CoreExpression) throws -> ([SQLFragment], SQLDictionaryColumn.Decoding) {
        if StoreColumn.isAggregate(expression), case .function(let name, let arguments) = expression {
            let (inner, decoding) = try dictionaryValue(arguments[0])
            guard let argument = inner.first else {
                throw SQLFetchTranslator.unsupported("\(name) of \(arguments[0])", entity: fetch.entity)
            }
            switch name {
            case "count:": return (["COUNT(" + argument + ")"], .value)
            case "sum:": return (["SUM(" + argument + ")"], .value)
            case "average:": return (["AVG(" + argument + ")"], .value)
            default:
                let function = name == "min:" ? "MIN(" : "MAX("
                if case .attribute = decoding { return ([SQLFragment(function) + argument + ")"], decoding) }
                return ([SQLFragment(function) + argument + ")"], .value)
            }
        }
        if StoreColumn.containsAggregate(expression), case .function(let name, let arguments) = expression {
            let symbol: String
            switch name {
            case PredicateFunction.add.rawValue: symbol = " + "
            case PredicateFunction.subtract.rawValue: symbol = " - "
            case PredicateFunction.multiply.rawValue: symbol = " * "
            case PredicateFunction.divide.rawValue: symbol = " / "
            default: throw SQLFetchTranslator.unsupported("the function \(name)() over aggregates", entity: fetch.entity)
            }
            guard arguments.count == 2 else {
                throw SQLFetchTranslator.unsupported("\(name) with \(arguments.count) arguments", entity: fetch.entity)
            }
            var parts: [SQLFragment] = []
            for argument in arguments {
                let (sql, decoding) = try dictionaryValue(argument)
                if case .constant(let value) = decoding {
                    guard let number = SQLiteValueEncoding.numericDatabaseValue(value) else {
                        throw PredicateEvaluationError.typeMismatch("'\(name)' needs numbers, not \(argument)")
                    }
                    parts.append(.argument(number))
                } else {
                    parts.append(sql.first ?? "NULL")
                }
            }
            let left = symbol == " / " ? translator.dialect.floatingPoint(parts[0]) : parts[0]
            return (["(" + left + SQLFragment(symbol) + parts[1] + ")"], .value)
        }
        switch try operand(expression) {
        case .constant(let value):
            return ([.argument(SQLiteValueEncoding.numericDatabaseValue(value) ?? .null)], .constant(value))
        case .scalar(let sql, _):
            if case .keyPath(let path) = expression, let attribute = attribute(at: path) {
                return ([sql], .attribute(attribute))
            }
            return ([sql], .value)
        case .object(var object):
            let number = try entityNumberSQL(of: &object)
            return ([object.primaryKey, SQLFragment(number)], .object(object.entity))
        case .toMany, .list:
            throw SQLFetchTranslator.unsupported("the to-many value \(expression) in a dictionary fetch", entity: fetch.entity)
        }
    }

    /// The attribute a key path through to-one relationships ends at.
    private func attribute(at path: String) -> AttributeDescription? {
        var entity: EntityDescription? = fetch.entity
        let keys = path.split(separator: ".").map(String.init)
        for (index, key) in keys.enumerated() {
            guard let property = entity?.propertiesByName[key] ?? fetch.entity.selfAndDescendants.lazy.compactMap({ $0.propertiesByName[key] }).first
            else { return nil }
            if index == keys.count - 1 { return property as? AttributeDescription }
            entity = (property as? RelationshipDescription)?.destinationEntity
        }
        return nil
    }
}
