import ArgumentParser
import Foundation
import Testing
@testable import OCDKit

@Suite("ocd predicate")
struct PredicateCommandTests {
    static let cases = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataPredicatesTests/Fixtures/gnustep-cases.json")

    @discardableResult
    func run(_ arguments: [String]) throws -> String { try runOCD(arguments) }

    @Test("check passes on the gnustep cases and fails (non-zero) on a wrong expectation")
    func check() throws {
        let output = try run(["predicate", "check", Self.cases.path])
        #expect(output.hasSuffix("163 passed, 0 failed"))
        let folder = try TestScratch.folder("ocd")
        let bad = folder.appendingPathComponent("bad.json")
        try Data(#"{"cases": [{"id": "x", "format": "a == 1", "object": {"a": 1}, "expect": false}]}"#.utf8).write(to: bad)
        #expect(throws: (any Error).self) { try run(["predicate", "check", bad.path]) }
    }

    @Test("parse and eval run; a malformed predicate is an error")
    func parseAndEval() throws {
        #expect(try run(["predicate", "parse", "name = 'John' && age > 30"]) == #"name == "John" AND age > 30"#)
        #expect(try run(["predicate", "eval", "age > 30", "--object", #"{"age": 31}"#]) == "true")
        #expect(try run(["predicate", "eval", "name ==[cd] 'saint-etienne'", "--object", #"{"name": "Saint-Étienne"}"#]) == "true")
        #expect(throws: (any Error).self) { try run(["predicate", "parse", "name == "]) }
    }
}
