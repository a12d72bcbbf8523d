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

    @Test func collectionLiteralsNestAtMost32Levels() throws {
        let limit = PredicateParser.maximumCollectionNesting
        let accepted = try CorePredicate(format: "a IN " + Self.nested(limit, open: "{", close: "}", inner: "1"))
        #expect(try CorePredicate(format: accepted.predicateFormat) == accepted)
        #expect(try accepted.evaluate(with: ["a": 1]) == false)
        #expect(throws: PredicateParseError.self) {
            try CorePredicate(format: "a IN " + Self.nested(limit + 1, open: "{", close: "}", inner: "1"))
        }
        #expect(throws: PredicateParseError.self) {
            try CorePredicate(format: "a IN " + Self.nested(10_000, open: "{", close: "}", inner: "$x"))
        }
    }

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

    /// Parsing, evaluating and printing move to a large stack when input nests deeply,
    /// so they work on threads with small stacks (512 KB, as Dispatch gives on Apple
    /// platforms), even in debug builds.
    @Test func deepInputOnASmallStack() throws {
        final class Outcome: @unchecked Sendable {
            var results: [String] = []
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            for (name, make) in NestingTests.shapes where name != "subqueries" {
                do {
                    let predicate = try CorePredicate(format: make(Self.limit - 10))
                    _ = try? predicate.evaluate(with: ["a": 1, "c": [1]])
                    outcome.results.append("\(name): \(predicate.predicateFormat.count)")
                } catch {
                    outcome.results.append("\(name): \(error)")
                }
            }
        }
        thread.stackSize = 512 << 10
        thread.start()
        done.wait()
        #expect(outcome.results.count == Self.shapes.count - 1)
        for result in outcome.results {
            #expect(!result.contains("Unable"), "\(result)")
        }
    }
}
