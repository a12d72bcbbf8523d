import Foundation

/// The type of an attribute: `NSAttributeType`, with Core Data's raw values.
///
/// Each type has the name Xcode's model editor shows and writes in the model file
/// (``xcodeName``), and the raw value that Core Data archives and hashes
/// (`rawValue`, e.g. 300 for Integer 64).
///
/// ```swift
/// let type = AttributeType(xcodeName: "Integer 64")   // .integer64
/// type?.rawValue                                      // 300
/// AttributeType.date.xcodeName                         // "Date"
/// ```
public enum AttributeType: Int, Sendable, Hashable, CaseIterable {
    /// No type: only valid on transient attributes.
    case undefined = 0
    /// A 16-bit signed integer.
    case integer16 = 100
    /// A 32-bit signed integer.
    case integer32 = 200
    /// A 64-bit signed integer.
    case integer64 = 300
    /// A decimal number (`NSDecimalNumber`).
    case decimal = 400
    /// A double-precision floating-point number.
    case double = 500
    /// A single-precision floating-point number.
    case float = 600
    /// A string.
    case string = 700
    /// A Boolean.
    case boolean = 800
    /// A date.
    case date = 900
    /// Raw bytes, optionally stored outside the store file.
    case binaryData = 1000
    /// A UUID.
    case uuid = 1100
    /// A URL.
    case uri = 1200
    /// A value stored through a value transformer.
    case transformable = 1800
    /// An object ID: only valid for expression descriptions in fetch requests.
    case objectID = 2000
    /// A composite of named values (`NSCompositeAttributeDescription`).
    case composite = 2100

    /// The name Xcode writes in the `attributeType` XML attribute.
    public var xcodeName: String {
        switch self {
        case .undefined: return "Undefined"
        case .integer16: return "Integer 16"
        case .integer32: return "Integer 32"
        case .integer64: return "Integer 64"
        case .decimal: return "Decimal"
        case .double: return "Double"
        case .float: return "Float"
        case .string: return "String"
        case .boolean: return "Boolean"
        case .date: return "Date"
        case .binaryData: return "Binary"
        case .uuid: return "UUID"
        case .uri: return "URI"
        case .transformable: return "Transformable"
        case .objectID: return "ObjectID"
        case .composite: return "Composite"
        }
    }

    /// The type Xcode names `xcodeName` ("Integer 16", "Binary", ...), or nil.
    ///
    /// - Parameter xcodeName: The `attributeType` of Xcode's model file.
    public init?(xcodeName: String) {
        guard let type = AttributeType.allCases.first(where: { $0.xcodeName == xcodeName }) else {
            return nil
        }
        self = type
    }

    /// Whether values of this type are numbers (integers, decimal, double, float,
    /// Boolean).
    public var isNumeric: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: return true
        default: return false
        }
    }

    /// Whether values of this type are integers.
    public var isInteger: Bool {
        self == .integer16 || self == .integer32 || self == .integer64
    }

    /// The range an integer attribute of this type can hold.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: return Int64(Int16.min)...Int64(Int16.max)
        case .integer32: return Int64(Int32.min)...Int64(Int32.max)
        case .integer64: return Int64.min...Int64.max
        default: return nil
        }
    }
}
