import Foundation

/// A logical condition objects either satisfy or not: Core Data's `NSPredicate`.
///
/// Read a predicate from Apple's format language, print it back, evaluate it against
/// objects, or walk its syntax tree (to translate it to SQL, say):
///
/// ```swift
/// let predicate = try CorePredicate(format: "name BEGINSWITH[c] %@ AND age > %d", "j", 30)
/// predicate.predicateFormat
/// // name BEGINSWITH[c] "j" AND age > 30
///
/// try predicate.evaluate(with: ["name": "John", "age": 34])   // true
///
/// if case .and(let subpredicates) = predicate { ... }
/// ```
///
/// Build predicates in code with the cases and helpers:
///
/// ```swift
/// let adult = CorePredicate.comparison(.keyPath("age"), .greaterThanOrEqualTo, 18)
/// let named = CorePredicate.comparison(.keyPath("name"), .beginsWith, .constant("J"),
///                                      options: .caseInsensitive)
/// let both = adult && named           // .and([adult, named])
/// both.predicateFormat                // age >= 18 AND name BEGINSWITH[c] "J"
/// ```
///
/// The tree is `Sendable` and `Hashable`; arguments given to a format string are
/// part of the tree (as constants), so `%@` never appears in it.
public indirect enum CorePredicate: Sendable, Hashable {
    /// `TRUEPREDICATE` (`true`) or `FALSEPREDICATE` (`false`): `+[NSPredicate
    /// predicateWithValue:]`.
    case constant(Bool)
    /// A comparison of two expressions: `NSComparisonPredicate`.
    case comparison(ComparisonPredicate)
    /// All subpredicates hold (`NSAndPredicateType`). An empty list is true.
    case and([CorePredicate])
    /// At least one subpredicate holds (`NSOrPredicateType`). An empty list is false.
    case or([CorePredicate])
    /// The subpredicate does not hold (`NSNotPredicateType`).
    case not(CorePredicate)
}

extension CorePredicate {
    /// `TRUEPREDICATE`.
    public static let truePredicate = CorePredicate.constant(true)
    /// `FALSEPREDICATE`.
    public static let falsePredicate = CorePredicate.constant(false)

    /// A comparison predicate.
    ///
    /// ```swift
    /// CorePredicate.comparison(.keyPath("children.name"), .equalTo, .constant("x"),
    ///                          modifier: .any)
    /// // ANY children.name == "x"
    /// ```
    public static func comparison(
        _ left: CoreExpression,
        _ operatorType: ComparisonOperator,
        _ right: CoreExpression,
        modifier: ComparisonModifier = .direct,
        options: ComparisonOptions = []
    ) -> CorePredicate {
        .comparison(ComparisonPredicate(
            left, operatorType, right, modifier: modifier, options: options))
    }

    /// Both predicates: `lhs AND rhs`. Joining into an existing `AND` on the left
    /// extends it, as `+[NSCompoundPredicate andPredicateWithSubpredicates:]` would be
    /// called with all of them.
    public static func && (lhs: CorePredicate, rhs: CorePredicate) -> CorePredicate {
        if case .and(let list) = lhs { return .and(list + [rhs]) }
        return .and([lhs, rhs])
    }

    /// Either predicate: `lhs OR rhs`.
    public static func || (lhs: CorePredicate, rhs: CorePredicate) -> CorePredicate {
        if case .or(let list) = lhs { return .or(list + [rhs]) }
        return .or([lhs, rhs])
    }

    /// The negation: `NOT predicate`.
    public static prefix func ! (predicate: CorePredicate) -> CorePredicate {
        .not(predicate)
    }

    /// The comparison, if this is one.
    public var comparisonPredicate: ComparisonPredicate? {
        if case .comparison(let comparison) = self { return comparison }
        return nil
    }

    /// The subpredicates of a compound predicate (`AND`, `OR`, `NOT`); empty for the
    /// others.
    public var subpredicates: [CorePredicate] {
        switch self {
        case .and(let list), .or(let list): return list
        case .not(let predicate): return [predicate]
        case .constant, .comparison: return []
        }
    }
}

/// A comparison of two expressions: `NSComparisonPredicate`.
///
/// ```swift
/// let c = ComparisonPredicate(.keyPath("name"), .like, .constant("J*"),
///                             options: [.caseInsensitive, .diacriticInsensitive])
/// CorePredicate.comparison(c).predicateFormat   // name LIKE[cd] "J*"
/// ```
public struct ComparisonPredicate: Sendable, Hashable {
    /// The expression on the left of the operator.
    public var leftExpression: CoreExpression
    /// The operator.
    public var operatorType: ComparisonOperator
    /// The expression on the right of the operator.
    public var rightExpression: CoreExpression
    /// `ANY`, `ALL`, `NONE`, or a direct comparison.
    public var modifier: ComparisonModifier
    /// `[c]`, `[d]`, `[n]`, `[l]`.
    public var options: ComparisonOptions

    /// A comparison of two expressions.
    public init(
        _ leftExpression: CoreExpression,
        _ operatorType: ComparisonOperator,
        _ rightExpression: CoreExpression,
        modifier: ComparisonModifier = .direct,
        options: ComparisonOptions = []
    ) {
        self.leftExpression = leftExpression
        self.operatorType = operatorType
        self.rightExpression = rightExpression
        self.modifier = modifier
        self.options = options
    }
}

/// The operator of a comparison: `NSComparisonPredicate.Operator`.
public enum ComparisonOperator: String, Sendable, Hashable, CaseIterable {
    /// `<`
    case lessThan = "<"
    /// `<=` (also written `=<`)
    case lessThanOrEqualTo = "<="
    /// `>`
    case greaterThan = ">"
    /// `>=` (also written `=>`)
    case greaterThanOrEqualTo = ">="
    /// `==` (also written `=`)
    case equalTo = "=="
    /// `!=` (also written `<>`)
    case notEqualTo = "!="
    /// `MATCHES`: the whole left string matches the ICU regular expression on the right.
    case matches = "MATCHES"
    /// `LIKE`: the left string matches the pattern on the right (`*` and `?` wildcards).
    case like = "LIKE"
    /// `BEGINSWITH`
    case beginsWith = "BEGINSWITH"
    /// `ENDSWITH`
    case endsWith = "ENDSWITH"
    /// `IN`: the left value is a member of the collection (or a substring of the string)
    /// on the right.
    case `in` = "IN"
    /// `CONTAINS`: the left collection has the right value as a member (or the left
    /// string contains the right one).
    case contains = "CONTAINS"
    /// `BETWEEN`: the left value lies between the two values of the right array,
    /// bounds included.
    case between = "BETWEEN"
    /// `UTI-CONFORMS-TO`
    case conformsTo = "UTI-CONFORMS-TO"
    /// `UTI-EQUALS`
    case utiEquals = "UTI-EQUALS"

    /// The operator as Apple's `predicateFormat` writes it.
    public var symbol: String { rawValue }
}

/// The aggregate qualifier of a comparison: `NSComparisonPredicate.Modifier`, plus
/// `NONE`.
public enum ComparisonModifier: String, Sendable, Hashable, CaseIterable {
    /// Compare the left value itself.
    case direct = ""
    /// `ANY` (or `SOME`): some member of the left collection satisfies the comparison.
    case any = "ANY"
    /// `ALL`: every member of the left collection satisfies the comparison.
    case all = "ALL"
    /// `NONE`: no member of the left collection satisfies the comparison (`NOT ANY`).
    case none = "NONE"
}

/// String comparison options: `NSComparisonPredicate.Options`.
public struct ComparisonOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `[c]`: case-insensitive.
    public static let caseInsensitive = ComparisonOptions(rawValue: 1 << 0)
    /// `[d]`: diacritic-insensitive.
    public static let diacriticInsensitive = ComparisonOptions(rawValue: 1 << 1)
    /// `[n]`: the strings are already normalized; compare them as they are.
    public static let normalized = ComparisonOptions(rawValue: 1 << 2)
    /// `[l]`: locale-sensitive.
    public static let localeSensitive = ComparisonOptions(rawValue: 1 << 3)

    /// The letters between the brackets, in Apple's order: `"cd"`.
    public var letters: String {
        var s = ""
        if contains(.caseInsensitive) { s += "c" }
        if contains(.diacriticInsensitive) { s += "d" }
        if contains(.normalized) { s += "n" }
        if contains(.localeSensitive) { s += "l" }
        return s
    }
}
