import Foundation

/// What objects expose to predicates and sort descriptors: their values by key, as
/// Foundation's key-value coding (`valueForKey:`).
///
/// Dictionaries with string keys, arrays and ``AttributeValue`` already conform.
/// Your own types conform by answering ``value(forKey:)``; key paths, collection
/// operators (`@count`, `@sum.price`...) and to-many traversal come for free:
///
/// ```swift
/// final class Person: KeyValueCoding {
///     var name: String
///     var friends: [Person]
///     init(name: String, friends: [Person] = []) { ... }
///
///     func value(forKey key: String) -> Any? {
///         switch key {
///         case "name": return name
///         case "friends": return friends
///         default: return nil
///         }
///     }
/// }
///
/// let ada = Person(name: "Ada", friends: [Person(name: "Alan")])
/// try CorePredicate(format: "ANY friends.name == 'Alan'").evaluate(with: ada)  // true
/// ada.value(forKeyPath: "friends.@count")                                    // 1
/// ```
///
/// A value can be any Swift value the evaluator understands (see
/// ``EvaluatedValue/init(any:)``): `nil`, ``AttributeValue``, strings, numbers,
/// dates, data, UUIDs, URLs, arrays, sets, dictionaries, an ``EvaluatedValue``, or
/// another object conforming to this protocol.
public protocol KeyValueCoding {
    /// The value for a key, or `nil` when there is none.
    func value(forKey key: String) -> Any?

    /// The value for a key, throwing when the object does not have the key at all:
    /// what predicates and sort descriptors read, so that a key that came from data
    /// (a predicate typed by a user, a model file) gives an error, never a trap.
    /// The default answers ``value(forKey:)``.
    ///
    /// - Parameter key: The key, as a predicate names it.
    /// - Returns: The value, or `nil` when the key has none.
    /// - Throws: ``PredicateEvaluationError/undefinedKey(_:)`` when the object has
    ///   no such key.
    func checkedValue(forKey key: String) throws -> Any?

    /// The value that stands for the object when it is compared with a constant: a
    /// managed object answers its object ID URI, so that `department == %@` with an
    /// object ID compares the department's ID. `nil` (the default) compares the
    /// object only with itself.
    var predicateIdentity: AttributeValue? { get }

    /// Answers `FUNCTION(object, 'selector', arguments...)`. The default throws
    /// ``PredicateEvaluationError/unsupported(_:)``.
    func performPredicateFunction(_ selector: String, arguments: [EvaluatedValue]) throws -> EvaluatedValue
}

extension KeyValueCoding {
    public var predicateIdentity: AttributeValue? { nil }

    public func checkedValue(forKey key: String) throws -> Any? { value(forKey: key) }

    public func performPredicateFunction(_ selector: String, arguments: [EvaluatedValue]) throws -> EvaluatedValue {
        throw PredicateEvaluationError.unsupported("FUNCTION '\(selector)' on \(type(of: self))")
    }

    /// The value at the end of a key path (`valueForKeyPath:`): keys separated by
    /// dots, through to-many collections (which give the collection of their
    /// members' values), with the collection operators `@count`, `@sum`, `@avg`,
    /// `@min`, `@max`, `@distinctUnionOfObjects`, `@unionOfObjects`,
    /// `@distinctUnionOfArrays`, `@unionOfArrays`, `@distinctUnionOfSets`.
    ///
    /// Returns `nil` when a key along the path has no value or an operator does not
    /// apply. Scalars come back as ``AttributeValue``, collections as `[Any?]`,
    /// dictionaries as `[String: Any?]`.
    public func value(forKeyPath keyPath: String) -> Any? {
        let result = try? EvaluatedValue.object(self).value(forKeyPath: keyPath)
        return result?.anyValue
    }
}

extension Dictionary: KeyValueCoding where Key == String {
    /// The value stored under the key.
    public func value(forKey key: String) -> Any? {
        guard let value = self[key] else { return nil }
        return value
    }
}

extension Array: KeyValueCoding {
    /// The members' values for the key, as `-[NSArray valueForKey:]` answers.
    public func value(forKey key: String) -> Any? {
        (try? EvaluatedValue(any: self).value(forKey: key))?.anyValue
    }
}

extension AttributeValue: KeyValueCoding {
    /// A dictionary's value for the key, an array's members' values; strings answer
    /// `length` and `description`.
    public func value(forKey key: String) -> Any? {
        (try? EvaluatedValue(self).value(forKey: key))?.anyValue
    }
}

// MARK: - Evaluated values

/// A value met while evaluating a predicate: a scalar, `nil`, a collection, a
/// dictionary or an object.
///
/// Unlike the syntax tree it is not `Sendable`, since it may hold objects (managed
/// objects, which belong to one context).
///
/// ```swift
/// let v = try CoreExpression(format: "friends.name").value(with: ada)
/// // .collection([.value(.string("Alan"))], isOrdered: true)
/// ```
public enum EvaluatedValue {
    /// `nil` / `NSNull`.
    case null
    /// A scalar: never `.null`, `.array` or `.dictionary` (those are ``null``,
    /// ``collection(_:isOrdered:)`` and ``dictionary(_:)``).
    case value(AttributeValue)
    /// An array (ordered) or a set (unordered).
    case collection([EvaluatedValue], isOrdered: Bool)
    /// A dictionary with string keys.
    case dictionary([String: EvaluatedValue])
    /// An object exposing its values by key.
    case object(any KeyValueCoding)

    /// Wraps an attribute value: arrays become collections, dictionaries
    /// dictionaries, `.null` ``null``.
    public init(_ value: AttributeValue) {
        switch value {
        case .null: self = .null
        case .array(let values): self = .collection(values.map(EvaluatedValue.init), isOrdered: true)
        case .dictionary(let values): self = .dictionary(values.mapValues(EvaluatedValue.init))
        default: self = .value(value)
        }
    }

    /// Wraps any Swift value: `nil` and `NSNull` are ``null``; ``AttributeValue``,
    /// strings, Booleans, integers, floating-point numbers, decimals, `NSNumber`,
    /// dates, data, UUIDs and URLs are scalars; arrays (and other sequences) are
    /// ordered collections, sets unordered ones; dictionaries with string keys are
    /// dictionaries; ``KeyValueCoding`` values are objects. Anything else is an
    /// object with no keys.
    public init(any: Any?) {
        guard let any = unwrapOptional(any) else {
            self = .null
            return
        }
        switch any {
        case let value as EvaluatedValue: self = value
        case let value as AttributeValue: self = EvaluatedValue(value)
        case is NSNull: self = .null
        case let value as String: self = .value(.string(value))
        case let value as Substring: self = .value(.string(String(value)))
        case let value as Character: self = .value(.string(String(value)))
        case let value as Bool: self = .value(.bool(value))
        case let value as Int: self = .value(.int(Int64(value)))
        case let value as Int64: self = .value(.int(value))
        case let value as Int32: self = .value(.int(Int64(value)))
        case let value as Int16: self = .value(.int(Int64(value)))
        case let value as Int8: self = .value(.int(Int64(value)))
        case let value as UInt: self = .value(value.formatArgumentValue)
        case let value as UInt64: self = .value(value.formatArgumentValue)
        case let value as UInt32: self = .value(.int(Int64(value)))
        case let value as UInt16: self = .value(.int(Int64(value)))
        case let value as UInt8: self = .value(.int(Int64(value)))
        case let value as Double: self = .value(.double(value))
        case let value as Float: self = .value(.double(Double(value)))
        case let value as Decimal: self = .value(.decimal(value))
        case let value as Date: self = .value(.date(value))
        case let value as Data: self = .value(.data(value))
        case let value as UUID: self = .value(.uuid(value))
        case let value as URL: self = .value(.uri(value))
        case let value as [String: Any]: self = .dictionary(value.mapValues { EvaluatedValue(any: $0) })
        case let value as Set<AnyHashable>:
            self = .collection(value.map { EvaluatedValue(any: $0.base) }, isOrdered: false)
        case let value as [Any]: self = .collection(value.map { EvaluatedValue(any: $0) }, isOrdered: true)
        case let value as any KeyValueCoding: self = .object(value)
        case let value as NSNumber: self = EvaluatedValue.number(value)
        // A value that stands for a constant in predicates (an object ID: its URI).
        case let value as any FormatArgument: self = EvaluatedValue(value.formatArgumentValue)
        case let value as any Sequence:
            self = .collection(sequenceElements(value).map { EvaluatedValue(any: $0) }, isOrdered: true)
        default: self = .object(OpaqueObject(value: any))
        }
    }

    private static func number(_ number: NSNumber) -> EvaluatedValue {
        switch String(cString: number.objCType) {
        case "B": return .value(.bool(number.boolValue))
        case "f", "d": return .value(.double(number.doubleValue))
        case "Q": return .value(number.uint64Value.formatArgumentValue)
        default: return .value(.int(number.int64Value))
        }
    }

    /// The value as a plain Swift value: `nil`, an ``AttributeValue`` for scalars,
    /// `[Any?]` for collections, `[String: Any?]` for dictionaries, the object.
    public var anyValue: Any? {
        switch self {
        case .null: return nil
        case .value(let value): return value
        case .collection(let values, _): return values.map(\.anyValue)
        case .dictionary(let values): return values.mapValues(\.anyValue)
        case .object(let object):
            if let opaque = object as? OpaqueObject { return opaque.value }
            return object
        }
    }

    /// The value as an ``AttributeValue`` when it is one (objects are not; their
    /// ``KeyValueCoding/predicateIdentity`` is used if they have one).
    public var attributeValue: AttributeValue? {
        switch self {
        case .null: return .null
        case .value(let value): return value
        case .collection(let values, _):
            var result: [AttributeValue] = []
            for value in values {
                guard let v = value.attributeValue else { return nil }
                result.append(v)
            }
            return .array(result)
        case .dictionary(let values):
            var result: [String: AttributeValue] = [:]
            for (key, value) in values {
                guard let v = value.attributeValue else { return nil }
                result[key] = v
            }
            return .dictionary(result)
        case .object(let object):
            return object.predicateIdentity
        }
    }

    /// Whether the value is `nil`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The members, if the value is a collection.
    public var collectionElements: [EvaluatedValue]? {
        if case .collection(let values, _) = self { return values }
        return nil
    }
}

/// A value of a type the evaluator does not know: it has no keys and equals only
/// itself (by identity for classes).
struct OpaqueObject: KeyValueCoding {
    var value: Any
    func value(forKey key: String) -> Any? { nil }
}

private protocol OptionalProtocol {
    var wrappedAny: Any? { get }
}

extension Optional: OptionalProtocol {
    fileprivate var wrappedAny: Any? {
        switch self {
        case .none: return nil
        case .some(let value): return value
        }
    }
}

/// Unwraps nested optionals hidden in an `Any`.
private func unwrapOptional(_ value: Any?) -> Any? {
    var current = value
    while let some = current {
        guard let optional = some as? any OptionalProtocol else { return some }
        current = optional.wrappedAny
    }
    return nil
}

private func sequenceElements<S: Sequence>(_ sequence: S) -> [Any] {
    sequence.map { $0 as Any }
}
