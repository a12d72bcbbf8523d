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
        let report = file.run()
        for failure in report.failures {
            Issue.record("\(failure)")
        }
        #expect(report.failedCount == 0)
        #expect(report.passedCount == 163)
    }
}
