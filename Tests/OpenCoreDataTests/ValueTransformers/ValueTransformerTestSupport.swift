import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Helpers shared by the ValueTransformer tests.
enum VTSupport {
    /// Bytes from a hex string; spaces and newlines are ignored.
    static func hex(_ text: String) -> [UInt8] {
        let digits = text.filter { $0.isHexDigit }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            bytes.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// An ASCII string object of a binary property list, marker included (for
    /// strings shorter than 15 bytes).
    static func ascii(_ text: String) -> [UInt8] {
        precondition(text.utf8.count < 15)
        return [0x50 | UInt8(text.utf8.count)] + Array(text.utf8)
    }

    /// Assembles a `bplist00` from hand-written objects: appends the offset table
    /// (1- or 2-byte offsets) and the trailer (1-byte object references).
    static func assemble(_ objects: [[UInt8]], top: Int = 0) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let tableOffset = bytes.count
        let offsetSize = tableOffset <= 0xff ? 1 : 2
        for offset in offsets {
            if offsetSize == 2 { bytes.append(UInt8(offset >> 8)) }
            bytes.append(UInt8(offset & 0xff))
        }
        bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), 1]
        for value in [objects.count, top, tableOffset] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> shift)) }
        }
        return Data(bytes)
    }

    /// A value of every shape, nested.
    static let everyShape: AttributeValue = .dictionary([
        "null": .null,
        "yes": .bool(true),
        "no": .bool(false),
        "zero": .int(0),
        "small": .int(200),
        "medium": .int(65_536),
        "large": .int(1 << 40),
        "max": .int(.max),
        "min": .int(.min),
        "negative": .int(-1),
        "pi": .double(3.141592653589793),
        "negativeZero": .double(-0.0),
        "infinity": .double(.infinity),
        "tiny": .double(.leastNonzeroMagnitude),
        "empty": .string(""),
        "unicode": .string("Zoë 日本語 🙂 e\u{301}"),
        "long": .string(String(repeating: "x", count: 300)),
        "date": .date(Date(timeIntervalSinceReferenceDate: 782_462_928.66)),
        "oldDate": .date(Date(timeIntervalSince1970: -1_000_000_000.5)),
        "data": .data(Data([0, 1, 2, 255])),
        "emptyData": .data(Data()),
        "uuid": .uuid(UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!),
        "url": .uri(URL(string: "https://example.com/path?query=1#fragment")!),
        "fileURL": .uri(URL(fileURLWithPath: "/tmp/some file.txt")),
        "decimal": .decimal(Decimal(string: "12345.6789")!),
        "negativeDecimal": .decimal(Decimal(string: "-0.001")!),
        "bigDecimal": .decimal(Decimal(string: "123456789012345678901234567890")!),
        "array": .array([.int(1), .string("two"), .array([.double(3), .array([])]), .null]),
        "nested": .dictionary(["inner": .dictionary(["deeper": .array([.dictionary([:])])])]),
        "shared": .array([.string("same"), .string("same"), .int(7), .int(7), .bool(true), .int(1)]),
        "$null": .string("$null"),
    ])
}

