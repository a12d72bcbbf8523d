import Foundation

// MARK: - Public entry points

extension CorePredicate {
    /// Evaluates the predicate against an object (`-[NSPredicate
    /// evaluateWithObject:substitutionVariables:]`).
    ///
    /// The object can be a dictionary, an array, an ``AttributeValue``, a scalar, `nil`,
    /// or any ``KeyValueCoding`` object. Variables (`$name`) take their values from
    /// `substitutionVariables`.
    ///
    /// ```swift
    /// let p = try CorePredicate(format: "name ==[cd] $city AND population > 100000")
    /// try p.evaluate(with: ["name": "Saint-Étienne", "population": 171_000],
    ///                substitutionVariables: ["city": "saint-etienne"])   // true
    /// ```
    ///
    /// Where Foundation raises an exception this throws a
    /// ``PredicateEvaluationError``: ordering a string against a number, a `MATCHES`
    /// pattern that is not a regular expression, a variable without a value, `ANY`
    /// over something that is not a collection...
    public func evaluate(with object: Any? = nil, substitutionVariables: [String: Any] = [:]) throws -> Bool {
        var evaluator = PredicateEvaluator(variables: substitutionVariables.mapValues { EvaluatedValue(any: $0) })
        return try evaluator.evaluate(self, object: EvaluatedValue(any: object))
    }
}

extension CoreExpression {
    /// Evaluates the expression against an object (`-[NSExpression
    /// expressionValueWithObject:context:]`).
    ///
    /// ```swift
    /// try CoreExpression(format: "@sum.items.price").value(with: order)
    /// try CoreExpression(format: "$x + 1").value(substitutionVariables: ["x": 41])
    /// // .value(.int(42))
    /// ```
    public func value(with object: Any? = nil, substitutionVariables: [String: Any] = [:]) throws -> EvaluatedValue {
        var evaluator = PredicateEvaluator(variables: substitutionVariables.mapValues { EvaluatedValue(any: $0) })
        return try evaluator.value(of: self, object: EvaluatedValue(any: object))
    }

    /// Evaluates the expression with an object and variables already in their
    /// evaluated form: no conversion from `Any` (for callers that evaluate many
    /// times, such as a migration's property mappings).
    ///
    /// ```swift
    /// try CoreExpression(format: "$x + 1").value(of: .null, variables: ["x": .value(.int(41))])   // .value(.int(42))
    /// ```
    public func value(of object: EvaluatedValue, variables: [String: EvaluatedValue]) throws -> EvaluatedValue {
        var evaluator = PredicateEvaluator(variables: variables)
        return try evaluator.value(of: self, object: object)
    }
}

extension Sequence {
    /// The elements the predicate accepts, in order (`-[NSArray
    /// filteredArrayUsingPredicate:]`).
    ///
    /// ```swift
    /// let adults = try people.filtered(by: CorePredicate(format: "age >= 18"))
    /// ```
    public func filtered(by predicate: CorePredicate, substitutionVariables: [String: Any] = [:]) throws -> [Element] {
        var evaluator = PredicateEvaluator(variables: substitutionVariables.mapValues { EvaluatedValue(any: $0) })
        var result: [Element] = []
        for element in self where try evaluator.evaluate(predicate, object: EvaluatedValue(any: element)) {
            result.append(element)
        }
        return result
    }
}

// MARK: - Evaluator

struct PredicateEvaluator {
    var variables: [String: EvaluatedValue]
    private var depth = 0
    private var onLargeStack = false
    private let maximumDepth = 2 * CorePredicate.maximumNestingDepth
    /// How deep evaluation recurses on the caller's stack before moving to a thread
    /// with a large stack (see `LargeStack`): deeply nested trees then evaluate even on
    /// threads with small stacks.
    private static let largeStackDepth = 48

    init(variables: [String: EvaluatedValue]) {
        self.variables = variables
    }

    private mutating func enter() throws {
        depth += 1
        if depth > maximumDepth {
            throw PredicateEvaluationError.tooDeep("more than \(maximumDepth) nested predicates and expressions")
        }
    }

    /// Whether to continue on a large stack.
    private var shouldMoveToLargeStack: Bool {
        !onLargeStack && depth == PredicateEvaluator.largeStackDepth
    }

    /// Runs the rest of the evaluation on a large stack, the caller waiting, and takes
    /// the variables it assigned back.
    private mutating func continueOnLargeStack<T>(_ body: @escaping (inout PredicateEvaluator) throws -> T) throws -> T {
        let box = EvaluationBox(evaluator: self) { try body(&$0) }
        box.evaluator.onLargeStack = true
        try LargeStack.run { try box.run() }
        variables = box.evaluator.variables
        guard let result = box.result as? T else {
            throw PredicateEvaluationError.unsupported("evaluation on a large stack gave no result")
        }
        return result
    }

    mutating func evaluate(_ predicate: CorePredicate, object: EvaluatedValue) throws -> Bool {
        try enter()
        defer { depth -= 1 }
        if shouldMoveToLargeStack {
            return try continueOnLargeStack { try $0.evaluate(predicate, object: object) }
        }
        switch predicate {
        case .constant(let value):
            return value
        case .and(let list):
            for sub in list where try !evaluate(sub, object: object) { return false }
            return true
        case .or(let list):
            for sub in list where try evaluate(sub, object: object) { return true }
            return false
        case .not(let sub):
            return try !evaluate(sub, object: object)
        case .comparison(let comparison):
            let left = try value(of: comparison.leftExpression, object: object)
            let right = try value(of: comparison.rightExpression, object: object)
            if comparison.modifier == .direct {
                return try ValueComparison.holds(left, comparison.operatorType, right, options: comparison.options)
            }
            let members: [EvaluatedValue]
            switch left {
            case .collection(let values, _): members = values
            case .dictionary(let values): members = Array(values.values)
            case .null: members = []
            default:
                throw PredicateEvaluationError.notACollection(
                    "the left side of \(comparison.modifier.rawValue) must be a collection, not \(left.shortDescription)")
            }
            var any = false
            for member in members {
                let holds = try ValueComparison.holds(member, comparison.operatorType, right, options: comparison.options)
                if holds {
                    any = true
                    if comparison.modifier != .all { break }
                } else if comparison.modifier == .all {
                    return false
                }
            }
            switch comparison.modifier {
            case .all: return true
            case .none: return !any
            default: return any
            }
        }
    }

    mutating func value(of expression: CoreExpression, object: EvaluatedValue) throws -> EvaluatedValue {
        try enter()
        defer { depth -= 1 }
        if shouldMoveToLargeStack {
            return try continueOnLargeStack { try $0.value(of: expression, object: object) }
        }
        switch expression {
        case .constant(let value):
            return EvaluatedValue(value)
        case .evaluatedObject:
            return object
        case .keyPath(let path):
            return try object.value(forKeyPath: path)
        case .variable(let name):
            guard let value = variables[name] else { throw PredicateEvaluationError.unboundVariable(name) }
            return value
        case let .member(base, path):
            return try value(of: base, object: object).value(forKeyPath: path)
        case .aggregate(let list):
            var values: [EvaluatedValue] = []
            for element in list { values.append(try value(of: element, object: object)) }
            return .collection(values, isOrdered: true)
        case let .function(name, arguments):
            guard let function = PredicateFunction(rawValue: name) else {
                throw PredicateEvaluationError.unsupported("the function '\(name)'")
            }
            var values: [EvaluatedValue] = []
            for argument in arguments { values.append(try value(of: argument, object: object)) }
            return try PredicateFunctions.apply(function, values)
        case let .customFunction(receiver, selector, arguments):
            let target = try value(of: receiver, object: object)
            var values: [EvaluatedValue] = []
            for argument in arguments { values.append(try value(of: argument, object: object)) }
            if case .object(let o) = target {
                return try o.performPredicateFunction(selector, arguments: values)
            }
            if values.isEmpty, !selector.contains(":") {
                return try target.value(forKey: selector)
            }
            throw PredicateEvaluationError.unsupported("FUNCTION '\(selector)' on \(target.shortDescription)")
        case let .subquery(collection, variable, predicate):
            let source = try value(of: collection, object: object)
            let members = try source.members(for: "SUBQUERY")
            var isOrdered = true
            if case .collection(_, let ordered) = source { isOrdered = ordered }
            let saved = variables[variable]
            defer { variables[variable] = saved }
            var accepted: [EvaluatedValue] = []
            for member in members {
                variables[variable] = member
                if try evaluate(predicate, object: object) { accepted.append(member) }
            }
            return .collection(accepted, isOrdered: isOrdered)
        case let .conditional(predicate, a, b):
            return try evaluate(predicate, object: object) ? value(of: a, object: object) : value(of: b, object: object)
        case let .index(base, subscription):
            return try index(try value(of: base, object: object), subscription, object: object)
        case let .cast(operand, type):
            return try PredicateFunctions.cast(try value(of: operand, object: object), to: type)
        case let .setOperation(operation, a, b):
            let left = try value(of: a, object: object).members(for: operation.rawValue)
            let right = try value(of: b, object: object).members(for: operation.rawValue)
            func isIn(_ value: EvaluatedValue, _ list: [EvaluatedValue]) -> Bool {
                list.contains { ValueComparison.equal(value, $0, options: []) }
            }
            let result: [EvaluatedValue]
            switch operation {
            case .union: result = EvaluatedValue.distinct(left + right)
            case .intersect: result = EvaluatedValue.distinct(left.filter { isIn($0, right) })
            case .minus: result = EvaluatedValue.distinct(left.filter { !isIn($0, right) })
            }
            return .collection(result, isOrdered: false)
        case let .assignment(variable, operand):
            let result = try value(of: operand, object: object)
            variables[variable] = result
            return result
        case .anyKey:
            throw PredicateEvaluationError.unsupported("ANYKEY outside a Spotlight-style store")
        }
    }

    private mutating func index(
        _ base: EvaluatedValue, _ subscription: IndexSubscript, object: EvaluatedValue
    ) throws -> EvaluatedValue {
        if case .null = base { return .null }
        switch subscription {
        case .first, .last:
            let members = try base.members(for: "[FIRST]/[LAST]")
            return (subscription == .first ? members.first : members.last) ?? .null
        case .size:
            if case .value(.string(let s)) = base { return .value(.int(Int64(s.utf16.count))) }
            return .value(.int(Int64(try base.members(for: "[SIZE]").count)))
        case .expression(let expression):
            let index = try value(of: expression, object: object)
            switch (base, index) {
            case let (.dictionary(values), .value(.string(key))):
                return values[key] ?? .null
            case let (.object(o), .value(.string(key))):
                return EvaluatedValue(any: try o.checkedValue(forKey: key))
            case let (.collection(values, _), .value(number)) where number.isNumber:
                guard let i = number.int64Value, i >= 0, i < Int64(values.count) else {
                    throw PredicateEvaluationError.indexOutOfBounds(
                        "index \(CoreExpression.constant(number)) in a collection of \(values.count)")
                }
                return values[Int(i)]
            default:
                throw PredicateEvaluationError.typeMismatch(
                    "cannot index \(base.shortDescription) with \(index.shortDescription)")
            }
        }
    }
}

/// Hands an evaluation to the large-stack thread and its result back. The caller
/// waits for the other thread, so the values in it are never used by two threads at
/// once.
private final class EvaluationBox: @unchecked Sendable {
    var evaluator: PredicateEvaluator
    let body: (inout PredicateEvaluator) throws -> Any
    var result: Any?

    init(evaluator: PredicateEvaluator, body: @escaping (inout PredicateEvaluator) throws -> Any) {
        self.evaluator = evaluator
        self.body = body
    }

    func run() throws {
        result = try body(&evaluator)
    }
}
