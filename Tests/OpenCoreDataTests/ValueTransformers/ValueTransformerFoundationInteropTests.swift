import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Cross-checks with the platform's own `NSKeyedArchiver`/`NSKeyedUnarchiver`:
/// swift-corelibs-foundation on Linux (an independent implementation of the
/// format), Apple's Foundation on Apple platforms.
@Suite("ValueTransformer: Foundation interoperability")
struct ValueTransformerFoundationInteropTests {
    @Test func foundationArchivesDecode() throws {
        let root = NSMutableArray(array: [
            NSString(string: "Hello"), NSNumber(value: 42), NSNumber(value: -7), NSNumber(value: 2.5), NSNumber(value: true),
            NSDate(timeIntervalSinceReferenceDate: 100.5), NSData(bytes: [1, 2, 3] as [UInt8], length: 3),
            NSUUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!, NSURL(string: "https://example.com/x?y=1")!,
            NSDictionary(dictionary: ["k": NSString(string: "v"), "list": NSArray(array: [NSString(string: "Hello")])]),
            NSMutableString(string: "mutable"), NSNull(),
        ])
        let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        #expect(try AttributeValueArchiver.unarchivedValue(from: data) == .array([
            "Hello", 42, -7, 2.5, true, .date(Date(timeIntervalSinceReferenceDate: 100.5)), .data(Data([1, 2, 3])),
            .uuid(UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!), .uri(URL(string: "https://example.com/x?y=1")!),
            ["k": "v", "list": ["Hello"]], "mutable", .null,
        ]))
    }

    @Test func ourArchivesDecodeInFoundation() throws {
        let value: AttributeValue = [
            "string": "Zoë 🙂", "int": 42, "big": .int(1 << 40), "double": 2.5, "flag": true,
            "date": .date(Date(timeIntervalSinceReferenceDate: 100.5)), "data": .data(Data([1, 2, 3])),
            "uuid": .uuid(UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!),
            "url": .uri(URL(string: "https://example.com/x?y=1")!), "list": ["a", "a", ["nested": []]],
            "null": .null, "$null": "$null",
        ]
        let data = try AttributeValueArchiver.archivedData(withRootValue: value)
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        let object = unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey)
        let dictionary = try #require(object as? NSDictionary)
        #expect(dictionary["string"] as? String == "Zoë 🙂")
        #expect((dictionary["int"] as? NSNumber)?.int64Value == 42)
        #expect((dictionary["big"] as? NSNumber)?.int64Value == 1 << 40)
        #expect((dictionary["double"] as? NSNumber)?.doubleValue == 2.5)
        #expect((dictionary["flag"] as? NSNumber)?.boolValue == true)
        #expect((dictionary["date"] as? Date) == Date(timeIntervalSinceReferenceDate: 100.5))
        #expect((dictionary["data"] as? Data) == Data([1, 2, 3]))
        #expect((dictionary["uuid"] as? UUID)?.uuidString == "0AD863BA-7584-40CF-8896-BD87B3280C34")
        #expect((dictionary["url"] as? URL)?.absoluteString == "https://example.com/x?y=1")
        #expect((dictionary["list"] as? NSArray)?.count == 3)
        #expect(dictionary["null"] is NSNull)
        #expect(dictionary["$null"] as? String == "$null")
    }
}
