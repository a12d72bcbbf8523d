import Foundation

/// How to order objects by the value at a key path: Core Data's `NSSortDescriptor`.
///
/// ```swift
/// let byName = CoreSortDescriptor(key: "name", selector: .localizedStandardCompare)
/// let byAge = CoreSortDescriptor(key: "age", ascending: false)
/// let sorted = people.sorted(using: [byAge, byName])   // stable, age then name
///
/// byName.compare(ada, alan)   // .orderedAscending
/// ```
///
/// A store translates a descriptor to `ORDER BY` from ``key``, ``ascending`` and
/// ``selector``; a descriptor with a comparator closure can only sort in memory.
///
/// Values are compared as Foundation compares them: numbers across kinds, dates,
/// strings with the selector's rules. `nil` sorts before every value (after, when
/// descending). Values Foundation could not compare with each other (a string and a
/// number) are ordered by kind rather than raising: `nil`, numbers, strings, dates,
/// data, UUIDs, URLs, collections, dictionaries, objects.
public struct CoreSortDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The key path whose values are compared; `nil` compares the objects themselves.
    public var key: String?
    /// Whether smaller values come first.
    public var ascending: Bool
    /// The comparison method, or `nil` for a descriptor made with a comparator.
    public var selector: SortSelector?
    /// The locale of the localized selectors; `nil` uses the current locale, as
    /// Foundation does.
    public var locale: Locale?
    private var comparator: Comparator?

    /// A descriptor comparing values with one of Foundation's comparison methods
    /// (`+[NSSortDescriptor sortDescriptorWithKey:ascending:selector:]`).
    ///
    /// ```swift
    /// CoreSortDescriptor(key: "city", selector: .localizedCompare,
    ///                    locale: Locale(identifier: "sv_SE"))
    /// ```
    public init(key: String?, ascending: Bool = true, selector: SortSelector = .compare, locale: Locale? = nil) {
        self.key = key
        self.ascending = ascending
        self.selector = selector
        self.locale = locale
        self.comparator = nil
    }

    /// A descriptor comparing values with a closure
    /// (`+[NSSortDescriptor sortDescriptorWithKey:ascending:comparator:]`). The closure
    /// receives the values at the key path, `nil` included.
    ///
    /// ```swift
    /// CoreSortDescriptor(key: "title") { a, b in
    ///     let x = a.attributeValue?.stringValue?.count ?? 0
    ///     let y = b.attributeValue?.stringValue?.count ?? 0
    ///     return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
    /// }
    /// ```
    public init(
        key: String?, ascending: Bool = true,
        comparator: @escaping @Sendable (EvaluatedValue, EvaluatedValue) -> ComparisonResult
    ) {
        self.key = key
        self.ascending = ascending
        self.selector = nil
        self.locale = nil
        self.comparator = Comparator(body: comparator)
    }

    /// The same descriptor in the other direction.
    public var reversed: CoreSortDescriptor {
        var copy = self
        copy.ascending.toggle()
        return copy
    }

    /// Whether the descriptor uses a closure, which a store cannot translate to SQL.
    public var hasComparator: Bool { comparator != nil }

    /// As `NSSortDescriptor` describes itself: `(name, ascending, compare:)`.
    public var description: String {
        "(\(key ?? "SELF"), \(ascending ? "ascending" : "descending"), \(selector?.rawValue ?? "<comparator>"))"
    }

    /// Compares two objects by the value at ``key`` (`-[NSSortDescriptor
    /// compareObject:toObject:]`).
    public func compare(_ a: Any?, _ b: Any?) -> ComparisonResult {
        compareValues(value(of: EvaluatedValue(any: a)), value(of: EvaluatedValue(any: b)))
    }

    /// The value the descriptor compares for an object: the value at ``key``.
    public func value(of object: EvaluatedValue) -> EvaluatedValue {
        guard let key else { return object }
        return (try? object.value(forKeyPath: key)) ?? .null
    }

    /// Compares two key values (already taken from their objects), applying the
    /// direction.
    public func compareValues(_ a: EvaluatedValue, _ b: EvaluatedValue) -> ComparisonResult {
        let result: ComparisonResult
        if let comparator {
            result = comparator.body(a, b)
        } else {
            result = SortComparison.compare(a, b, selector: selector ?? .compare, locale: locale)
        }
        return ascending ? result : result.reversed
    }

    /// The value to sort an object by, with strings prepared for `compare:` and
    /// `caseInsensitiveCompare:` (canonically decomposed, case folded).
    func sortKey(for object: EvaluatedValue) -> SortKey {
        let value = self.value(of: object)
        if comparator == nil, selector == .compare || selector == .caseInsensitiveCompare,
           case .value(.string(let s)) = value {
            let options: ComparisonOptions = selector == .compare ? [] : .caseInsensitive
            return SortKey(value: value, units: Array(StringComparison.fold(s, options: options).utf16))
        }
        return SortKey(value: value, units: nil)
    }

    func compareKeys(_ a: SortKey, _ b: SortKey) -> ComparisonResult {
        guard let x = a.units, let y = b.units else { return compareValues(a.value, b.value) }
        let result: ComparisonResult = x == y ? .orderedSame
            : (x.lexicographicallyPrecedes(y) ? .orderedAscending : .orderedDescending)
        return ascending ? result : result.reversed
    }

    struct SortKey {
        var value: EvaluatedValue
        var units: [UInt16]?
    }

    private final class Comparator: Sendable, Hashable {
        let body: @Sendable (EvaluatedValue, EvaluatedValue) -> ComparisonResult
        init(body: @escaping @Sendable (EvaluatedValue, EvaluatedValue) -> ComparisonResult) { self.body = body }
        static func == (a: Comparator, b: Comparator) -> Bool { a === b }
        func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    }
}

/// Foundation's string comparison methods a sort descriptor can use.
public enum SortSelector: String, Sendable, Hashable, CaseIterable {
    /// `compare:`: numbers numerically, dates chronologically, strings by Unicode
    /// (canonically equivalent strings are the same; `"B" < "a"`).
    case compare = "compare:"
    /// `caseInsensitiveCompare:`
    case caseInsensitiveCompare = "caseInsensitiveCompare:"
    /// `localizedCompare:`: the locale's collation (`Köln` before `Kyllburg` in German,
    /// `Sundsvall` before `Södertälje` in Swedish).
    case localizedCompare = "localizedCompare:"
    /// `localizedCaseInsensitiveCompare:`
    case localizedCaseInsensitiveCompare = "localizedCaseInsensitiveCompare:"
    /// `localizedStandardCompare:`: as the Finder sorts file names: localized,
    /// case-insensitive, with numbers compared by value (`file2` before `file10`).
    case localizedStandardCompare = "localizedStandardCompare:"
}

extension Array where Element == CoreSortDescriptor {
    /// Compares two objects by each descriptor in turn, the first difference
    /// deciding.
    public func compare(_ a: Any?, _ b: Any?) -> ComparisonResult {
        let x = EvaluatedValue(any: a), y = EvaluatedValue(any: b)
        for descriptor in self {
            let result = descriptor.compareValues(descriptor.value(of: x), descriptor.value(of: y))
            if result != .orderedSame { return result }
        }
        return .orderedSame
    }
}

extension Sequence {
    /// The elements sorted by the descriptors (`-[NSArray
    /// sortedArrayUsingDescriptors:]`): by the first descriptor, then the next for
    /// ties... Elements that compare the same keep their order (the sort is stable).
    ///
    /// ```swift
    /// let cities = ["Sundsvall", "Södertälje", "Stockholm"].sorted(using: [
    ///     CoreSortDescriptor(key: nil, selector: .localizedCompare, locale: Locale(identifier: "sv"))
    /// ])
    /// // ["Stockholm", "Sundsvall", "Södertälje"]
    /// ```
    public func sorted(using descriptors: [CoreSortDescriptor]) -> [Element] {
        let elements = Array(self)
        guard !descriptors.isEmpty, elements.count > 1 else { return elements }
        // Each element's key values, computed once (strings already normalized for
        // the non-localized selectors).
        let keys: [[CoreSortDescriptor.SortKey]] = elements.map { element in
            let object = EvaluatedValue(any: element)
            return descriptors.map { $0.sortKey(for: object) }
        }
        let order = elements.indices.sorted { i, j in
            for (k, descriptor) in descriptors.enumerated() {
                switch descriptor.compareKeys(keys[i][k], keys[j][k]) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return i < j
        }
        return order.map { elements[$0] }
    }

    /// The elements sorted by one descriptor.
    public func sorted(using descriptor: CoreSortDescriptor) -> [Element] {
        sorted(using: [descriptor])
    }
}

extension Array {
    /// Sorts the array in place by the descriptors (`-[NSMutableArray
    /// sortUsingDescriptors:]`), keeping the order of elements that compare the same.
    public mutating func sort(using descriptors: [CoreSortDescriptor]) {
        self = sorted(using: descriptors)
    }
}

/// Comparison for sorting: total (never throws), `nil` first.
enum SortComparison {
    static func compare(_ a: EvaluatedValue, _ b: EvaluatedValue, selector: SortSelector, locale: Locale?) -> ComparisonResult {
        switch (a, b) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        case let (.value(.string(x)), .value(.string(y))):
            return compareStrings(x, y, selector: selector, locale: locale)
        case let (.value(x), .value(y)):
            if let result = x.compare(y) { return result }
        case let (.object(x), .object(y)):
            if let i = x.predicateIdentity, let j = y.predicateIdentity, let result = i.compare(j) { return result }
        default:
            break
        }
        let (p, q) = (rank(a), rank(b))
        return p < q ? .orderedAscending : (p > q ? .orderedDescending : .orderedSame)
    }

    static func compareStrings(_ x: String, _ y: String, selector: SortSelector, locale: Locale?) -> ComparisonResult {
        switch selector {
        case .compare:
            return StringComparison.compare(x, y, options: [])
        case .caseInsensitiveCompare:
            return StringComparison.compare(x, y, options: .caseInsensitive)
        case .localizedCompare:
            return x.compare(y, options: [], range: nil, locale: locale ?? .current)
        case .localizedCaseInsensitiveCompare:
            return x.compare(y, options: [.caseInsensitive], range: nil, locale: locale ?? .current)
        case .localizedStandardCompare:
            return x.compare(
                y, options: [.caseInsensitive, .numeric, .widthInsensitive, .forcedOrdering],
                range: nil, locale: locale ?? .current)
        }
    }

    private static func rank(_ value: EvaluatedValue) -> Int {
        switch value {
        case .null: return 0
        case .value(let v):
            switch v {
            case .bool, .int, .double, .decimal: return 1
            case .string: return 2
            case .date: return 3
            case .data: return 4
            case .uuid: return 5
            case .uri: return 6
            case .null, .array, .dictionary: return 7
            }
        case .collection: return 7
        case .dictionary: return 8
        case .object: return 9
        }
    }
}
