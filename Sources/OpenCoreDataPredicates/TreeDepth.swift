import Foundation

/// Measures how deep a syntax tree goes, without recursing further than asked.
enum TreeDepth {
    /// Whether the predicate's tree is deeper than `limit` levels. Stops as soon as it
    /// knows, so it never recurses more than `limit` levels itself.
    static func exceeds(_ predicate: CorePredicate, _ limit: Int) -> Bool {
        if limit <= 0 { return true }
        switch predicate {
        case .constant: return false
        case .and(let list), .or(let list): return list.contains { exceeds($0, limit - 1) }
        case .not(let sub): return exceeds(sub, limit - 1)
        case .comparison(let c): return exceeds(c.leftExpression, limit - 1) || exceeds(c.rightExpression, limit - 1)
        }
    }

    /// Whether the expression's tree is deeper than `limit` levels (nested constant
    /// arrays and dictionaries count).
    static func exceeds(_ expression: CoreExpression, _ limit: Int) -> Bool {
        if limit <= 0 { return true }
        let next = limit - 1
        switch expression {
        case .constant(let value): return exceeds(value, next)
        case .evaluatedObject, .keyPath, .variable, .anyKey: return false
        case let .member(base, _): return exceeds(base, next)
        case .aggregate(let list): return list.contains { exceeds($0, next) }
        case let .function(_, arguments): return arguments.contains { exceeds($0, next) }
        case let .customFunction(receiver, _, arguments):
            return exceeds(receiver, next) || arguments.contains { exceeds($0, next) }
        case let .subquery(collection, _, predicate): return exceeds(collection, next) || exceeds(predicate, next)
        case let .conditional(predicate, a, b): return exceeds(predicate, next) || exceeds(a, next) || exceeds(b, next)
        case let .index(base, subscription):
            if case .expression(let index) = subscription, exceeds(index, next) { return true }
            return exceeds(base, next)
        case let .cast(value, _): return exceeds(value, next)
        case let .setOperation(_, a, b): return exceeds(a, next) || exceeds(b, next)
        case let .assignment(_, value): return exceeds(value, next)
        }
    }

    private static func exceeds(_ value: AttributeValue, _ limit: Int) -> Bool {
        switch value {
        case .array(let values): return limit <= 0 || values.contains { exceeds($0, limit - 1) }
        case .dictionary(let values): return limit <= 0 || values.values.contains { exceeds($0, limit - 1) }
        default: return false
        }
    }
}
