import Foundation

/// Measures how deep a syntax tree goes, without recursing further than asked.
enum TreeDepth {
    enum Node {
        case predicate(CorePredicate)
        case expression(CoreExpression)
    }

    /// Whether the tree is deeper than `limit` levels. Stops as soon as it knows, so
    /// it never recurses more than `limit` levels itself.
    static func exceeds(_ node: Node, _ limit: Int) -> Bool {
        if limit <= 0 { return true }
        for child in children(of: node) where exceeds(child, limit - 1) {
            return true
        }
        return false
    }

    static func children(of node: Node) -> [Node] {
        switch node {
        case .predicate(let predicate):
            switch predicate {
            case .constant: return []
            case .and(let list), .or(let list): return list.map(Node.predicate)
            case .not(let sub): return [.predicate(sub)]
            case .comparison(let c): return [.expression(c.leftExpression), .expression(c.rightExpression)]
            }
        case .expression(let expression):
            switch expression {
            case .constant(let value): return constantChildren(value)
            case .evaluatedObject, .keyPath, .variable, .anyKey: return []
            case let .member(base, _): return [.expression(base)]
            case .aggregate(let list): return list.map(Node.expression)
            case let .function(_, arguments): return arguments.map(Node.expression)
            case let .customFunction(receiver, _, arguments): return [.expression(receiver)] + arguments.map(Node.expression)
            case let .subquery(collection, _, predicate): return [.expression(collection), .predicate(predicate)]
            case let .conditional(predicate, a, b): return [.predicate(predicate), .expression(a), .expression(b)]
            case let .index(base, subscription):
                if case .expression(let index) = subscription { return [.expression(base), .expression(index)] }
                return [.expression(base)]
            case let .cast(value, _): return [.expression(value)]
            case let .setOperation(_, a, b): return [.expression(a), .expression(b)]
            case let .assignment(_, value): return [.expression(value)]
            }
        }
    }

    /// Nested arrays and dictionaries count as levels too.
    private static func constantChildren(_ value: AttributeValue) -> [Node] {
        switch value {
        case .array(let values): return values.map { .expression(.constant($0)) }
        case .dictionary(let values): return values.values.map { .expression(.constant($0)) }
        default: return []
        }
    }
}
