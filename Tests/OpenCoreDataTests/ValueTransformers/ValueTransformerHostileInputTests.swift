import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Malformed and malicious archives must give errors: never a crash, a hang or
/// unbounded memory.
@Suite("ValueTransformer: hostile input")
struct ValueTransformerHostileInputTests {
    /// Unarchives `data`; any error must be a CoreDataError.
    private func attempt(_ data: Data, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try AttributeValueArchiver.unarchivedValue(from: data)
        } catch is CoreDataError {
        } catch {
            Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
        }
    }

    private func expectError(_ data: Data, code: CoreDataError.Code = .fileReadCorruptFile, containing text: String? = nil,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let value = try AttributeValueArchiver.unarchivedValue(from: data)
            Issue.record("decoded \(value)", sourceLocation: sourceLocation)
        } catch let error as CoreDataError {
            #expect(error.code == code, sourceLocation: sourceLocation)
            if let text { #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("unexpected error type: \(error)", sourceLocation: sourceLocation)
        }
    }

    /// An archive around hand-made `$objects`.
    private func archive(_ objects: [PropertyListValue], top: [String: PropertyListValue] = ["root": .uid(1)],
                         archiver: String = "NSKeyedArchiver") -> Data {
        BinaryPropertyListWriter().write(.dictionary([
            "$archiver": .string(archiver), "$version": .int(100_000), "$top": .dictionary(top), "$objects": .array(objects),
        ]))
    }

    private func classDescription(_ name: String) -> PropertyListValue {
        .dictionary(["$classname": .string(name), "$classes": .array([.string(name), .string("NSObject")])])
    }

    private static var samples: [Data] {
        get throws {
            [
                ValueTransformerAppleArchiveTests.theTrial, ValueTransformerAppleArchiveTests.helloWorld, ValueTransformerAppleArchiveTests.mutableDictionary,
                ValueTransformerAppleArchiveTests.mixed, ValueTransformerAppleArchiveTests.cyclic, ValueTransformerAppleArchiveTests.unknownClass,
                try AttributeValueArchiver.archivedData(withRootValue: VTSupport.everyShape),
            ]
        }
    }

    @Test func notArchivesAreErrors() {
        expectError(Data())
        expectError(Data("bplist00".utf8))
        expectError(Data("hello, world".utf8))
        expectError(BinaryPropertyListWriter().write(.array([.string("$null")])), containing: "keyed archive")
        expectError(archive([.string("$null"), .string("x")], archiver: "NSArchiver"), containing: "NSArchiver")
        expectError(archive([.string("$null"), .string("x")], top: ["other": .uid(1)]), containing: "root")
    }

    @Test func badReferencesAreErrors() {
        // Root out of range, $class not a class description, an element out of range.
        expectError(archive([.string("$null")], top: ["root": .uid(5)]), containing: "out of range")
        expectError(archive([.string("$null"), .dictionary(["NS.objects": .array([]), "$class": .uid(0)])]))
        expectError(archive([.string("$null"), .dictionary(["NS.objects": .array([.uid(99)]), "$class": .uid(2)]), classDescription("NSArray")]))
        // A dictionary without $class, an object that is itself a reference.
        expectError(archive([.string("$null"), .dictionary(["NS.objects": .array([])])]))
        expectError(archive([.string("$null"), .uid(1)]))
        // Keys and values of different counts.
        expectError(archive([.string("$null"), .dictionary(["NS.keys": .array([.uid(2)]), "NS.objects": .array([]), "$class": .uid(3)]),
                             .string("k"), classDescription("NSDictionary")]))
        // A UUID of the wrong length, a date without NS.time.
        expectError(archive([.string("$null"), .dictionary(["NS.uuidbytes": .data(Data(count: 3)), "$class": .uid(2)]), classDescription("NSUUID")]))
        expectError(archive([.string("$null"), .dictionary(["$class": .uid(2)]), classDescription("NSDate")]))
    }

    @Test func nonStringDictionaryKeysAreErrors() {
        expectError(archive([.string("$null"), .dictionary(["NS.keys": .array([.uid(2)]), "NS.objects": .array([.uid(2)]), "$class": .uid(3)]),
                             .int(1), classDescription("NSDictionary")]),
                    code: .coreData, containing: "key")
    }

    @Test func indirectCyclesAreErrors() {
        // dictionary -> array -> dictionary
        expectError(archive([
            .string("$null"),
            .dictionary(["NS.keys": .array([.uid(2)]), "NS.objects": .array([.uid(3)]), "$class": .uid(5)]),
            .string("loop"),
            .dictionary(["NS.objects": .array([.uid(1)]), "$class": .uid(4)]),
            classDescription("NSArray"), classDescription("NSDictionary"),
        ]), containing: "contains itself")
    }

    @Test func exponentialSharingIsAnErrorNotAHang() {
        // 60 arrays, each holding the next one twice: 2^60 elements when expanded.
        var objects: [PropertyListValue] = [.string("$null")]
        let levels = 60
        for level in 0..<levels {
            let next = level == levels - 1 ? PropertyListValue.uid(levels + 2) : .uid(level + 2)
            objects.append(.dictionary(["NS.objects": .array([next, next]), "$class": .uid(levels + 1)]))
        }
        objects.append(classDescription("NSArray"))
        objects.append(.string("leaf"))
        // Either limit may stop it first: the object budget or the nesting depth.
        do {
            _ = try AttributeValueArchiver.unarchivedValue(from: archive(objects))
            Issue.record("expected an error")
        } catch let error as CoreDataError {
            #expect(error.message.contains("too many") || error.message.contains("levels deep"), "\(error.message)")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func deepNestingIsAnErrorNotAStackOverflow() {
        let levels = 20_000
        var objects: [PropertyListValue] = [.string("$null")]
        for level in 0..<levels {
            objects.append(.dictionary(["NS.objects": .array(level == levels - 1 ? [] : [.uid(level + 2)]), "$class": .uid(levels + 1)]))
        }
        objects.append(classDescription("NSArray"))
        expectError(archive(objects), containing: "nest")
    }

    @Test func randomBytesAreErrors() {
        var random = SeededGenerator(seed: 1)
        for round in 0..<2000 {
            let count = Int.random(in: 0..<300, using: &random)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round.isMultiple(of: 2) { bytes = Array("bplist00".utf8) + bytes }
            attempt(Data(bytes))
        }
    }

    @Test func truncatedArchivesAreErrors() throws {
        for sample in try Self.samples {
            for length in 0..<sample.count {
                attempt(sample.prefix(length))
            }
        }
    }

    @Test func seededMutationsNeverCrash() throws {
        let samples = try Self.samples
        var random = SeededGenerator(seed: 20_240_601)
        let interesting: [UInt8] = [0x00, 0x01, 0x0f, 0x10, 0x7f, 0x80, 0xff, 0x4f, 0x5f, 0xaf, 0xdf, 0x13, 0x23, 0x33]
        for _ in 0..<4000 {
            var bytes = [UInt8](samples[Int.random(in: 0..<samples.count, using: &random)])
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0: bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
                case 1: bytes[index] = interesting[Int.random(in: 0..<interesting.count, using: &random)]
                case 2: bytes[index] = UInt8.random(in: 0...255, using: &random)
                case 3:
                    // Aim at the trailer and the offset table.
                    let tail = max(0, bytes.count - Int.random(in: 1...48, using: &random))
                    bytes[tail] = UInt8.random(in: 0...255, using: &random)
                default:
                    if bytes.count > 40 { bytes.remove(at: index) } else { bytes.insert(0xff, at: index) }
                }
            }
            attempt(Data(bytes))
        }
    }

    @Test func mutationsOfTheValueTreeSurviveTheFullPipeline() throws {
        // Archives of randomly built values always decode to the value.
        var random = SeededGenerator(seed: 7)
        func make(_ depth: Int) -> AttributeValue {
            switch Int.random(in: 0..<(depth > 4 ? 9 : 11), using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2: return .int(Int64.random(in: .min ... .max, using: &random) >> Int64.random(in: 0..<64, using: &random))
            case 3: return .double(Double.random(in: -1e6...1e6, using: &random))
            case 4: return .string(["", "a", "é", "🙂", "$null", "NSArray", "long \(Int.random(in: 0..<5, using: &random))"][Int.random(in: 0..<7, using: &random)])
            case 5: return .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / 4))
            case 6: return .data(Data((0..<Int.random(in: 0..<8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
            case 7: return .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8.random(in: 0...255, using: &random))))
            case 8: return .decimal(Decimal(Int.random(in: -100_000...100_000, using: &random)) / 100)
            case 9: return .array((0..<Int.random(in: 0..<6, using: &random)).map { _ in make(depth + 1) })
            default:
                var dictionary: [String: AttributeValue] = [:]
                for _ in 0..<Int.random(in: 0..<6, using: &random) { dictionary["k\(Int.random(in: 0..<10, using: &random))"] = make(depth + 1) }
                return .dictionary(dictionary)
            }
        }
        for _ in 0..<500 {
            let value = make(0)
            #expect(try AttributeValueArchiver.unarchivedValue(from: AttributeValueArchiver.archivedData(withRootValue: value)) == value)
        }
    }
}
