import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("ValueTransformer: keyed archive round trips")
struct ValueTransformerArchiveRoundTripTests {
    @Test func everyShapeRoundTrips() throws {
        let data = try AttributeValueArchiver.archivedData(withRootValue: VTSupport.everyShape)
        #expect(data.starts(with: Array("bplist00".utf8)))
        #expect(try AttributeValueArchiver.unarchivedValue(from: data) == VTSupport.everyShape)
    }

    @Test(arguments: [
        AttributeValue.null, .bool(true), .bool(false), .int(0), .int(-1), .int(255), .int(256), .int(65_535),
        .int(65_536), .int(4_294_967_295), .int(4_294_967_296), .int(.max), .int(.min), .double(0.1), .double(-1e300),
        .string(""), .string("ascii"), .string("ünïcödé 🙂"), .string(String(repeating: "é", count: 1000)),
        .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -1.5)),
        .data(Data(repeating: 7, count: 100_000)), .uuid(UUID()), .uri(URL(string: "x-coredata://A/B/p1")!),
        .decimal(0), .decimal(Decimal(string: "-99999999999999999999999999999999999999")!), .decimal(Decimal(string: "0.0000001")!),
        .array([]), .dictionary([:]), .array(Array(repeating: .int(1), count: 20)),
    ])
    func rootValueRoundTrips(_ value: AttributeValue) throws {
        let data = try AttributeValueArchiver.archivedData(withRootValue: value)
        #expect(try AttributeValueArchiver.unarchivedValue(from: data) == value)
    }

    @Test func nanRoundTrips() throws {
        let data = try AttributeValueArchiver.archivedData(withRootValue: .array([.double(.nan)]))
        guard case .array(let elements) = try AttributeValueArchiver.unarchivedValue(from: data),
              case .double(let number)? = elements.first else {
            Issue.record("not an array of one double")
            return
        }
        #expect(number.isNaN)
    }

    @Test func relativeURLKeepsItsBase() throws {
        let base = URL(string: "https://example.com/dir/")!
        let url = URL(string: "file.txt", relativeTo: base)!
        let data = try AttributeValueArchiver.archivedData(withRootValue: .uri(url))
        guard case .uri(let decoded) = try AttributeValueArchiver.unarchivedValue(from: data) else {
            Issue.record("not a URL")
            return
        }
        #expect(decoded.absoluteString == "https://example.com/dir/file.txt")
        #expect(decoded.baseURL?.absoluteString == "https://example.com/dir/")
        #expect(decoded.relativeString == "file.txt")
    }

    @Test func manyObjectsUseWiderReferencesAndOffsets() throws {
        // More than 255 objects (2-byte references) and more than 64 KB before the
        // offset table (4-byte offsets).
        let value: AttributeValue = .array((0..<700).map { .string("element \($0)") } + [.data(Data(repeating: 1, count: 70_000))])
        let data = try AttributeValueArchiver.archivedData(withRootValue: value)
        let trailer = data.suffix(32)
        #expect(trailer[trailer.startIndex + 6] == 4)
        #expect(trailer[trailer.startIndex + 7] == 2)
        #expect(try AttributeValueArchiver.unarchivedValue(from: data) == value)
    }

    @Test func nestingUpToTheLimitRoundTrips() throws {
        var value: AttributeValue = .string("core")
        for level in 0..<AttributeValueArchiver.maximumDepth {
            value = level.isMultiple(of: 2) ? .array([value]) : .dictionary(["k": value])
        }
        let data = try AttributeValueArchiver.archivedData(withRootValue: value)
        #expect(try AttributeValueArchiver.unarchivedValue(from: data) == value)

        let tooDeep: AttributeValue = .array([value])
        #expect(throws: CoreDataError.self) { try AttributeValueArchiver.archivedData(withRootValue: tooDeep) }
    }

    /// The archive's structure: what an Apple unarchiver looks at.
    @Test func archiveStructureMatchesFoundation() throws {
        let value: AttributeValue = .dictionary([
            "list": .array([.string("a"), .string("a"), .int(3)]),
            "when": .date(Date(timeIntervalSinceReferenceDate: 10)),
            "id": .uuid(UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!),
            "link": .uri(URL(string: "https://example.com")!),
            "amount": .decimal(Decimal(string: "-12.5")!),
            "none": .null,
            "nulls": [.null, .null],
        ])
        let data = try AttributeValueArchiver.archivedData(withRootValue: value)
        guard case .dictionary(let top) = try BinaryPropertyList.parse(data),
              case .array(let objects)? = top["$objects"] else {
            Issue.record("not an archive")
            return
        }
        #expect(top["$archiver"] == .string("NSKeyedArchiver"))
        #expect(top["$version"] == .int(100_000))
        #expect(top["$top"] == .dictionary(["root": .uid(1)]))
        #expect(objects.first == .string("$null"))

        func object(_ reference: PropertyListValue?) -> [String: PropertyListValue] {
            guard case .uid(let index)? = reference, case .dictionary(let fields) = objects[index] else { return [:] }
            return fields
        }
        func className(_ fields: [String: PropertyListValue]) -> String? { object(fields["$class"])["$classname"]?.stringValue }
        func classes(_ fields: [String: PropertyListValue]) -> PropertyListValue? { object(fields["$class"])["$classes"] }

        let root = object(.uid(1))
        #expect(className(root) == "NSDictionary")
        #expect(classes(root) == .array([.string("NSDictionary"), .string("NSObject")]))
        guard case .array(let keys)? = root["NS.keys"], case .array(let values)? = root["NS.objects"] else {
            Issue.record("no NS.keys / NS.objects")
            return
        }
        let names = keys.map { key -> String in
            guard case .uid(let index) = key else { return "?" }
            return objects[index].stringValue ?? "?"
        }
        #expect(names == ["amount", "id", "link", "list", "none", "nulls", "when"])

        let amount = object(values[0])
        #expect(className(amount) == "NSDecimalNumberPlaceholder")
        #expect(classes(amount) == .array(["NSDecimalNumberPlaceholder", "NSDecimalNumber", "NSNumber", "NSValue", "NSObject"].map(PropertyListValue.string)))
        #expect(amount["NS.exponent"] == .int(-1))
        #expect(amount["NS.length"] == .int(1))
        #expect(amount["NS.negative"] == .bool(true))
        #expect(amount["NS.mantissa"] == .data(Data([125, 0] + Array(repeating: 0, count: 14))))

        let id = object(values[1])
        #expect(className(id) == "NSUUID")
        #expect(id["NS.uuidbytes"] == .data(Data(VTSupport.hex("0AD863BA758440CF8896BD87B3280C34"))))

        let link = object(values[2])
        #expect(className(link) == "NSURL")
        #expect(link["NS.base"] == .uid(0))
        guard case .uid(let relative)? = link["NS.relative"] else {
            Issue.record("NS.relative is not a reference")
            return
        }
        #expect(objects[relative] == .string("https://example.com"))

        let list = object(values[3])
        #expect(className(list) == "NSArray")
        guard case .array(let elements)? = list["NS.objects"] else {
            Issue.record("no NS.objects")
            return
        }
        #expect(elements.count == 3)
        #expect(elements[0] == elements[1], "equal strings are archived once")
        if case .uid(let index) = elements[2] { #expect(objects[index] == .int(3)) }

        // nil cannot be in a Foundation collection: NSNull, one shared object.
        let none = object(values[4])
        #expect(className(none) == "NSNull")
        #expect(none.count == 1)
        #expect(object(values[5])["NS.objects"] == .array([values[4], values[4]]))

        let when = object(values[6])
        #expect(className(when) == "NSDate")
        #expect(when["NS.time"] == .real(10))

        // One class description per class.
        let classNames = objects.compactMap { $0.dictionaryValue?["$classname"]?.stringValue }
        #expect(classNames.sorted() == ["NSArray", "NSDate", "NSDecimalNumberPlaceholder", "NSDictionary", "NSNull", "NSURL", "NSUUID"])
    }

    @Test func binaryPropertyListWriterRoundTripsArbitraryValues() throws {
        var random = SeededGenerator(seed: 42)
        func make(_ depth: Int) -> PropertyListValue {
            switch Int.random(in: 0..<(depth > 3 ? 8 : 11), using: &random) {
            case 0: return .bool(Bool.random(using: &random))
            case 1: return .int(Int64.random(in: .min ... .max, using: &random) >> Int64.random(in: 0..<64, using: &random))
            case 2: return .real(Double.random(in: -1e10...1e10, using: &random))
            case 3: return .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000...1_000_000, using: &random))))
            case 4: return .data(Data((0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
            case 5: return .string(String(repeating: "ab", count: Int.random(in: 0..<20, using: &random)))
            case 6: return .string(String(repeating: "é🙂", count: Int.random(in: 1..<20, using: &random)))
            case 7: return .uid(Int.random(in: 0..<70_000, using: &random))
            case 8: return .array((0..<Int.random(in: 0..<20, using: &random)).map { _ in make(depth + 1) })
            case 9: return .set((0..<Int.random(in: 0..<5, using: &random)).map { _ in make(depth + 1) })
            default:
                var dictionary: [String: PropertyListValue] = [:]
                for index in 0..<Int.random(in: 0..<20, using: &random) { dictionary["key\(index)"] = make(depth + 1) }
                return .dictionary(dictionary)
            }
        }
        for _ in 0..<300 {
            let value = make(0)
            let data = BinaryPropertyListWriter().write(value)
            #expect(try BinaryPropertyList.parse(data) == value)
        }
    }
}
