import Foundation
import GRDB
import OpenCoreDataPredicates

/// Predicates as SQL conditions.
///
/// Every condition written here is two-valued: 1 or 0, never SQL NULL. The
/// evaluator has no third truth value (`nil == nil` is true, `nil < 3` false, and
/// `NOT` of a false comparison true), so equality uses `IS`/`IS NOT`, orderings test
/// their operands for `NULL` first, and string comparisons call `ocd_compare`
/// (the evaluator's own code) which answers 0 or 1 for every input.
extension SQLTranslationContext {

    /// The condition of a predicate.
    func condition(_ predicate: CorePredicate) throws -> SQLFragment {
        switch predicate {
        case .constant(let value):
            return value ? .trueCondition : .falseCondition
        case .and(let list):
            let parts = try list.map { try condition($0) }.filter { $0 != .trueCondition }
            if parts.contains(.falseCondition) { return .falseCondition }
            return combine(parts, with: " AND ", empty: .trueCondition)
        case .or(let list):
            let parts = try list.map { try condition($0) }.filter { $0 != .falseCondition }
            if parts.contains(.trueCondition) { return .trueCondition }
            return combine(parts, with: " OR ", empty: .falseCondition)
        case .not(let sub):
            return negate(try condition(sub))
        case .comparison(let comparison):
            return try self.comparison(comparison)
        }
    }

    private func combine(_ parts: [SQLFragment], with separator: String, empty: SQLFragment) -> SQLFragment {
        switch parts.count {
        case 0: return empty
        case 1: return parts[0]
        default: return SQLFragment.joined(parts.map(\.parenthesized), separator: separator).parenthesized
        }
    }

    func negate(_ condition: SQLFragment) -> SQLFragment {
        if condition == .trueCondition { return .falseCondition }
        if condition == .falseCondition { return .trueCondition }
        return "NOT " + condition.parenthesized
    }

    // MARK: Comparison predicates

    private func comparison(_ comparison: ComparisonPredicate) throws -> SQLFragment {
        let op = comparison.operatorType
        let options = comparison.options
        let left = try operand(comparison.leftExpression)
        let right = try operand(comparison.rightExpression)
        if comparison.modifier == .direct {
            return try compare(left, op, right, options)
        }
        switch left {
        case .toMany(let path):
            return try quantified(path, comparison.modifier) { try compare($0, op, right, options) }
        case .constant(.null):
            return comparison.modifier == .any ? .falseCondition : .trueCondition
        case .constant(.array(let values)):
            let parts = try values.map { try compare(.constant($0), op, right, options) }
            switch comparison.modifier {
            case .all: return combine(parts, with: " AND ", empty: .trueCondition)
            case .none: return negate(combine(parts, with: " OR ", empty: .falseCondition))
            default: return combine(parts, with: " OR ", empty: .falseCondition)
            }
        default:
            throw SQLFetchTranslator.unsupported(
                "\(comparison.modifier.rawValue) over \(comparison.leftExpression), which is not a to-many key path",
                entity: fetch.entity)
        }
    }

    /// `ANY`/`ALL`/`NONE` over the members of a to-many key path: `EXISTS` or `NOT
    /// EXISTS` of a subselect. Members of an unordered relationship whose value along
    /// the key path is `nil` are left out, as key-value coding drops `nil` from sets.
    func quantified(
        _ path: SQLToManyPath, _ modifier: ComparisonModifier, _ body: (SQLOperand) throws -> SQLFragment
    ) throws -> SQLFragment {
        let subselect = try self.subselect(path, selection: { _ in "1" }, where: { member in
            let value: SQLOperand
            if path.rest.isEmpty {
                value = .object(member)
            } else {
                value = try memberValue(path, member: member)
            }
            var conditions: [SQLFragment] = []
            if !path.relationship.isOrdered, !path.rest.isEmpty {
                conditions.append(isNotNull(value))
            }
            let condition = try body(value)
            conditions.append(modifier == .all ? negate(condition) : condition)
            return conditions.filter { $0 != .trueCondition }
        })
        return (modifier == .any ? "EXISTS " : "NOT EXISTS ") + subselect
    }

    /// The value of a member along the rest of a to-many key path (no second to-many).
    func memberValue(_ path: SQLToManyPath, member: SQLObjectReference) throws -> SQLOperand {
        let value = try resolve(path.rest.joined(separator: "."), from: member, keyPath: path.keyPath,
                                allowsToMany: false)
        return value
    }

    private func isNotNull(_ operand: SQLOperand) -> SQLFragment {
        switch operand {
        case .scalar(let sql, _): return sql + " IS NOT NULL"
        case .object(let object): return object.primaryKey + " IS NOT NULL"
        default: return .trueCondition
        }
    }

    // MARK: Comparing operands

    /// The condition `left <op>[options] right`, as the evaluator decides it.
    func compare(
        _ left: SQLOperand, _ op: ComparisonOperator, _ right: SQLOperand, _ options: ComparisonOptions
    ) throws -> SQLFragment {
        // Constants on both sides: the evaluator answers.
        if case .constant(let l) = left, case .constant(let r) = right {
            return try op.holds(l, r, options: options) ? .trueCondition : .falseCondition
        }
        // Membership in a to-many collection.
        if op == .contains, case .toMany(let path) = left {
            return try quantified(path, .any) { try compare($0, .equalTo, right, options) }
        }
        if op == .in, case .toMany(let path) = right {
            return try quantified(path, .any) { try compare(left, .equalTo, $0, options) }
        }
        for case .toMany(let path) in [left, right] {
            throw SQLFetchTranslator.unsupported(
                "the to-many key path '\(path.keyPath)' compared with \(op.symbol) (use ANY, ALL, NONE, @count, CONTAINS or IN)",
                entity: fetch.entity)
        }
        // Membership in a list.
        if op == .in || op == .contains {
            let (element, container) = op == .in ? (left, right) : (right, left)
            switch container {
            case .constant(.array(let values)): return try membership(element, values.map { .constant($0) }, options)
            // A dictionary's members are its values (as in NSPredicate).
            case .constant(.dictionary(let values)):
                return try membership(element, values.keys.sorted().compactMap { values[$0] }.map { .constant($0) }, options)
            case .list(let members): return try membership(element, members, options)
            case .constant(.null): return .falseCondition
            default: break
            }
        }
        if op == .between {
            if case .constant(.null) = left { return .falseCondition }
            let bounds: [SQLOperand]
            switch right {
            case .constant(.null): return .falseCondition
            case .constant(.array(let values)) where values.count == 2: bounds = values.map { .constant($0) }
            case .list(let list) where list.count == 2: bounds = list
            default:
                throw PredicateEvaluationError.typeMismatch("BETWEEN needs a collection of two bounds")
            }
            let lower = try compare(left, .greaterThanOrEqualTo, bounds[0], options)
            let upper = try compare(left, .lessThanOrEqualTo, bounds[1], options)
            return combine([lower, upper].filter { $0 != .trueCondition }, with: " AND ", empty: .trueCondition)
        }
        if case .list = left {
            throw SQLFetchTranslator.unsupported("a list of key paths compared with \(op.symbol)", entity: fetch.entity)
        }
        if case .list = right {
            throw SQLFetchTranslator.unsupported("a list of key paths compared with \(op.symbol)", entity: fetch.entity)
        }
        switch (left, right) {
        case (.object, _), (_, .object):
            return try compareObjects(left, op, right)
        default:
            return try compareScalars(left, op, right, options)
        }
    }

    /// `element IN {members}`: equal to one of them.
    private func membership(_ element: SQLOperand, _ members: [SQLOperand], _ options: ComparisonOptions) throws -> SQLFragment {
        var parts: [SQLFragment] = []
        switch element {
        case .object(var object):
            // Object ID URIs, grouped by entity: pk IN (...) AND entity.
            var keysByEntity: [(Int, [Int64])] = []
            var others: [SQLOperand] = []
            for member in members {
                if case .constant(.uri(let uri)) = member {
                    guard let (number, key) = objectKey(uri, for: object) else { continue }
                    if let i = keysByEntity.firstIndex(where: { $0.0 == number }) {
                        keysByEntity[i].1.append(key)
                    } else {
                        keysByEntity.append((number, [key]))
                    }
                } else {
                    others.append(member)
                }
            }
            for (number, keys) in keysByEntity {
                var keyCondition = object.primaryKey + " IN ("
                    + SQLFragment.joined(keys.map { .argument($0.databaseValue) }, separator: ", ") + ")"
                if object.isNullable { keyCondition = object.primaryKey + " IS NOT NULL AND " + keyCondition }
                if let entityCondition = try entityCondition(&object, equals: number) {
                    if entityCondition == .falseCondition { continue }
                    keyCondition += " AND " + entityCondition
                }
                parts.append(keyCondition.parenthesized)
            }
            for member in others { parts.append(try compare(.object(object), .equalTo, member, options)) }
        case .scalar(let sql, let domain)
            where !(domain == .string && (options.contains(.caseInsensitive) || options.contains(.diacriticInsensitive)))
                && domain != .opaque:
            var values: [DatabaseValue] = []
            var others: [SQLOperand] = []
            for member in members {
                if case .constant(let value) = member, let d = SQLDomain(value) {
                    if d == domain, let encoded = encode(value, d) { values.append(encoded) }
                } else {
                    others.append(member)
                }
            }
            if !values.isEmpty {
                parts.append((sql + " IS NOT NULL AND " + sql + " IN ("
                    + SQLFragment.joined(values.map { .argument($0) }, separator: ", ") + ")").parenthesized)
            }
            for member in others { parts.append(try compare(element, .equalTo, member, options)) }
        default:
            for member in members { parts.append(try compare(element, .equalTo, member, options)) }
        }
        parts = parts.filter { $0 != .falseCondition }
        if parts.contains(.trueCondition) { return .trueCondition }
        return combine(parts, with: " OR ", empty: .falseCondition)
    }

    // MARK: Objects

    /// `==` and `!=` with `SELF`, to-one relationships and object ID URIs.
    private func compareObjects(_ left: SQLOperand, _ op: ComparisonOperator, _ right: SQLOperand) throws -> SQLFragment {
        guard op == .equalTo || op == .notEqualTo else {
            throw PredicateEvaluationError.typeMismatch("Cannot compare objects using \(op.symbol)")
        }
        let equal: SQLFragment
        switch (left, right) {
        case (.object(var a), .object(var b)):
            equal = try sameObject(&a, &b)
        case (.object(var a), .constant(let value)), (.constant(let value), .object(var a)):
            equal = try object(&a, equals: value)
        case let (.object(a), .scalar(sql, domain)), let (.scalar(sql, domain), .object(a)):
            if domain == .uri {
                throw SQLFetchTranslator.unsupported("comparing an object with a URI attribute", entity: fetch.entity)
            }
            equal = ("(" + a.primaryKey + " IS NULL AND " + sql + " IS NULL)")
        default:
            throw SQLFetchTranslator.unsupported("comparing an object with \(op.symbol)", entity: fetch.entity)
        }
        return op == .equalTo ? equal : negate(equal)
    }

    /// The entity number and primary key an object ID URI names, if it can be an
    /// object of `object`'s kind in this store.
    private func objectKey(_ uri: URL, for object: SQLObjectReference) -> (Int, Int64)? {
        guard let parsed = ManagedObjectID.parse(uri: uri), parsed.store == translator.storeIdentifier,
              case .permanent(let key) = parsed.key,
              let entity = object.entity.rootEntity.selfAndDescendants.first(where: { $0.name == parsed.entity }),
              let number = layout.entityNumber(for: entity) else { return nil }
        return (number, key)
    }

    /// The condition that `object` is of entity `number`; nil when it always is.
    private func entityCondition(_ object: inout SQLObjectReference, equals number: Int) throws -> SQLFragment? {
        if case .fixed(let fixed) = object.entityNumber {
            return fixed == number ? nil : .falseCondition
        }
        return translator.dialect.equals(SQLFragment(try entityNumberSQL(of: &object)), notNull: SQLFragment("\(number)"))
    }

    private func object(_ object: inout SQLObjectReference, equals value: AttributeValue) throws -> SQLFragment {
        switch value {
        case .null:
            return object.primaryKey + " IS NULL"
        case .uri(let uri):
            guard let (number, key) = objectKey(uri, for: object) else { return .falseCondition }
            let keyCondition = translator.dialect.equals(object.primaryKey, notNull: .argument(key.databaseValue))
            guard let entityCondition = try entityCondition(&object, equals: number) else { return keyCondition }
            if entityCondition == .falseCondition { return .falseCondition }
            return (keyCondition + " AND " + entityCondition).parenthesized
        default:
            return .falseCondition
        }
    }

    private func sameObject(_ a: inout SQLObjectReference, _ b: inout SQLObjectReference) throws -> SQLFragment {
        guard a.entity.rootEntity.name == b.entity.rootEntity.name else {
            return "(" + a.primaryKey + " IS NULL AND " + b.primaryKey + " IS NULL)"
        }
        let keys = a.primaryKey + SQLFragment(translator.dialect.nullSafeEqual) + b.primaryKey
        if case .fixed(let x) = a.entityNumber, case .fixed(let y) = b.entityNumber, x == y {
            return keys.parenthesized
        }
        let entities = try entityNumberSQL(of: &a) + translator.dialect.nullSafeEqual + entityNumberSQL(of: &b)
        return "(" + keys + " AND (" + a.primaryKey + SQLFragment(" IS NULL OR \(entities)))")
    }

    // MARK: Scalars

    /// One side of a scalar comparison.
    private enum Term {
        case null
        case value(SQLFragment, SQLDomain, isConstant: Bool)
        /// An array or dictionary constant.
        case collection
    }

    private func term(_ operand: SQLOperand) throws -> Term {
        switch operand {
        case .constant(.null): return .null
        case .constant(.array), .constant(.dictionary): return .collection
        case .constant(let value):
            guard let domain = SQLDomain(value), let encoded = encode(value, domain) else { return .collection }
            return .value(.argument(encoded), domain, isConstant: true)
        case .scalar(let sql, let domain):
            return .value(sql, domain, isConstant: false)
        default:
            throw SQLFetchTranslator.unsupported("this comparison operand", entity: fetch.entity)
        }
    }

    private func encode(_ value: AttributeValue, _ domain: SQLDomain) -> DatabaseValue? {
        domain == .numeric ? SQLiteValueEncoding.numericDatabaseValue(value) : SQLiteValueEncoding.databaseValue(value)
    }

    private func compareScalars(
        _ left: SQLOperand, _ op: ComparisonOperator, _ right: SQLOperand, _ options: ComparisonOptions
    ) throws -> SQLFragment {
        let l = try term(left), r = try term(right)
        switch (l, r) {
        case (.null, .null):
            return try op.holds(.null, .null, options: options) ? .trueCondition : .falseCondition
        case (.value(let sql, let domain, _), .null), (.null, .value(let sql, let domain, _)):
            if domain == .opaque, op != .equalTo, op != .notEqualTo {
                throw SQLFetchTranslator.unsupported("\(op.symbol) on a transformable or composite attribute", entity: fetch.entity)
            }
            switch op {
            case .equalTo: return sql + " IS NULL"
            case .notEqualTo: return sql + " IS NOT NULL"
            default: return .falseCondition
            }
        case (.collection, _), (_, .collection):
            switch op {
            case .equalTo: return .falseCondition
            case .notEqualTo: return .trueCondition
            default: throw PredicateEvaluationError.typeMismatch("\(op.symbol) between a value and a collection")
            }
        case let (.value(ls, ld, lc), .value(rs, rd, rc)):
            if ld == .opaque || rd == .opaque {
                throw SQLFetchTranslator.unsupported(
                    "\(op.symbol) on a transformable or composite attribute (only == nil and != nil)", entity: fetch.entity)
            }
            guard ld == rd else {
                let equal: SQLFragment = lc || rc ? .falseCondition : "(" + ls + " IS NULL AND " + rs + " IS NULL)"
                switch op {
                case .equalTo: return equal
                case .notEqualTo: return negate(equal)
                default:
                    throw PredicateEvaluationError.typeMismatch(
                        "Cannot compare values of different kinds (\(ld) and \(rd)) using \(op.symbol)")
                }
            }
            return try compareSameDomain(ls, lc, op, rs, rc, ld, options)
        }
    }

    private func compareSameDomain(
        _ ls: SQLFragment, _ lc: Bool, _ op: ComparisonOperator, _ rs: SQLFragment, _ rc: Bool,
        _ domain: SQLDomain, _ options: ComparisonOptions
    ) throws -> SQLFragment {
        let folds = options.contains(.caseInsensitive) || options.contains(.diacriticInsensitive)
        let isEquality = op == .equalTo || op == .notEqualTo
        if domain == .string, !isEquality || folds {
            return try stringFunction(ls, op, rs, options)
        }
        switch op {
        case .equalTo:
            // A constant on one side is never NULL here (NULLs are compared above).
            if rc && !lc { return translator.dialect.equals(ls, notNull: rs) }
            if lc && !rc { return translator.dialect.equals(rs, notNull: ls) }
            return ls + SQLFragment(translator.dialect.nullSafeEqual) + rs
        case .notEqualTo: return ls + SQLFragment(translator.dialect.nullSafeNotEqual) + rs
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            if domain == .uri { return try stringFunction(ls, op, rs, []) }
            let comparison = ls + SQLFragment(" \(op.rawValue) ") + rs
            guard (lc || isColumn(ls)) && (rc || isColumn(rs)) else {
                // Subselects and arithmetic are not repeated for a NULL test.
                return translator.dialect.falseIfNull(comparison)
            }
            var parts: [SQLFragment] = []
            if !lc { parts.append(ls + " IS NOT NULL") }
            if !rc { parts.append(rs + " IS NOT NULL") }
            parts.append(comparison)
            return SQLFragment.joined(parts, separator: " AND ").parenthesized
        case .in, .contains:
            throw PredicateEvaluationError.notACollection("\(op.symbol) needs a collection or a string, not a \(domain) value")
        default:
            throw PredicateEvaluationError.typeMismatch("\(op.symbol) compares strings, not \(domain) values")
        }
    }

    /// Whether a fragment is a plain column (`t3.ZNAME`), cheap to test for `NULL`
    /// and usable by an index.
    private func isColumn(_ fragment: SQLFragment) -> Bool {
        fragment.arguments.isEmpty && fragment.text.hasPrefix("t")
            && !fragment.text.contains(" ") && !fragment.text.contains("(")
    }

    /// `ocd_compare(left, right, 'OP', options)`: the evaluator's own string
    /// comparison, as a registered function.
    private func stringFunction(
        _ ls: SQLFragment, _ op: ComparisonOperator, _ rs: SQLFragment, _ options: ComparisonOptions
    ) throws -> SQLFragment {
        if op == .matches, rs.text == "?", case .string(let pattern)? = rs.arguments.first.map(SQLiteValueEncoding.attributeValue) {
            // Reject an invalid expression now, as the evaluator would.
            _ = try ComparisonOperator.matches.holds("", .string(pattern), options: options)
        }
        return SQLFragment(SQLiteFunctions.compareFunctionName + "(") + ls + ", " + rs
            + SQLFragment(", '\(op.rawValue)', \(options.rawValue))")
    }
}
