import Foundation
import OpenCoreDataPredicates

/// A named, reversible conversion between an attribute's value and the bytes a
/// store keeps for it: the Linux counterpart of a `ValueTransformer` used by a
/// transformable attribute.
///
/// Core Data calls the transformer named by the attribute's
/// `valueTransformerName` to turn the value into `Data` when saving and back when
/// fetching. OpenCoreData does the same with closures, looked up by name in a
/// ``ValueTransformerRegistry``. A `.null` value is never handed to a
/// transformer: the store keeps SQL `NULL` for it.
///
/// ```swift
/// // The objc.io "Moody" app stores colors as 3 bytes (red, green, blue) each.
/// let colors = AttributeValueTransformer(
///     name: "ColorsTransformer",
///     transformedValue: { value in
///         guard case .array(let components) = value else { throw MyError.notColors }
///         return Data(components.compactMap { $0.int64Value.map { UInt8(clamping: $0) } })
///     },
///     reverseTransformedValue: { data in .array(data.map { .int(Int64($0)) }) })
/// ValueTransformerRegistry.shared.register(colors)
/// ```
public struct AttributeValueTransformer: Sendable {
    /// The name attributes refer to it by (`valueTransformerName`).
    public let name: String
    private let forward: @Sendable (AttributeValue) throws -> Data
    private let reverse: @Sendable (Data) throws -> AttributeValue

    /// A transformer from two closures: value to bytes, and bytes back to value.
    public init(
        name: String,
        transformedValue: @escaping @Sendable (AttributeValue) throws -> Data,
        reverseTransformedValue: @escaping @Sendable (Data) throws -> AttributeValue
    ) {
        self.name = name
        self.forward = transformedValue
        self.reverse = reverseTransformedValue
    }

    /// The bytes stored for `value`.
    public func transformedValue(_ value: AttributeValue) throws -> Data {
        try forward(value)
    }

    /// The value stored as `data`.
    public func reverseTransformedValue(_ data: Data) throws -> AttributeValue {
        try reverse(data)
    }

    /// `NSSecureUnarchiveFromDataTransformer`: a keyed archive of plist-like
    /// Foundation objects (``AttributeValueArchiver``). Core Data's default for
    /// transformable attributes without a transformer name.
    public static let secureUnarchiveFromData = AttributeValueTransformer(
        name: ValueTransformerRegistry.secureUnarchiveFromDataTransformerName,
        transformedValue: { try AttributeValueArchiver.archivedData(withRootValue: $0) },
        reverseTransformedValue: { try AttributeValueArchiver.unarchivedValue(from: $0) })

    /// `NSKeyedUnarchiveFromDataTransformer`, the pre-iOS 12 default: the same
    /// keyed-archive format without secure-coding class checks.
    public static let keyedUnarchiveFromData = AttributeValueTransformer(
        name: ValueTransformerRegistry.keyedUnarchiveFromDataTransformerName,
        transformedValue: { try AttributeValueArchiver.archivedData(withRootValue: $0) },
        reverseTransformedValue: { try AttributeValueArchiver.unarchivedValue(from: $0) })
}
