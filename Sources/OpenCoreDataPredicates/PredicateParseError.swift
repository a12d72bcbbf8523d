import Foundation

/// The error thrown when a format string is not a valid predicate or expression.
///
/// It tells where reading stopped and what would have been valid there:
///
/// ```swift
/// do {
///     _ = try CorePredicate(format: "name == ")
/// } catch let error as PredicateParseError {
///     error.offset     // 8
///     error.expected   // "an expression"
///     error.found      // "end of format"
///     print(error)     // Unable to parse the format string "name == ": expected an
///                      // expression at offset 8, found end of format
/// }
/// ```
public struct PredicateParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where reading stopped, in characters (`Character`) from the start of the format.
    public var offset: Int
    /// What would have been valid at that point: `"')'"`, `"an expression"`...
    public var expected: String
    /// What was there instead: `"'AND'"`, `"end of format"`...
    public var found: String
    /// The format string.
    public var format: String

    public init(offset: Int, expected: String, found: String, format: String) {
        self.offset = offset
        self.expected = expected
        self.found = found
        self.format = format
    }

    public var description: String {
        "Unable to parse the format string \"\(format)\": expected \(expected) at offset \(offset), found \(found)"
    }
}

/// The error thrown when evaluating a predicate or expression fails, where Foundation
/// raises an exception: comparing a string with a number, a regular expression that
/// does not compile, a variable with no value...
///
/// ```swift
/// let p = try CorePredicate(format: "foo <= 2")
/// try p.evaluate(with: ["foo": "2"])
/// // throws PredicateEvaluationError.typeMismatch("Cannot compare \"2\" with 2 using <=")
/// ```
public enum PredicateEvaluationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The operands have types the operation does not accept.
    case typeMismatch(String)
    /// A variable was used without a value.
    case unboundVariable(String)
    /// The `MATCHES` operand is not a valid ICU regular expression.
    case invalidRegularExpression(String)
    /// An `ANY`/`ALL`/`NONE` operand, a `SUBQUERY` collection, an `IN` right-hand
    /// side... is not a collection.
    case notACollection(String)
    /// An array index beyond the end.
    case indexOutOfBounds(String)
    /// A key path or key the object does not have.
    case undefinedKey(String)
    /// An arithmetic error: integer division by zero, a value out of range.
    case arithmetic(String)
    /// Something the evaluator does not do: `ANYKEY`, unknown `CAST` types, a
    /// `FUNCTION` the receiver does not answer.
    case unsupported(String)
    /// Expressions nested too deeply to evaluate.
    case tooDeep(String)

    public var description: String {
        switch self {
        case .typeMismatch(let m): return "Type mismatch: \(m)"
        case .unboundVariable(let name): return "No value for variable $\(name)"
        case .invalidRegularExpression(let p): return "Invalid regular expression: \(p)"
        case .notACollection(let m): return "Not a collection: \(m)"
        case .indexOutOfBounds(let m): return "Index out of bounds: \(m)"
        case .undefinedKey(let m): return "Undefined key: \(m)"
        case .arithmetic(let m): return "Arithmetic error: \(m)"
        case .unsupported(let m): return "Unsupported: \(m)"
        case .tooDeep(let m): return "Too deeply nested: \(m)"
        }
    }
}
