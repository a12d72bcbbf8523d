import Foundation

/// The SQL dialect a translated fetch is written in: SQLite's, or PostgreSQL's
/// for the PostgreSQL store (the `OpenCoreDataPostgreSQL` product).
///
/// Both stores keep Core Data's layout (the same tables, columns and entity
/// numbers), so one translator serves both; the dialect decides the few
/// spellings that differ:
///
/// | | SQLite | PostgreSQL |
/// |---|---|---|
/// | equality that holds for two `NULL`s | `a IS b` | `a IS NOT DISTINCT FROM b` |
/// | equality to a value that is not `NULL` | `a IS ?` | `(a IS NOT NULL AND a = ?)` |
/// | a comparison that is false for `NULL` | `IFNULL(c, 0)` | `COALESCE(c, FALSE)` |
/// | `@sum` of no rows | `TOTAL(x)` | `COALESCE(SUM(x), 0)` |
/// | `trunc:` | `CAST(x AS INTEGER)` | `CAST(TRUNC(x) AS BIGINT)` |
/// | a division of aggregates | `CAST(x AS REAL) / y` | `CAST(x AS DOUBLE PRECISION) / y` |
/// | `compare:` order of strings | `COLLATE OCD_COMPARE` | `ocd_order_key(ocd_fold(x, 0))` |
/// | `caseInsensitiveCompare:` | `COLLATE OCD_CASEINSENSITIVE` | `ocd_order_key(ocd_fold(x, 1))` |
/// | `NULL`s sort first ascending | (the default) | `NULLS FIRST` / `NULLS LAST` |
/// | an offset without a limit | `LIMIT -1 OFFSET n` | `OFFSET n` |
///
/// Placeholders are `?` in both: the PostgreSQL store numbers them (`$1`...) when
/// it sends a statement.
package enum SQLDialect: Sendable, Hashable {
    case sqlite
    case postgreSQL

    /// The operator of equality that is true for two `NULL`s, spaced.
    var nullSafeEqual: String { self == .sqlite ? " IS " : " IS NOT DISTINCT FROM " }
    /// The operator of inequality that is false for two `NULL`s, spaced.
    var nullSafeNotEqual: String { self == .sqlite ? " IS NOT " : " IS DISTINCT FROM " }

    /// `expression` equal to `value`, which is not `NULL` (a constant, a key), as a
    /// condition that is never `NULL` (so that its negation holds for a `NULL`
    /// expression, as in memory). PostgreSQL uses no index for `IS NOT DISTINCT
    /// FROM`; it does for `=`.
    func equals(_ expression: SQLFragment, notNull value: SQLFragment) -> SQLFragment {
        self == .sqlite ? expression + " IS " + value : "(" + expression + " IS NOT NULL AND " + expression + " = " + value + ")"
    }

    /// `comparison`, false where it would be `NULL`.
    func falseIfNull(_ comparison: SQLFragment) -> SQLFragment {
        self == .sqlite ? "IFNULL(" + comparison + ", 0)" : "COALESCE(" + comparison + ", FALSE)"
    }

    /// The sum of `value` over a subselect's rows, 0 for no rows.
    func total(_ value: SQLFragment) -> SQLFragment {
        self == .sqlite ? "TOTAL(" + value + ")" : "COALESCE(SUM(" + value + "), 0)"
    }

    /// `value` truncated toward zero to an integer (`trunc:`).
    func truncated(_ value: SQLFragment) -> SQLFragment {
        self == .sqlite ? "CAST(" + value + " AS INTEGER)" : "CAST(TRUNC(" + value + ") AS BIGINT)"
    }

    /// `value` as a floating-point number (the left side of a division of
    /// aggregates, so that it does not truncate).
    func floatingPoint(_ value: SQLFragment) -> SQLFragment {
        self == .sqlite ? "CAST(" + value + " AS REAL)" : "CAST(" + value + " AS DOUBLE PRECISION)"
    }

    /// The collation clause of `compare:` on strings, spaced.
    var binaryCollation: String {
        self == .sqlite ? " COLLATE " + SQLiteFunctions.compareCollationName : " COLLATE \"C\""
    }

    /// The `OFFSET` clause of a statement with an offset and no limit.
    func offsetOnly(_ offset: Int) -> String {
        self == .sqlite ? " LIMIT -1 OFFSET \(offset)" : " OFFSET \(offset)"
    }
}
