import Foundation

// MARK: - Comparing values the way Foundation does

extension AttributeValue {
    /// Compares two values the way Foundation's `compare:` methods do.
    ///
    /// - Numbers (`.int`, `.double`, `.decimal`, `.bool`) compare by numeric value across
    ///   kinds, like `-[NSNumber compare:]`: `1 == 1.0 == true`, and a large `Int64` is
    ///   compared exactly with a `Double` (no rounding through `Double`).
    /// - Strings compare like `-[NSString compare:]`: canonically equivalent strings are
    ///   the same, otherwise the order of their UTF-16 code units (decomposed form).
    /// - Dates compare chronologically, UUIDs by their string, URLs by their absolute
    ///   string, data byte by byte.
    /// - ``null`` sorts before every other value, as sort descriptors order `nil`.
    ///
    /// Values of kinds Foundation cannot compare (a string and a number, say) give
    /// `nil`: `-[NSString compare:]` raises in that case.
    ///
    /// ```swift
    /// AttributeValue.int(3).compare(.double(3.5))     // .orderedAscending
    /// AttributeValue.bool(true).compare(.int(1))      // .orderedSame
    /// AttributeValue.string("a").compare(.int(1))     // nil
    /// ```
    public func compare(_ other: AttributeValue) -> ComparisonResult? {
        switch (self, other) {
        case (.null, .null): return .orderedSame
        case (.null, _): return .orderedAscending
        case (_, .null): return .orderedDescending
        default: break
        }
        if let a = numericValue, let b = other.numericValue {
            return NumericValue.compare(a, b)
        }
        switch (self, other) {
        case let (.string(a), .string(b)):
            return StringComparison.compare(a, b, options: [])
        case let (.date(a), .date(b)):
            return a < b ? .orderedAscending : (a > b ? .orderedDescending : .orderedSame)
        case let (.uuid(a), .uuid(b)):
            return StringComparison.compare(a.uuidString, b.uuidString, options: [])
        case let (.uri(a), .uri(b)):
            return StringComparison.compare(a.absoluteString, b.absoluteString, options: [])
        case let (.data(a), .data(b)):
            if a == b { return .orderedSame }
            return a.lexicographicallyPrecedes(b) ? .orderedAscending : .orderedDescending
        default:
            return nil
        }
    }

    /// Whether two values are equal the way `-[NSObject isEqual:]` sees them: numbers
    /// by numeric value across kinds (`1`, `1.0` and `true` are equal, as `NSNumber`
    /// says), arrays and dictionaries element by element, everything else with `==`.
    ///
    /// Predicates and expressions use this for their constants, so that a predicate
    /// read back from its ``CorePredicate/predicateFormat`` (where `YES` prints as `1`)
    /// equals the original.
    public func isEquivalent(to other: AttributeValue) -> Bool {
        if let a = numericValue, let b = other.numericValue {
            return NumericValue.compare(a, b) == .orderedSame
        }
        switch (self, other) {
        case let (.array(a), .array(b)):
            guard a.count == b.count else { return false }
            for (x, y) in zip(a, b) where !x.isEquivalent(to: y) { return false }
            return true
        case let (.dictionary(a), .dictionary(b)):
            guard a.count == b.count else { return false }
            for (key, x) in a {
                guard let y = b[key], x.isEquivalent(to: y) else { return false }
            }
            return true
        default:
            return self == other
        }
    }

    /// Feeds the hasher consistently with ``isEquivalent(to:)``: equivalent values hash
    /// the same.
    public func hashEquivalent(into hasher: inout Hasher) {
        if let number = numericValue {
            hasher.combine(0 as UInt8)
            number.hashEquivalent(into: &hasher)
            return
        }
        switch self {
        case .array(let values):
            hasher.combine(1 as UInt8)
            hasher.combine(values.count)
            for value in values { value.hashEquivalent(into: &hasher) }
        case .dictionary(let values):
            hasher.combine(2 as UInt8)
            hasher.combine(values.count)
            var combined = 0
            for (key, value) in values {
                var entry = Hasher()
                entry.combine(key)
                value.hashEquivalent(into: &entry)
                combined ^= entry.finalize()
            }
            hasher.combine(combined)
        default:
            hasher.combine(3 as UInt8)
            hasher.combine(self)
        }
    }

    var numericValue: NumericValue? {
        switch self {
        case .bool(let b): return .int(b ? 1 : 0)
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .decimal(let d): return .decimal(d)
        default: return nil
        }
    }
}

// MARK: - Numbers

/// A number as NSNumber holds it, compared across representations.
enum NumericValue {
    case int(Int64)
    case double(Double)
    case decimal(Decimal)

    var doubleValue: Double {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .decimal(let d): return NSDecimalNumber(decimal: d).doubleValue
        }
    }

    var attributeValue: AttributeValue {
        switch self {
        case .int(let i): return .int(i)
        case .double(let d): return .double(d)
        case .decimal(let d): return .decimal(d)
        }
    }

    static func compare(_ a: NumericValue, _ b: NumericValue) -> ComparisonResult {
        switch (a, b) {
        case let (.int(x), .int(y)):
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.double(x), .double(y)):
            return compareDoubles(x, y)
        case let (.int(i), .double(d)):
            return compareInt(i, toDouble: d)
        case let (.double(d), .int(i)):
            return compareInt(i, toDouble: d).reversed
        case let (.decimal(x), .decimal(y)):
            if x.isNaN || y.isNaN { return compareDoubles(a.doubleValue, b.doubleValue) }
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.decimal(x), .int(i)):
            if x.isNaN { return .orderedAscending }
            let y = Decimal(i)
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        case let (.int(i), .decimal(x)):
            return compare(.decimal(x), .int(i)).reversed
        case (.decimal, .double), (.double, .decimal):
            return compareDoubles(a.doubleValue, b.doubleValue)
        }
    }

    /// NaN sorts before every other number and equals NaN, so that sorting is total.
    static func compareDoubles(_ x: Double, _ y: Double) -> ComparisonResult {
        if x.isNaN || y.isNaN {
            if x.isNaN && y.isNaN { return .orderedSame }
            return x.isNaN ? .orderedAscending : .orderedDescending
        }
        return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
    }

    /// Compares an integer with a double exactly (no rounding of the integer).
    static func compareInt(_ i: Int64, toDouble d: Double) -> ComparisonResult {
        if d.isNaN { return .orderedDescending }
        if d >= 9.223372036854775808e18 { return .orderedAscending }
        if d < -9.223372036854775808e18 { return .orderedDescending }
        let whole = d.rounded(.towardZero)
        let w = Int64(whole)
        if i < w { return .orderedAscending }
        if i > w { return .orderedDescending }
        let fraction = d - whole
        if fraction > 0 { return .orderedAscending }
        if fraction < 0 { return .orderedDescending }
        return .orderedSame
    }

    func hashEquivalent(into hasher: inout Hasher) {
        switch self {
        case .int(let i):
            hasher.combine(i)
        case .double(let d):
            if let i = NumericValue.exactInt64(d) {
                hasher.combine(i)
            } else if d.isNaN {
                hasher.combine("nan")
            } else {
                hasher.combine(d)
            }
        case .decimal(let x):
            if let i = Int64(x.description) {
                hasher.combine(i)
            } else {
                NumericValue.double(doubleValue).hashEquivalent(into: &hasher)
            }
        }
    }

    static func exactInt64(_ d: Double) -> Int64? {
        guard d.isFinite, d.rounded(.towardZero) == d,
              d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else { return nil }
        return Int64(d)
    }
}

extension ComparisonResult {
    var reversed: ComparisonResult {
        switch self {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }
}
