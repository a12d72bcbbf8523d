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
    }

    /// The names of the functions Core Data's own triggers call (derived attributes
    /// `Z_DA_...`, and the counting triggers of Apple's models `ZT_...`), each with
    /// the affected row's table, entity number, key, property and new value. Core
    /// Data learns from them which rows a save changed behind its back. Without
    /// them any write that fires such a trigger fails ("no such function").
    static let triggerFunctionNames = [
        "NSCoreDataTriggerUpdateAffectedObjectValue",
        "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue",
        "NSCoreDataDATriggerUpdatedAffectedObjectValue",
    ]

    /// Registers the trigger functions on a connection that may write a store;
    /// each affected row is reported to `collector` when there is one.
    static func registerTriggerFunctions(_ db: Database, collector: TriggerAffectedRows? = nil) {
        for name in triggerFunctionNames {
            db.add(function: DatabaseFunction(name, argumentCount: 5, pure: false) { values in
                if let collector, let entity = Int.fromDatabaseValue(values[1]), let key = Int64.fromDatabaseValue(values[2]) {
                    collector.add(entityNumber: entity, primaryKey: key)
                }
                return DatabaseValue.null
            })
        }
    }

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

/// The rows Core Data's triggers changed during a save (their functions report
/// each one), so that nothing keeps the values the save itself wrote for them.
final class TriggerAffectedRows: Sendable {
    private let rows = Lock<Set<RowKey>>([])

    struct RowKey: Hashable, Sendable {
        var entityNumber: Int
        var primaryKey: Int64
    }

    func add(entityNumber: Int, primaryKey: Int64) {
        rows.withLock { _ = $0.insert(RowKey(entityNumber: entityNumber, primaryKey: primaryKey)) }
    }

    /// The rows reported since the last call, which forgets them.
    func take() -> Set<RowKey> {
        rows.withLock { rows in
            defer { rows.removeAll() }
            return rows
        }
    }
}

/// A store whose saves may change rows besides those they write (Core Data's
/// triggers): the coordinator drops its cached copies of those rows.
protocol ChangesRowsBehindSaves: AnyObject {
    /// The objects whose rows the last save changed behind its back.
    func takeRowsChangedBehindSave() -> [ManagedObjectID]
}
