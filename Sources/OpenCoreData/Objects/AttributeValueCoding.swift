import Foundation
import OpenCoreDataPredicates

/// Encodes `Encodable` values as an `AttributeValue` tree: the storage of
/// transformable attributes declared with a `Codable` Swift type.
///
/// Keyed containers become `AttributeValue/dictionary(_:)`, unkeyed containers
/// `AttributeValue/array(_:)`; `Date`, `Data`, `UUID`, `URL` and `Decimal` keep
/// their own cases, so nothing is lost on the way to the store and back.
///
/// ```swift
/// struct Color: Codable { var red, green, blue: Double }
/// let value = try AttributeValueEncoder().encode([Color(red: 1, green: 0, blue: 0)])
/// // .array([.dictionary(["red": .double(1), "green": .double(0), "blue": .double(0)])])
/// let colors = try AttributeValueDecoder().decode([Color].self, from: value)
/// ```
public struct AttributeValueEncoder {
    /// Values handed to `encode(to:)` through `Encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// An encoder.
    public init() {}

    /// The attribute value of `value`.
    public func encode<T: Encodable>(_ value: T) throws -> AttributeValue {
        try AttributeValueCoding.box(value, codingPath: [], userInfo: userInfo)
    }
}

/// Decodes `Decodable` values from an `AttributeValue` tree written by
/// ``AttributeValueEncoder`` (or any tree of the same shape).
///
/// ```swift
/// let tags = try AttributeValueDecoder().decode([String].self, from: ["a", "b"])
/// ```
///
/// Numbers convert between kinds when the value is exact (an `.int(3)` decodes
/// as a `Double`, a `.double(3)` as an `Int`); strings decode as `UUID` and `URL`.
public struct AttributeValueDecoder {
    /// Values handed to `init(from:)` through `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]
    /// When set, missing keys, nulls and values of the wrong type decode as
    /// neutral values (0, "", false, empty collections) instead of failing.
    var lenient = false

    /// A decoder.
    public init() {}

    /// The value of type `type` that `value` encodes.
    public func decode<T: Decodable>(_ type: T.Type, from value: AttributeValue) throws -> T {
        try AttributeValueCoding.unbox(value, as: type, context: .init(codingPath: [], userInfo: userInfo, lenient: lenient))
    }
}

/// The plumbing shared by the encoder and the decoder.
enum AttributeValueCoding {
    /// The neutral value of each type that has its own case.
    static let neutralDate = Date(timeIntervalSinceReferenceDate: 0)
    static let neutralUUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    static let neutralURL = URL(fileURLWithPath: "/")

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue }
        init(intValue: Int) {
            self.stringValue = String(intValue)
            self.intValue = intValue
        }
        static let superKey = AnyKey(stringValue: "super")
    }

    // MARK: Encoding

    /// A value under construction: containers add children to it.
    final class Node {
        enum Content {
            case empty
            case value(AttributeValue)
            case keyed([String: Node])
            case unkeyed([Node])
        }
        var content: Content = .empty

        var attributeValue: AttributeValue {
            switch content {
            case .empty: return .dictionary([:])
            case .value(let value): return value
            case .keyed(let children): return .dictionary(children.mapValues(\.attributeValue))
            case .unkeyed(let children): return .array(children.map(\.attributeValue))
            }
        }

        func makeKeyed() {
            if case .keyed = content { return }
            content = .keyed([:])
        }

        func makeUnkeyed() {
            if case .unkeyed = content { return }
            content = .unkeyed([])
        }

        func set(_ child: Node, forKey key: String) {
            guard case .keyed(var children) = content else { return }
            content = .empty
            children[key] = child
            content = .keyed(children)
        }

        func append(_ child: Node) {
            guard case .unkeyed(var children) = content else { return }
            content = .empty
            children.append(child)
            content = .unkeyed(children)
        }

        var count: Int {
            if case .unkeyed(let children) = content { return children.count }
            return 0
        }
    }

    /// The attribute value of a value of a type with a case of its own, or nil.
    static func primitive(_ value: Any) -> AttributeValue? {
        switch value {
        case let v as Bool: return .bool(v)
        case let v as String: return .string(v)
        case let v as Double: return .double(v)
        case let v as Float: return .double(Double(v))
        case let v as Int: return .int(Int64(v))
        case let v as Int8: return .int(Int64(v))
        case let v as Int16: return .int(Int64(v))
        case let v as Int32: return .int(Int64(v))
        case let v as Int64: return .int(v)
        case let v as UInt: return unsigned(UInt64(v))
        case let v as UInt8: return .int(Int64(v))
        case let v as UInt16: return .int(Int64(v))
        case let v as UInt32: return .int(Int64(v))
        case let v as UInt64: return unsigned(v)
        case let v as Date: return .date(v)
        case let v as Data: return .data(v)
        case let v as UUID: return .uuid(v)
        case let v as URL: return .uri(v)
        case let v as Decimal: return .decimal(v)
        default: return nil
        }
    }

    static func unsigned(_ value: UInt64) -> AttributeValue {
        Int64(exactly: value).map { .int($0) } ?? .decimal(Decimal(value))
    }

    static func box<T: Encodable>(_ value: T, codingPath: [any CodingKey],
                                  userInfo: [CodingUserInfoKey: any Sendable]) throws -> AttributeValue {
        if let primitive = primitive(value) { return primitive }
        let node = Node()
        try value.encode(to: NodeEncoder(node: node, codingPath: codingPath, userInfo: userInfo))
        return node.attributeValue
    }

    struct NodeEncoder: Encoder {
        let node: Node
        var codingPath: [any CodingKey]
        let userInfoStorage: [CodingUserInfoKey: any Sendable]
        var userInfo: [CodingUserInfoKey: Any] { userInfoStorage }

        init(node: Node, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
            self.node = node
            self.codingPath = codingPath
            self.userInfoStorage = userInfo
        }

        func container<K: CodingKey>(keyedBy type: K.Type) -> KeyedEncodingContainer<K> {
            node.makeKeyed()
            return KeyedEncodingContainer(KeyedEncoder<K>(node: node, codingPath: codingPath, userInfo: userInfoStorage))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            node.makeUnkeyed()
            return UnkeyedEncoder(node: node, codingPath: codingPath, userInfo: userInfoStorage)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer {
            SingleValueEncoder(node: node, codingPath: codingPath, userInfo: userInfoStorage)
        }
    }

    struct KeyedEncoder<K: CodingKey>: KeyedEncodingContainerProtocol {
        let node: Node
        var codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: any Sendable]

        func put(_ value: AttributeValue, _ key: K) {
            let child = Node()
            child.content = .value(value)
            node.set(child, forKey: key.stringValue)
        }

        mutating func encodeNil(forKey key: K) throws { put(.null, key) }
        mutating func encode(_ value: Bool, forKey key: K) throws { put(.bool(value), key) }
        mutating func encode(_ value: String, forKey key: K) throws { put(.string(value), key) }
        mutating func encode(_ value: Double, forKey key: K) throws { put(.double(value), key) }
        mutating func encode(_ value: Float, forKey key: K) throws { put(.double(Double(value)), key) }
        mutating func encode(_ value: Int, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: K) throws { put(.int(value), key) }
        mutating func encode(_ value: UInt, forKey key: K) throws { put(unsigned(UInt64(value)), key) }
        mutating func encode(_ value: UInt8, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: K) throws { put(.int(Int64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: K) throws { put(unsigned(value), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: K) throws {
            put(try box(value, codingPath: codingPath + [key], userInfo: userInfo), key)
        }

        mutating func nestedContainer<NK: CodingKey>(keyedBy keyType: NK.Type, forKey key: K) -> KeyedEncodingContainer<NK> {
            let child = Node()
            child.makeKeyed()
            node.set(child, forKey: key.stringValue)
            return KeyedEncodingContainer(KeyedEncoder<NK>(node: child, codingPath: codingPath + [key], userInfo: userInfo))
        }

        mutating func nestedUnkeyedContainer(forKey key: K) -> any UnkeyedEncodingContainer {
            let child = Node()
            child.makeUnkeyed()
            node.set(child, forKey: key.stringValue)
            return UnkeyedEncoder(node: child, codingPath: codingPath + [key], userInfo: userInfo)
        }

        mutating func superEncoder() -> any Encoder { superEncoder(named: AnyKey.superKey) }
        mutating func superEncoder(forKey key: K) -> any Encoder { superEncoder(named: key) }

        func superEncoder(named key: any CodingKey) -> any Encoder {
            let child = Node()
            node.set(child, forKey: key.stringValue)
            return NodeEncoder(node: child, codingPath: codingPath + [key], userInfo: userInfo)
        }
    }

    /// The primitive `encode` methods of the unkeyed and single-value containers,
    /// written once: each stores the value as an `AttributeValue` with `put`.
    protocol PrimitivePutting {
        func put(_ value: AttributeValue)
    }

    struct UnkeyedEncoder: UnkeyedEncodingContainer, PrimitivePutting {
        let node: Node
        var codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: any Sendable]
        var count: Int { node.count }

        func put(_ value: AttributeValue) {
            let child = Node()
            child.content = .value(value)
            node.append(child)
        }

        var nextKey: AnyKey { AnyKey(intValue: count) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            put(try box(value, codingPath: codingPath + [nextKey], userInfo: userInfo))
        }

        mutating func nestedContainer<NK: CodingKey>(keyedBy keyType: NK.Type) -> KeyedEncodingContainer<NK> {
            let key = nextKey
            let child = Node()
            child.makeKeyed()
            node.append(child)
            return KeyedEncodingContainer(KeyedEncoder<NK>(node: child, codingPath: codingPath + [key], userInfo: userInfo))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let key = nextKey
            let child = Node()
            child.makeUnkeyed()
            node.append(child)
            return UnkeyedEncoder(node: child, codingPath: codingPath + [key], userInfo: userInfo)
        }

        mutating func superEncoder() -> any Encoder {
            let key = nextKey
            let child = Node()
            node.append(child)
            return NodeEncoder(node: child, codingPath: codingPath + [key], userInfo: userInfo)
        }
    }

    struct SingleValueEncoder: SingleValueEncodingContainer, PrimitivePutting {
        let node: Node
        var codingPath: [any CodingKey]
        let userInfo: [CodingUserInfoKey: any Sendable]

        func put(_ value: AttributeValue) { node.content = .value(value) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            put(try box(value, codingPath: codingPath, userInfo: userInfo))
        }
    }

    // MARK: Decoding

    struct Context {
        var codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: any Sendable]
        var lenient: Bool

        func appending(_ key: any CodingKey) -> Context {
            Context(codingPath: codingPath + [key], userInfo: userInfo, lenient: lenient)
        }

        func mismatch(_ type: Any.Type, _ value: AttributeValue) -> DecodingError {
            DecodingError.typeMismatch(type, .init(codingPath: codingPath,
                                                   debugDescription: "Expected \(type), found \(value)"))
        }
    }

    /// `value` as a `T`: directly for types with a case of their own (and numbers
    /// across kinds), else through `T.init(from:)`.
    static func unbox<T: Decodable>(_ value: AttributeValue, as type: T.Type, context: Context) throws -> T {
        if let primitive = try unboxPrimitive(value, as: type, context: context) { return primitive }
        return try T(from: ValueDecoder(value: value, context: context))
    }

    /// `value` as a `T` when `T` is a primitive type; nil for other types.
    static func unboxPrimitive<T>(_ value: AttributeValue, as type: T.Type, context: Context) throws -> T? {
        func pick<P>(_ converted: P?, _ neutral: P) throws -> T? {
            if let converted { return converted as? T }
            if context.lenient { return neutral as? T }
            throw context.mismatch(T.self, value)
        }
        func integer<I: FixedWidthInteger>(_: I.Type) throws -> T? {
            let converted: I? = switch value {
            case .int(let i): I(exactly: i)
            case .double(let d): d.isFinite ? I(exactly: d) : nil
            case .decimal(let d): value.int64Value.flatMap { Decimal($0) == d ? I(exactly: $0) : nil }
            case .bool(let b): b ? 1 : 0
            default: nil
            }
            return try pick(converted, 0)
        }
        switch type {
        case is Bool.Type:
            let converted: Bool? = if case .bool(let b) = value { b } else if value.isNumber { value.boolValue } else { nil }
            return try pick(converted, false)
        case is String.Type:
            let converted: String? = switch value {
            case .string(let s): s
            case .uuid(let u): u.uuidString
            case .uri(let u): u.absoluteString
            default: nil
            }
            return try pick(converted, "")
        case is Double.Type: return try pick(value.doubleValue, 0.0)
        case is Float.Type: return try pick(value.doubleValue.map { Float($0) }, Float(0))
        case is Int.Type: return try integer(Int.self)
        case is Int8.Type: return try integer(Int8.self)
        case is Int16.Type: return try integer(Int16.self)
        case is Int32.Type: return try integer(Int32.self)
        case is Int64.Type: return try integer(Int64.self)
        case is UInt.Type: return try integer(UInt.self)
        case is UInt8.Type: return try integer(UInt8.self)
        case is UInt16.Type: return try integer(UInt16.self)
        case is UInt32.Type: return try integer(UInt32.self)
        case is UInt64.Type:
            if case .decimal(let d) = value, d >= 0 {
                let number = NSDecimalNumber(decimal: d).uint64Value
                if Decimal(number) == d { return number as? T }
            }
            return try integer(UInt64.self)
        case is Date.Type:
            let converted: Date? = switch value {
            case .date(let d): d
            case .double, .int: value.doubleValue.map { Date(timeIntervalSinceReferenceDate: $0) }
            default: nil
            }
            return try pick(converted, neutralDate)
        case is Data.Type:
            return try pick(value.dataValue, Data())
        case is UUID.Type:
            let converted: UUID? = switch value {
            case .uuid(let u): u
            case .string(let s): UUID(uuidString: s)
            default: nil
            }
            return try pick(converted, neutralUUID)
        case is URL.Type:
            let converted: URL? = switch value {
            case .uri(let u): u
            case .string(let s): URL(string: s)
            default: nil
            }
            return try pick(converted, neutralURL)
        case is Decimal.Type:
            let converted: Decimal? = switch value {
            case .decimal(let d): d
            case .int(let i): Decimal(i)
            case .double(let d): d.isFinite ? Decimal(d) : nil
            case .bool(let b): b ? 1 : 0
            default: nil
            }
            return try pick(converted, Decimal(0))
        default:
            return nil
        }
    }

    struct ValueDecoder: Decoder {
        let value: AttributeValue
        let context: Context
        var codingPath: [any CodingKey] { context.codingPath }
        var userInfo: [CodingUserInfoKey: Any] { context.userInfo }

        func container<K: CodingKey>(keyedBy type: K.Type) throws -> KeyedDecodingContainer<K> {
            switch value {
            case .dictionary(let values):
                return KeyedDecodingContainer(KeyedDecoder<K>(values: values, context: context))
            default:
                guard context.lenient else { throw context.mismatch([String: Any].self, value) }
                return KeyedDecodingContainer(KeyedDecoder<K>(values: [:], context: context))
            }
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            switch value {
            case .array(let values):
                return UnkeyedDecoder(values: values, context: context)
            default:
                guard context.lenient else { throw context.mismatch([Any].self, value) }
                return UnkeyedDecoder(values: [], context: context)
            }
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            SingleValueDecoder(value: value, context: context)
        }
    }

    struct KeyedDecoder<K: CodingKey>: KeyedDecodingContainerProtocol {
        let values: [String: AttributeValue]
        let context: Context
        var codingPath: [any CodingKey] { context.codingPath }
        var allKeys: [K] { values.keys.compactMap { K(stringValue: $0) } }

        func contains(_ key: K) -> Bool { context.lenient || values[key.stringValue] != nil }

        func value(for key: K) throws -> AttributeValue {
            if let value = values[key.stringValue] { return value }
            if context.lenient { return .null }
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "No value for key '\(key.stringValue)'"))
        }

        func decodeNil(forKey key: K) throws -> Bool { (values[key.stringValue] ?? .null).isNull }

        func decode<T: Decodable>(_ type: T.Type, forKey key: K) throws -> T {
            try unbox(try value(for: key), as: type, context: context.appending(key))
        }

        private func decode<T: Decodable>(_ type: T.Type, _ key: K) throws -> T {
            try unbox(try value(for: key), as: type, context: context.appending(key))
        }

        func decode(_ type: Bool.Type, forKey key: K) throws -> Bool { try decode(type as Bool.Type, key) }
        func decode(_ type: String.Type, forKey key: K) throws -> String { try decode(type as String.Type, key) }
        func decode(_ type: Double.Type, forKey key: K) throws -> Double { try decode(type as Double.Type, key) }
        func decode(_ type: Float.Type, forKey key: K) throws -> Float { try decode(type as Float.Type, key) }
        func decode(_ type: Int.Type, forKey key: K) throws -> Int { try decode(type as Int.Type, key) }
        func decode(_ type: Int8.Type, forKey key: K) throws -> Int8 { try decode(type as Int8.Type, key) }
        func decode(_ type: Int16.Type, forKey key: K) throws -> Int16 { try decode(type as Int16.Type, key) }
        func decode(_ type: Int32.Type, forKey key: K) throws -> Int32 { try decode(type as Int32.Type, key) }
        func decode(_ type: Int64.Type, forKey key: K) throws -> Int64 { try decode(type as Int64.Type, key) }
        func decode(_ type: UInt.Type, forKey key: K) throws -> UInt { try decode(type as UInt.Type, key) }
        func decode(_ type: UInt8.Type, forKey key: K) throws -> UInt8 { try decode(type as UInt8.Type, key) }
        func decode(_ type: UInt16.Type, forKey key: K) throws -> UInt16 { try decode(type as UInt16.Type, key) }
        func decode(_ type: UInt32.Type, forKey key: K) throws -> UInt32 { try decode(type as UInt32.Type, key) }
        func decode(_ type: UInt64.Type, forKey key: K) throws -> UInt64 { try decode(type as UInt64.Type, key) }

        func nestedContainer<NK: CodingKey>(keyedBy type: NK.Type, forKey key: K) throws -> KeyedDecodingContainer<NK> {
            try ValueDecoder(value: try value(for: key), context: context.appending(key)).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: K) throws -> any UnkeyedDecodingContainer {
            try ValueDecoder(value: try value(for: key), context: context.appending(key)).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            ValueDecoder(value: values[AnyKey.superKey.stringValue] ?? .null, context: context.appending(AnyKey.superKey))
        }

        func superDecoder(forKey key: K) throws -> any Decoder {
            ValueDecoder(value: values[key.stringValue] ?? .null, context: context.appending(key))
        }
    }

    struct UnkeyedDecoder: UnkeyedDecodingContainer {
        let values: [AttributeValue]
        let context: Context
        var currentIndex = 0
        var codingPath: [any CodingKey] { context.codingPath }
        var count: Int? { values.count }
        var isAtEnd: Bool { currentIndex >= values.count }

        init(values: [AttributeValue], context: Context) {
            self.values = values
            self.context = context
        }

        mutating func next() throws -> (AttributeValue, Context) {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(AttributeValue.self, .init(codingPath: codingPath, debugDescription: "Unkeyed container is at end"))
            }
            defer { currentIndex += 1 }
            return (values[currentIndex], context.appending(AnyKey(intValue: currentIndex)))
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, values[currentIndex].isNull else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeNext(type) }

        private mutating func decodeNext<T: Decodable>(_ type: T.Type) throws -> T {
            let (value, context) = try next()
            return try unbox(value, as: type, context: context)
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try decodeNext(type) }
        mutating func decode(_ type: String.Type) throws -> String { try decodeNext(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try decodeNext(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { try decodeNext(type) }
        mutating func decode(_ type: Int.Type) throws -> Int { try decodeNext(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeNext(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeNext(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeNext(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeNext(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeNext(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeNext(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeNext(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeNext(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeNext(type) }

        mutating func nestedContainer<NK: CodingKey>(keyedBy type: NK.Type) throws -> KeyedDecodingContainer<NK> {
            let (value, context) = try next()
            return try ValueDecoder(value: value, context: context).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let (value, context) = try next()
            return try ValueDecoder(value: value, context: context).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            let (value, context) = try next()
            return ValueDecoder(value: value, context: context)
        }
    }

    struct SingleValueDecoder: SingleValueDecodingContainer {
        let value: AttributeValue
        let context: Context
        var codingPath: [any CodingKey] { context.codingPath }

        func decodeNil() -> Bool { value.isNull }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try unbox(value, as: type, context: context)
        }

        func decode(_ type: Bool.Type) throws -> Bool { try unbox(value, as: type, context: context) }
        func decode(_ type: String.Type) throws -> String { try unbox(value, as: type, context: context) }
        func decode(_ type: Double.Type) throws -> Double { try unbox(value, as: type, context: context) }
        func decode(_ type: Float.Type) throws -> Float { try unbox(value, as: type, context: context) }
        func decode(_ type: Int.Type) throws -> Int { try unbox(value, as: type, context: context) }
        func decode(_ type: Int8.Type) throws -> Int8 { try unbox(value, as: type, context: context) }
        func decode(_ type: Int16.Type) throws -> Int16 { try unbox(value, as: type, context: context) }
        func decode(_ type: Int32.Type) throws -> Int32 { try unbox(value, as: type, context: context) }
        func decode(_ type: Int64.Type) throws -> Int64 { try unbox(value, as: type, context: context) }
        func decode(_ type: UInt.Type) throws -> UInt { try unbox(value, as: type, context: context) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try unbox(value, as: type, context: context) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try unbox(value, as: type, context: context) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try unbox(value, as: type, context: context) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try unbox(value, as: type, context: context) }
    }
}

extension AttributeValueCoding.PrimitivePutting {
    mutating func encodeNil() throws { put(.null) }
    mutating func encode(_ value: Bool) throws { put(.bool(value)) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws { put(.double(value)) }
    mutating func encode(_ value: Float) throws { put(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { put(.int(value)) }
    mutating func encode(_ value: UInt) throws { put(AttributeValueCoding.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { put(AttributeValueCoding.unsigned(value)) }
}
