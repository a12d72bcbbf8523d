import Foundation

/// Quoting of SQL identifiers built from model names (entity, property and index
/// names), so that no name from a model reaches SQL as anything but an identifier.
///
/// Core Data writes its names bare (`CREATE TABLE ZMOOD ( Z_PK INTEGER PRIMARY KEY, ...`),
/// and so does OpenCoreData when a name is made of ASCII letters, digits and
/// underscores and starts with a letter or underscore; any other name is written
/// in double quotes with inner quotes doubled:
///
/// ```swift
/// SQLiteIdentifier.quoted("ZMOOD")        // ZMOOD
/// SQLiteIdentifier.quoted("ZÉTÉ")         // "ZÉTÉ"
/// SQLiteIdentifier.quoted("Z\"X")         // "Z""X"
/// ```
package enum SQLiteIdentifier {
    /// SQLite keywords that a bare identifier must not be. Every name Core Data
    /// generates starts with `Z` or `Z_`, which no keyword does, but index names
    /// and join-table names are checked as well.
    private static let keywords: Set<String> = [
        "ABORT", "ACTION", "ADD", "AFTER", "ALL", "ALTER", "ALWAYS", "ANALYZE", "AND", "AS", "ASC",
        "ATTACH", "AUTOINCREMENT", "BEFORE", "BEGIN", "BETWEEN", "BY", "CASCADE", "CASE", "CAST",
        "CHECK", "COLLATE", "COLUMN", "COMMIT", "CONFLICT", "CONSTRAINT", "CREATE", "CROSS",
        "CURRENT", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "DATABASE", "DEFAULT",
        "DEFERRABLE", "DEFERRED", "DELETE", "DESC", "DETACH", "DISTINCT", "DO", "DROP", "EACH",
        "ELSE", "END", "ESCAPE", "EXCEPT", "EXCLUDE", "EXCLUSIVE", "EXISTS", "EXPLAIN", "FAIL",
        "FILTER", "FIRST", "FOLLOWING", "FOR", "FOREIGN", "FROM", "FULL", "GENERATED", "GLOB",
        "GROUP", "GROUPS", "HAVING", "IF", "IGNORE", "IMMEDIATE", "IN", "INDEX", "INDEXED",
        "INITIALLY", "INNER", "INSERT", "INSTEAD", "INTERSECT", "INTO", "IS", "ISNULL", "JOIN",
        "KEY", "LAST", "LEFT", "LIKE", "LIMIT", "MATCH", "MATERIALIZED", "NATURAL", "NO", "NOT",
        "NOTHING", "NOTNULL", "NULL", "NULLS", "OF", "OFFSET", "ON", "OR", "ORDER", "OTHERS",
        "OUTER", "OVER", "PARTITION", "PLAN", "PRAGMA", "PRECEDING", "PRIMARY", "QUERY", "RAISE",
        "RANGE", "RECURSIVE", "REFERENCES", "REGEXP", "REINDEX", "RELEASE", "RENAME", "REPLACE",
        "RESTRICT", "RETURNING", "RIGHT", "ROLLBACK", "ROW", "ROWS", "SAVEPOINT", "SELECT", "SET",
        "TABLE", "TEMP", "TEMPORARY", "THEN", "TIES", "TO", "TRANSACTION", "TRIGGER", "UNBOUNDED",
        "UNION", "UNIQUE", "UPDATE", "USING", "VACUUM", "VALUES", "VIEW", "VIRTUAL", "WHEN",
        "WHERE", "WINDOW", "WITH", "WITHOUT",
    ]

    /// Whether `name` can be written without quotes.
    static func isBare(_ name: String) -> Bool {
        guard let first = name.utf8.first else { return false }
        func isLetter(_ byte: UInt8) -> Bool {
            (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95
        }
        guard isLetter(first) else { return false }
        for byte in name.utf8 where !(isLetter(byte) || (byte >= 48 && byte <= 57)) {
            return false
        }
        return !keywords.contains(name.uppercased())
    }

    /// The identifier as SQL text: bare when it can be, double-quoted otherwise.
    package static func quoted(_ name: String) -> String {
        if isBare(name) { return name }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Whether a name can be an SQLite identifier at all (not empty, no NUL).
    static func isValid(_ name: String) -> Bool {
        !name.isEmpty && !name.utf8.contains(0)
    }

    /// SQLite compares identifiers without regard to ASCII case.
    package static func key(_ name: String) -> String {
        String(decoding: name.utf8.map { ($0 >= 97 && $0 <= 122) ? $0 - 32 : $0 }, as: UTF8.self)
    }
}
