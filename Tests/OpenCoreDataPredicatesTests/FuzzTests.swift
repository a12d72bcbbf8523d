import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// 100,000 random and mutated format strings: each one parses or fails with a
/// `PredicateParseError`; what parses prints, reads back equal, and evaluates or
/// fails with a `PredicateEvaluationError`. Nothing crashes or hangs.
@Suite struct FuzzTests {
    static let extraSeeds = [
        "name == 'John' AND age > 30", "ANY children.name BEGINSWITH[cd] %@", "NOT (a == 1 OR b != 2)",
        "SUBQUERY(friends, $f, $f.age > %d AND $f.name LIKE 'A*').@count > %d", "a + b * 2 ** 3 == -c / 4",
        "TERNARY(flag == YES, 'y', 'n') IN {'y', nil}", "CAST(%@, 'NSDate') < now()", "sum(nums) BETWEEN {1, 10}",
        "nums[FIRST] == nums[LAST] OR nums[SIZE] > 2", "FUNCTION(SELF, 'foo:', 1) == 0x1F", "$v := 5 == $v",
        "tags UNION {'z'} CONTAINS[c] 'Z'", "@sum.nums.self >= 0b101", "name MATCHES '^[A-Z].*$'",
        "'a\\'b\\u00e9\\x41\\101' ENDSWITH \"\\\"\"", "d['k'] == 'v' && !(x == nil) || TRUEPREDICATE",
        "modulus:by:(a, 3) == bitwiseAnd:with:(a, 1) | 2 ^ ~b << 1", "#and.#or == ANYKEY",
        "name UTI-CONFORMS-TO 'public.text'", "friends.@avg.age > 1.5e1 AND NONE tags == 'x'",
    ]

    static let tokens = [
        "(", ")", "{", "}", "[", "]", ",", ".", "'", "\"", "\\", "%@", "%K", "%d", "%f", "%s", "%%", "%",
        "$", "$x", "@count", "@sum", "#", "==", "=", "!=", "<", ">=", "=>", "AND", "OR", "NOT", "&&", "||", "!",
        "ANY", "ALL", "NONE", "SOME", "IN", "CONTAINS", "LIKE", "MATCHES", "BETWEEN", "BEGINSWITH", "[c]", "[cd]",
        "SUBQUERY(", "CAST(", "TERNARY(", "FUNCTION(", "sum(", "now()", "-", "+", "*", "/", "**", "&", "|", "^",
        "~", "<<", ":=", "1", "1.5", "0x", "0b2", "1e", "1e400", "9223372036854775808", " ", "\n", "\t", "é", "😀",
        "\u{301}", "nil", "SELF", "YES", "?", "FIRST", "SIZE", "name", "a.b", "UNION", "TRUEPREDICATE", "UTI-",
    ]

    let argumentPool: [any FormatArgument] = [
        "name", "Record1.Name", 3, 2.5, ["a", "b"], "x", Date(timeIntervalSinceReferenceDate: 5), true, "[a-z]*",
        AttributeValue.null, 40, "friends",
    ]

    let object: [String: Any] = [
        "name": "Saint-Étienne", "age": 41, "score": 2.5, "flag": true, "a": 8, "b": 2, "c": -3, "x": NSNull(),
        "tags": ["a", "b"], "nums": [1, 2, 3], "d": ["k": "v"], "date": Date(timeIntervalSinceReferenceDate: 0),
        "friends": [["name": "Alan", "age": 41, "friends": [[String: Any]]()], ["name": "Grace", "age": 45]],
        "Record1": ["Name": "John", "Age": 34, "Children": ["Kid1", "Kid2"]], "list": Set(["a", "b"]),
    ]

    let variables: [String: Any] = ["x": 1, "b": "val", "c": [1, 2], "single": "s", "f": 1, "v": 2, "value": 3]

    struct Stats {
        var parsed = 0
        var rejected = 0
        var evaluated = 0
        var evaluationErrors = 0
    }

    /// A gentler mutation, one word at a time, that keeps more inputs valid.
    static func mutateWords(_ input: [Unicode.Scalar], _ random: inout SeededGenerator) -> [Unicode.Scalar] {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: input)
        var words = String(view).split(separator: " ").map(String.init)
        let words2 = ["NOT", "AND", "OR", "ANY", "==", "!=", "<", "IN", "CONTAINS[c]", "1", "'x'", "name", "nil",
                      "%@", "%K", "%d", "(", ")", "+", "-", "SELF", "$x", "{1, 2}", "now()", "nums[FIRST]", "YES"]
        let position = Int.random(in: 0...words.count, using: &random)
        switch Int.random(in: 0..<4, using: &random) {
        case 0 where position < words.count: words[position] = random.pick(words2)
        case 1 where position < words.count: words.remove(at: position)
        case 2 where position + 1 < words.count: words.swapAt(position, position + 1)
        default: words.insert(random.pick(words2), at: position)
        }
        return Array(words.joined(separator: " ").unicodeScalars)
    }

    static func mutate(_ input: [Unicode.Scalar], _ random: inout SeededGenerator, seeds: [[Unicode.Scalar]]) -> [Unicode.Scalar] {
        var s = input
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let position = s.isEmpty ? 0 : Int.random(in: 0...s.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0, 1:
                s.insert(contentsOf: random.pick(tokens).unicodeScalars, at: position)
            case 2:
                guard !s.isEmpty, position < s.count else { continue }
                let end = Swift.min(s.count, position + Int.random(in: 1...6, using: &random))
                s.removeSubrange(position..<end)
            case 3:
                guard !s.isEmpty, position < s.count else { continue }
                let end = Swift.min(s.count, position + Int.random(in: 1...12, using: &random))
                s.insert(contentsOf: s[position..<end], at: end)
            case 4:
                guard !s.isEmpty, position < s.count else { continue }
                let codes: [UInt32] = [0x20, 0x28, 0x29, 0x27, 0x22, 0x5C, 0x25, 0x24, 0x30, 0x61, 0xE9, 0x301, 0x1F600, 0x0]
                s[position] = Unicode.Scalar(random.pick(codes)) ?? "x"
            case 5:
                let other = random.pick(seeds)
                let cut = other.isEmpty ? 0 : Int.random(in: 0...other.count, using: &random)
                s = Array(s[0..<position]) + Array(other[cut...])
            default:
                s = Array(s[0..<position])
            }
        }
        return s
    }

    @Test func fuzz() throws {
        let gnustep = try CaseFileTests.gnustepCases().cases.map(\.format)
        let seeds = (gnustep + Self.extraSeeds).map { Array($0.unicodeScalars) }
        var random = SeededGenerator(seed: 0x5EED)
        var generator = TreeGenerator(random: SeededGenerator(seed: 0xF00D))
        var stats = Stats()
        let iterations = 40_000
        for i in 0..<iterations {
            let scalars: [Unicode.Scalar]
            if i % 10 == 0 {
                var soup: [Unicode.Scalar] = []
                for _ in 0..<Int.random(in: 1...12, using: &random) {
                    soup += random.pick(Self.tokens).unicodeScalars
                    if random.chance(60) { soup.append(" ") }
                }
                scalars = soup
            } else if i % 10 == 1 {
                // A generated tree's text, evaluated below against the sample object.
                scalars = Array(generator.predicate(depth: 1 + i % 3).predicateFormat.unicodeScalars)
            } else if i % 10 == 2 {
                scalars = random.pick(seeds)
            } else if i % 10 < 6 {
                scalars = Self.mutateWords(random.pick(seeds), &random)
            } else {
                scalars = Self.mutate(random.pick(seeds), &random, seeds: seeds)
            }
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars)
            let format = String(view)
            let arguments = self.arguments(for: scalars, &random)
            check(format, arguments, &stats)
        }
        #expect(stats.parsed + stats.rejected == iterations)
        #expect(stats.parsed > iterations / 5, "too few inputs parse to exercise printing and evaluation")
        #expect(stats.rejected > iterations / 5)
        print("fuzz: \(stats.parsed) parsed, \(stats.rejected) rejected, \(stats.evaluated) evaluated, "
              + "\(stats.evaluationErrors) evaluation errors")
    }

    /// Arguments that mostly fit the specifiers in the format (a string for %K, a
    /// number for %d...), sometimes not, sometimes too few.
    func arguments(for format: [Unicode.Scalar], _ random: inout SeededGenerator) -> [any FormatArgument] {
        var arguments: [any FormatArgument] = []
        var i = 0
        while i + 1 < format.count {
            defer { i += 1 }
            guard format[i] == "%" else { continue }
            if random.chance(10) {
                arguments.append(random.pick(argumentPool))
                continue
            }
            switch format[i + 1] {
            case "K": arguments.append(random.pick(["name", "Record1.Name", "friends", "nums", "a.b.c", "#x"]))
            case "d", "i", "l", "u": arguments.append(random.pick([0, 1, 40, -7, Int.max]))
            case "f", "g": arguments.append(random.pick([0.5, -2.25, 1e300]))
            case "s": arguments.append(random.pick(["x", "", "é"]))
            case "@": arguments.append(random.pick(argumentPool))
            default: break
            }
        }
        if random.chance(5), !arguments.isEmpty { arguments.removeLast() }
        return arguments
    }

    func check(_ format: String, _ arguments: [any FormatArgument], _ stats: inout Stats) {
        let predicate: CorePredicate
        do {
            predicate = try CorePredicate(format: format, arguments: arguments)
        } catch let error as PredicateParseError {
            stats.rejected += 1
            if error.offset < 0 || error.offset > format.count || error.expected.isEmpty || error.found.isEmpty {
                Issue.record("bad error for \(format.debugDescription): \(error)")
            }
            return
        } catch {
            Issue.record("\(format.debugDescription) threw \(error)")
            return
        }
        stats.parsed += 1
        let printed = predicate.predicateFormat
        // A key path made with %K from a string that is not one ("[a-z]*") prints as
        // Apple prints it, which does not read back as a key path.
        let rawKeyPaths = format.contains("%K") && arguments.contains {
            guard case .string(let s) = $0.formatArgumentValue else { return false }
            return !s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
                guard let head = part.unicodeScalars.first else { return false }
                return PredicateLexer.isIdentifierStart(head) && part.unicodeScalars.allSatisfy(PredicateLexer.isIdentifierContinuation)
            }
        }
        do {
            let reread = try CorePredicate(format: printed)
            if reread != predicate && !rawKeyPaths {
                Issue.record("\(format.debugDescription) prints as \(printed.debugDescription), which reads back as \(reread)")
            }
        } catch where !rawKeyPaths {
            Issue.record("\(format.debugDescription) prints as \(printed.debugDescription), which does not parse: \(error)")
        } catch {}
        do {
            _ = try predicate.evaluate(with: object, substitutionVariables: variables)
            stats.evaluated += 1
        } catch is PredicateEvaluationError {
            stats.evaluationErrors += 1
        } catch {
            Issue.record("\(format.debugDescription) evaluation threw \(error)")
        }
    }
}
