import Foundation

/// An index the store keeps to speed up fetches (`NSFetchIndexDescription`):
/// Xcode's "Indexes" section of an entity.
///
/// ```swift
/// let byDate = FetchIndexDescription(name: "byDate", elements: [
///     FetchIndexElementDescription(property: "date", ascending: false),
/// ])
/// entity.indexes = [byDate]
/// ```
public struct FetchIndexDescription: Sendable, Hashable {
    /// The index's name.
    public var name: String
    /// The indexed properties or expressions, in order.
    public var elements: [FetchIndexElementDescription]
    /// Only rows matching this predicate are indexed (a partial index), as format text.
    public var partialIndexPredicate: String?

    /// Creates an index.
    ///
    /// - Parameters:
    ///   - name: The index's name.
    ///   - elements: The indexed properties or expressions, in order.
    ///   - partialIndexPredicate: A predicate format: only rows matching it are
    ///     indexed; nil to index every row.
    public init(name: String, elements: [FetchIndexElementDescription], partialIndexPredicate: String? = nil) {
        self.name = name
        self.elements = elements
        self.partialIndexPredicate = partialIndexPredicate
    }
}

/// One element of a ``FetchIndexDescription`` (`NSFetchIndexElementDescription`).
public struct FetchIndexElementDescription: Sendable, Hashable {
    /// The kind of index structure.
    public enum CollationType: String, Sendable, Hashable {
        /// An ordinary (B-tree) index.
        case binary = "Binary"
        /// A spatial (R-tree) index over numeric values.
        case rTree = "RTree"
    }

    /// The indexed property's name, or nil for an expression element.
    public var propertyName: String?
    /// The indexed expression (format text), or nil for a property element.
    public var expression: String?
    /// The type of the expression's value (Xcode's `expressionType`), e.g. "String".
    public var expressionType: String?
    /// The index structure.
    public var collationType: CollationType
    /// Whether the element is sorted ascending.
    public var isAscending: Bool

    /// An element indexing a property.
    ///
    /// - Parameters:
    ///   - property: The indexed property's name.
    ///   - collationType: The index structure.
    ///   - ascending: Whether the element is sorted ascending.
    public init(property: String, collationType: CollationType = .binary, ascending: Bool = true) {
        self.propertyName = property
        self.collationType = collationType
        self.isAscending = ascending
    }

    /// An element indexing an expression.
    ///
    /// - Parameters:
    ///   - expression: The indexed expression, as format text.
    ///   - expressionType: The type of the expression's value (Xcode's
    ///     `expressionType`), e.g. "String".
    ///   - collationType: The index structure.
    ///   - ascending: Whether the element is sorted ascending.
    public init(expression: String, expressionType: String?, collationType: CollationType = .binary, ascending: Bool = true) {
        self.expression = expression
        self.expressionType = expressionType
        self.collationType = collationType
        self.isAscending = ascending
    }
}
