import Foundation
import Testing
@testable import OpenCoreData

/// The DEFLATE decoder, the binary property list parser and the keyed-archive and
/// model readers on hand-made and hostile input: errors, never crashes or hangs.
@Suite("CompiledModel robustness")
struct CompiledModelRobustnessTests {
    // MARK: Inflate

    @Test func inflateStoredBlock() throws {
        let stored: [UInt8] = [1, 7, 0, 248, 255, 115, 116, 111, 114, 101, 100, 33]
        #expect(try Inflate.decompress(Data(stored)) == Data("stored!".utf8))
    }

    @Test func inflateFixedHuffmanBlock() throws {
        let fixed: [UInt8] = [203, 72, 205, 201, 201, 87, 200, 64, 39, 117, 20, 82, 82, 211, 114, 18, 75, 82, 21, 1]
        #expect(try Inflate.decompress(Data(fixed)) == Data("hello hello hello hello, deflate!".utf8))
    }

    @Test func inflateLongBackReferences() throws {
        let compressed: [UInt8] = [75, 205, 43, 201, 44, 169, 84, 48, 176, 82, 240, 205, 207, 79, 209, 81, 112, 206, 47, 205,
                                   43, 41, 170, 4, 49, 128, 50, 121, 169, 121, 37, 214, 10, 169, 16, 53, 134, 68, 168, 49,
                                   34, 66, 141, 49, 17, 106, 76, 136, 80, 99, 74, 132, 26, 51, 34, 212, 140, 250, 125, 212,
                                   239, 163, 126, 31, 245, 251, 160, 244, 59, 0]
        let expected = (0..<40).map { "entity \($0 % 7): Mood, Country, Continent; " }.joined()
        #expect(try Inflate.decompress(Data(compressed)) == Data(expected.utf8))
    }

    @Test func inflateDynamicHuffmanBlocksOfTheFixtures() throws {
        let blob = try #require(try CompiledModelFixtureTests.modelCache(Fixtures.storesWithModels[0].store))
        #expect((blob.first ?? 0) >> 1 & 3 == 2, "the fixture starts with a dynamic Huffman block")
        let archive = try Inflate.decompress(blob)
        #expect(archive.starts(with: Array("bplist00".utf8)))
        #expect(archive.count > blob.count)
    }

    @Test func inflateRespectsTheOutputLimit() throws {
        let blob = try #require(try CompiledModelFixtureTests.modelCache(Fixtures.storesWithModels[0].store))
        #expect(throws: Inflate.Failure.self) { try Inflate.decompress(blob, outputLimit: 100) }
        // A stored block longer than the limit.
        #expect(throws: Inflate.Failure.self) { try Inflate.decompress(Data([1, 7, 0, 248, 255] + Array("stored!".utf8)), outputLimit: 3) }
    }

    @Test func inflateRejectsMalformedStreams() {
        let cases: [[UInt8]] = [
            [],                                   // empty
            [0x07],                               // block type 3
            [1, 7, 0, 0, 0, 1, 2],                // stored length/complement mismatch
            [1, 200, 0, 55, 255, 1, 2, 3],        // stored block past the end
            [0x03],                               // fixed block cut short
            [0b0000_0101, 0xff, 0xff, 0xff],      // dynamic block with bad code lengths
            [0x63, 0x00, 0x02],                   // fixed block: distance before the start
            [0x00, 0x00, 0x00, 0xff, 0xff],       // a non-final empty stored block, then nothing
        ]
        for bytes in cases {
            #expect(throws: Inflate.Failure.self, "\(bytes)") { try Inflate.decompress(Data(bytes)) }
        }
    }

    // MARK: Binary property lists

    /// A binary property list from object encodings (each already a byte array).
    static func bplist(_ objects: [[UInt8]], top: Int = 0) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let tableOffset = bytes.count
        for offset in offsets { bytes += [UInt8(offset >> 8), UInt8(offset & 0xff)] }
        bytes += [0, 0, 0, 0, 0, 0, 2, 1]
        for value in [objects.count, top, tableOffset] {
            bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
        }
        return Data(bytes)
    }

    @Test func binaryPropertyListKeepsUIDsDistinct() throws {
        // {"a": UID 3, "b": [1, "x"]}
        let data = CompiledModelRobustnessTests.bplist([
            [0xD2, 1, 2, 3, 4],   // dict, keys 1 2, values 3 4
            [0x51, 0x61],         // "a"
            [0x51, 0x62],         // "b"
            [0x80, 3],            // UID 3
            [0xA2, 5, 6],         // [5, 6]
            [0x10, 1],            // 1
            [0x51, 0x78],         // "x"
        ])
        let value = try BinaryPropertyList.parse(data)
        #expect(value == .dictionary(["a": .uid(3), "b": .array([.int(1), .string("x")])]))
    }

    @Test func binaryPropertyListRejectsCyclesAndBadReferences() {
        let selfContaining = CompiledModelRobustnessTests.bplist([[0xA1, 0]])
        #expect(throws: BinaryPropertyList.Failure.self) { try BinaryPropertyList.parse(selfContaining) }
        let outOfRange = CompiledModelRobustnessTests.bplist([[0xA1, 9]])
        #expect(throws: BinaryPropertyList.Failure.self) { try BinaryPropertyList.parse(outOfRange) }
        let hugeCount = CompiledModelRobustnessTests.bplist([[0x4F, 0x13, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]])
        #expect(throws: BinaryPropertyList.Failure.self) { try BinaryPropertyList.parse(hugeCount) }
        let nonStringKey = CompiledModelRobustnessTests.bplist([[0xD1, 1, 1], [0x10, 1]])
        #expect(throws: BinaryPropertyList.Failure.self) { try BinaryPropertyList.parse(nonStringKey) }
        #expect(throws: BinaryPropertyList.Failure.self) { try BinaryPropertyList.parse(Data("bplist00".utf8)) }
        #expect(throws: BinaryPropertyList.Failure.self) { try BinaryPropertyList.parse(Data(repeating: 0, count: 64)) }
    }

    @Test func keyedArchiveRequiresTheArchiverKeys() throws {
        // {"$archiver": "X"}
        let data = CompiledModelRobustnessTests.bplist([[0xD1, 1, 2], Array([0x59] + Array("$archiver".utf8)), [0x51, 0x58]])
        #expect(throws: KeyedArchive.Failure.self) { try KeyedArchive(data: data) }
        do {
            _ = try ManagedObjectModel(compiledModelData: data)
            Issue.record("not an archive, but loaded")
        } catch let error as CoreDataError {
            #expect(error.code == .fileReadCorruptFile)
            #expect(error.message.contains("NSKeyedArchiver"))
        }
    }

    // MARK: Hostile blobs

    static func fixtureBlobs() throws -> [Data] {
        try CompiledModelFixtureTests.storesWithCache.prefix(12).compactMap { try CompiledModelFixtureTests.modelCache($0) }
    }

    @Test func truncatedBlobsAndArchivesGiveErrors() throws {
        for blob in try CompiledModelRobustnessTests.fixtureBlobs().prefix(3) {
            let archive = try Inflate.decompress(blob)
            for length in stride(from: 0, to: blob.count, by: max(1, blob.count / 97)) {
                #expect(throws: CoreDataError.self) { try ManagedObjectModel(modelCacheData: blob.prefix(length)) }
            }
            for length in stride(from: 0, to: archive.count, by: max(1, archive.count / 97)) {
                #expect(throws: CoreDataError.self) { try ManagedObjectModel(compiledModelData: archive.prefix(length)) }
            }
        }
    }

    @Test func mutatedBlobsNeverCrash() throws {
        var generator = SeededGenerator(seed: 0x0C0D_EDA7A)
        let blobs = try CompiledModelRobustnessTests.fixtureBlobs()
        #expect(!blobs.isEmpty)
        var outcomes = (loaded: 0, failed: 0)
        for round in 0..<1500 {
            guard let blob = blobs.randomElement(using: &generator) else { break }
            var bytes = [UInt8](blob)
            let mutations = Int.random(in: 1...4, using: &generator)
            for _ in 0..<mutations {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &generator))
                case 1: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                default: bytes.remove(at: index)
                }
            }
            do {
                let model = try ManagedObjectModel(modelCacheData: Data(bytes))
                _ = model.entityVersionHashesByName
                outcomes.loaded += 1
            } catch is CoreDataError {
                outcomes.failed += 1
            } catch {
                Issue.record("round \(round): unexpected error type \(error)")
            }
        }
        #expect(outcomes.failed > 0)
        #expect(outcomes.loaded + outcomes.failed == 1500)
    }

    @Test func mutatedArchivesNeverCrash() throws {
        var generator = SeededGenerator(seed: 0xA4C1_11FE)
        let archives = try CompiledModelRobustnessTests.fixtureBlobs().map { try Inflate.decompress($0) }
        var outcomes = (loaded: 0, failed: 0)
        for round in 0..<1500 {
            guard let archive = archives.randomElement(using: &generator) else { break }
            var bytes = [UInt8](archive)
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                if Bool.random(using: &generator) {
                    bytes[index] = UInt8.random(in: 0...255, using: &generator)
                } else {
                    // Small values hit references, counts and markers more often.
                    bytes[index] = UInt8.random(in: 0...16, using: &generator)
                }
            }
            do {
                let model = try ManagedObjectModel(compiledModelData: Data(bytes))
                _ = model.entityVersionHashesByName
                outcomes.loaded += 1
            } catch is CoreDataError {
                outcomes.failed += 1
            } catch {
                Issue.record("round \(round): unexpected error type \(error)")
            }
        }
        #expect(outcomes.loaded + outcomes.failed == 1500)
    }

    @Test func randomBytesGiveErrors() {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<500 {
            let count = Int.random(in: 0..<600, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(throws: CoreDataError.self) { try ManagedObjectModel(modelCacheData: Data(bytes)) }
            if bytes.count >= 8 { bytes.replaceSubrange(0..<8, with: Array("bplist00".utf8)) }
            #expect(throws: CoreDataError.self) { try ManagedObjectModel(compiledModelData: Data(bytes)) }
        }
    }
}
