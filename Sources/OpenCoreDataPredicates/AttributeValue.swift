import Foundation

/// A value that an attribute can hold, a predicate can compare against, and a store
/// can bind into a statement.
///
/// Core Data keeps attribute values as Objective-C objects (`NSNumber`, `NSString`,
/// `NSDate`, ...). OpenCoreData keeps them in this one small enum, shared by the
/// model (default values), managed objects (their property storage), predicates
/// (constants) and stores (rows and bindings), so a value never changes shape on its
/// way from the file to your code.
///
/// ```swift
/// let age: AttributeValue = 42
/// let name: AttributeValue = "Zoë"
/// let missing: AttributeValue = .null
/// age.int64Value      // 42
/// name.stringValue    // "Zoë"
/// missing.isNull      // true
/// ```
///
/// Numbers keep the kind they were created with (`.int`, `.double`, `.decimal`,
/// `.bool`) but compare across kinds the way `NSNumber` does: see
/// ``AttributeValue/compare(_:)``.
public enum AttributeValue: Sendable, Hashable {
    /// No value: `nil` / `NSNull`.
    case null
    /// A Boolean (`NSNumber` holding `YES`/`NO`).
    case bool(Bool)
    /// Any integer: Integer 16, 32 and 64 attributes.
    case int(Int64)
    /// A floating-point number: Double and Float attributes.
    case double(Double)
    /// A decimal number: Decimal attributes (`NSDecimalNumber`).
    case decimal(Decimal)
    /// A string.
    case string(String)
    /// A point in time.
    case date(Date)
    /// Raw bytes: Binary attributes.
    case data(Data)
    /// A UUID.
    case uuid(UUID)
    /// A URL: URI attributes.
    case uri(URL)
    /// An ordered list of values (`NSArray`).
    case array([AttributeValue])
    /// A dictionary with string keys (`NSDictionary`): Composite attributes, plists.
    case dictionary([String: AttributeValue])
}

extension AttributeValue {
    /// Whether this is ``null``.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The value as a string, if it is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value as a 64-bit integer, if it is a number (doubles and decimals are
    /// truncated toward zero, Booleans are 0 or 1), as `-[NSNumber longLongValue]`.
    public var int64Value: Int64? {
        switch self {
        case .int(let i): return i
        case .bool(let b): return b ? 1 : 0
        case .double(let d):
            guard d.isFinite, d >= -9.223372036854775808e18, d < 9.223372036854775808e18 else { return nil }
            return Int64(d)
        case .decimal(let d):
            return Int64(exactly: NSDecimalNumber(decimal: d).int64Value)
        default: return nil
        }
    }

    /// The value as a double, if it is a number, as `-[NSNumber doubleValue]`.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .bool(let b): return b ? 1 : 0
        case .double(let d): return d
        case .decimal(let d): return NSDecimalNumber(decimal: d).doubleValue
        default: return nil
        }
    }

    /// The value as a Boolean, if it is a number (non-zero is true), as
    /// `-[NSNumber boolValue]`.
    public var boolValue: Bool? {
        switch self {
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .double(let d): return d != 0
        case .decimal(let d): return !d.isZero
        default: return nil
        }
    }

    /// The value as a date, if it is one.
    public var dateValue: Date? {
        if case .date(let d) = self { return d }
        return nil
    }

    /// The value as data, if it is some.
    public var dataValue: Data? {
        if case .data(let d) = self { return d }
        return nil
    }

    /// Whether the value is a number (`.int`, `.double`, `.decimal` or `.bool`).
    public var isNumber: Bool {
        switch self {
        case .int, .double, .decimal, .bool: return true
        default: return false
        }
    }
}

extension AttributeValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension AttributeValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension AttributeValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension AttributeValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension AttributeValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: AttributeValue...) { self = .array(elements) }
}

extension AttributeValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, AttributeValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
