import Foundation
import OpenCoreDataPredicates

/// Writes an `AttributeValue` tree as an `NSKeyedArchiver` archive, the bytes
/// Apple's `NSSecureUnarchiveFromDataTransformer` stores for a transformable
/// attribute; ``KeyedArchiveValueReader`` reads them back.
///
/// The archive is a binary property list (``BinaryPropertyListWriter``) with
/// `$archiver` = `NSKeyedArchiver`, `$version` = 100000, `$top` = `{root: UID}`
/// and every object in `$objects`, index 0 being `$null`. Each value is archived
/// as the Foundation object Core Data would hand to the transformer:
///
/// | AttributeValue | class | in `$objects` |
/// |---|---|---|
/// | `.null` | nil (root) / NSNull (in a collection) | `UID(0)` (`$null`) / `{$class}`, one shared object |
/// | `.bool`, `.int`, `.double` | NSNumber | a plain plist Boolean, integer or real |
/// | `.string` | NSString | a plain plist string (`"$null"`: `{NS.string, $class}`, an NSMutableString) |
/// | `.data` | NSData | plain plist data |
/// | `.date` | NSDate | `{NS.time: real, $class}` (seconds since 2001) |
/// | `.decimal` | NSDecimalNumber (`$classname` NSDecimalNumberPlaceholder) | `{NS.exponent, NS.length, NS.negative, NS.compact, NS.mantissa: 16 bytes, NS.mantissa.bo: 1, $class}` |
/// | `.uuid` | NSUUID | `{NS.uuidbytes: 16 bytes, $class}` |
/// | `.uri` | NSURL | `{NS.base: base URL or $null, NS.relative: UID → string, $class}` |
/// | `.array` | NSArray | `{NS.objects: [UID], $class}` |
/// | `.dictionary` | NSDictionary | `{NS.keys: [UID], NS.objects: [UID], $class}` (keys sorted) |
///
/// Class descriptions are written once per class, after the first object of the
/// class and its children, as `{"$classname": "NSArray", "$classes": ["NSArray",
/// "NSObject"]}`. Equal strings and numbers are archived once and shared, as
/// Foundation shares identical objects.
///
/// The layout (object order, key order inside the archive dictionaries, integer
/// widths) follows real archives written by Apple (the transformable `fileURL`
/// column of the `Model1.sqlite` fixture, the `Z_MODELCACHE` archives of the other
/// fixture stores); see the ValueTransformer tests.
///
/// ```swift
/// let data = try KeyedArchiveWriter().archive(["tags": ["a", "b"], "count": 2])
/// try KeyedArchiveValueReader.value(from: data)   // the same tree
/// ```
struct KeyedArchiveWriter {
    /// The deepest nesting of arrays and dictionaries archived (and unarchived).
    /// Writing and reading recurse once per level; 64 levels fit a 256 KB thread
    /// stack even in debug builds (measured), and no Codable value nests deeper
    /// in practice.
    static let maximumDepth = 64

    /// The order of the archive's top-level keys. Apple writes them in hash-table
    /// order, which changed between releases; this is the order of recent
    /// archives (Core Data framework 1048), `$top, $objects, $version, $archiver`
    /// being that of older ones.
    var topKeyOrder = ["$version", "$archiver", "$top", "$objects"]

    /// An archived scalar, compared the way the archive will compare it.
    private enum ScalarKey: Hashable {
        case bool(Bool)
        case int(Int64)
        case real(UInt64)
        case string([UInt16])
        case data(Data)
    }

    private var objects: [PropertyListValue] = [.string("$null")]
    private var scalars: [ScalarKey: Int] = [:]
    private var classes: [String: Int] = [:]
    private var nullUID: Int?

    /// A writer.
    init() {}

    /// The archive of `value`: a binary property list.
    ///
    /// Throws a ``CoreDataError`` (``CoreDataError/Code/coreData``) when arrays and
    /// dictionaries nest deeper than ``maximumDepth``.
    func archive(_ value: AttributeValue) throws -> Data {
        var writer = self
        writer.objects = [.string("$null")]
        writer.scalars = [:]
        writer.classes = [:]
        writer.nullUID = nil
        let root = try writer.encode(value, depth: 0)
        let top: PropertyListValue = .dictionary([
            "$version": .int(100_000),
            "$archiver": .string("NSKeyedArchiver"),
            "$top": .dictionary(["root": root]),
            "$objects": .array(writer.objects),
        ])
        let order = topKeyOrder
        let plist = BinaryPropertyListWriter(keyOrder: { keys in
            KeyedArchiveWriter.orderKeys(keys, topKeyOrder: order)
        })
        return plist.write(top)
    }

    /// Apple's key order: the top keys as configured, `$classname` before
    /// `$classes`, and an object's own keys before `$class`.
    static func orderKeys(_ keys: [String], topKeyOrder: [String]) -> [String] {
        if keys.contains("$archiver") {
            let known = topKeyOrder.filter(keys.contains)
            return known + keys.filter { !known.contains($0) }.sorted()
        }
        return keys.sorted { left, right in
            let leftRank = rank(left), rightRank = rank(right)
            return leftRank != rightRank ? leftRank < rightRank : left < right
        }
    }

    private static func rank(_ key: String) -> Int {
        switch key {
        case "$classname": return 0
        case "$classes": return 1
        case "$class": return 3
        default: return 2
        }
    }

    // MARK: Objects

    private mutating func encode(_ value: AttributeValue, depth: Int) throws -> PropertyListValue {
        guard depth <= KeyedArchiveWriter.maximumDepth else {
            throw CoreDataError(.coreData, "cannot archive the value: arrays and dictionaries nest more than \(KeyedArchiveWriter.maximumDepth) levels deep")
        }
        switch value {
        case .null:
            return .uid(0)
        case .bool(let flag):
            return scalar(.bool(flag), key: .bool(flag))
        case .int(let number):
            return scalar(.int(number), key: .int(number))
        case .double(let number):
            return scalar(.real(number), key: .real(number.bitPattern))
        case .string(let string) where string == "$null":
            // Unarchivers read a plain "$null" string as nil, so this one string is
            // archived the way Foundation archives mutable strings.
            let uid = reserve()
            finish(uid, ["NS.string": .string(string)], className: "NSMutableString", superclasses: ["NSString", "NSObject"])
            return .uid(uid)
        case .string(let string):
            return scalar(.string(string), key: .string(Array(string.utf16)))
        case .data(let data):
            return scalar(.data(data), key: .data(data))
        case .date(let date):
            let uid = reserve()
            finish(uid, ["NS.time": .real(date.timeIntervalSinceReferenceDate)], className: "NSDate", superclasses: ["NSObject"])
            return .uid(uid)
        case .uuid(let uuid):
            let uid = reserve()
            let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
            finish(uid, ["NS.uuidbytes": .data(bytes)], className: "NSUUID", superclasses: ["NSObject"])
            return .uid(uid)
        case .uri(let url):
            let uid = reserve()
            let base = try url.baseURL.map { try encode(.uri($0), depth: depth + 1) } ?? .uid(0)
            let relative = try encode(.string(url.relativeString), depth: depth + 1)
            finish(uid, ["NS.base": base, "NS.relative": relative], className: "NSURL", superclasses: ["NSObject"])
            return .uid(uid)
        case .decimal(let decimal):
            let uid = reserve()
            // NSDecimalNumber archives under its class cluster's placeholder class.
            finish(uid, KeyedArchiveWriter.decimalFields(decimal), className: "NSDecimalNumberPlaceholder",
                   superclasses: ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"])
            return .uid(uid)
        case .array(let elements):
            let uid = reserve()
            var references: [PropertyListValue] = []
            references.reserveCapacity(elements.count)
            for element in elements { references.append(try encodeElement(element, depth: depth + 1)) }
            finish(uid, ["NS.objects": .array(references)], className: "NSArray", superclasses: ["NSObject"])
            return .uid(uid)
        case .dictionary(let dictionary):
            let uid = reserve()
            let keys = dictionary.keys.sorted()
            var keyReferences: [PropertyListValue] = []
            var valueReferences: [PropertyListValue] = []
            for key in keys { keyReferences.append(try encode(.string(key), depth: depth + 1)) }
            for key in keys { valueReferences.append(try encodeElement(dictionary[key] ?? .null, depth: depth + 1)) }
            finish(uid, ["NS.keys": .array(keyReferences), "NS.objects": .array(valueReferences)],
                   className: "NSDictionary", superclasses: ["NSObject"])
            return .uid(uid)
        }
    }

    /// An element of an array or a value of a dictionary: Foundation collections
    /// cannot hold nil, so `.null` is the `NSNull` singleton there.
    private mutating func encodeElement(_ value: AttributeValue, depth: Int) throws -> PropertyListValue {
        guard value.isNull else { return try encode(value, depth: depth) }
        if let nullUID { return .uid(nullUID) }
        let uid = reserve()
        finish(uid, [:], className: "NSNull", superclasses: ["NSObject"])
        nullUID = uid
        return .uid(uid)
    }

    /// A plain plist object in `$objects`, shared with any equal one.
    private mutating func scalar(_ value: PropertyListValue, key: ScalarKey) -> PropertyListValue {
        if let existing = scalars[key] { return .uid(existing) }
        objects.append(value)
        scalars[key] = objects.count - 1
        return .uid(objects.count - 1)
    }

    /// Takes the next index for an object whose fields are encoded next.
    private mutating func reserve() -> Int {
        objects.append(.null)
        return objects.count - 1
    }

    /// Stores an object's fields with its `$class`, adding the class description
    /// after the object's children the first time the class is used.
    private mutating func finish(_ uid: Int, _ fields: [String: PropertyListValue], className: String, superclasses: [String]) {
        let classUID: Int
        if let existing = classes[className] {
            classUID = existing
        } else {
            objects.append(.dictionary([
                "$classname": .string(className),
                "$classes": .array(([className] + superclasses).map(PropertyListValue.string)),
            ]))
            classUID = objects.count - 1
            classes[className] = classUID
        }
        var fields = fields
        fields["$class"] = .uid(classUID)
        objects[uid] = .dictionary(fields)
    }

    /// The fields of an `NSDecimalNumber`: the `NSDecimal` struct, its mantissa as
    /// eight little-endian 16-bit words (`NS.mantissa.bo` = 1), `NS.length` the
    /// number of words in use. NaN is written as Foundation writes it (length 0,
    /// negative); it reads back as 0.
    static func decimalFields(_ decimal: Decimal) -> [String: PropertyListValue] {
        var words: [UInt16] = []
        var exponent = 0
        var negative = decimal.isNaN
        var compact = true
        if decimal.isFinite && !decimal.isZero {
            exponent = decimal.exponent
            negative = decimal.sign == .minus
            // The significand is an integer (exponent 0) of up to 38 digits:
            // convert its decimal digits to base-65536 words, least significant first.
            let digits = decimal.significand.description.utf8.filter { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            compact = digits.last != UInt8(ascii: "0")
            for digit in digits {
                var carry = UInt32(digit - UInt8(ascii: "0"))
                for index in words.indices {
                    let product = UInt32(words[index]) * 10 + carry
                    words[index] = UInt16(truncatingIfNeeded: product)
                    carry = product >> 16
                }
                if carry > 0 { words.append(UInt16(carry)) }
            }
            words = Array(words.prefix(8))
        }
        var mantissa = Data()
        for index in 0..<8 {
            let word = index < words.count ? words[index] : 0
            mantissa.append(UInt8(word & 0xff))
            mantissa.append(UInt8(word >> 8))
        }
        return [
            "NS.exponent": .int(Int64(exponent)),
            "NS.length": .int(Int64(words.count)),
            "NS.negative": .bool(negative),
            "NS.compact": .bool(compact),
            "NS.mantissa.bo": .int(1),
            "NS.mantissa": .data(mantissa),
        ]
    }
}
