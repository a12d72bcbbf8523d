import Foundation
import GRDB
import OpenCoreDataPredicates

/// Translates a ``StoreFetch`` into one SQLite statement over a store in Core
/// Data's layout, with exactly the semantics of the in-memory evaluation
/// (``CorePredicate/evaluate(with:substitutionVariables:)`` and
/// ``Swift/Sequence/sorted(using:)-([CoreSortDescriptor])`` over the rows).
///
/// ```swift
/// let translator = SQLFetchTranslator(layout: schema, storeIdentifier: store.identifier)
/// var fetch = StoreFetch(entity: country)
/// fetch.predicate = try CorePredicate(format: "ANY moods.name ==[cd] %@", "zoe")
/// fetch.sortDescriptors = [CoreSortDescriptor(key: "name", selector: .localizedCompare)]
/// let statement = try translator.selectStatement(for: fetch)
/// // SELECT t0.Z_PK, t0.Z_ENT, t0.Z_OPT, t0.ZNAME, ... FROM ZCOUNTRY t0
/// // WHERE EXISTS (SELECT 1 FROM ZMOOD t1 WHERE t1.ZCOUNTRY = t0.Z_PK AND t1.ZNAME IS NOT NULL
/// //   AND ocd_compare(t1.ZNAME, ?, '==', 3)) ORDER BY t0.ZNAME COLLATE OCD_SORT_2_656E ASC, t0.Z_PK
/// ```
///
/// What it translates:
/// - the entity, through `Z_ENT IN (...)` when its table holds other entities too;
/// - comparisons (`==`, `!=`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN`, `CONTAINS`,
///   `BEGINSWITH`, `ENDSWITH`, `LIKE`, `MATCHES`, with `[c]`, `[d]`, `[cd]`) of key
///   paths and constants, `nil` behaving as in memory (`x == nil` is `IS NULL`,
///   `x != 5` holds for `nil`, orderings with `nil` are false); the translation is
///   two-valued (never SQL NULL), so `NOT` agrees with memory;
/// - `AND`, `OR`, `NOT`, `TRUEPREDICATE`, `FALSEPREDICATE`;
/// - `SELF`, to-one relationships and object ID URIs (a managed object or object
///   ID argument is `.uri("x-coredata://<store>/<Entity>/p<pk>")`);
/// - to-one key paths (`country.name`, several hops) as `LEFT JOIN`s;
/// - to-many key paths with `ANY`/`SOME`/`ALL`/`NONE`, `CONTAINS` and `IN`
///   (`EXISTS` subselects through the foreign key or the join table), `@count`,
///   `@sum`, `@avg`, `@min`, `@max` (scalar subselects), `SUBQUERY(...).@count`;
/// - `+`, `-`, `*` on numbers; any expression without key paths (`now()`,
///   `CAST(...)`, `1 + 2`) is computed once by the evaluator and bound;
/// - sort descriptors (key paths through to-ones, `@count`...): `compare:` and
///   `caseInsensitiveCompare:` through the `OCD_COMPARE` and
///   `OCD_CASEINSENSITIVE` collations, localized selectors through a collation per
///   locale; `NULL`s first ascending, last descending; ties in primary-key order as
///   the in-memory store's stable sort leaves them;
/// - offset and limit, and the count of the rows.
///
/// What SQL cannot say is an error, never a silent in-memory fallback:
/// ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091) naming
/// the construct (`FUNCTION()`, arithmetic on to-many key paths, key paths through
/// two to-many relationships, comparator sort descriptors...), and
/// ``CoreDataError/Code/coreData`` (134060) naming the entity and key for a key
/// path through an unknown property. Comparisons the evaluator would reject
/// (ordering a string against a number...) throw its
/// ``OpenCoreDataPredicates/PredicateEvaluationError``.
package struct SQLFetchTranslator: Sendable {
    /// Where the store keeps entities and properties.
    let layout: any SQLStoreLayout
    /// The store's UUID: object ID URIs of other stores match nothing.
    let storeIdentifier: String
    /// The SQL dialect of the statements (see ``SQLDialect``).
    let dialect: SQLDialect

    init(layout: any SQLStoreLayout, storeIdentifier: String, dialect: SQLDialect = .sqlite) {
        self.layout = layout
        self.storeIdentifier = storeIdentifier
        self.dialect = dialect
    }

    /// A translator for a store in Core Data's layout `schema`, writing `dialect`.
    package init(schema: SQLiteSchema, storeIdentifier: String, dialect: SQLDialect) {
        self.init(layout: schema, storeIdentifier: storeIdentifier, dialect: dialect)
    }

    /// The `SELECT` fetching the rows of `fetch`: `t0.Z_PK, t0.Z_ENT, t0.Z_OPT`,
    /// then the columns of `properties` (default: every stored attribute and to-one
    /// relationship of the entity, and of its subentities when the fetch includes
    /// them), filtered, sorted, offset and limited. When every row is of one
    /// entity, its number stands in for `t0.Z_ENT` (see ``entityColumn(for:restricted:)``).
    ///
    /// With `keyOrderByCaller`, a fetch with no sort descriptor, offset or limit
    /// gets no `ORDER BY` (the statement's ``SQLFetchStatement/sortsKeys`` is then
    /// true: the caller puts the rows in key order, the order `ORDER BY t0.Z_PK`
    /// gives). A server that would sort the rows before sending the first one
    /// (PostgreSQL: its plans rarely return them in key order) can then stream
    /// them as it finds them.
    ///
    /// With `selectsKnownEntity` false, the constant standing in for `t0.Z_ENT`
    /// is left out (the rows are `t0.Z_PK, t0.Z_OPT, ...`; the statement's
    /// ``SQLFetchStatement/entityNumber`` says the entity): a server sends every
    /// column of every row, the constant included.
    package func selectStatement(for fetch: StoreFetch, properties: [PropertyDescription]? = nil,
                                 keyOrderByCaller: Bool = false, selectsKnownEntity: Bool = true) throws -> SQLFetchStatement {
        let context = try SQLTranslationContext(translator: self, fetch: fetch)
        let columns = try selectedColumns(for: fetch, properties: properties)
        let condition = try context.whereCondition()
        let sortsKeys = keyOrderByCaller && fetch.sortDescriptors.isEmpty && fetch.fetchOffset <= 0 && fetch.fetchLimit <= 0
        let order = sortsKeys ? nil : try context.orderBy(fetch.sortDescriptors)
        // The WHERE clause restricts the rows to the entities the fetch wants.
        let entity = entityColumn(for: fetch, restricted: true)
        var select = SQLFragment(entity.number != nil && !selectsKnownEntity ? "SELECT t0.Z_PK, t0.Z_OPT" : "SELECT t0.Z_PK, \(entity.sql), t0.Z_OPT")
        for column in columns {
            select.text += ", t0." + SQLiteIdentifier.quoted(column.columnName)
        }
        var sql = select + " FROM " + context.fromClause()
        if let condition { sql += " WHERE " + condition }
        if let order { sql += " ORDER BY " + order }
        sql.text += limitClause(fetch)
        return SQLFetchStatement(sql: sql.text, arguments: sql.arguments, columns: columns,
                                 collations: context.collations, entityNumber: entity.number, sortsKeys: sortsKeys)
    }

    /// What a row `SELECT` of `fetch` puts in its second column: `t0.Z_ENT` when the
    /// rows may be of several entities, else the one entity's number, as a
    /// constant (Core Data's statements select `0` there). SQLite then reads one
    /// column less per row, and ``SQLiteRowReader`` none: it is told the number.
    ///
    /// The rows are of one entity when the fetch wants one (no subentities, or
    /// `includesSubentities` off) and either its table holds no other entity or
    /// the statement is `restricted` to the wanted entities (its `WHERE` clause has
    /// the `Z_ENT` restriction of ``SQLTranslationContext``).
    ///
    /// ```swift
    /// var fetch = StoreFetch(entity: person)   // ZPERSON holds Person alone
    /// translator.entityColumn(for: fetch, restricted: false)   // ("3", 3)
    /// fetch = StoreFetch(entity: animal)       // Animal has subentities
    /// translator.entityColumn(for: fetch, restricted: true)    // ("t0.Z_ENT", nil)
    /// ```
    package func entityColumn(for fetch: StoreFetch, restricted: Bool) -> (sql: String, number: Int?) {
        let entity = fetch.entity
        guard !(fetch.includesSubentities && !entity.subentities.isEmpty),
              restricted || (entity.superentity == nil && entity.subentities.isEmpty),
              let number = layout.entityNumber(for: entity) else { return ("t0.Z_ENT", nil) }
        return (String(number), number)
    }

    /// The `SELECT` of the object IDs of `fetch` (Core Data's `SELECT 0, t0.Z_PK`):
    /// `t0.Z_PK`, then `t0.Z_ENT` only when the rows may belong to several entities
    /// (`selectsEntity`). With no sort descriptor, offset or limit the statement has
    /// no `ORDER BY` (`sortsKeys`: the caller sorts the keys, which is the order
    /// `ORDER BY t0.Z_PK` gives): SQLite can then read the keys from an index on
    /// the predicate's columns alone, without visiting the table.
    ///
    /// ```swift
    /// // age < 10: SELECT t0.Z_PK FROM ZPERSON t0 WHERE (t0.ZAGE IS NOT NULL AND t0.ZAGE < ?)
    /// //           (SEARCH t0 USING COVERING INDEX Z_Person_byAge)
    /// let (statement, selectsEntity, sortsKeys) = try translator.objectIDStatement(for: fetch)
    /// ```
    package func objectIDStatement(for fetch: StoreFetch) throws -> (statement: SQLFetchStatement, selectsEntity: Bool, sortsKeys: Bool) {
        let context = try SQLTranslationContext(translator: self, fetch: fetch)
        let condition = try context.whereCondition()
        let selectsEntity = fetch.includesSubentities && fetch.entity.selfAndDescendants.count > 1
        let sortsKeys = fetch.sortDescriptors.isEmpty && fetch.fetchOffset <= 0 && fetch.fetchLimit <= 0
        // The order first: sorting by a to-one key path adds its join to the FROM clause.
        let order = sortsKeys ? nil : try context.orderBy(fetch.sortDescriptors)
        var sql = SQLFragment(selectsEntity ? "SELECT t0.Z_PK, t0.Z_ENT FROM " : "SELECT t0.Z_PK FROM ") + context.fromClause()
        if let condition { sql += " WHERE " + condition }
        if let order {
            sql += " ORDER BY " + order
            sql.text += limitClause(fetch)
        }
        return (SQLFetchStatement(sql: sql.text, arguments: sql.arguments, columns: [], collations: context.collations),
                selectsEntity, sortsKeys)
    }

    /// `SELECT t0.Z_PK FROM ... WHERE ...`: the keys of the rows of `fetch`, for a
    /// statement that changes them (`DELETE ... WHERE Z_PK IN (...)`); sort
    /// descriptors, offset and limit are ignored, as a batch request ignores them.
    /// `hasCondition` is false when it selects every row of the table.
    ///
    /// ```swift
    /// let (keys, hasCondition) = try translator.keySelect(for: fetch)
    /// let sql = hasCondition ? "DELETE FROM ZPERSON WHERE Z_PK IN (" + keys.text + ")" : "DELETE FROM ZPERSON"
    /// ```
    package func keySelect(for fetch: StoreFetch) throws -> (select: SQLFragment, hasCondition: Bool) {
        var unsorted = fetch
        unsorted.sortDescriptors = []
        let context = try SQLTranslationContext(translator: self, fetch: unsorted)
        let condition = try context.whereCondition()
        var sql = SQLFragment("SELECT t0.Z_PK FROM ") + context.fromClause()
        if let condition { sql += " WHERE " + condition }
        return (sql, condition != nil)
    }

    /// The `SELECT COUNT(*)` counting the rows of `fetch` (sort descriptors are
    /// ignored; offset and limit apply, as the in-memory store applies them).
    package func countStatement(for fetch: StoreFetch) throws -> SQLFetchStatement {
        var unsorted = fetch
        unsorted.sortDescriptors = []
        let context = try SQLTranslationContext(translator: self, fetch: unsorted)
        let condition = try context.whereCondition()
        var body = SQLFragment(" FROM ") + context.fromClause()
        if let condition { body += " WHERE " + condition }
        let sql: SQLFragment
        if fetch.fetchOffset > 0 || fetch.fetchLimit > 0 {
            sql = "SELECT COUNT(*) FROM (SELECT t0.Z_PK" + body + SQLFragment(" ORDER BY t0.Z_PK" + limitClause(fetch) + ") counted")
        } else {
            sql = "SELECT COUNT(*)" + body
        }
        return SQLFetchStatement(sql: sql.text, arguments: sql.arguments, columns: [], collations: [])
    }

    private func limitClause(_ fetch: StoreFetch) -> String {
        let offset = max(fetch.fetchOffset, 0)
        if fetch.fetchLimit > 0 {
            return offset > 0 ? " LIMIT \(fetch.fetchLimit) OFFSET \(offset)" : " LIMIT \(fetch.fetchLimit)"
        }
        return offset > 0 ? dialect.offsetOnly(offset) : ""
    }

    // MARK: Selected columns

    /// The columns holding `properties`, or every stored attribute and to-one
    /// relationship of the fetched entities.
    package func selectedColumns(for fetch: StoreFetch, properties: [PropertyDescription]?) throws -> [SQLFetchColumn] {
        var candidates: [(PropertyDescription, EntityDescription)] = []
        if let properties {
            for property in properties {
                let owner = property.entity.flatMap { declaring in
                    fetch.entity.isKindOf(entity: declaring) ? fetch.entity : declaring
                } ?? fetch.entity
                candidates.append((property, owner))
            }
        } else {
            candidates = fetch.entity.allProperties.map { ($0, fetch.entity) }
            if fetch.includesSubentities {
                for sub in fetch.entity.selfAndDescendants.dropFirst() {
                    candidates += sub.properties.map { ($0, sub) }
                }
            }
        }
        var columns: [SQLFetchColumn] = []
        var seen = Set<String>()
        func add(_ property: PropertyDescription, _ entity: EntityDescription, _ kind: SQLFetchColumn.Kind, _ name: String?) {
            guard let name, seen.insert(SQLiteIdentifier.key(name)).inserted else { return }
            columns.append(SQLFetchColumn(property: property, entity: entity, kind: kind, columnName: name,
                                          index: 3 + columns.count))
        }
        for (property, entity) in candidates {
            if property.isTransient { continue }
            if property is AttributeDescription {
                add(property, entity, .attribute, layout.columnName(for: property, in: entity))
            } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                add(property, entity, .toOneKey, layout.columnName(for: relationship, in: entity))
                add(property, entity, .toOneEntity, layout.entityColumnName(for: relationship, in: entity))
            }
        }
        return columns
    }
}

// MARK: - Errors

extension SQLFetchTranslator {
    /// A construct SQL cannot express (134091).
    static func unsupported(_ what: String, entity: EntityDescription? = nil) -> CoreDataError {
        CoreDataError(.persistentStoreUnsupportedRequestType,
                      "The store can't translate \(what) to SQL",
                      entityName: entity?.name)
    }

    /// A key path through a property the entity does not have (134060).
    static func unknownKey(_ key: String, in entity: EntityDescription, keyPath: String) -> CoreDataError {
        CoreDataError(.coreData,
                      "keypath \(keyPath) not found in entity \(entity.name): it has no property '\(key)'",
                      entityName: entity.name, key: key)
    }
}
