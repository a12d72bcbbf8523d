import Foundation

// MARK: - Comparison hooks for stores that translate predicates

/// Entry points into the evaluator's own comparison code, for stores that run
/// predicates and sorts somewhere else (SQLite functions and collations, say) and
/// must give exactly the answers the in-memory evaluation gives.
///
/// They call the same code ``CorePredicate/evaluate(with:substitutionVariables:)``
/// and ``Swift/Sequence/sorted(using:)-([CoreSortDescriptor])`` use, so a SQL
/// function built on them never disagrees with memory.
extension ComparisonOperator {
    /// Whether `left <operator>[options] right` holds for two scalar values, exactly
    /// as a direct comparison predicate evaluates it: `nil` handling, `[c]`/`[d]`
    /// folding, `LIKE` wildcards, whole-string `MATCHES` (compiled expressions are
    /// cached), `BEGINSWITH`/`ENDSWITH`/`CONTAINS`/`IN` on strings, ordering...
    ///
    /// ```swift
    /// try ComparisonOperator.like.holds("Zoë", "zo?", options: [.caseInsensitive, .diacriticInsensitive])
    /// // true
    /// ```
    ///
    /// - throws: ``PredicateEvaluationError`` where the evaluator throws (values of
    ///   kinds that cannot be ordered against each other, an invalid regular
    ///   expression...).
    public func holds(_ left: AttributeValue, _ right: AttributeValue, options: ComparisonOptions = []) throws -> Bool {
        try ValueComparison.holds(EvaluatedValue(left), self, EvaluatedValue(right), options: options)
    }
}

extension SortSelector {
    /// Compares two strings as a sort descriptor with this selector does (nil
    /// `locale`: the current locale), the way ``CoreSortDescriptor`` sorts them.
    ///
    /// ```swift
    /// SortSelector.localizedCompare.compare("Södertälje", "Sundsvall", locale: Locale(identifier: "sv"))
    /// // .orderedDescending
    /// ```
    public func compare(_ a: String, _ b: String, locale: Locale?) -> ComparisonResult {
        SortComparison.compareStrings(a, b, selector: self, locale: locale)
    }
}
