import ArgumentParser
import Foundation
import Testing
@testable import OCDKit

@Suite("ocd predicate")
struct PredicateCommandTests {
    static let cases = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataPredicatesTests/Fixtures/gnustep-cases.json")

    func run(_ arguments: [String]) throws {
        var command = try OCD.parseAsRoot(arguments)
        try command.run()
    }

    @Test("check passes on the gnustep cases and fails (non-zero) on a wrong expectation")
    func check() throws {
        try run(["predicate", "check", Self.cases.path])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let bad = folder.appendingPathComponent("bad.json")
        try Data(#"{"cases": [{"id": "x", "format": "a == 1", "object": {"a": 1}, "expect": false}]}"#.utf8).write(to: bad)
        #expect(throws: (any Error).self) { try run(["predicate", "check", bad.path]) }
    }

    @Test("parse and eval run; a malformed predicate is an error")
    func parseAndEval() throws {
        try run(["predicate", "parse", "name = 'John' && age > 30"])
        try run(["predicate", "eval", "age > 30", "--object", #"{"age": 31}"#])
        #expect(throws: (any Error).self) { try run(["predicate", "parse", "name == "]) }
    }
}
