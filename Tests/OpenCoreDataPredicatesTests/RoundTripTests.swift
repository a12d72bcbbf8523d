import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// `parse(print(p)) == p`: what the printer writes reads back as the same predicate.
@Suite struct RoundTripTests {
    @Test func everyGNUstepCaseRoundTrips() throws {
        let file = try CaseFileTests.gnustepCases()
        var checked = 0
        for c in file.cases {
            guard var predicate = try? CorePredicate(format: c.format, arguments: c.arguments) else { continue }
            if let variables = c.variables { predicate = predicate.withSubstitutionVariables(variables) }
            let printed = predicate.predicateFormat
            let reread = try CorePredicate(format: printed)
            if c.arguments.contains(.string("$single")) {
                // A key path made with %K from "$single" prints as Apple prints it, which
                // reads back as a variable: only the text is stable.
                #expect(reread.predicateFormat == printed, "\(c.id)")
            } else {
                #expect(reread == predicate, "\(c.id): \(printed)")
                #expect(reread.hashValue == predicate.hashValue, "\(c.id)")
            }
            checked += 1
        }
        #expect(checked == file.cases.count)
    }

    @Test func generatedTreesRoundTrip() throws {
        var generator = TreeGenerator(random: SeededGenerator(seed: 2024))
        for i in 0..<3000 {
            let predicate = generator.predicate(depth: 1 + i % 4)
            let printed = predicate.predicateFormat
            do {
                let reread = try CorePredicate(format: printed)
                #expect(reread == predicate, "\(i): \(printed)\n   read back as \(reread.predicateFormat)")
                #expect(reread.hashValue == predicate.hashValue, "\(i): \(printed)")
                #expect(reread.predicateFormat == printed)
            } catch {
                Issue.record("\(i): \(printed) does not read back: \(error)")
            }
        }
    }

    @Test func generatedExpressionsRoundTrip() throws {
        var generator = TreeGenerator(random: SeededGenerator(seed: 7))
        for i in 0..<2000 {
            let expression = generator.expression(depth: 1 + i % 4)
            let printed = expression.description
            do {
                let reread = try CoreExpression(format: printed)
                #expect(reread == expression, "\(i): \(printed)\n   read back as \(reread)")
            } catch {
                Issue.record("\(i): \(printed) does not read back: \(error)")
            }
        }
    }

    @Test func substitutionKeepsBoundVariables() throws {
        let p = try CorePredicate(format: "SUBQUERY(items, $x, $x.price > $x) .@count > 0 AND name == $x AND ($y := 1) == $y")
        #expect(p.variableNames == ["x", "y"])
        let q = p.withSubstitutionVariables(["x": 5, "y": "no"])
        #expect(q.predicateFormat == "SUBQUERY(items, $x, $x.price > $x).@count > 0 AND name == 5 AND $y := 1 == \"no\"")
        let e = try CoreExpression(format: "$a + $b").withSubstitutionVariables(["a": 1])
        #expect(e.description == "1 + $b")
        let r = try CorePredicate(format: "a == $v").withSubstitutionVariables(expressions: ["v": .keyPath("b")])
        #expect(r.predicateFormat == "a == b")
    }
}
