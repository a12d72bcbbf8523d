import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// Every invalid format gives an error that says where and what was expected.
@Suite struct ParseErrorTests {
    struct Case: Sendable, CustomStringConvertible {
        var format: String
        var offset: Int
        var expected: String
        var found: String
        var description: String { format }
    }

    static let cases: [Case] = [
        Case(format: "", offset: 0, expected: "an expression", found: "end of format"),
        Case(format: "name == ", offset: 8, expected: "an expression", found: "end of format"),
        Case(format: "name", offset: 4, expected: "a comparison operator", found: "end of format"),
        Case(format: "== 5", offset: 0, expected: "an expression", found: "'=='"),
        Case(format: "a = = 5", offset: 4, expected: "an expression", found: "'='"),
        Case(format: "(a == 1", offset: 7, expected: "')'", found: "end of format"),
        Case(format: "a == 1)", offset: 6, expected: "AND, OR or the end of the format", found: "')'"),
        Case(format: "a == 1 AND", offset: 10, expected: "an expression", found: "end of format"),
        Case(format: "a == 1 b == 2", offset: 7, expected: "AND, OR or the end of the format", found: "'b'"),
        Case(format: "a IN", offset: 4, expected: "an expression", found: "end of format"),
        Case(format: "a IN {1,2", offset: 9, expected: "'}'", found: "end of format"),
        Case(format: "a == 'open", offset: 5, expected: "the closing ' of the string", found: "end of format"),
        Case(format: "a == ?", offset: 5, expected: "a valid token", found: "'?'"),
        Case(format: "a ==[x] 1", offset: 5, expected: "comparison options such as c, d or cd", found: "'x'"),
        Case(format: "a == 1 AND OR b == 2", offset: 11, expected: "an expression", found: "'OR'"),
        Case(format: "ANY a", offset: 5, expected: "a comparison operator", found: "end of format"),
        Case(format: "a == nosuch(1)", offset: 5, expected: "the name of a predefined function (sum, count, average, now...)",
             found: "'nosuch'"),
        Case(format: "a == sum(1, 2)", offset: 5, expected: "1 argument(s) for 'sum:'", found: "2"),
        Case(format: "a == %@", offset: 5, expected: "an argument for %@", found: "no more arguments"),
        Case(format: "a == %y", offset: 5, expected: "a format specifier (%@, %K, %d, %f, %s...)", found: "'y'"),
        Case(format: "a == %q", offset: 5, expected: "a format specifier (%@, %K, %d, %f, %s...)", found: "end of format"),
        Case(format: "SUBQUERY(a, x, x == 1).@count > 0", offset: 12,
             expected: "the subquery's iteration variable ($x)", found: "'x'"),
        Case(format: "a == 0x", offset: 7, expected: "digits of the number", found: "end of format"),
        Case(format: "a == 1e", offset: 7, expected: "the digits of an exponent", found: "end of format"),
        Case(format: "a == 12abc", offset: 7, expected: "the end of the number", found: "'a'"),
        Case(format: "a == 0xFFFFFFFFFFFFFFFFF", offset: 5, expected: "an integer that fits in 64 bits", found: "a larger integer"),
        Case(format: "a.@bogus == 1", offset: 2,
             expected: "a collection operator (@count, @sum, @avg, @min, @max, @distinctUnionOfObjects...)", found: "'@bogus'"),
        Case(format: "(a == 1) + 1 == 2", offset: 9, expected: "AND, OR, a comparison operator or ')'", found: "'+'"),
        Case(format: "(a == 1) == 2", offset: 0, expected: "an expression before '=='", found: "a predicate"),
        Case(format: "a == (b == 1)", offset: 5, expected: "an expression", found: "a predicate"),
        Case(format: "Zoë == 'é' AND ?", offset: 15, expected: "a valid token", found: "'?'"),
        Case(format: "a == $", offset: 6, expected: "an identifier after '$'", found: "end of format"),
        Case(format: "a.1 == 1", offset: 2, expected: "a key after '.'", found: "the number 1"),
        Case(format: "FETCH(a, b, NO) == 1", offset: 0, expected: "an expression (FETCH is not supported)", found: "'FETCH'"),
        Case(format: "a == 'x' 'y'", offset: 9, expected: "AND, OR or the end of the format", found: "the string \"y\""),
    ]

    @Test(arguments: cases)
    func errorSaysWhereAndWhat(_ c: Case) {
        do {
            let p = try CorePredicate(format: c.format)
            Issue.record("\(c.format) parsed as \(p)")
        } catch let error as PredicateParseError {
            #expect(error.offset == c.offset, "\(c.format): \(error)")
            #expect(error.expected == c.expected, "\(c.format): \(error)")
            #expect(error.found == c.found, "\(c.format): \(error)")
            #expect(error.format == c.format)
            #expect(error.description.contains("at offset \(error.offset)"))
        } catch {
            Issue.record("\(c.format): unexpected error \(error)")
        }
    }

    @Test func expressionFormatErrors() {
        #expect(throws: PredicateParseError.self) { try CoreExpression(format: "a == 1") }
        #expect(throws: PredicateParseError.self) { try CoreExpression(format: "(a == 1)") }
        #expect(throws: PredicateParseError.self) { try CoreExpression(format: "a b") }
        #expect(throws: PredicateParseError.self) { try CoreExpression(format: "") }
    }

    @Test func errorDescription() {
        let error = PredicateParseError(offset: 8, expected: "an expression", found: "end of format", format: "name == ")
        #expect(error.description
                == #"Unable to parse the format string "name == ": expected an expression at offset 8, found end of format"#)
    }
}
