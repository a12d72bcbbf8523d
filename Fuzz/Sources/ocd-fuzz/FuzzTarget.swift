import Foundation
@_spi(Fuzzing) import OCDKit
@_spi(Fuzzing) import OpenCoreData
import Synchronization

// One fuzz target for every parser: `OCD_FUZZ_PARSER` names the parser this
// process feeds (an `UntrustedInput.Parser` raw value, `dumpFile` or `dumpCSV`). Fuzz/run
// starts one process per parser, each with its own corpus. With an input file
// as argument instead of a corpus folder, the process runs that input once.

/// What the inputs go to, set up once per process.
struct Target {
    /// The parser's name (`predicateFormat`, …, `dumpFile`, `dumpCSV`).
    var name: String
    var parser: UntrustedInput.Parser?
    /// For mapping models: the model versions they may name (the fixtures' bundles
    /// that have mapping models beside them).
    var mappingVersions: [ModelVersionBundle] = []
    /// For dump files: the model they are loaded with, and a folder for the store.
    var dumpModel: ManagedObjectModel?
    var scratch: URL?

    static func fromEnvironment() -> Target {
        let name = ProcessInfo.processInfo.environment["OCD_FUZZ_PARSER"] ?? ""
        var target = Target(name: name, parser: UntrustedInput.Parser(rawValue: name))
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../Tests/OpenCoreDataTests/Fixtures/coredata/objcio+core-data").standardizedFileURL
        switch name {
        case "mappingModel":
            target.mappingVersions = [
                require(try ModelVersionBundle(contentsOf: fixtures.appendingPathComponent("Migrations/Migrations/Moody.xcdatamodeld"))),
                require(try ModelVersionBundle(contentsOf: fixtures.appendingPathComponent(
                    "../objcio+issue-4-core-data-migration/BookMigration/Model.xcdatamodeld").standardizedFileURL)),
            ]
        case "dumpFile", "dumpCSV":
            target.dumpModel = require(try ManagedObjectModel(contentsOf: fixtures.appendingPathComponent("Moody/MoodyModel/Moody.xcdatamodeld")))
            target.scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-fuzz-\(getpid())")
        default:
            guard target.parser != nil else {
                let names = UntrustedInput.Parser.allCases.map(\.rawValue) + ["dumpFile", "dumpCSV"]
                fatalError("OCD_FUZZ_PARSER must name a parser: \(names.joined(separator: ", "))")
            }
        }
        return target
    }

    private static func require<T>(_ make: @autoclosure () throws -> T) -> T {
        do { return try make() } catch { fatalError("ocd-fuzz: its fixture did not load: \(error)") }
    }

    func run(_ data: Data) {
        if let parser {
            UntrustedInput.parse(data, as: parser, mappingVersions: mappingVersions)
        } else if let dumpModel, let scratch {
            if name == "dumpCSV" {
                DumpInput.loadCSV(data, model: dumpModel, scratch: scratch)
            } else {
                DumpInput.load(data, model: dumpModel, scratch: scratch)
            }
        }
    }
}

/// The target, made on the first input.
let target = Mutex<Target?>(nil)

/// libFuzzer's callback: one input.
func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
    target.withLock { target in
        if target == nil { target = Target.fromEnvironment() }
        target?.run(data)
    }
    return 0
}
