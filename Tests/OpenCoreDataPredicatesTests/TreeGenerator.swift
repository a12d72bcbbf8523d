import Foundation
@testable import OpenCoreDataPredicates

/// A small deterministic random number generator (SplitMix64), so that generated
/// trees and fuzz inputs are the same on every run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }

    mutating func pick<T>(_ list: [T]) -> T { list[Int.random(in: 0..<list.count, using: &self)] }
}

/// Random syntax trees that the printer must print so that they read back equal: every
/// kind of predicate and expression, constants of every kind, reserved words as key
/// paths, strings with quotes, backslashes and line breaks.
struct TreeGenerator {
    var random: SeededGenerator

    static let words = ["name", "age", "a", "b", "size", "first", "and", "SELF", "in", "Zoë", "x_1", "count", "uti", "equals"]
    static let operators = ["@count", "@sum", "@avg", "@min", "@max", "@distinctUnionOfObjects"]
    static let strings = ["", "John", "a\"b", "back\\slash", "it's", "line\nbreak\ttab", "é", "e\u{301}", "%@", "$x", "😀", "\"\\\""]

    mutating func identifier() -> String { random.pick(TreeGenerator.words) }

    mutating func keyPath() -> String {
        var components: [String] = []
        for i in 0..<Int.random(in: 1...3, using: &random) {
            if i > 0, random.chance(20) {
                components.append(random.pick(TreeGenerator.operators))
            } else {
                components.append(identifier())
            }
        }
        if random.chance(10) { components[0] = random.pick(TreeGenerator.operators) }
        return components.joined(separator: ".")
    }

    mutating func constant(depth: Int) -> AttributeValue {
        switch Int.random(in: 0..<15, using: &random) {
        case 0: return .null
        case 1: return .bool(random.chance(50))
        case 2: return .int(Int64.random(in: -1000...1000, using: &random))
        case 3: return .int(random.pick([Int64.max, Int64.min, 0, -1]))
        case 4: return .double(Double.random(in: -1e6...1e6, using: &random))
        case 5: return .double(random.pick([0.1, 1e-7, 1e20, -2.5, 3.0, .infinity, -.infinity, .nan, .leastNonzeroMagnitude]))
        case 6, 7: return .string(random.pick(TreeGenerator.strings))
        case 8: return .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000_000...1_000_000_000, using: &random)) / 8))
        case 9: return .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, UInt8.random(in: 0...255, using: &random))))
        case 10: return .uri(URL(string: random.pick(["https://example.com/a?b=c", "x-coredata://A/B/p1", "file:///tmp/a%20b"]))!)
        case 11: return .data(Data((0..<Int.random(in: 0...5, using: &random)).map { UInt8($0 * 51) }))
        case 12 where depth > 0:
            return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in constant(depth: depth - 1) })
        case 13 where depth > 0:
            var d: [String: AttributeValue] = [:]
            for _ in 0..<Int.random(in: 1...2, using: &random) { d[random.pick(TreeGenerator.strings)] = constant(depth: depth - 1) }
            return .dictionary(d)
        default: return .int(Int64.random(in: 0...9, using: &random))
        }
    }

    /// An expression that is not folded by the parser (a key path, `SELF`...).
    mutating func nonConstant(depth: Int) -> CoreExpression {
        var e = expression(depth: depth)
        while e.isConstant { e = expression(depth: depth) }
        return e
    }

    mutating func expression(depth: Int) -> CoreExpression {
        if depth <= 0 {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: return .constant(constant(depth: 1))
            case 1: return .variable(identifier())
            case 2: return .evaluatedObject
            default: return .keyPath(keyPath())
            }
        }
        let d = depth - 1
        switch Int.random(in: 0..<18, using: &random) {
        case 0, 1: return .constant(constant(depth: 2))
        case 2, 3: return .keyPath(keyPath())
        case 4: return .variable(identifier())
        case 5:
            let bases: [CoreExpression] = [
                .variable(identifier()), .function("now", arguments: []), .index(.keyPath(keyPath()), .first),
                .subquery(collection: .keyPath("c"), variable: "x", predicate: .constant(true)),
            ]
            return .member(random.pick(bases), keyPath: keyPath())
        case 6:
            var list = (0..<Int.random(in: 0...2, using: &random)).map { _ in expression(depth: d) }
            list.insert(nonConstant(depth: d), at: list.isEmpty ? 0 : Int.random(in: 0...list.count, using: &random))
            return .aggregate(list)
        case 7, 8:
            let function = random.pick(PredicateFunction.allCases.filter { $0 != .castObjectToType })
            return .function(function.rawValue, arguments: (0..<function.argumentCount).map { _ in expression(depth: d) })
        case 9:
            return .customFunction(receiver: expression(depth: d), selector: random.pick(["foo:", "bar", "it's:", "a\\b"]),
                                   arguments: (0..<Int.random(in: 0...2, using: &random)).map { _ in expression(depth: d) })
        case 10:
            return .subquery(collection: expression(depth: d), variable: identifier(), predicate: predicate(depth: d))
        case 11:
            return .conditional(predicate(depth: d), trueExpression: expression(depth: d), falseExpression: expression(depth: d))
        case 12:
            let subscription: IndexSubscript = random.pick([.first, .last, .size, .expression(expression(depth: d))])
            return .index(expression(depth: d), subscription)
        case 13:
            return .cast(nonConstant(depth: d), toType: random.pick(["NSNumber", "NSString", "NSDate", "NSDecimalNumber"]))
        case 14:
            return .setOperation(random.pick(SetOperation.allCases), expression(depth: d), expression(depth: d))
        case 15:
            return .assignment(variable: identifier(), expression(depth: d))
        case 16:
            return .anyKey
        default:
            return .evaluatedObject
        }
    }

    mutating func predicate(depth: Int) -> CorePredicate {
        let choice = depth <= 0 ? Int.random(in: 0..<3, using: &random) : Int.random(in: 0..<9, using: &random)
        switch choice {
        case 0: return .constant(random.chance(50))
        case 1, 2, 3, 4:
            let modifier = random.pick(ComparisonModifier.allCases)
            var options: ComparisonOptions = []
            for option in [ComparisonOptions.caseInsensitive, .diacriticInsensitive, .normalized, .localeSensitive]
            where random.chance(25) { options.insert(option) }
            return .comparison(expression(depth: depth), random.pick(ComparisonOperator.allCases),
                               expression(depth: depth), modifier: modifier, options: options)
        case 5: return .not(predicate(depth: depth - 1))
        case 6: return .or((0..<Int.random(in: 2...3, using: &random)).map { _ in predicate(depth: depth - 1) })
        default: return .and((0..<Int.random(in: 2...3, using: &random)).map { _ in predicate(depth: depth - 1) })
        }
    }
}
