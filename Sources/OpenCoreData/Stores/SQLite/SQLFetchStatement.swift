import Foundation
import GRDB
import OpenCoreDataPredicates

/// The SQL a fetch becomes: one `SELECT` with its bound arguments, what each
/// selected column holds, and the collations it needs.
///
/// Run it on a connection prepared with ``SQLiteFunctions/registerFunctions(_:)``,
/// after ``prepare(_:)`` has registered the localized collations it uses:
///
/// ```swift
/// let statement = try translator.selectStatement(for: fetch)
/// try statement.prepare(db)
/// let rows = try Row.fetchAll(db, sql: statement.sql, arguments: statement.statementArguments)
/// // row[0] Z_PK, row[1] Z_ENT (or the one entity's number), row[2] Z_OPT, then statement.columns
/// ```
package struct SQLFetchStatement: Sendable, CustomStringConvertible {
    /// The statement's text, with a `?` for each argument.
    package var sql: String
    /// The values bound to the placeholders, in order.
    package var arguments: [DatabaseValue]
    /// The columns selected after `Z_PK`, `Z_ENT` and `Z_OPT` (empty for a count).
    package var columns: [SQLFetchColumn]
    /// The localized sort collations the statement uses.
    package var collations: [SQLiteSortCollation]
    /// The entity number every row is of, when the statement selects it as a
    /// constant in place of `t0.Z_ENT` (see ``SQLFetchTranslator/entityColumn(for:restricted:)``).
    package var entityNumber: Int? = nil
    /// Whether the statement leaves the rows' order to the caller, who sorts them
    /// by key (see ``SQLFetchTranslator/selectStatement(for:properties:keyOrderByCaller:)``).
    package var sortsKeys = false

    /// The arguments as GRDB binds them.
    var statementArguments: StatementArguments { StatementArguments(databaseValues: arguments) }

    package var description: String { sql }

    /// Registers the collations the statement needs on `db` (those it has not got
    /// yet). Call before running the statement.
    func prepare(_ db: Database) throws {
        for collation in collations {
            SQLiteFunctions.ensureCollation(collation, in: db)
        }
    }
}

/// What one selected column of a fetch holds.
package struct SQLFetchColumn: Sendable {
    /// What the column's value is.
    package enum Kind: Sendable, Hashable {
        /// An attribute's stored value (see ``SQLiteValueEncoding``).
        case attribute
        /// A to-one relationship's destination primary key.
        case toOneKey
        /// A to-one relationship's destination `Z_ENT`.
        case toOneEntity
    }

    /// The property.
    package var property: PropertyDescription
    /// The entity whose table column this is (the fetched entity, or the subentity
    /// declaring the property).
    package var entity: EntityDescription
    /// What the column holds.
    package var kind: Kind
    /// The column's name in the table.
    package var columnName: String
    /// The column's index in each result row (3 and up).
    package var index: Int
}

/// A collation sorting strings like a localized ``SortSelector`` in one locale.
package struct SQLiteSortCollation: Sendable, Hashable {
    /// The SQL name: `OCD_SORT_<selector>_<hex of the locale identifier>`.
    package var name: String
    /// The selector the collation applies.
    package var selector: SortSelector
    /// The locale's identifier.
    package var localeIdentifier: String

    init(selector: SortSelector, localeIdentifier: String) {
        self.selector = selector
        self.localeIdentifier = localeIdentifier
        let number = SortSelector.allCases.firstIndex(of: selector) ?? 0
        let hex = localeIdentifier.utf8.map { String(format: "%02X", $0) }.joined()
        self.name = "OCD_SORT_\(number)_\(hex)"
    }
}

extension StatementArguments {
    /// Positional arguments from values already converted. GRDB's initializer from
    /// a sequence of `DatabaseValueConvertible` values is generic and converts each
    /// one through a key path (slow when unspecialized, as it is here);
    /// the existential form costs a witness call per value.
    init(databaseValues values: [DatabaseValue]) {
        self.init(values.map { $0 as (any DatabaseValueConvertible)? })
    }
}
