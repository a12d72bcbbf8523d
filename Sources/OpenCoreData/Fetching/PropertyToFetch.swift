import Foundation
import OpenCoreDataPredicates

/// One entry of a dictionary fetch's ``FetchRequest/propertiesToFetch`` or
/// ``FetchRequest/propertiesToGroupBy``: what Core Data accepts there as a
/// property name, an `NSPropertyDescription` or an `NSExpressionDescription`.
///
/// ```swift
/// let request = FetchRequest<[String: Any]>(entityName: "Mood")
/// request.propertiesToFetch = [
///     "rating",                                   // an attribute
///     "country",                                  // a to-one: its ManagedObjectID
///     "country.numericISO3166Code",               // a key path through to-ones
///     .expression(ExpressionDescription(name: "moods",
///         expression: .function("count:", arguments: [.keyPath("rating")]), resultType: .integer64)),
/// ]
/// request.propertiesToGroupBy = ["rating"]
/// ```
///
/// Each result dictionary holds one key per entry: the property's name, the key
/// path, or the expression description's name. Keys whose value is nil are left
/// out, as Core Data leaves them out.
public enum PropertyToFetch: ExpressibleByStringLiteral, Sendable {
    /// A property (or a key path through to-one relationships) by name.
    case keyPath(String)
    /// A property of the fetched entity.
    case property(PropertyDescription)
    /// A computed value: an aggregate (`sum:`, `average:`, `min:`, `max:`,
    /// `count:`), arithmetic, or any expression over the object's key paths.
    case expression(ExpressionDescription)

    public init(stringLiteral value: String) { self = .keyPath(value) }

    /// The key of the value in each result dictionary.
    public var name: String {
        switch self {
        case .keyPath(let path): return path
        case .property(let property): return property.name
        case .expression(let description): return description.name
        }
    }

    /// The expression computing the value.
    public var expression: CoreExpression {
        switch self {
        case .keyPath(let path): return .keyPath(path)
        case .property(let property): return .keyPath(property.name)
        case .expression(let description): return description.expression
        }
    }

    /// The type the value is given (nil: the type of the property reached).
    var resultType: AttributeType? {
        if case .expression(let description) = self { return description.expressionResultType }
        return nil
    }
}

/// A named, computed column of a dictionary fetch (`NSExpressionDescription`).
///
/// ```swift
/// let average = ExpressionDescription(
///     name: "averageRating",
///     expression: .function("average:", arguments: [.keyPath("rating")]),
///     resultType: .double)
/// request.propertiesToFetch = [.expression(average)]
/// let rows = try context.fetch(request)      // [["averageRating": 3.2]]
/// ```
///
/// Aggregate functions (`sum:`, `average:`, `min:`, `max:`, `count:`) of a key
/// path aggregate over the matching objects, or over each group with
/// ``FetchRequest/propertiesToGroupBy``; they combine with arithmetic
/// (`add:to:`, `from:subtract:`, `multiply:by:`, `divide:by:`). The SQLite store
/// computes them in SQL, the in-memory store by evaluation, with the same results.
public struct ExpressionDescription: Sendable {
    /// The key of the value in each result dictionary.
    public var name: String
    /// What is computed.
    public var expression: CoreExpression
    /// The type of the value (`expressionResultType`): integers come back as
    /// `Int`, floating-point types as `Double`, `.date` as `Date`...
    public var expressionResultType: AttributeType?

    /// A description named `name` computing `expression`, typed `resultType`.
    ///
    /// - Parameters:
    ///   - name: The key of the value in each result dictionary.
    ///   - expression: What is computed.
    ///   - resultType: The type of the value; nil for the type of the property
    ///     the expression reaches.
    public init(name: String, expression: CoreExpression, resultType: AttributeType? = nil) {
        self.name = name
        self.expression = expression
        self.expressionResultType = resultType
    }
}
