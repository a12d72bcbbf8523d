import Foundation

/// The predefined functions of the expression language, named by their selectors as
/// Apple names them (`+[NSExpression expressionForFunction:arguments:]`).
///
/// In a format string a function is called by its name with or without the colons,
/// `sum({1, 2})` or `sum:({1, 2})`; two-argument functions by their full selector,
/// `modulus:by:(7, 2)`, or by its first part, `modulus(7, 2)`. The arithmetic and
/// bitwise functions also have operators: `a + b` is `add:to:(a, b)`.
///
/// ```swift
/// let e = try CoreExpression(format: "average(scores)")
/// e == .function(PredicateFunction.average.rawValue, arguments: [.keyPath("scores")])
/// ```
public enum PredicateFunction: String, Sendable, Hashable, CaseIterable {
    // Statistics over a collection.
    case sum = "sum:"
    case count = "count:"
    case min = "min:"
    case max = "max:"
    case average = "average:"
    case median = "median:"
    case mode = "mode:"
    case stddev = "stddev:"
    // Mathematics.
    case sqrt = "sqrt:"
    case log = "log:"
    case ln = "ln:"
    case exp = "exp:"
    case floor = "floor:"
    case ceiling = "ceiling:"
    case abs = "abs:"
    case trunc = "trunc:"
    case add = "add:to:"
    case subtract = "from:subtract:"
    case multiply = "multiply:by:"
    case divide = "divide:by:"
    case modulus = "modulus:by:"
    case raise = "raise:toPower:"
    // Random numbers and dates.
    case random = "random"
    case randomElement = "random:"
    case randomn = "randomn:"
    case now = "now"
    // Strings.
    case uppercase = "uppercase:"
    case lowercase = "lowercase:"
    case length = "length:"
    // Bits.
    case bitwiseAnd = "bitwiseAnd:with:"
    case bitwiseOr = "bitwiseOr:with:"
    case bitwiseXor = "bitwiseXor:with:"
    case leftShift = "leftshift:by:"
    case rightShift = "rightshift:by:"
    case onesComplement = "onesComplement:"
    // Others.
    case noindex = "noindex:"
    case castObjectToType = "castObject:toType:"

    /// How many arguments the function takes (the number of colons in its name).
    public var argumentCount: Int {
        rawValue.reduce(0) { $1 == ":" ? $0 + 1 : $0 }
    }

    /// The operator Apple prints the function with, if it has one: `+` for `add:to:`.
    public var infixOperator: String? {
        switch self {
        case .add: return "+"
        case .subtract: return "-"
        case .multiply: return "*"
        case .divide: return "/"
        case .raise: return "**"
        case .bitwiseAnd: return "&"
        case .bitwiseOr: return "|"
        case .bitwiseXor: return "^"
        case .leftShift: return "<<"
        case .rightShift: return ">>"
        default: return nil
        }
    }

    /// The function a format string names: `"sum"`, `"sum:"`, `"SUM"`, `"modulus"`,
    /// `"modulus:by:"`, `"random"` (no argument) or `"random"` (one argument,
    /// `random:`), `"avg"` (`average:`). `nil` when no function has that name and
    /// number of arguments.
    public static func resolve(_ name: String, argumentCount: Int) -> PredicateFunction? {
        guard let candidates = table[name.lowercased()] else { return nil }
        return candidates.first { $0.argumentCount == argumentCount }
    }

    private static let table: [String: [PredicateFunction]] = {
        var table: [String: [PredicateFunction]] = [:]
        for function in PredicateFunction.allCases {
            let full = function.rawValue.lowercased()
            table[full, default: []].append(function)
            let first = String(full.prefix { $0 != ":" })
            if first != full { table[first, default: []].append(function) }
        }
        table["avg", default: []].append(.average)
        return table
    }()
}
