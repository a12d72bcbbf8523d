import Foundation
import OpenCoreDataPredicates

/// Reads an `NSKeyedArchiver` archive of plist-like Foundation objects into an
/// `AttributeValue` tree: what Apple's `NSSecureUnarchiveFromDataTransformer`
/// (and the legacy `NSKeyedUnarchiveFromDataTransformer`) stored for a
/// transformable attribute.
///
/// The archive is parsed by the shared ``KeyedArchive`` reader; this type walks it
/// from `$top.root`, turning
///
/// * `$null` and `NSNull` into `.null`;
/// * plain plist Booleans, integers and reals (NSNumber) into `.bool`, `.int`, `.double`;
/// * strings (plain, `NSString`, `NSMutableString`) into `.string`;
/// * data (plain, `NSData`, `NSMutableData`) into `.data`;
/// * `NSDate` into `.date`, `NSUUID` into `.uuid`, `NSURL` into `.uri`,
///   `NSDecimalNumber` into `.decimal`;
/// * `NSArray`, `NSMutableArray`, `NSOrderedSet` (and `NSSet`, in archive order)
///   into `.array`;
/// * `NSDictionary` and `NSMutableDictionary` with string keys into `.dictionary`.
///
/// Objects referenced from several places are decoded at each place. Any other
/// class is a ``CoreDataError`` with code ``CoreDataError/Code/coreData`` naming
/// the class; malformed archives (bad bytes, references out of range or looping
/// back into themselves, nesting deeper than ``KeyedArchiveWriter/maximumDepth``,
/// shared references that would expand without bound) are
/// ``CoreDataError/Code/fileReadCorruptFile`` errors. Nothing traps or hangs.
///
/// ```swift
/// let value = try KeyedArchiveValueReader.value(from: columnBytes)
/// // e.g. .array([.string("red"), .string("green")])
/// ```
struct KeyedArchiveValueReader {
    private let archive: KeyedArchive
    private var budget: Int
    private var visiting: Set<Int> = []

    private init(archive: KeyedArchive, budget: Int) {
        self.archive = archive
        self.budget = budget
    }

    /// The value archived under `$top.root` in `data`.
    static func value(from data: Data) throws -> AttributeValue {
        let archive: KeyedArchive
        do {
            archive = try KeyedArchive(data: data)
        } catch let failure as KeyedArchive.Failure {
            throw corrupt("not a keyed archive: \(failure.description)")
        }
        let root: PropertyListValue
        do {
            root = try archive.topReference("root")
        } catch let failure as KeyedArchive.Failure {
            throw corrupt(failure.description)
        }
        // Without sharing, every decoded value costs at least one byte of the
        // archive; sharing can only make a hostile archive expand further.
        var reader = KeyedArchiveValueReader(archive: archive, budget: max(100_000, data.count * 4))
        return try reader.decode(root, depth: 0)
    }

    static func corrupt(_ message: String) -> CoreDataError {
        CoreDataError(.fileReadCorruptFile, "cannot unarchive the value: \(message)")
    }

    private mutating func decode(_ reference: PropertyListValue, depth: Int) throws -> AttributeValue {
        budget -= 1
        guard budget >= 0 else {
            throw Self.corrupt("its shared references expand to too many objects")
        }
        guard depth <= KeyedArchiveWriter.maximumDepth else {
            throw Self.corrupt("objects nest more than \(KeyedArchiveWriter.maximumDepth) levels deep")
        }
        var uid: Int?
        if case .uid(let index) = reference {
            guard visiting.insert(index).inserted else {
                throw Self.corrupt("object \(index) contains itself")
            }
            uid = index
        }
        defer { if let uid { visiting.remove(uid) } }

        let resolved: KeyedArchive.Value
        do {
            resolved = try archive.resolve(reference)
        } catch let failure as KeyedArchive.Failure {
            throw Self.corrupt(failure.description)
        }
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
            result.reserveCapacity(elements.count)
            for element in elements { result.append(try decode(element, depth: depth + 1)) }
            return .array(result)
        case .dictionary(let entries):
            var result: [String: AttributeValue] = [:]
            result.reserveCapacity(entries.count)
            for entry in entries {
                let key = try decode(entry.key, depth: depth + 1)
                guard case .string(let name) = key else {
                    throw CoreDataError(.coreData, "cannot unarchive the value: a dictionary key is \(Self.kind(of: key)); only string keys are supported")
                }
                result[name] = try decode(entry.value, depth: depth + 1)
            }
            return .dictionary(result)
        case .object(let object):
            throw CoreDataError(.coreData, "cannot unarchive the value: the archive holds an object of class \(object.className), which is not a plist-like Foundation class (NSString, NSNumber, NSData, NSDate, NSUUID, NSURL, NSDecimalNumber, NSArray, NSDictionary)",
                                valueDescription: object.className)
        }
    }

    private static func kind(of value: AttributeValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "a Boolean"
        case .int: return "an integer"
        case .double: return "a real number"
        case .decimal: return "a decimal number"
        case .string: return "a string"
        case .date: return "a date"
        case .data: return "data"
        case .uuid: return "a UUID"
        case .uri: return "a URL"
        case .array: return "an array"
        case .dictionary: return "a dictionary"
        }
    }
}
