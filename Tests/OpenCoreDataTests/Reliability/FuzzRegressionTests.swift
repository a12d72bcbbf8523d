import Foundation
import Testing
@_spi(Fuzzing) @testable import OpenCoreData

/// Every input the fuzzer (Fuzz/run) ever found failing, kept in
/// Fuzz/Regressions/<parser>/, and the committed seeds of Fuzz/Seeds/<parser>/,
/// replayed through the same entry points the fuzz target calls. Each parser runs
/// in a process of its own, so an input that crashes again fails its test rather
/// than the test run.
@Suite("Fuzzing's regressions")
struct FuzzRegressionTests {
    static let fuzz = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    /// The kept inputs of `parser`: regressions, then seeds.
    static func inputs(_ parser: String) -> [URL] {
        ["Regressions", "Seeds"].flatMap { kind -> [URL] in
            let folder = fuzz.appendingPathComponent(kind).appendingPathComponent(parser)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return names.sorted().map { folder.appendingPathComponent($0) }
        }
    }

    /// The model versions the mapping-model fuzz target reads mappings against.
    static func mappingVersions() throws -> [ModelVersionBundle] {
        [try ModelVersionBundle(contentsOf: Fixtures.moodyModel),
         try ModelVersionBundle(contentsOf: Fixtures.url("objcio+issue-4-core-data-migration/BookMigration/Model.xcdatamodeld"))]
    }

    @Test("Every kept input of each parser gives a value or an error, in a process of its own", arguments: UntrustedInput.Parser.allCases)
    func replay(_ parser: UntrustedInput.Parser) async {
        await #expect(processExitsWith: .success) { [name = parser.rawValue as String] in
            let parser = UntrustedInput.Parser(rawValue: name)!
            let versions = parser == .mappingModel ? try FuzzRegressionTests.mappingVersions() : []
            for input in FuzzRegressionTests.inputs(name) {
                UntrustedInput.parse(try Data(contentsOf: input), as: parser, mappingVersions: versions)
            }
        }
    }

    @Test("A mapping model or model file that is not UTF-8 is refused with its line and column")
    func xmlThatIsNotUTF8() throws {
        let crash = try #require(Self.inputs("mappingModel").first { $0.lastPathComponent == "crash-d8cffa3538205c5265d01ded3ba9523d40ac5f67" })
        let data = try Data(contentsOf: crash)
        let versions = try Self.mappingVersions()
        #expect(UntrustedInput.parse(data, as: .mappingModel, mappingVersions: versions) == false)
        let error = try #require(throws: CoreDataError.self) {
            try XMLElementNode.parse(data, url: URL(fileURLWithPath: "xcmapping.xml"))
        }
        #expect(error.code == .fileReadCorruptFile)
        #expect(error.message.contains("line 53, column") && error.message.hasSuffix("not UTF-8"), "\(error.message)")
        // With that byte made ASCII, the reader finds what else the fuzzer broke
        // (a later line) and says so.
        var repaired = data
        repaired[2141] = UInt8(ascii: "f")
        let later = try #require(throws: CoreDataError.self) { try XMLElementNode.parse(repaired, url: URL(fileURLWithPath: "xcmapping.xml")) }
        #expect(!later.message.contains("line 53") && !later.message.contains("UTF-8"), "\(later.message)")
    }

    @Test("A processing instruction without data (`<?name?>`, which made Foundation's XMLParser read a null pointer) is well-formed XML and is read")
    func processingInstructionWithoutData() throws {
        let crash = try #require(Self.inputs("mappingModel").first { $0.lastPathComponent == "crash-b0a870039516da2a33ad02cbc5b4fb022d541b41" })
        _ = UntrustedInput.parse(try Data(contentsOf: crash), as: .mappingModel, mappingVersions: try Self.mappingVersions())
        for accepted in ["<a><?m?></a>", "<?m?><a/>", "<a/><?m?>", "<?xml version=\"1.0\"?><a/>", "<a><?m ?></a>", "<a><?m x?></a>", "<!-- <?m?> --><a/>", "<a><![CDATA[<?m?>]]></a>", "<a>?></a>"] {
            #expect(throws: Never.self, "\(accepted)") { try XMLElementNode.parse(Data(accepted.utf8), url: URL(fileURLWithPath: "a.xml")) }
        }
        for refused in ["<??><a/>", "<a><?m"] {
            #expect(throws: CoreDataError.self, "\(refused)") { try XMLElementNode.parse(Data(refused.utf8), url: URL(fileURLWithPath: "a.xml")) }
        }
    }

    @Test("The seeds parse: the entry points reach past their first checks")
    func seedsParse() throws {
        let versions = try Self.mappingVersions()
        #expect(UntrustedInput.parse(Data("%K BEGINSWITH[cd] %@ AND age > %d".utf8), as: .predicateFormat))
        #expect(!UntrustedInput.parse(Data("name BEGINSWITH".utf8), as: .predicateFormat))
        let contents = Fixtures.moodyModel.appendingPathComponent("Moody 6.xcdatamodel/contents")
        #expect(UntrustedInput.parse(try Data(contentsOf: contents), as: .xcodeModel))
        let mapping = Fixtures.url("objcio+core-data/Migrations/Migrations/Moody 5-Moody 6.xcmappingmodel/xcmapping.xml")
        #expect(UntrustedInput.parse(try Data(contentsOf: mapping), as: .mappingModel, mappingVersions: versions))
        // A mapping of the second bundle is read against it; one of neither is an error.
        let book = Fixtures.url("objcio+issue-4-core-data-migration/BookMigration/Model2_to_Model3.xcmappingmodel/xcmapping.xml")
        #expect(UntrustedInput.parse(try Data(contentsOf: book), as: .mappingModel, mappingVersions: versions))
        #expect(!UntrustedInput.parse(try Data(contentsOf: book), as: .mappingModel, mappingVersions: [versions[0]]))
        #expect(UntrustedInput.parse(try Data(contentsOf: book), as: .mappingModel))
        let compiled = try CompiledModelWriter().archiveData(for: ManagedObjectModel(contentsOf: contents))
        #expect(UntrustedInput.parse(compiled, as: .compiledModel))
        #expect(UntrustedInput.parse(try CompiledModelWriter().modelCacheData(for: ManagedObjectModel(contentsOf: contents)), as: .modelCache))
        #expect(UntrustedInput.parse(compiled, as: .propertyList))
        #expect(UntrustedInput.parse(try AttributeValueArchiver.archivedData(withRootValue: .array([.string("a"), .int(1)])), as: .keyedArchive))
        #expect(!UntrustedInput.parse(Data("not a plist".utf8), as: .propertyList))
    }
}
