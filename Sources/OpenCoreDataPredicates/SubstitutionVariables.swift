import Foundation

extension CorePredicate {
    /// The predicate with its variables replaced by constants
    /// (`-[NSPredicate predicateWithSubstitutionVariables:]`).
    ///
    /// Variables without a value stay variables; a `SUBQUERY`'s iteration variable and
    /// the target of an assignment (`$x := ...`) are never replaced.
    ///
    /// ```swift
    /// let template = try CorePredicate(format: "lastName LIKE[c] $name AND age > $age")
    /// let p = template.withSubstitutionVariables(["name": "Sm*", "age": 18])
    /// p.predicateFormat   // lastName LIKE[c] "Sm*" AND age > 18
    /// ```
    public func withSubstitutionVariables(_ variables: [String: any FormatArgument]) -> CorePredicate {
        substituting(variables.mapValues { CoreExpression.constant($0.formatArgumentValue) }, bound: [])
    }

    /// The predicate with its variables replaced by expressions.
    public func withSubstitutionVariables(expressions variables: [String: CoreExpression]) -> CorePredicate {
        substituting(variables, bound: [])
    }

    /// The names of the variables the predicate uses without binding them itself.
    public var variableNames: Set<String> {
        var names = Set<String>()
        collectVariables(into: &names, bound: [])
        return names
    }

    func substituting(_ variables: [String: CoreExpression], bound: Set<String>) -> CorePredicate {
        rewritingExpressions(bound: bound) { expression, bound in
            guard case .variable(let name) = expression, !bound.contains(name) else { return nil }
            return variables[name]
        }
    }

    func collectVariables(into names: inout Set<String>, bound: Set<String>) {
        switch self {
        case .constant:
            break
        case .and(let list), .or(let list):
            for sub in list { sub.collectVariables(into: &names, bound: bound) }
        case .not(let sub):
            sub.collectVariables(into: &names, bound: bound)
        case .comparison(let comparison):
            comparison.leftExpression.collectVariables(into: &names, bound: bound)
            comparison.rightExpression.collectVariables(into: &names, bound: bound)
        }
    }
}

extension CoreExpression {
    /// The expression with its variables replaced by constants.
    public func withSubstitutionVariables(_ variables: [String: any FormatArgument]) -> CoreExpression {
        substituting(variables.mapValues { CoreExpression.constant($0.formatArgumentValue) }, bound: [])
    }

    func substituting(_ variables: [String: CoreExpression], bound: Set<String>) -> CoreExpression {
        rewritten(bound: bound) { expression, bound in
            guard case .variable(let name) = expression, !bound.contains(name) else { return nil }
            return variables[name]
        }
    }

    func collectVariables(into names: inout Set<String>, bound: Set<String>) {
        switch self {
        case .constant, .evaluatedObject, .keyPath, .anyKey:
            break
        case .variable(let name):
            if !bound.contains(name) { names.insert(name) }
        case let .member(base, _):
            base.collectVariables(into: &names, bound: bound)
        case .aggregate(let list):
            for e in list { e.collectVariables(into: &names, bound: bound) }
        case let .function(_, arguments):
            for e in arguments { e.collectVariables(into: &names, bound: bound) }
        case let .customFunction(receiver, _, arguments):
            receiver.collectVariables(into: &names, bound: bound)
            for e in arguments { e.collectVariables(into: &names, bound: bound) }
        case let .subquery(collection, variable, predicate):
            collection.collectVariables(into: &names, bound: bound)
            predicate.collectVariables(into: &names, bound: bound.union([variable]))
        case let .conditional(predicate, a, b):
            predicate.collectVariables(into: &names, bound: bound)
            a.collectVariables(into: &names, bound: bound)
            b.collectVariables(into: &names, bound: bound)
        case let .index(base, subscription):
            base.collectVariables(into: &names, bound: bound)
            if case .expression(let index) = subscription { index.collectVariables(into: &names, bound: bound) }
        case let .cast(value, _):
            value.collectVariables(into: &names, bound: bound)
        case let .setOperation(_, a, b):
            a.collectVariables(into: &names, bound: bound)
            b.collectVariables(into: &names, bound: bound)
        case let .assignment(_, value):
            value.collectVariables(into: &names, bound: bound)
        }
    }
}
