import Foundation
import OpenCoreDataPredicates

/// A decoder for `NSKeyedArchiver` archives: a binary property list with
/// `$archiver`, `$objects` (every archived object, by index), `$top` (the root
/// references) and `$class` dictionaries naming each object's class.
///
/// References are resolved lazily, one level at a time: ``resolve(_:)`` turns a
/// reference into a ``Value`` whose collections still hold references, so object
/// graphs with cycles (an entity's properties point back at the entity) are walked
/// without ever looping. Foundation's collection and value classes are decoded
/// into Swift values; any other class comes back as an ``Object`` with its raw
/// fields.
///
/// ```swift
/// let archive = try KeyedArchive(data: momData)
/// guard case .object(let model) = try archive.resolve(try archive.topReference()) else { return }
/// model.className                       // "NSManagedObjectModel"
/// let entities = try archive.resolve(model["NSEntities"])
/// ```
struct KeyedArchive {
    /// Why the data is not a readable keyed archive.
    struct Failure: Error, CustomStringConvertible, Sendable {
        var description: String
    }

    /// An archived object of a class the decoder does not turn into a Swift value.
    struct Object {
        /// The index of the object in `$objects`.
        let uid: Int
        /// The object's class (`$classname`).
        let className: String
        /// The class and its superclasses, most specific first (`$classes`).
        let classes: [String]
        /// The archived fields, references unresolved.
        let fields: [String: PropertyListValue]

        /// The raw field for `key`, `.null` when absent.
        subscript(key: String) -> PropertyListValue { fields[key] ?? .null }

        /// Whether the object is an instance of `name` or of a subclass.
        func isKind(of name: String) -> Bool { className == name || classes.contains(name) }
    }

    /// A resolved reference. Collections hold unresolved references.
    enum Value {
        case null
        case bool(Bool)
        case int(Int64)
        case real(Double)
        case string(String)
        case data(Data)
        case date(Date)
        case uuid(UUID)
        case url(URL)
        case decimal(Decimal)
        case array([PropertyListValue])
        case set([PropertyListValue])
        case dictionary([(key: PropertyListValue, value: PropertyListValue)])
        case object(Object)

        /// A short description for error messages.
        var kindDescription: String {
            switch self {
            case .null: return "null"
            case .bool: return "a Boolean"
            case .int: return "an integer"
            case .real: return "a real number"
            case .string: return "a string"
            case .data: return "data"
            case .date: return "a date"
            case .uuid: return "a UUID"
            case .url: return "a URL"
            case .decimal: return "a decimal number"
            case .array: return "an array"
            case .set: return "a set"
            case .dictionary: return "a dictionary"
            case .object(let object): return "an \(object.className)"
            }
        }
    }

    /// Every archived object, by index.
    let objects: [PropertyListValue]
    /// The `$top` dictionary.
    let top: [String: PropertyListValue]

    /// Parses a keyed archive from binary property list data.
    init(data: Data) throws {
        let plist: PropertyListValue
        do {
            plist = try BinaryPropertyList.parse(data)
        } catch let failure as BinaryPropertyList.Failure {
            throw Failure(description: failure.description)
        }
        try self.init(propertyList: plist)
    }

    /// Reads a keyed archive from an already parsed property list.
    init(propertyList: PropertyListValue) throws {
        guard case .dictionary(let root) = propertyList else {
            throw Failure(description: "the property list is \(propertyList.kindDescription), not a keyed archive dictionary")
        }
        guard case .string(let archiver)? = root["$archiver"] else {
            throw Failure(description: "no $archiver: not a keyed archive")
        }
        guard archiver == "NSKeyedArchiver" else {
            throw Failure(description: "$archiver is '\(archiver)', expected NSKeyedArchiver")
        }
        guard case .array(let objects)? = root["$objects"] else {
            throw Failure(description: "the archive has no $objects array")
        }
        guard case .dictionary(let top)? = root["$top"] else {
            throw Failure(description: "the archive has no $top dictionary")
        }
        self.objects = objects
        self.top = top
    }

    /// The reference stored in `$top` under `key` (`root` for archives made with
    /// `archivedData(withRootObject:)`).
    func topReference(_ key: String = "root") throws -> PropertyListValue {
        guard let value = top[key] else {
            throw Failure(description: "$top has no '\(key)' entry")
        }
        return value
    }

    /// Resolves one level of a reference (or an inline value).
    func resolve(_ value: PropertyListValue) throws -> Value {
        try resolve(value, depth: 0)
    }

    private static let maximumInternalDepth = 8

    private func resolve(_ value: PropertyListValue, depth: Int) throws -> Value {
        switch value {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .int(number)
        case .real(let number): return .real(number)
        case .date(let date): return .date(date)
        case .data(let data): return .data(data)
        case .string(let string): return .string(string)
        case .array(let elements): return .array(elements)
        case .set(let elements): return .set(elements)
        case .dictionary(let dictionary):
            return .dictionary(dictionary.sorted { $0.key < $1.key }.map { (key: .string($0.key), value: $0.value) })
        case .uid(let index):
            return try resolveObject(index, depth: depth)
        }
    }

    private func resolveObject(_ index: Int, depth: Int) throws -> Value {
        guard depth <= KeyedArchive.maximumInternalDepth else {
            throw Failure(description: "object \(index): references nest too deeply")
        }
        guard index >= 0, index < objects.count else {
            throw Failure(description: "reference \(index) is out of range ($objects has \(objects.count) entries)")
        }
        let stored = objects[index]
        switch stored {
        case .string(let string):
            return index == 0 && string == "$null" ? .null : .string(string)
        case .uid:
            throw Failure(description: "object \(index) is itself a reference")
        case .dictionary(let fields):
            guard let classReference = fields["$class"] else {
                throw Failure(description: "object \(index) is a dictionary without $class")
            }
            let (className, classes) = try classInfo(classReference, of: index)
            let object = Object(uid: index, className: className, classes: classes, fields: fields)
            return try decodeFoundation(object, depth: depth)
        default:
            return try resolve(stored, depth: depth + 1)
        }
    }

    private func classInfo(_ reference: PropertyListValue, of index: Int) throws -> (String, [String]) {
        guard case .uid(let classIndex) = reference, classIndex >= 0, classIndex < objects.count,
              case .dictionary(let info) = objects[classIndex] else {
            throw Failure(description: "object \(index) has an invalid $class reference")
        }
        guard case .string(let name)? = info["$classname"] else {
            throw Failure(description: "object \(index): its class (object \(classIndex)) has no $classname")
        }
        var classes: [String] = []
        if case .array(let names)? = info["$classes"] {
            classes = names.compactMap(\.stringValue)
        }
        return (name, classes)
    }

    /// Decodes Foundation's own classes into values; returns other objects as is.
    private func decodeFoundation(_ object: Object, depth: Int) throws -> Value {
        let label = "object \(object.uid) (\(object.className))"
        switch object.className {
        case "NSArray", "NSMutableArray", "NSOrderedSet", "NSMutableOrderedSet":
            return .array(try references(object["NS.objects"], label, "NS.objects", depth: depth))
        case "NSSet", "NSMutableSet", "NSCountedSet":
            return .set(try references(object["NS.objects"], label, "NS.objects", depth: depth))
        case "NSDictionary", "NSMutableDictionary":
            let keys = try references(object["NS.keys"], label, "NS.keys", depth: depth)
            let values = try references(object["NS.objects"], label, "NS.objects", depth: depth)
            guard keys.count == values.count else {
                throw Failure(description: "\(label): \(keys.count) keys but \(values.count) values")
            }
            return .dictionary(zip(keys, values).map { (key: $0, value: $1) })
        case "NSKnownKeysDictionary1", "NSKnownKeysDictionary":
            let values = try references(object["values"], label, "values", depth: depth)
            var keys: [PropertyListValue] = []
            if case .object(let mapping) = try resolve(object["searchMapping"], depth: depth + 1) {
                switch try resolve(mapping["keys"], depth: depth + 1) {
                case .array(let list), .set(let list): keys = list
                case .null: break
                case let other: throw Failure(description: "\(label): searchMapping keys are \(other.kindDescription)")
                }
            }
            guard keys.count == values.count else {
                throw Failure(description: "\(label): \(keys.count) keys but \(values.count) values")
            }
            return .dictionary(zip(keys, values).map { (key: $0, value: $1) })
        case "NSString", "NSMutableString":
            switch try resolve(object["NS.string"], depth: depth + 1) {
            case .string(let string): return .string(string)
            case .data(let data): return .string(String(decoding: data, as: UTF8.self))
            default:
                if case .data(let bytes) = try resolve(object["NS.bytes"], depth: depth + 1) {
                    return .string(String(decoding: bytes, as: UTF8.self))
                }
                throw Failure(description: "\(label) has no NS.string")
            }
        case "NSData", "NSMutableData":
            guard case .data(let data) = try resolve(object["NS.data"], depth: depth + 1) else {
                throw Failure(description: "\(label) has no NS.data")
            }
            return .data(data)
        case "NSDate":
            switch object["NS.time"] {
            case .real(let time): return .date(Date(timeIntervalSinceReferenceDate: time))
            case .int(let time): return .date(Date(timeIntervalSinceReferenceDate: Double(time)))
            default: throw Failure(description: "\(label) has no NS.time")
            }
        case "NSNull":
            return .null
        case "NSUUID":
            guard case .data(let bytes) = try resolve(object["NS.uuidbytes"], depth: depth + 1), bytes.count == 16 else {
                throw Failure(description: "\(label) has no 16-byte NS.uuidbytes")
            }
            let b = [UInt8](bytes)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                     b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case "NSURL":
            guard case .string(let relative) = try resolve(object["NS.relative"], depth: depth + 1) else {
                throw Failure(description: "\(label) has no NS.relative string")
            }
            var base: URL?
            if case .url(let baseURL) = try resolve(object["NS.base"], depth: depth + 1) { base = baseURL }
            guard let url = URL(string: relative, relativeTo: base) else {
                throw Failure(description: "\(label): '\(relative)' is not a URL")
            }
            return .url(url)
        case "NSDecimalNumber", "NSDecimalNumberPlaceholder":
            return .decimal(try decimal(object, label))
        default:
            return .object(object)
        }
    }

    /// The elements `value` lists, or the array it refers to. `depth` is the
    /// referring object's: an array reached through references counts against
    /// ``maximumInternalDepth`` like any nesting, so a cycle of them ends.
    private func references(_ value: PropertyListValue, _ label: String, _ key: String, depth: Int) throws -> [PropertyListValue] {
        switch value {
        case .array(let elements): return elements
        case .null: return []
        case .uid:
            // A reference to an NSArray (NSKnownKeysDictionary1 `values`).
            switch try resolve(value, depth: depth + 1) {
            case .array(let elements), .set(let elements): return elements
            case .null: return []
            case let other: throw Failure(description: "\(label): \(key) is \(other.kindDescription), not an array")
            }
        default: throw Failure(description: "\(label): \(key) is \(value.kindDescription), not an array")
        }
    }

    private func decimal(_ object: Object, _ label: String) throws -> Decimal {
        guard case .int(let exponent) = object["NS.exponent"], case .int(let length) = object["NS.length"],
              case .data(let mantissa) = object["NS.mantissa"] else {
            throw Failure(description: "\(label) lacks NS.exponent, NS.length or NS.mantissa")
        }
        let negative: Bool
        if case .bool(let flag) = object["NS.negative"] { negative = flag } else { negative = false }
        let bytes = [UInt8](mantissa)
        let bigEndian: Bool
        if case .int(let order) = object["NS.mantissa.bo"] { bigEndian = order != 1 } else { bigEndian = false }
        guard length >= 0, length <= 8, Int(length) * 2 <= bytes.count, (-128...127).contains(exponent) else {
            throw Failure(description: "\(label) has an invalid mantissa (length \(length), exponent \(exponent))")
        }
        var significand = Decimal(0)
        var index = Int(length) - 1
        while index >= 0 {
            let low = Int(bytes[index * 2]), high = Int(bytes[index * 2 + 1])
            let word = bigEndian ? (low << 8 | high) : (high << 8 | low)
            significand = significand * 65536 + Decimal(word)
            index -= 1
        }
        return Decimal(sign: negative ? .minus : .plus, exponent: Int(exponent), significand: significand)
    }

    // MARK: Conveniences

    /// The string a reference resolves to, nil for null; an error for anything else.
    func string(_ value: PropertyListValue, _ what: @autoclosure () -> String) throws -> String? {
        switch try resolve(value) {
        case .string(let string): return string
        case .null: return nil
        case let other: throw Failure(description: "\(what()) is \(other.kindDescription), not a string")
        }
    }

    /// The elements of an array or set a reference resolves to (empty for null).
    func elements(_ value: PropertyListValue, _ what: @autoclosure () -> String) throws -> [PropertyListValue] {
        switch try resolve(value) {
        case .array(let elements), .set(let elements): return elements
        case .null: return []
        case let other: throw Failure(description: "\(what()) is \(other.kindDescription), not an array or set")
        }
    }

    /// The entries of a dictionary a reference resolves to (empty for null).
    func entries(_ value: PropertyListValue, _ what: @autoclosure () -> String) throws -> [(key: PropertyListValue, value: PropertyListValue)] {
        switch try resolve(value) {
        case .dictionary(let entries): return entries
        case .null: return []
        case let other: throw Failure(description: "\(what()) is \(other.kindDescription), not a dictionary")
        }
    }

    /// A reference decoded completely into an `AttributeValue` (numbers, strings,
    /// dates, data, UUIDs, URLs, decimals, and arrays/dictionaries of them), or nil
    /// for objects of other classes. Cycles and deep nesting give nil.
    func plainValue(_ value: PropertyListValue) -> AttributeValue? {
        var visiting: Set<Int> = []
        var budget = KeyedArchive.plainValueBudget
        return plainValue(value, depth: 0, visiting: &visiting, budget: &budget)
    }

    /// The most references one ``plainValue(_:)`` call follows: shared
    /// sub-collections are decoded each time they appear, so a hostile archive could
    /// otherwise make the work grow exponentially.
    static let plainValueBudget = 100_000

    private func plainValue(_ value: PropertyListValue, depth: Int, visiting: inout Set<Int>, budget: inout Int) -> AttributeValue? {
        budget -= 1
        guard depth < 64, budget > 0 else { return nil }
        var uid: Int?
        if case .uid(let index) = value {
            guard visiting.insert(index).inserted else { return nil }
            uid = index
        }
        defer { if let uid { visiting.remove(uid) } }
        guard let resolved = try? resolve(value) else { return nil }
        switch resolved {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return .int(number)
        case .real(let number): return .double(number)
        case .string(let string): return .string(string)
        case .data(let data): return .data(data)
        case .date(let date): return .date(date)
        case .uuid(let uuid): return .uuid(uuid)
        case .url(let url): return .uri(url)
        case .decimal(let decimal): return .decimal(decimal)
        case .array(let elements), .set(let elements):
            var result: [AttributeValue] = []
            for element in elements {
                guard let decoded = plainValue(element, depth: depth + 1, visiting: &visiting, budget: &budget) else { return nil }
                result.append(decoded)
            }
            return .array(result)
        case .dictionary(let entries):
            var result: [String: AttributeValue] = [:]
            for entry in entries {
                guard case .string(let key)? = plainValue(entry.key, depth: depth + 1, visiting: &visiting, budget: &budget),
                      let decoded = plainValue(entry.value, depth: depth + 1, visiting: &visiting, budget: &budget) else { return nil }
                result[key] = decoded
            }
            return .dictionary(result)
        case .object:
            return nil
        }
    }
}
