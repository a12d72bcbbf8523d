import Foundation
import OpenCoreDataPredicates

// The runtime behind `@Managed`: one generic getter and one generic setter that
// look at the Swift type of the property to decide how to read and write it.
//
// | Swift type                           | Stored as                                   |
// |--------------------------------------|---------------------------------------------|
// | `Int`, `Int16`…, `Double`, `String`… | the attribute's value (``ManagedScalar``)   |
// | `X` / `X?`, X a ManagedObject        | a to-one relationship                       |
// | `Set<X>`                             | a to-many relationship                      |
// | `[X]`                                | an ordered to-many relationship             |
// | other `Codable` types                | an `AttributeValue` tree (transformable)  |
// | `Optional` of any of these           | the same, nil when there is no value        |
//
// The dispatch is on `T.self` at run time, through the marker protocols below,
// rather than through overloads: `[String]` (Codable) and `[Tag]` (ordered
// relationship) would otherwise be ambiguous.

/// A Swift type stored directly in an attribute: the integer and floating-point
/// types, `Bool`, `String`, `Date`, `Data`, `UUID`, `URL` and `Decimal`.
///
/// `@Managed` properties of these types (and their optionals) read and write the
/// attribute's value; `@ManagedEntity` gives them the matching attribute type.
/// Conform your own types to store them as a plain attribute rather than as a
/// transformable one:
///
/// ```swift
/// enum Rating: Int16, ManagedScalar {
///     case bad, ok, good
///     static var managedAttributeType: AttributeType { .integer16 }
///     static var managedNeutralValue: Rating { .ok }
///     init?(managedAttributeValue value: AttributeValue) {
///         guard let raw = value.int64Value.flatMap(Int16.init(exactly:)) else { return nil }
///         self.init(rawValue: raw)
///     }
///     var managedAttributeValue: AttributeValue { .int(Int64(rawValue)) }
/// }
/// ```
public protocol ManagedScalar {
    /// The attribute type of the values.
    static var managedAttributeType: AttributeType { get }
    /// The value read from a non-optional property whose attribute is nil.
    static var managedNeutralValue: Self { get }
    /// The value an attribute value holds, or nil when it holds none of this type.
    init?(managedAttributeValue value: AttributeValue)
    /// The attribute value of this value.
    var managedAttributeValue: AttributeValue { get }
}

extension ManagedScalar where Self: FixedWidthInteger {
    /// An integer read from any number that holds it exactly.
    public init?(managedAttributeValue value: AttributeValue) {
        guard let integer = value.int64Value, let exact = Self(exactly: integer) else { return nil }
        self = exact
    }
    public var managedAttributeValue: AttributeValue { .int(Int64(self)) }
    /// Zero.
    public static var managedNeutralValue: Self { 0 }
}

extension Int: ManagedScalar {
    public static var managedAttributeType: AttributeType { .integer64 }
}

extension Int16: ManagedScalar {
    public static var managedAttributeType: AttributeType { .integer16 }
}

extension Int32: ManagedScalar {
    public static var managedAttributeType: AttributeType { .integer32 }
}

extension Int64: ManagedScalar {
    public static var managedAttributeType: AttributeType { .integer64 }
}

extension Double: ManagedScalar {
    public static var managedAttributeType: AttributeType { .double }
    /// Zero.
    public static var managedNeutralValue: Double { 0 }
    public init?(managedAttributeValue value: AttributeValue) {
        guard let double = value.doubleValue else { return nil }
        self = double
    }
    public var managedAttributeValue: AttributeValue { .double(self) }
}

extension Float: ManagedScalar {
    public static var managedAttributeType: AttributeType { .float }
    /// Zero.
    public static var managedNeutralValue: Float { 0 }
    public init?(managedAttributeValue value: AttributeValue) {
        guard let double = value.doubleValue else { return nil }
        self = Float(double)
    }
    public var managedAttributeValue: AttributeValue { .double(Double(self)) }
}

extension Bool: ManagedScalar {
    public static var managedAttributeType: AttributeType { .boolean }
    /// `false`.
    public static var managedNeutralValue: Bool { false }
    public init?(managedAttributeValue value: AttributeValue) {
        guard let bool = value.boolValue else { return nil }
        self = bool
    }
    public var managedAttributeValue: AttributeValue { .bool(self) }
}

extension String: ManagedScalar {
    public static var managedAttributeType: AttributeType { .string }
    /// The empty string.
    public static var managedNeutralValue: String { "" }
    public init?(managedAttributeValue value: AttributeValue) {
        guard let string = value.stringValue else { return nil }
        self = string
    }
    public var managedAttributeValue: AttributeValue { .string(self) }
}

extension Date: ManagedScalar {
    public static var managedAttributeType: AttributeType { .date }
    /// The reference date, 2001-01-01 00:00:00 UTC.
    public static var managedNeutralValue: Date { AttributeValueCoding.neutralDate }
    public init?(managedAttributeValue value: AttributeValue) {
        guard let date = value.dateValue else { return nil }
        self = date
    }
    public var managedAttributeValue: AttributeValue { .date(self) }
}

extension Data: ManagedScalar {
    public static var managedAttributeType: AttributeType { .binaryData }
    /// Empty data.
    public static var managedNeutralValue: Data { Data() }
    public init?(managedAttributeValue value: AttributeValue) {
        guard let data = value.dataValue else { return nil }
        self = data
    }
    public var managedAttributeValue: AttributeValue { .data(self) }
}

extension UUID: ManagedScalar {
    public static var managedAttributeType: AttributeType { .uuid }
    /// The nil UUID, 00000000-0000-0000-0000-000000000000.
    public static var managedNeutralValue: UUID { AttributeValueCoding.neutralUUID }
    public init?(managedAttributeValue value: AttributeValue) {
        switch value {
        case .uuid(let uuid): self = uuid
        case .string(let string):
            guard let uuid = UUID(uuidString: string) else { return nil }
            self = uuid
        default: return nil
        }
    }
    public var managedAttributeValue: AttributeValue { .uuid(self) }
}

extension URL: ManagedScalar {
    public static var managedAttributeType: AttributeType { .uri }
    /// `file:///`.
    public static var managedNeutralValue: URL { AttributeValueCoding.neutralURL }
    public init?(managedAttributeValue value: AttributeValue) {
        switch value {
        case .uri(let url): self = url
        case .string(let string):
            guard let url = URL(string: string) else { return nil }
            self = url
        default: return nil
        }
    }
    public var managedAttributeValue: AttributeValue { .uri(self) }
}

extension Decimal: ManagedScalar {
    public static var managedAttributeType: AttributeType { .decimal }
    /// Zero.
    public static var managedNeutralValue: Decimal { 0 }
    public init?(managedAttributeValue value: AttributeValue) {
        switch value {
        case .decimal(let decimal): self = decimal
        case .int(let integer): self = Decimal(integer)
        case .double(let double):
            guard double.isFinite else { return nil }
            self = Decimal(double)
        case .bool(let bool): self = bool ? 1 : 0
        default: return nil
        }
    }
    public var managedAttributeValue: AttributeValue { .decimal(self) }
}

// MARK: - Markers

/// `Optional`, seen from a generic context.
protocol ManagedOptionalMarker {
    /// The type of the wrapped value.
    static var managedWrappedType: Any.Type { get }
    /// The property `key` of `object` read as this optional type, boxed.
    static func managedRead(_ object: ManagedObject, forKey key: String) -> Any
    /// The wrapped value of `value` (a value of this optional type), or nil.
    static func managedUnwrap(_ value: Any) -> Any?
}

extension Optional: ManagedOptionalMarker {
    static var managedWrappedType: Any.Type { Wrapped.self }

    static func managedRead(_ object: ManagedObject, forKey key: String) -> Any {
        let value: Wrapped? = object.presentManagedValue(Wrapped.self, forKey: key)
        return value as Any
    }

    static func managedUnwrap(_ value: Any) -> Any? {
        guard case .some(.some(let wrapped)) = value as? Wrapped? else { return nil }
        return wrapped
    }
}

/// `Set<X>` and `[X]` with `X` a managed object class: to-many relationships.
protocol ManagedToManyMarker {
    /// The class of the members.
    static var managedElementType: ManagedObject.Type { get }
    /// Whether the relationship is ordered (an array).
    static var managedIsOrdered: Bool { get }
    /// A collection of this type holding the objects of `objects` of the element class.
    static func managedMake(_ objects: [ManagedObject]) -> Any
}

extension Set: ManagedToManyMarker where Element: ManagedObject {
    static var managedElementType: ManagedObject.Type { Element.self }
    static var managedIsOrdered: Bool { false }
    static func managedMake(_ objects: [ManagedObject]) -> Any { Set(objects.compactMap { $0 as? Element }) }
}

extension Array: ManagedToManyMarker where Element: ManagedObject {
    static var managedElementType: ManagedObject.Type { Element.self }
    static var managedIsOrdered: Bool { true }
    static func managedMake(_ objects: [ManagedObject]) -> Any { objects.compactMap { $0 as? Element } }
}

// MARK: - Accessors

extension ManagedObject {
    /// The value of the property `key`, as the Swift type `T`: the getter of a
    /// `@Managed` property.
    ///
    /// `T` decides how the property is read (see ``ManagedScalar``): a scalar
    /// reads the attribute, a managed object class the to-one relationship, a
    /// `Set` or an array of managed objects the to-many relationship, any other
    /// `Decodable` type decodes the attribute's `AttributeValue` tree.
    ///
    /// ```swift
    /// let date: Date = mood.managedValue(forKey: "date")
    /// let country: Country? = mood.managedValue(forKey: "country")
    /// let tags: Set<Tag> = mood.managedValue(forKey: "tags")
    /// ```
    ///
    /// An optional `T` is nil when there is no value (or a value that can't be
    /// read as `T`). A non-optional `T` never traps on missing data; it reads a
    /// neutral value instead:
    /// - scalars: ``ManagedScalar/managedNeutralValue`` (0, `false`, `""`, empty
    ///   data, the reference date 2001-01-01, the nil UUID, `file:///`);
    /// - to-many relationships: an empty collection;
    /// - `Decodable` values: the value decoded leniently (missing keys and nulls
    ///   read as the neutral values above, collections as empty ones, optionals
    ///   as nil), else the first case of a `CaseIterable` type.
    ///
    /// A non-optional to-one relationship that is nil has no neutral value: reading
    /// it stops the program with a message naming the entity and the key (set it
    /// before reading, or declare it optional). A `Decodable` type that offers none
    /// of these (an enum that isn't `CaseIterable` and has no neutral raw value)
    /// must be declared optional or given a `default:`;
    /// ``ManagedObjectModel/init(classes:versionIdentifier:)`` rejects it, and
    /// reading it otherwise stops the program.
    ///
    /// - Parameter key: The name of a property of the object's entity.
    /// - Returns: The value as `T`.
    public func managedValue<T>(forKey key: String) -> T {
        observeRead(key)
        if let optional = T.self as? any ManagedOptionalMarker.Type {
            return ManagedAccess.cast(optional.managedRead(self, forKey: key), to: T.self, key: key)
        }
        if let value = presentManagedValue(T.self, forKey: key) { return value }
        if let neutral = ManagedAccess.neutralValue(T.self, stored: attributeValue(forKey: key),
                                                    destination: entity.relationshipsByName[key]?.destinationEntity) {
            return neutral
        }
        if T.self is ManagedObject.Type {
            preconditionFailure("OpenCoreData: the to-one relationship '\(key)' of \(entity.name) is nil, and \(T.self) is not optional. "
                + "Set it before reading it, or declare it `\(T.self)?`.")
        }
        preconditionFailure("OpenCoreData: '\(key)' of \(type(of: self)) is nil, and \(T.self) has no neutral value. Declare it optional or give it @Managed(default:).")
    }

    /// The value of the property `key` as `T`, or `defaultValue` when it has
    /// none: the getter of `@Managed(default:)` properties.
    ///
    /// ```swift
    /// let kind: Kind = mood.managedValue(forKey: "kind", default: .happy)
    /// ```
    ///
    /// For an optional `T` the stored value is returned as is (nil included): the
    /// default is then only the model's default value, which new objects start with.
    public func managedValue<T>(forKey key: String, default defaultValue: @autoclosure () -> T) -> T {
        if T.self is any ManagedOptionalMarker.Type { return managedValue(forKey: key) }
        observeRead(key)
        return presentManagedValue(T.self, forKey: key) ?? defaultValue()
    }

    /// Sets the property `key` from a Swift value: the setter of a `@Managed`
    /// property.
    ///
    /// Relationships (to-one objects, sets and arrays of objects) are set through
    /// ``setValue(_:forKey:)``, which maintains their inverses; scalars through
    /// ``setAttributeValue(_:forKey:)``; other `Encodable` values are encoded with
    /// ``AttributeValueEncoder``. nil clears the property.
    ///
    /// ```swift
    /// mood.setManagedValue(Date(), forKey: "date")
    /// mood.setManagedValue(Optional<Country>.none, forKey: "country")
    /// ```
    ///
    /// A value whose encoding throws is stored as nil (and reported by validation
    /// when the property is not optional).
    public func setManagedValue<T>(_ value: T, forKey key: String) {
        if let optional = T.self as? any ManagedOptionalMarker.Type {
            guard let wrapped = optional.managedUnwrap(value) else {
                if entity.relationshipsByName[key] != nil {
                    setValue(nil, forKey: key)
                } else {
                    setAttributeValue(.null, forKey: key)
                }
                return
            }
            setManagedAny(wrapped, forKey: key)
            return
        }
        setManagedAny(value, forKey: key)
    }

    /// Sets `key` from a non-optional value of any type.
    private func setManagedAny(_ value: Any, forKey key: String) {
        if entity.relationshipsByName[key] != nil {
            setValue(value, forKey: key)
            return
        }
        if let scalar = value as? any ManagedScalar {
            setAttributeValue(scalar.managedAttributeValue, forKey: key)
        } else if let encodable = value as? any Encodable {
            setAttributeValue((try? AttributeValueEncoder().encode(encodable)) ?? .null, forKey: key)
        } else {
            setValue(value, forKey: key)
        }
    }

    /// The value of `key` as a `T` when there is one, nil otherwise.
    func presentManagedValue<T>(_ type: T.Type, forKey key: String) -> T? {
        if let scalar = T.self as? any ManagedScalar.Type {
            return scalar.init(managedAttributeValue: attributeValue(forKey: key)) as? T
        }
        if let optional = T.self as? any ManagedOptionalMarker.Type {
            return optional.managedRead(self, forKey: key) as? T
        }
        if let toMany = T.self as? any ManagedToManyMarker.Type {
            return toMany.managedMake(objects(forRelationship: key)) as? T
        }
        if T.self is ManagedObject.Type {
            return value(forKey: key) as? T
        }
        if let decodable = T.self as? any Decodable.Type {
            let stored = attributeValue(forKey: key)
            if stored.isNull { return nil }
            return (try? AttributeValueDecoder().decode(decodable, from: stored)) as? T
        }
        return value(forKey: key) as? T
    }
}

/// Helpers of the generic accessors.
enum ManagedAccess {
    /// `value` as a `T`; the accessors only call this with values of type `T`.
    static func cast<T>(_ value: Any, to type: T.Type, key: String) -> T {
        if let typed = value as? T { return typed }
        preconditionFailure("OpenCoreData: internal error: the value read for '\(key)' is not a \(T.self)")
    }

    /// The value a non-optional property of type `T` reads when it has none (see
    /// ``ManagedObject/managedValue(forKey:)``), or nil when `T` offers none.
    static func neutralValue<T>(_ type: T.Type, stored: AttributeValue, destination: EntityDescription?) -> T? {
        if let scalar = T.self as? any ManagedScalar.Type {
            return scalar.managedNeutralValue as? T
        }
        if let toMany = T.self as? any ManagedToManyMarker.Type {
            return toMany.managedMake([]) as? T
        }
        // A to-one relationship has none: a nil one is a programmer error (see
        // `ManagedObject.managedValue(forKey:)`).
        if T.self is ManagedObject.Type { return nil }
        if let decodable = T.self as? any Decodable.Type {
            var decoder = AttributeValueDecoder()
            decoder.lenient = true
            if let value = (try? decoder.decode(decodable, from: stored)) as? T { return value }
            if !stored.isNull, let value = (try? decoder.decode(decodable, from: .null)) as? T { return value }
        }
        if let cases = T.self as? any CaseIterable.Type {
            return firstCase(of: cases) as? T
        }
        return nil
    }

    private static func firstCase<C: CaseIterable>(of type: C.Type) -> Any? {
        type.allCases.first
    }

    /// Whether a non-optional property of type `T` has a neutral value.
    static func hasNeutralValue<T>(_ type: T.Type) -> Bool {
        if T.self is any ManagedOptionalMarker.Type { return true }
        if T.self is ManagedObject.Type { return true }
        return neutralValue(type, stored: .null, destination: nil) != nil
    }
}
