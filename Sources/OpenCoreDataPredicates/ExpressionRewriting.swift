import Foundation

extension CoreExpression {
    /// The expression with some of its parts replaced: `rule` sees each
    /// expression of the tree from the top down, with the names of the variables
    /// bound where it stands (by enclosing `SUBQUERY`s); where it returns a
    /// replacement, that replacement is used as it is, elsewhere the expression is
    /// rebuilt from its rewritten parts.
    ///
    /// One mechanism for every transformation of expression trees — variable
    /// substitution, resolving `$FETCH_SOURCE` in a fetched property, folding
    /// constants:
    ///
    /// ```swift
    /// let e = try CorePredicate(format: "age > $minimum").rewritingExpressions { expression, bound in
    ///     if case .variable("minimum") = expression, !bound.contains("minimum") { return .constant(.int(18)) }
    ///     return nil
    /// }
    /// e.predicateFormat    // age > 18
    /// ```
    public func rewritten(bound: Set<String> = [],
                          _ rule: (CoreExpression, _ bound: Set<String>) -> CoreExpression?) -> CoreExpression {
        if let replacement = rule(self, bound) { return replacement }
        func sub(_ e: CoreExpression) -> CoreExpression { e.rewritten(bound: bound, rule) }
        switch self {
        case .constant, .evaluatedObject, .keyPath, .variable, .anyKey:
            return self
        case let .member(base, path):
            return .member(sub(base), keyPath: path)
        case .aggregate(let list):
            return .aggregate(list.map(sub))
        case let .function(name, arguments):
            return .function(name, arguments: arguments.map(sub))
        case let .customFunction(receiver, selector, arguments):
            return .customFunction(receiver: sub(receiver), selector: selector, arguments: arguments.map(sub))
        case let .subquery(collection, variable, predicate):
            return .subquery(collection: sub(collection), variable: variable,
                             predicate: predicate.rewritingExpressions(bound: bound.union([variable]), rule))
        case let .conditional(predicate, a, b):
            return .conditional(predicate.rewritingExpressions(bound: bound, rule), trueExpression: sub(a), falseExpression: sub(b))
        case let .index(base, subscription):
            if case .expression(let index) = subscription { return .index(sub(base), .expression(sub(index))) }
            return .index(sub(base), subscription)
        case let .cast(value, type):
            return .cast(sub(value), toType: type)
        case let .setOperation(operation, a, b):
            return .setOperation(operation, sub(a), sub(b))
        case let .assignment(variable, value):
            return .assignment(variable: variable, sub(value))
        }
    }
}

extension CorePredicate {
    /// The predicate with the expressions of its comparisons rewritten by `rule`
    /// (see ``CoreExpression/rewritten(bound:_:)``).
    ///
    /// ```swift
    /// let resolved = predicate.rewritingExpressions { expression, _ in
    ///     if case .variable("TODAY") = expression { return .constant(.date(Date())) }
    ///     return nil
    /// }
    /// ```
    public func rewritingExpressions(bound: Set<String> = [],
                                     _ rule: (CoreExpression, _ bound: Set<String>) -> CoreExpression?) -> CorePredicate {
        switch self {
        case .constant:
            return self
        case .and(let list):
            return .and(list.map { $0.rewritingExpressions(bound: bound, rule) })
        case .or(let list):
            return .or(list.map { $0.rewritingExpressions(bound: bound, rule) })
        case .not(let sub):
            return .not(sub.rewritingExpressions(bound: bound, rule))
        case .comparison(var comparison):
            comparison.leftExpression = comparison.leftExpression.rewritten(bound: bound, rule)
            comparison.rightExpression = comparison.rightExpression.rewritten(bound: bound, rule)
            return .comparison(comparison)
        }
    }
}
