import Foundation
import OpenCoreData

/// Core Data's SQLite layout written for PostgreSQL: the same tables, columns,
/// entity numbers, join tables, indexes and bookkeeping tables (`Z_PRIMARYKEY`,
/// `Z_METADATA`, `Z_MODELCACHE`), so a store moves between SQLite and PostgreSQL
/// unchanged, in PostgreSQL's types:
///
/// | SQLite | PostgreSQL |
/// |---|---|
/// | `INTEGER` (integers, Booleans, keys, `Z_ENT`, `Z_OPT`) | `BIGINT` |
/// | `FLOAT`, `TIMESTAMP` (seconds since 2001) | `DOUBLE PRECISION` |
/// | `DECIMAL` | `NUMERIC` |
/// | `VARCHAR` | `TEXT` |
/// | `BLOB` | `BYTEA` |
///
/// Names are written as Core Data writes them, bare (`ZMOOD`), so PostgreSQL
/// keeps them in lower case (`zmood`) and every statement, written the same way,
/// finds them; names that need quotes keep them exactly.
///
/// The store also installs its functions in its schema: `ocd_fold(text, options)`
/// (the `[c]` and `[d]` folding, as Foundation folds: ICU's full case mapping
/// whatever the database's locale, canonical decomposition, combining marks
/// dropped), `ocd_order_key(text)` (Foundation's UTF-16 order of strings as a
/// text to sort with the "C" collation) and `ocd_compare(left, right, operator,
/// options)`, the string comparisons of the predicate language (`BEGINSWITH`,
/// `LIKE`, `MATCHES`...), false rather than `NULL` for a missing value, as in memory.
enum PostgreSQLSchema {
    /// The PostgreSQL type of a column Core Data declares as `declaredType`.
    static func columnType(_ declaredType: String) -> String {
        let type = declaredType.uppercased()
        if type.hasPrefix("INTEGER") { return "BIGINT" }
        if type.hasPrefix("FLOAT") || type.hasPrefix("TIMESTAMP") || type.hasPrefix("REAL") { return "DOUBLE PRECISION" }
        if type.hasPrefix("DECIMAL") { return "NUMERIC" }
        if type.hasPrefix("VARCHAR") || type.hasPrefix("TEXT") { return "TEXT" }
        return "BYTEA"
    }

    /// The statements creating the store's tables and indexes for `schema`.
    static func creationStatements(for schema: SQLiteSchema) -> [String] {
        let q = SQLiteIdentifier.quoted
        var statements: [String] = []
        for table in schema.tables {
            var parts: [String] = []
            for (index, column) in table.columns.enumerated() {
                var part = "\(q(column.name)) \(columnType(column.declaredType))"
                // Entity tables are keyed by Z_PK, Z_PRIMARYKEY by Z_ENT, Z_METADATA by
                // Z_VERSION: their first column, as in Core Data's SQLite layout.
                let isKey: Bool
                switch table.kind {
                case .entity: isKey = index == 0
                case .bookkeeping: isKey = index == 0 && ["Z_PRIMARYKEY", "Z_METADATA"].contains(table.name.uppercased())
                case .join: isKey = false
                }
                if isKey { part += " PRIMARY KEY" }
                parts.append(part)
            }
            if !table.primaryKey.isEmpty {
                parts.append("PRIMARY KEY (\(table.primaryKey.map(q).joined(separator: ", ")))")
            }
            for constraint in table.uniqueConstraints {
                // Constraint names are unique in a PostgreSQL schema: the table's name first.
                let name = q(table.name + "_" + constraint.joined(separator: "_") + "_UNIQUE")
                parts.append("CONSTRAINT \(name) UNIQUE (\(constraint.map(q).joined(separator: ", ")))")
            }
            statements.append("CREATE TABLE \(q(table.name)) (\(parts.joined(separator: ", ")))")
        }
        for index in schema.indexes {
            let columns = index.columns.map { column -> String in
                var text = q(column.name)
                if let ascending = column.ascending { text += ascending ? " ASC" : " DESC" }
                return text
            }
            statements.append("CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(q(index.name)) ON \(q(index.tableName)) (\(columns.joined(separator: ", ")))")
        }
        return statements
    }

    /// The functions translated predicates call (see the type's overview).
    static let functionStatements = [
        // `[c]` folds case as Foundation does (upper then lower case, so ß is ss),
        // with ICU's root locale whatever the database's; every form is then
        // canonically decomposed; `[d]` drops the combining marks.
        #"""
        CREATE OR REPLACE FUNCTION ocd_fold(value text, options integer) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT CASE WHEN options & 2 <> 0
            THEN regexp_replace(normalize(CASE WHEN options & 1 <> 0
                                            THEN lower(upper(value COLLATE "und-x-icu") COLLATE "und-x-icu")
                                            ELSE value END, NFD),
                                '[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]', '', 'g')
            ELSE normalize(CASE WHEN options & 1 <> 0
                             THEN lower(upper(value COLLATE "und-x-icu") COLLATE "und-x-icu")
                             ELSE value END, NFD)
          END
        $$
        """#,
        // A text whose code point order ("C" collation) is the UTF-16 order of
        // `value` (Foundation's): the characters U+E000-U+FFFF, which UTF-16 puts
        // after the supplementary planes, are each preceded by U+10FFFF.
        #"""
        CREATE OR REPLACE FUNCTION ocd_order_key(value text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
          SELECT CASE WHEN value ~ '[\ue000-\uffff]'
            THEN regexp_replace(value, '([\ue000-\uffff])', chr(1114111) || '\1', 'g') COLLATE "C"
            ELSE value COLLATE "C" END
        $$
        """#,
        #"""
        CREATE OR REPLACE FUNCTION ocd_like_pattern(pattern text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        DECLARE
          result text := '';
          c text;
          i integer := 1;
          n integer := length(pattern);
        BEGIN
          WHILE i <= n LOOP
            c := substr(pattern, i, 1);
            IF c = '\' AND i < n THEN
              i := i + 1;
              c := substr(pattern, i, 1);
              IF c IN ('%', '_', '\') THEN result := result || '\' || c; ELSE result := result || c; END IF;
            ELSIF c = '*' THEN result := result || '%';
            ELSIF c = '?' THEN result := result || '_';
            ELSIF c IN ('%', '_', '\') THEN result := result || '\' || c;
            ELSE result := result || c;
            END IF;
            i := i + 1;
          END LOOP;
          RETURN result;
        END
        $$
        """#,
        #"""
        CREATE OR REPLACE FUNCTION ocd_compare(l text, r text, op text, options integer) RETURNS boolean
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
        DECLARE
          a text;
          b text;
        BEGIN
          IF l IS NULL OR r IS NULL THEN
            IF op = '==' THEN RETURN l IS NULL AND r IS NULL; END IF;
            IF op = '!=' THEN RETURN NOT (l IS NULL AND r IS NULL); END IF;
            RETURN FALSE;
          END IF;
          IF op = 'MATCHES' THEN
            a := CASE WHEN options & 2 <> 0 THEN ocd_fold(l, 2) ELSE l END;
            IF options & 1 <> 0 THEN RETURN a ~* ('^(?:' || r || ')$'); END IF;
            RETURN a ~ ('^(?:' || r || ')$');
          END IF;
          IF op IN ('BEGINSWITH', 'ENDSWITH', 'CONTAINS', 'IN') AND (CASE WHEN op = 'IN' THEN l ELSE r END) = '' THEN
            RETURN FALSE;
          END IF;
          a := ocd_fold(l, options);
          b := ocd_fold(r, options);
          CASE op
            WHEN '==' THEN RETURN a = b;
            WHEN '!=' THEN RETURN a <> b;
            WHEN '<' THEN RETURN ocd_order_key(a) < ocd_order_key(b);
            WHEN '<=' THEN RETURN ocd_order_key(a) <= ocd_order_key(b);
            WHEN '>' THEN RETURN ocd_order_key(a) > ocd_order_key(b);
            WHEN '>=' THEN RETURN ocd_order_key(a) >= ocd_order_key(b);
            WHEN 'BEGINSWITH' THEN RETURN left(a, length(b)) = b;
            WHEN 'ENDSWITH' THEN RETURN right(a, length(b)) = b;
            WHEN 'CONTAINS' THEN RETURN strpos(a, b) > 0;
            WHEN 'IN' THEN RETURN strpos(b, a) > 0;
            WHEN 'LIKE' THEN RETURN a LIKE ocd_like_pattern(b);
            ELSE RAISE EXCEPTION 'ocd_compare: unknown operator %', op;
          END CASE;
        END
        $$
        """#,
    ]

    /// The statement creating the ICU collation of a localized sort, unless the
    /// schema has it. The locale is the collation's own identifier, checked to be
    /// made of letters, digits, `_`, `-` and `@=;` (a locale identifier's characters).
    static func collationStatement(name: String, localeIdentifier: String, selector: String) -> String? {
        let allowed = localeIdentifier.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-@=;".contains($0)) }
        guard allowed, !localeIdentifier.isEmpty else { return nil }
        let bcp47 = localeIdentifier.replacingOccurrences(of: "_", with: "-")
        var locale = bcp47
        switch selector {
        case "localizedCaseInsensitiveCompare:": locale += "-u-ks-level2"
        case "localizedStandardCompare:": locale += "-u-kn-true-ks-level2"
        default: break
        }
        // Not deterministic: strings the locale finds equal (canonically equivalent
        // ones at least) are ties, left in primary-key order as in memory.
        return "CREATE COLLATION IF NOT EXISTS \(SQLiteIdentifier.quoted(name)) (provider = icu, locale = '\(locale)', deterministic = false)"
    }
}
