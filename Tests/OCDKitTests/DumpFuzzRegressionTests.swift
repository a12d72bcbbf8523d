import Foundation
import Testing
@_spi(Fuzzing) @testable import OCDKit
import OpenCoreData

/// The dump fuzz targets' kept inputs (Fuzz/Regressions/<target> and
/// Fuzz/Seeds/<target>, for `dumpFile`, JSON lines, and `dumpCSV`, a CSV folder in
/// one file), loaded as `ocd store load` loads them.
@Suite("Fuzzing's regressions (dump files)")
struct DumpFuzzRegressionTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")
    static let moodyModel = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataTests/Fixtures/coredata/objcio+core-data/Moody/MoodyModel/Moody.xcdatamodeld")

    static func inputs(_ kind: String, _ target: String = "dumpFile") -> [URL] {
        let folder = fuzz.appendingPathComponent(kind).appendingPathComponent(target)
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
            for input in DumpFuzzRegressionTests.inputs("Regressions", "dumpCSV") {
                DumpInput.loadCSV(try Data(contentsOf: input), model: model, scratch: URL(fileURLWithPath: scratchPath))
            }
        }
    }

    @Test("CSV folders in one file: the seeds load; a bad cell is refused; only plain file names are written, inside the scratch folder")
    func csvFolders() throws {
        let model = try ManagedObjectModel(contentsOf: Self.moodyModel)
        let scratch = try TestScratch.folder("dump-fuzz-csv")
        let seeds = Self.inputs("Seeds", "dumpCSV")
        #expect(seeds.count >= 2)
        for seed in seeds {
            #expect(DumpInput.loadCSV(try Data(contentsOf: seed), model: model, scratch: scratch), "\(seed.lastPathComponent)")
        }
        let seed = try String(contentsOf: try #require(seeds.first { $0.lastPathComponent == "one-mood.txt" }), encoding: .utf8)
        #expect(seed.contains("2024-05-01T12:00:00.250Z"))
        let broken = seed.replacingOccurrences(of: "2024-05-01T12:00:00.250Z", with: "never")
        #expect(!DumpInput.loadCSV(Data(broken.utf8), model: model, scratch: scratch))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)

        let files = DumpInput.csvFolderFiles(Data("""
            before any file
            ==> store.json <==
            {"a":1}
            ==> ../escape.csv <==
            x
            ==> Mood.csv <==
            uri,date
            ==> /etc/passwd <==
            ==>  <==
            ==> Mood 2.csv <==
            ==> .csv <==
            """.utf8))
        #expect(files.map(\.name) == ["store.json", "Mood.csv"])
        #expect(files.map { String(decoding: $0.contents, as: UTF8.self) } == ["{\"a\":1}\n", "uri,date\n"])
    }
}
