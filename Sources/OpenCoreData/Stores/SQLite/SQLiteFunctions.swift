import Foundation
import GRDB
import OpenCoreDataPredicates

/// The SQL functions and collations translated fetches use, so that SQLite
/// compares strings exactly as the predicate evaluator does.
///
/// Each calls the predicate module's own comparison code
/// (``OpenCoreDataPredicates/ComparisonOperator/holds(_:_:options:)`` and
/// ``OpenCoreDataPredicates/SortSelector/compare(_:_:locale:)``), so a predicate
/// or a sort gives the same rows in SQL and in memory:
///
/// - `ocd_compare(left, right, 'OPERATOR', options)`: 1 when the comparison holds,
///   0 otherwise (never NULL). `OPERATOR` is a ``ComparisonOperator`` raw value
///   (`==`, `<`, `BEGINSWITH`, `LIKE`, `MATCHES`...), `options` the raw value of
///   ``ComparisonOptions`` (`[c]` 1, `[d]` 2). TEXT arguments are strings, INTEGER
///   and REAL numbers, BLOB data, NULL `nil`. `MATCHES` expressions are compiled
///   once and cached; an invalid one is an SQL error.
/// - Collation `OCD_COMPARE`: `compare:` on strings (canonically equivalent strings
///   are the same, then UTF-16 order).
/// - Collation `OCD_CASEINSENSITIVE`: `caseInsensitiveCompare:`.
/// - Collations `OCD_SORT_<n>_<locale>` for the localized selectors, registered on
///   demand by ``SQLFetchStatement/prepare(_:)``.
///
/// Register them on every connection, when it opens:
///
/// ```swift
/// var configuration = Configuration()
/// configuration.prepareDatabase { db in SQLiteFunctions.registerFunctions(db) }
/// ```
enum SQLiteFunctions {
    /// The name of the comparison function.
    static let compareFunctionName = "ocd_compare"
    /// The collation of `compare:`.
    static let compareCollationName = "OCD_COMPARE"
    /// The collation of `caseInsensitiveCompare:`.
    static let caseInsensitiveCollationName = "OCD_CASEINSENSITIVE"

    /// The comparison function: `ocd_compare(left, right, operator, options)`.
    static let compareFunction = DatabaseFunction(compareFunctionName, argumentCount: 4, pure: true) { values in
        guard case .string(let symbol) = values[2].storage,
              let operatorType = ComparisonOperator(rawValue: symbol) else {
            throw DatabaseError(message: "\(compareFunctionName): unknown operator \(values[2])")
        }
        let options: ComparisonOptions
        if case .int64(let raw) = values[3].storage {
            options = ComparisonOptions(rawValue: Int(truncatingIfNeeded: raw))
        } else {
            options = []
        }
        let left = SQLiteValueEncoding.attributeValue(values[0])
        let right = SQLiteValueEncoding.attributeValue(values[1])
        do {
            return try operatorType.holds(left, right, options: options) ? 1 : 0
        } catch {
            throw DatabaseError(message: "\(compareFunctionName): \(error)")
        }
    }

    /// `compare:` on strings.
    static let compareCollation = DatabaseCollation(compareCollationName) { a, b in
        SortSelector.compare.compare(a, b, locale: nil)
    }

    /// `caseInsensitiveCompare:` on strings.
    static let caseInsensitiveCollation = DatabaseCollation(caseInsensitiveCollationName) { a, b in
        SortSelector.caseInsensitiveCompare.compare(a, b, locale: nil)
    }

    /// Registers the comparison function and the non-localized collations on a
    /// connection. Call once per connection, before preparing statements (SQLite
    /// refuses to replace a function or collation that prepared statements use).
    static func registerFunctions(_ db: Database) {
        db.add(function: compareFunction)
        db.add(collation: compareCollation)
        db.add(collation: caseInsensitiveCollation)
        registerTriggerFunctions(db)
    }

    /// The functions Core Data's own triggers call (derived attributes
    /// `Z_DA_...`, and the counting triggers of Apple's models `ZT_...`), each with
    /// the affected row's table, entity number, key, property and new value. Core
    /// Data learns from them which registered objects a save changed behind its
    /// back; here they return NULL, and an affected object reads its new value once
    /// refreshed, as Core Data documents for derived attributes. Without them any
    /// write that fires such a trigger fails ("no such function").
    static let triggerFunctions = [
        "NSCoreDataTriggerUpdateAffectedObjectValue",
        "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue",
        "NSCoreDataDATriggerUpdatedAffectedObjectValue",
    ].map { name in
        DatabaseFunction(name, argumentCount: 5, pure: false) { _ in DatabaseValue.null }
    }

    /// Registers ``triggerFunctions`` on a connection that may write a store.
    static func registerTriggerFunctions(_ db: Database) {
        for function in triggerFunctions { db.add(function: function) }
    }

    /// Registers a localized sort collation on `db` unless it already has it.
    static func ensureCollation(_ collation: SQLiteSortCollation, in db: Database) {
        if hasCollation(named: collation.name, in: db) { return }
        let selector = collation.selector
        let locale = Locale(identifier: collation.localeIdentifier)
        db.add(collation: DatabaseCollation(collation.name) { a, b in
            selector.compare(a, b, locale: locale)
        })
    }

    /// Whether a collation is known to the connection: SQLite refuses to prepare a
    /// comparison using an unknown one.
    private static func hasCollation(named name: String, in db: Database) -> Bool {
        (try? db.makeStatement(sql: "SELECT 'a' < 'b' COLLATE \(SQLiteIdentifier.quoted(name))")) != nil
    }
}
