import Foundation

/// A value that can be given to a format string: what `%@`, `%K`, `%d`, `%f`, `%s`...
/// consume, in order.
///
/// Strings, integers, floating-point numbers, Booleans, decimals, dates, data, UUIDs,
/// URLs, ``AttributeValue``, and arrays, sets, dictionaries and optionals of them
/// conform:
///
/// ```swift
/// let p = try CorePredicate(format: "name == %@ AND age > %d AND tag IN %@",
///                           "x", 3, ["a", "b"])
/// p.predicateFormat   // name == "x" AND age > 3 AND tag IN {"a", "b"}
///
/// let names = ["Ada", "Alan"]
/// let q = try CorePredicate(format: "%K IN %@", arguments: ["name", names])
///
/// // Mixed types in one array argument:
/// let r = try CorePredicate(format: "SELF IN %@", FormatArgumentList(["a", 1]))
/// ```
///
/// Conform your own types (an object ID, say) by returning the constant they stand
/// for.
public protocol FormatArgument {
    /// The constant the argument stands for in the predicate.
    var formatArgumentValue: AttributeValue { get }
}

extension AttributeValue: FormatArgument {
    public var formatArgumentValue: AttributeValue { self }
}

extension String: FormatArgument {
    public var formatArgumentValue: AttributeValue { .string(self) }
}

extension Substring: FormatArgument {
    public var formatArgumentValue: AttributeValue { .string(String(self)) }
}

extension Bool: FormatArgument {
    public var formatArgumentValue: AttributeValue { .bool(self) }
}

extension Int: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension Int8: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension Int16: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension Int32: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension Int64: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(self) }
}

extension UInt: FormatArgument {
    public var formatArgumentValue: AttributeValue {
        Int64(exactly: self).map { .int($0) } ?? .double(Double(self))
    }
}

extension UInt8: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension UInt16: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension UInt32: FormatArgument {
    public var formatArgumentValue: AttributeValue { .int(Int64(self)) }
}

extension UInt64: FormatArgument {
    public var formatArgumentValue: AttributeValue {
        Int64(exactly: self).map { .int($0) } ?? .double(Double(self))
    }
}

extension Double: FormatArgument {
    public var formatArgumentValue: AttributeValue { .double(self) }
}

extension Float: FormatArgument {
    public var formatArgumentValue: AttributeValue { .double(Double(self)) }
}

extension Decimal: FormatArgument {
    public var formatArgumentValue: AttributeValue { .decimal(self) }
}

extension Date: FormatArgument {
    public var formatArgumentValue: AttributeValue { .date(self) }
}

extension Data: FormatArgument {
    public var formatArgumentValue: AttributeValue { .data(self) }
}

extension UUID: FormatArgument {
    public var formatArgumentValue: AttributeValue { .uuid(self) }
}

extension URL: FormatArgument {
    public var formatArgumentValue: AttributeValue { .uri(self) }
}

extension Optional: FormatArgument where Wrapped: FormatArgument {
    /// `nil` is the constant `nil`.
    public var formatArgumentValue: AttributeValue {
        switch self {
        case .none: return .null
        case .some(let value): return value.formatArgumentValue
        }
    }
}

extension Array: FormatArgument where Element: FormatArgument {
    public var formatArgumentValue: AttributeValue { .array(map(\.formatArgumentValue)) }
}

extension Set: FormatArgument where Element: FormatArgument {
    /// A set is given as an array of its members (in no particular order).
    public var formatArgumentValue: AttributeValue { .array(map(\.formatArgumentValue)) }
}

extension Dictionary: FormatArgument where Key == String, Value: FormatArgument {
    public var formatArgumentValue: AttributeValue { .dictionary(mapValues(\.formatArgumentValue)) }
}

/// An array of arguments of different types: `["a", 1] as [any FormatArgument]`
/// given to `%@` is the array constant `{"a", 1}`.
public struct FormatArgumentList: FormatArgument {
    /// The members of the array.
    public var elements: [any FormatArgument]
    /// An array argument from values of any argument types.
    public init(_ elements: [any FormatArgument]) { self.elements = elements }
    public var formatArgumentValue: AttributeValue { .array(elements.map(\.formatArgumentValue)) }
}
