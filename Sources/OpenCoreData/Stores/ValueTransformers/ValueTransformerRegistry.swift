import Foundation
import OpenCoreDataPredicates
import Synchronization

/// The value transformers transformable attributes are stored with, by name: the
/// Linux counterpart of `ValueTransformer.setValueTransformer(_:forName:)`.
///
/// Every registry starts with Core Data's built-in transformers:
///
/// * `NSSecureUnarchiveFromData`
///   (``AttributeValueTransformer/secureUnarchiveFromData``), also found as
///   `NSSecureUnarchiveFromDataTransformerName` (the constant's name, which
///   models often spell out), and used for transformable attributes without a
///   transformer name, as Core Data does since iOS 12 / macOS 10.14;
/// * `NSKeyedUnarchiveFromData`
///   (``AttributeValueTransformer/keyedUnarchiveFromData``), also found as
///   `NSKeyedUnarchiveFromDataTransformerName`: the legacy name, same format.
///
/// Register your own transformers before opening a store whose model names them.
/// A model may name a Swift class with its module (`Moody.ColorsTransformer`);
/// when no transformer has that exact name, the part after the last dot is tried.
/// All methods are thread-safe.
///
/// ```swift
/// ValueTransformerRegistry.shared.register(name: "ColorsTransformer",
///     transformedValue: { value in try encodeColors(value) },
///     reverseTransformedValue: { data in try decodeColors(data) })
///
/// let data = try ValueTransformerRegistry.shared.transformedValue(.array(["a"]), for: tagsAttribute)
/// let value = try ValueTransformerRegistry.shared.reverseTransformedValue(data, for: tagsAttribute)
/// ```
public final class ValueTransformerRegistry: Sendable {
    /// `NSSecureUnarchiveFromDataTransformerName`'s value.
    public static let secureUnarchiveFromDataTransformerName = "NSSecureUnarchiveFromData"
    /// `NSKeyedUnarchiveFromDataTransformerName`'s value.
    public static let keyedUnarchiveFromDataTransformerName = "NSKeyedUnarchiveFromData"

    /// The registry stores use unless given another.
    public static let shared = ValueTransformerRegistry()

    /// Names that stand for a built-in transformer's name.
    private static let aliases = [
        "NSSecureUnarchiveFromDataTransformerName": secureUnarchiveFromDataTransformerName,
        "NSKeyedUnarchiveFromDataTransformerName": keyedUnarchiveFromDataTransformerName,
    ]

    private let transformers: Lock<[String: AttributeValueTransformer]>

    /// A registry holding the built-in transformers.
    public init() {
        transformers = Lock([
            AttributeValueTransformer.secureUnarchiveFromData.name: .secureUnarchiveFromData,
            AttributeValueTransformer.keyedUnarchiveFromData.name: .keyedUnarchiveFromData,
        ])
    }

    /// Registers `transformer` under its name, replacing any transformer of that name.
    public func register(_ transformer: AttributeValueTransformer) {
        transformers.withLock { $0[transformer.name] = transformer }
    }

    /// Registers a transformer made of two closures under `name`.
    public func register(
        name: String,
        transformedValue: @escaping @Sendable (AttributeValue) throws -> Data,
        reverseTransformedValue: @escaping @Sendable (Data) throws -> AttributeValue
    ) {
        register(AttributeValueTransformer(name: name, transformedValue: transformedValue,
                                           reverseTransformedValue: reverseTransformedValue))
    }

    /// Removes the transformer registered under `name`; returns whether there was one.
    @discardableResult
    public func unregister(name: String) -> Bool {
        transformers.withLock { $0.removeValue(forKey: name) != nil }
    }

    /// The names of every registered transformer, sorted.
    public var names: [String] {
        transformers.withLock { $0.keys.sorted() }
    }

    /// The transformer registered under `name` (or an alias of it), if any.
    public func transformer(named name: String) -> AttributeValueTransformer? {
        transformers.withLock { registered in
            if let found = registered[name] { return found }
            if let canonical = Self.aliases[name], let found = registered[canonical] { return found }
            if let dot = name.lastIndex(of: "."), let found = registered[String(name[name.index(after: dot)...])] {
                return found
            }
            return nil
        }
    }

    /// The transformer for an attribute whose transformer name is `transformerName`
    /// (nil or empty: `NSSecureUnarchiveFromData`).
    ///
    /// Throws a ``CoreDataError`` (``CoreDataError/Code/coreData``) naming the
    /// attribute and the transformer when no transformer has that name.
    public func transformer(named transformerName: String?, attributeName: String, entityName: String? = nil) throws -> AttributeValueTransformer {
        let name = transformerName.flatMap { $0.isEmpty ? nil : $0 } ?? Self.secureUnarchiveFromDataTransformerName
        if let found = transformer(named: name) { return found }
        let owner = entityName.map { "\($0).\(attributeName)" } ?? attributeName
        throw CoreDataError(.coreData,
                            "the transformable attribute '\(owner)' uses the value transformer '\(name)', which is not registered (register it with ValueTransformerRegistry.register(name:transformedValue:reverseTransformedValue:))",
                            entityName: entityName, key: attributeName, valueDescription: name)
    }

    /// The transformer of `attribute` (its ``AttributeDescription/valueTransformerName``,
    /// `NSSecureUnarchiveFromData` when it has none).
    public func transformer(for attribute: AttributeDescription) throws -> AttributeValueTransformer {
        try transformer(named: attribute.valueTransformerName, attributeName: attribute.name, entityName: attribute.entity?.name)
    }

    /// The bytes a store keeps for `value` of `attribute`: nil (SQL `NULL`) for `.null`.
    public func transformedValue(_ value: AttributeValue, for attribute: AttributeDescription) throws -> Data? {
        if value.isNull { return nil }
        return try transformer(for: attribute).transformedValue(value)
    }

    /// The value of `attribute` stored as `data`: `.null` for nil (SQL `NULL`).
    public func reverseTransformedValue(_ data: Data?, for attribute: AttributeDescription) throws -> AttributeValue {
        guard let data else { return .null }
        return try transformer(for: attribute).reverseTransformedValue(data)
    }
}
