import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// Deep input is rejected with an error, never a stack overflow, and the deepest
/// accepted input prints, reads back and evaluates.
@Suite struct NestingTests {
    static let limit = CorePredicate.maximumNestingDepth

    static func nested(_ depth: Int, open: String, close: String, inner: String) -> String {
        String(repeating: open, count: depth) + inner + String(repeating: close, count: depth)
    }

    static let shapes: [(String, @Sendable (Int) -> String)] = [
        ("parentheses around a predicate", { nested($0, open: "(", close: ")", inner: "a == 1") }),
        ("parentheses around an expression", { nested($0, open: "(", close: ")", inner: "a") + " == 1" }),
        ("NOT", { String(repeating: "NOT ", count: $0) + "a == 1" }),
        ("!", { String(repeating: "!", count: $0) + "a == 1" }),
        ("unary minus", { "a == " + String(repeating: "-", count: $0) + "a" }),
        ("aggregates", { "a IN " + nested($0, open: "{", close: "}", inner: "1") }),
        ("functions", { nested($0, open: "abs(", close: ")", inner: "a") + " == 1" }),
        ("power chain", { "a == " + Array(repeating: "2", count: $0).joined(separator: " ** ") }),
        ("sum chain", { "a == " + Array(repeating: "1", count: $0).joined(separator: " + ") }),
        ("index chain", { "a" + String(repeating: "[0]", count: $0) + " == 1" }),
        ("subqueries", { depth in
            var p = "$x == 1"
            for _ in 0..<depth { p = "SUBQUERY(c, $x, \(p)).@count == 1" }
            return p
        }),
    ]

    @Test func deepInputIsAnErrorNotACrash() {
        for (name, make) in Self.shapes {
            for depth in [Self.limit * 3, 10_000] {
                let format = make(depth)
                do {
                    _ = try CorePredicate(format: format)
                    Issue.record("\(name) at depth \(depth) parsed")
                } catch let error as PredicateParseError {
                    #expect(error.expected.contains("nesting"), "\(name): \(error)")
                } catch {
                    Issue.record("\(name): unexpected \(error)")
                }
            }
        }
    }

    @Test(arguments: [limit / 4, limit - 10])
    func deepButAcceptedInputWorks(depth: Int) throws {
        for (name, make) in Self.shapes where name != "subqueries" || depth < 200 {
            let format = make(depth)
            let predicate = try CorePredicate(format: format)
            let printed = predicate.predicateFormat
            let reparsed = try CorePredicate(format: printed)
            #expect(reparsed == predicate, "\(name)")
            #expect(reparsed.hashValue == predicate.hashValue, "\(name)")
            _ = try? predicate.evaluate(with: ["a": 1, "c": [1]])
        }
    }
}
