import Foundation
import OpenCoreDataPredicates

/// Converts attribute values to and from `NSKeyedArchiver` archives, the bytes a
/// Core Data SQLite store keeps for transformable attributes that use
/// `NSSecureUnarchiveFromDataTransformer` (the default) or the legacy
/// `NSKeyedUnarchiveFromDataTransformer`.
///
/// Strings, numbers, data, dates, decimals, UUIDs, URLs, and arrays and
/// dictionaries of them archive as the matching Foundation classes (`NSString`,
/// `NSNumber`, `NSData`, `NSDate`, `NSDecimalNumber`, `NSUUID`, `NSURL`,
/// `NSArray`, `NSDictionary`), so an Apple device unarchives them as it would its
/// own, and archives written by Apple decode into the same `AttributeValue`
/// trees. Custom classes (`UIColor`, your own `NSSecureCoding` types) cannot be
/// decoded on Linux: their archives fail with an error naming the class; register
/// a custom transformer for such attributes (``ValueTransformerRegistry``).
///
/// ```swift
/// let data = try AttributeValueArchiver.archivedData(withRootValue: ["red", "green"])
/// let value = try AttributeValueArchiver.unarchivedValue(from: data)
/// // .array([.string("red"), .string("green")])
/// ```
public enum AttributeValueArchiver {
    /// The deepest nesting of arrays and dictionaries archived or unarchived.
    public static var maximumDepth: Int { KeyedArchiveWriter.maximumDepth }

    /// The keyed archive (a `bplist00` binary property list) of `value`.
    ///
    /// Throws a ``CoreDataError`` when the value nests deeper than ``maximumDepth``.
    public static func archivedData(withRootValue value: AttributeValue) throws -> Data {
        try KeyedArchiveWriter().archive(value)
    }

    /// The value archived in `data` (by Apple's `NSKeyedArchiver` or by
    /// ``archivedData(withRootValue:)``).
    ///
    /// Throws a ``CoreDataError``: ``CoreDataError/Code/fileReadCorruptFile`` for
    /// data that is not a well-formed keyed archive, ``CoreDataError/Code/coreData``
    /// (naming the class) for objects of classes other than the plist-like
    /// Foundation ones.
    public static func unarchivedValue(from data: Data) throws -> AttributeValue {
        try KeyedArchiveValueReader.value(from: data)
    }
}
