import Foundation

/// An expression of the predicate language: Core Data's `NSExpression`.
///
/// An expression is a value-producing node of a predicate's syntax tree: a constant,
/// a key path, a variable, a function call, a subquery... Comparisons
/// (``ComparisonPredicate``) compare two expressions.
///
/// The tree is a plain `Sendable`, `Hashable` value, so a store can walk it and
/// translate it to SQL:
///
/// ```swift
/// switch expression {
/// case .keyPath(let path):            // a column, or a join through relationships
/// case .constant(let value):          // a bound parameter
/// case .function("add:to:", let args): // (arg0 + arg1)
/// ...
/// }
/// ```
///
/// Expressions are read from text with ``init(format:_:)``, printed back with
/// ``description`` (the form Apple's `NSExpression` prints), built in code with the
/// cases and helpers below, and evaluated with ``value(with:substitutionVariables:)``.
///
/// ```swift
/// let total = try CoreExpression(format: "price * quantity")
/// total.description                            // "price * quantity"
/// try total.value(with: ["price": 2.5, "quantity": 4])  // .value(.double(10))
///
/// let sum = CoreExpression.function("sum:", arguments: [.keyPath("items.price")])
/// sum.description                              // "sum:(items.price)"
/// ```
///
/// Constants compare the way `NSNumber` does: `.constant(.int(1))`,
/// `.constant(.double(1))` and `.constant(.bool(true))` are equal expressions.
public indirect enum CoreExpression: Sendable {
    /// A constant value: `42`, `"text"`, `nil`, `{1, 2}` (an array), a date...
    /// (`NSConstantValueExpressionType`).
    case constant(AttributeValue)
    /// The object the predicate is evaluated against: `SELF`
    /// (`NSEvaluatedObjectExpressionType`).
    case evaluatedObject
    /// A key path from the evaluated object: `name`, `department.name`,
    /// `children.@count`, `@sum.items.price` (`NSKeyPathExpressionType`).
    case keyPath(String)
    /// A variable: `$name`, replaced by ``CorePredicate/withSubstitutionVariables(_:)``
    /// or bound at evaluation (`NSVariableExpressionType`).
    case variable(String)
    /// A key path applied to the value of another expression: `$x.age`,
    /// `SUBQUERY(...).@count`, `SELF[FIRST].name`.
    case member(CoreExpression, keyPath: String)
    /// A list of expressions that are not all constants: `{1, $x}`
    /// (`NSAggregateExpressionType`). A list of constants is a ``constant(_:)`` array.
    case aggregate([CoreExpression])
    /// A predefined function, named by its selector as Apple names it: `"sum:"`,
    /// `"add:to:"` (which `a + b` is), `"now"`... (`NSFunctionExpressionType`).
    /// See ``PredicateFunction`` for the list.
    case function(String, arguments: [CoreExpression])
    /// `FUNCTION(receiver, 'selector:', arguments...)`: a method called on the
    /// receiver's value. Objects answer through
    /// ``KeyValueCoding/performPredicateFunction(_:arguments:)``.
    case customFunction(receiver: CoreExpression, selector: String, arguments: [CoreExpression])
    /// `SUBQUERY(collection, $variable, predicate)`: the members of the collection the
    /// predicate accepts, with the member bound to the variable
    /// (`NSSubqueryExpressionType`).
    case subquery(collection: CoreExpression, variable: String, predicate: CorePredicate)
    /// `TERNARY(predicate, a, b)` (`NSConditionalExpressionType`).
    case conditional(CorePredicate, trueExpression: CoreExpression, falseExpression: CoreExpression)
    /// `array[index]`, `array[FIRST]`, `array[LAST]`, `array[SIZE]`, `dictionary["key"]`.
    case index(CoreExpression, IndexSubscript)
    /// `CAST(value, "NSNumber")`: the `castObject:toType:` function.
    case cast(CoreExpression, toType: String)
    /// `a UNION b`, `a INTERSECT b`, `a MINUS b` (`NSUnionSetExpressionType`...).
    case setOperation(SetOperation, CoreExpression, CoreExpression)
    /// `$variable := expression`: evaluates the expression and binds the variable
    /// for the rest of the evaluation (`NSVariableAssignmentExpression`).
    case assignment(variable: String, CoreExpression)
    /// `ANYKEY` (`NSAnyKeyExpressionType`), meaningful to Spotlight-style stores.
    case anyKey
}

/// What goes between the brackets of an index expression.
public enum IndexSubscript: Sendable, Hashable {
    /// `[FIRST]`: the first member of an ordered collection.
    case first
    /// `[LAST]`: the last member of an ordered collection.
    case last
    /// `[SIZE]`: the number of members.
    case size
    /// `[expression]`: an integer index into an array, or a key into a dictionary.
    case expression(CoreExpression)
}

/// The set operations `UNION`, `INTERSECT` and `MINUS`.
public enum SetOperation: String, Sendable, Hashable, CaseIterable {
    case union = "UNION"
    case intersect = "INTERSECT"
    case minus = "MINUS"
}

// MARK: - Building expressions in code

extension CoreExpression {
    /// The constant `nil`.
    public static var null: CoreExpression { .constant(.null) }

    /// A predefined function call, checking the name and the number of arguments.
    ///
    /// ```swift
    /// let e = try CoreExpression.call("average:", .keyPath("scores"))
    /// ```
    ///
    /// - throws: ``PredicateParseError`` when no predefined function has this name
    ///   and arity (the name may be given with or without its colons: `"sum"`).
    public static func call(_ name: String, _ arguments: CoreExpression...) throws -> CoreExpression {
        guard let function = PredicateFunction.resolve(name, argumentCount: arguments.count) else {
            throw PredicateParseError(
                offset: 0, expected: "the name of a predefined function",
                found: "'\(name)' with \(arguments.count) argument(s)", format: name)
        }
        if function == .castObjectToType, case .constant(.string(let type)) = arguments[1] {
            return .cast(arguments[0], toType: type)
        }
        return .function(function.rawValue, arguments: arguments)
    }

    /// `lhs + rhs` (`add:to:`).
    public static func + (lhs: CoreExpression, rhs: CoreExpression) -> CoreExpression {
        .function(PredicateFunction.add.rawValue, arguments: [lhs, rhs])
    }

    /// `lhs - rhs` (`from:subtract:`).
    public static func - (lhs: CoreExpression, rhs: CoreExpression) -> CoreExpression {
        .function(PredicateFunction.subtract.rawValue, arguments: [lhs, rhs])
    }

    /// `lhs * rhs` (`multiply:by:`).
    public static func * (lhs: CoreExpression, rhs: CoreExpression) -> CoreExpression {
        .function(PredicateFunction.multiply.rawValue, arguments: [lhs, rhs])
    }

    /// `lhs / rhs` (`divide:by:`).
    public static func / (lhs: CoreExpression, rhs: CoreExpression) -> CoreExpression {
        .function(PredicateFunction.divide.rawValue, arguments: [lhs, rhs])
    }

    /// Whether this is a ``constant(_:)``.
    public var isConstant: Bool {
        if case .constant = self { return true }
        return false
    }

    /// The constant value, if this is a ``constant(_:)``.
    public var constantValue: AttributeValue? {
        if case .constant(let value) = self { return value }
        return nil
    }
}

extension CoreExpression: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .constant(.int(value)) }
}

extension CoreExpression: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .constant(.double(value)) }
}

extension CoreExpression: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .constant(.bool(value)) }
}
