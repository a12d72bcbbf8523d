import Foundation

/// How comparison predicates compare evaluated values, following Foundation:
/// equality is `isEqual:` (numbers across kinds, strings literally unless `[c]`/`[d]`),
/// order is `compare:` (which raises, here throws, for values of different kinds),
/// and `nil` is equal only to `nil` and neither smaller nor greater than anything.
enum ValueComparison {

    /// Whether a comparison holds between two values.
    static func holds(
        _ left: EvaluatedValue, _ operatorType: ComparisonOperator, _ right: EvaluatedValue,
        options: ComparisonOptions
    ) throws -> Bool {
        let l = resolvingIdentity(left, comparedWith: right)
        let r = resolvingIdentity(right, comparedWith: left)
        switch operatorType {
        case .equalTo:
            return equal(l, r, options: options)
        case .notEqualTo:
            return !equal(l, r, options: options)
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            if l.isNull || r.isNull { return false }
            let order = try self.order(l, r, options: options, operatorType: operatorType)
            switch operatorType {
            case .lessThan: return order == .orderedAscending
            case .lessThanOrEqualTo: return order != .orderedDescending
            case .greaterThan: return order == .orderedDescending
            default: return order != .orderedAscending
            }
        case .between:
            if l.isNull || r.isNull { return false }
            guard case .collection(let bounds, _) = r, bounds.count == 2 else {
                throw PredicateEvaluationError.typeMismatch(
                    "BETWEEN needs a collection of two bounds, not \(r.shortDescription)")
            }
            let lower = resolvingIdentity(bounds[0], comparedWith: l)
            let upper = resolvingIdentity(bounds[1], comparedWith: l)
            if lower.isNull || upper.isNull { return false }
            return try order(l, lower, options: options, operatorType: .between) != .orderedAscending
                && order(l, upper, options: options, operatorType: .between) != .orderedDescending
        case .in:
            return try contains(r, l, options: options, operatorType: operatorType)
        case .contains:
            return try contains(l, r, options: options, operatorType: operatorType)
        case .beginsWith, .endsWith, .like, .matches, .conformsTo, .utiEquals:
            if l.isNull || r.isNull { return false }
            guard case .value(.string(let s)) = l, case .value(.string(let t)) = r else {
                throw PredicateEvaluationError.typeMismatch(
                    "\(operatorType.symbol) compares strings, not \(l.shortDescription) and \(r.shortDescription)")
            }
            switch operatorType {
            case .beginsWith: return StringComparison.hasPrefix(s, t, options: options)
            case .endsWith: return StringComparison.hasSuffix(s, t, options: options)
            case .like: return StringComparison.like(s, pattern: t, options: options)
            case .matches: return try StringComparison.matches(s, pattern: t, options: options)
            default:
                // Uniform type identifiers compare case-insensitively. Without the
                // system's type database, a type conforms only to itself.
                return StringComparison.equals(s, t, options: options.union(.caseInsensitive))
            }
        }
    }

    /// `container CONTAINS element` / `element IN container`.
    private static func contains(
        _ container: EvaluatedValue, _ element: EvaluatedValue, options: ComparisonOptions,
        operatorType: ComparisonOperator
    ) throws -> Bool {
        switch container {
        case .null:
            return false
        case .collection(let values, _):
            return values.contains { equal(resolvingIdentity($0, comparedWith: element), element, options: options) }
        case .dictionary(let values):
            return values.values.contains { equal(resolvingIdentity($0, comparedWith: element), element, options: options) }
        case .value(.string(let s)):
            switch element {
            case .null: return false
            case .value(.string(let t)): return StringComparison.contains(s, t, options: options)
            default:
                throw PredicateEvaluationError.typeMismatch(
                    "\(operatorType.symbol) with the string \(container.shortDescription) needs a string, not \(element.shortDescription)")
            }
        default:
            throw PredicateEvaluationError.notACollection(
                "\(operatorType.symbol) needs a collection or a string, not \(container.shortDescription)")
        }
    }

    /// An object compared with a value stands for its identity, if it has one.
    static func resolvingIdentity(_ value: EvaluatedValue, comparedWith other: EvaluatedValue) -> EvaluatedValue {
        guard case .object(let object) = value else { return value }
        if case .object = other { return value }
        if let identity = object.predicateIdentity { return EvaluatedValue(identity) }
        return value
    }

    /// Equality as `-[NSObject isEqual:]` (and `-[NSString compare:options:]` when
    /// options are given).
    static func equal(_ a: EvaluatedValue, _ b: EvaluatedValue, options: ComparisonOptions) -> Bool {
        switch (a, b) {
        case (.null, .null):
            return true
        case (.null, _), (_, .null):
            return false
        case let (.value(x), .value(y)):
            if case .string(let s) = x, case .string(let t) = y {
                return StringComparison.equals(s, t, options: options)
            }
            if let m = x.numericValue, let n = y.numericValue {
                return NumericValue.compare(m, n) == .orderedSame
            }
            return x == y
        case let (.collection(xs, xOrdered), .collection(ys, yOrdered)):
            guard xs.count == ys.count else { return false }
            if xOrdered && yOrdered {
                return zip(xs, ys).allSatisfy { equal($0, $1, options: options) }
            }
            return xs.allSatisfy { x in ys.contains { equal(x, $0, options: options) } }
                && ys.allSatisfy { y in xs.contains { equal(y, $0, options: options) } }
        case let (.dictionary(x), .dictionary(y)):
            guard x.count == y.count else { return false }
            return x.allSatisfy { key, value in y[key].map { equal(value, $0, options: options) } ?? false }
        case let (.object(x), .object(y)):
            if let ox = objectIdentity(x), let oy = objectIdentity(y), ox == oy { return true }
            if let ix = x.predicateIdentity, let iy = y.predicateIdentity { return ix.isEquivalent(to: iy) }
            return false
        case let (.object(o), .value(v)), let (.value(v), .object(o)):
            return o.predicateIdentity?.isEquivalent(to: v) ?? false
        default:
            return false
        }
    }

    private static func objectIdentity(_ object: any KeyValueCoding) -> ObjectIdentifier? {
        if let opaque = object as? OpaqueObject {
            return type(of: opaque.value) is AnyClass ? ObjectIdentifier(opaque.value as AnyObject) : nil
        }
        return type(of: object) is AnyClass ? ObjectIdentifier(object as AnyObject) : nil
    }

    /// Order as `-compare:`: numbers, strings (with `[c]`/`[d]`), dates...
    ///
    /// - throws: ``PredicateEvaluationError/typeMismatch(_:)`` for values Foundation
    ///   cannot order against each other.
    static func order(
        _ a: EvaluatedValue, _ b: EvaluatedValue, options: ComparisonOptions, operatorType: ComparisonOperator
    ) throws -> ComparisonResult {
        if case .value(let x) = a, case .value(let y) = b {
            if case .string(let s) = x, case .string(let t) = y {
                return StringComparison.compare(s, t, options: options)
            }
            if let result = x.compare(y) { return result }
        }
        throw PredicateEvaluationError.typeMismatch(
            "Cannot compare \(a.shortDescription) with \(b.shortDescription) using \(operatorType.symbol)")
    }
}
