import Foundation
import Testing
@testable import OpenCoreDataPredicates

@Suite struct CaseFileTests {
    static func gnustepCases() throws -> PredicateCaseFile {
        let url = try #require(Bundle.module.url(forResource: "gnustep-cases", withExtension: "json", subdirectory: "Fixtures"))
        return try PredicateCaseFile(contentsOf: url)
    }

    @Test func everyGNUstepCasePasses() throws {
        let file = try Self.gnustepCases()
        #expect(file.cases.count == 163)
        #expect(file.source?.hasPrefix("GNUstep libs-base") == true)
        let report = file.run()
        for failure in report.failures {
            Issue.record("\(failure)")
        }
        #expect(report.failedCount == 0)
        #expect(report.passedCount == 163)
        // One case records GNUstep's printing of "=", which is not Apple's.
        #expect(report.deviations.map(\.id) == ["formatOperators.m:30"])
    }

    @Test func theDeviationIsRealAndDocumented() throws {
        let file = try Self.gnustepCases()
        let equalCase = try #require(file.cases.first { $0.id == "formatOperators.m:30" })
        #expect(equalCase.canonical == "a = 1")
        let asRecorded = equalCase.run(deviation: nil)
        #expect(!asRecorded.passed)
        #expect(asRecorded.message == "prints as a == 1, expected a = 1")
        let deviation = try #require(PredicateCaseFile.knownDeviations["formatOperators.m:30"])
        #expect(deviation.canonical == "a == 1")
        #expect(deviation.reference.hasPrefix("https://developer.apple.com/"))
        #expect(equalCase.run(deviation: deviation).passed)
    }

    @Test func caseFileFormat() throws {
        let json = #"""
        {"source": "test", "cases": [
          {"id": "t1", "format": "a == %@", "arguments": [{"$date": "2001-01-01T00:00:00Z"}],
           "object": {"a": {"$date": "2001-01-01T00:00:00Z"}}, "expect": true},
          {"id": "t2", "format": "a ==", "expect": "parse-error"},
          {"id": "t3", "format": "a < 1", "object": {"a": "x"}, "expect": "eval-error"},
          {"id": "t4", "format": "a == $v", "variables": {"v": 2}, "canonical": "a == 2", "expect": "parses"},
          {"id": "t5", "format": "a == 1", "object": {"a": 2}, "expect": true},
          {"id": "t6", "format": "a ==", "expect": true},
          {"id": "t7", "format": "a == 1", "expect": "parse-error"},
          {"id": "t8", "format": "a == 1", "canonical": "a = 1", "expect": "parses"},
          {"id": "t9", "format": "a < 1", "object": {"a": 0}, "expect": "eval-error"},
          {"id": "t10", "format": "a < 1", "object": {"a": "x"}, "expect": false},
          {"format": "SELF == nil", "object": {"$null": true}, "expect": true}
        ]}
        """#
        let file = try PredicateCaseFile(data: Data(json.utf8))
        #expect(file.source == "test")
        #expect(file.cases.count == 11)
        #expect(file.cases[10].id == "#10")
        #expect(file.cases[3].variables == ["v": 2])
        let report = file.run(deviations: [:])
        #expect(report.passedCount == 5)
        #expect(report.failures.map(\.id) == ["t5", "t6", "t7", "t8", "t9", "t10"])
        #expect(report.failures.map { $0.message ?? "" } == [
            "evaluates to false, expected true",
            #"does not parse: Unable to parse the format string "a ==": expected an expression at offset 4, found end of format"#,
            "parses as a == 1, expected a parse error",
            "prints as a == 1, expected a = 1",
            "evaluates to true, expected an evaluation error",
            #"evaluation fails (Type mismatch: Cannot compare "x" with 1 using <), expected false"#,
        ])
        #expect(report.failures[0].description == "FAIL t5: a == 1 — evaluates to false, expected true")
        #expect(throws: (any Error).self) { try PredicateCaseFile(data: Data(#"{"cases": [{"id": "x"}]}"#.utf8)) }
        #expect(throws: (any Error).self) { try PredicateCaseFile(data: Data(#"{"cases": [{"format": "a", "expect": "maybe"}]}"#.utf8)) }
        #expect(throws: (any Error).self) { try PredicateCaseFile(data: Data("[]".utf8)) }
    }

    @Test func jsonValues() throws {
        #expect(try AttributeValue(json: "null") == .null)
        #expect(try AttributeValue(json: "true") == .bool(true))
        #expect(try AttributeValue(json: "34") == .int(34))
        #expect(try AttributeValue(json: "40.5") == .double(40.5))
        #expect(try AttributeValue(json: #""x""#) == .string("x"))
        #expect(try AttributeValue(json: "[1, \"a\"]") == [1, "a"])
        #expect(try AttributeValue(json: #"{"a": {"b": [true]}}"#) == ["a": ["b": [true]]])
        #expect(try AttributeValue(json: #"{"$null": true}"#) == .null)
        #expect(try AttributeValue(json: #"{"$date": "2001-01-01T00:01:00Z"}"#) == .date(Date(timeIntervalSinceReferenceDate: 60)))
        #expect(try AttributeValue(json: #"{"$date": "2001-01-01T00:00:00.5Z"}"#) == .date(Date(timeIntervalSinceReferenceDate: 0.5)))
        #expect(try AttributeValue(json: #"{"$date": 0}"#) == .date(Date(timeIntervalSince1970: 0)))
        #expect(try AttributeValue(json: #"{"$decimal": "1.50"}"#) == .decimal(Decimal(string: "1.5")!))
        #expect(try AttributeValue(json: #"{"$data": "AAE="}"#) == .data(Data([0, 1])))
        #expect(try AttributeValue(json: #"{"$uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}"#)
                == .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        #expect(try AttributeValue(json: #"{"$url": "https://a.b/c"}"#) == .uri(URL(string: "https://a.b/c")!))
        #expect(try AttributeValue(json: #"{"$other": 1}"#) == ["$other": 1])
        #expect(throws: (any Error).self) { try AttributeValue(json: #"{"$date": "yesterday"}"#) }
        #expect(throws: (any Error).self) { try AttributeValue(json: "{") }
    }
}
