import Foundation
import Testing
@_spi(Fuzzing) import OCDKit
import OpenCoreData

/// The dump-file fuzz target's kept inputs (Fuzz/Regressions/dumpFile and
/// Fuzz/Seeds/dumpFile), loaded as `ocd store load` loads them.
@Suite("Fuzzing's regressions (dump files)")
struct DumpFuzzRegressionTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")
    static let moodyModel = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataTests/Fixtures/coredata/objcio+core-data/Moody/MoodyModel/Moody.xcdatamodeld")

    static func inputs(_ kind: String) -> [URL] {
        let folder = fuzz.appendingPathComponent(kind).appendingPathComponent("dumpFile")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { folder.appendingPathComponent($0) }
    }

    @Test("The seeds load into a new store; every input that once failed gives an answer, in a process of its own")
    func replay() async throws {
        let model = try ManagedObjectModel(contentsOf: Self.moodyModel)
        let scratch = try TestScratch.folder("dump-fuzz")
        let seeds = Self.inputs("Seeds")
        #expect(seeds.count >= 2)
        for seed in seeds {
            #expect(DumpInput.load(try Data(contentsOf: seed), model: model, scratch: scratch), "\(seed.lastPathComponent)")
        }
        // A seed with one byte changed in a value is refused, and leaves nothing behind.
        var broken = try Data(contentsOf: seeds[0])
        broken.append(contentsOf: Array("{\"entity\":\"Mood\",\"uri\":\"x\",\"values\":{\"date\":\"never\"}}\n".utf8))
        #expect(!DumpInput.load(broken, model: model, scratch: scratch))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
        await #expect(processExitsWith: .success) { [modelPath = Self.moodyModel.path as String, scratchPath = scratch.path as String] in
            let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: modelPath))
            for input in DumpFuzzRegressionTests.inputs("Regressions") {
                DumpInput.load(try Data(contentsOf: input), model: model, scratch: URL(fileURLWithPath: scratchPath))
            }
        }
    }
}
