import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// Reading the format language into trees.
@Suite struct ParserTests {
    func parse(_ format: String, _ arguments: any FormatArgument...) throws -> CorePredicate {
        try CorePredicate(format: format, arguments: arguments)
    }

    func comparison(_ format: String, _ arguments: any FormatArgument...) throws -> ComparisonPredicate {
        let predicate = try CorePredicate(format: format, arguments: arguments)
        return try #require(predicate.comparisonPredicate, "\(format) is not a comparison")
    }

    func expression(_ format: String, _ arguments: any FormatArgument...) throws -> CoreExpression {
        try CoreExpression(format: format, arguments: arguments)
    }

    @Test(arguments: [
        ("a = 1", ComparisonOperator.equalTo), ("a == 1", .equalTo), ("a != 1", .notEqualTo),
        ("a <> 1", .notEqualTo), ("a < 1", .lessThan), ("a <= 1", .lessThanOrEqualTo),
        ("a =< 1", .lessThanOrEqualTo), ("a > 1", .greaterThan), ("a >= 1", .greaterThanOrEqualTo),
        ("a => 1", .greaterThanOrEqualTo), ("a BETWEEN {1, 2}", .between), ("a IN {1}", .in),
        ("a CONTAINS 1", .contains), ("a BEGINSWITH 'x'", .beginsWith), ("a ENDSWITH 'x'", .endsWith),
        ("a LIKE 'x'", .like), ("a MATCHES 'x'", .matches), ("a UTI-CONFORMS-TO 'public.data'", .conformsTo),
        ("a UTI-EQUALS 'public.data'", .utiEquals), ("a like 'x'", .like), ("a BeginsWith 'x'", .beginsWith),
    ])
    func operators(format: String, expected: ComparisonOperator) throws {
        let c = try comparison(format)
        #expect(c.operatorType == expected)
        #expect(c.leftExpression == .keyPath("a"))
        #expect(c.modifier == .direct)
    }

    @Test func comparisonOptions() throws {
        #expect(try comparison("a ==[c] 'x'").options == .caseInsensitive)
        #expect(try comparison("a ==[d] 'x'").options == .diacriticInsensitive)
        #expect(try comparison("a CONTAINS[cd] 'x'").options == [.caseInsensitive, .diacriticInsensitive])
        #expect(try comparison("a LIKE[n] 'x'").options == .normalized)
        #expect(try comparison("a LIKE[cdl] 'x'").options == [.caseInsensitive, .diacriticInsensitive, .localeSensitive])
        #expect(try comparison("a BEGINSWITH [CD] 'x'").options == [.caseInsensitive, .diacriticInsensitive])
        #expect(throws: PredicateParseError.self) { try parse("a ==[x] 'x'") }
    }

    @Test func modifiers() throws {
        #expect(try comparison("ANY a == 1").modifier == .any)
        #expect(try comparison("SOME a == 1").modifier == .any)
        #expect(try comparison("ALL a == 1").modifier == .all)
        #expect(try comparison("NONE a == 1").modifier == .none)
        #expect(try comparison("any a == 1").modifier == .any)
        #expect(throws: PredicateParseError.self) { try parse("ANY a") }
    }

    @Test func compoundsAndPrecedence() throws {
        let a = CorePredicate.comparison(.keyPath("a"), .equalTo, 1)
        let b = CorePredicate.comparison(.keyPath("b"), .equalTo, 2)
        let c = CorePredicate.comparison(.keyPath("c"), .equalTo, 3)
        #expect(try parse("a == 1 AND b == 2") == .and([a, b]))
        #expect(try parse("a == 1 && b == 2") == .and([a, b]))
        #expect(try parse("a == 1 OR b == 2") == .or([a, b]))
        #expect(try parse("a == 1 || b == 2") == .or([a, b]))
        #expect(try parse("NOT a == 1") == .not(a))
        #expect(try parse("! a == 1") == .not(a))
        #expect(try parse("NOT (a == 1)") == .not(a))
        // OR < AND < NOT
        #expect(try parse("a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
        #expect(try parse("a == 1 AND b == 2 OR c == 3") == .or([.and([a, b]), c]))
        #expect(try parse("NOT a == 1 AND b == 2") == .and([.not(a), b]))
        #expect(try parse("NOT (a == 1 AND b == 2)") == .not(.and([a, b])))
        // A chain is one compound; parentheses keep a nested one.
        #expect(try parse("a == 1 AND b == 2 AND c == 3") == .and([a, b, c]))
        #expect(try parse("(a == 1 AND b == 2) AND c == 3") == .and([.and([a, b]), c]))
        #expect(try parse("((a == 1))") == a)
        #expect(try parse("TRUEPREDICATE") == .constant(true))
        #expect(try parse("falsepredicate") == .constant(false))
        #expect(try parse("TRUEPREDICATE AND NOT FALSEPREDICATE") == .and([.constant(true), .not(.constant(false))]))
    }

    @Test func keyPathsAndSelf() throws {
        #expect(try expression("name") == .keyPath("name"))
        #expect(try expression("department.name") == .keyPath("department.name"))
        #expect(try expression("children.@count") == .keyPath("children.@count"))
        #expect(try expression("@sum.items.price") == .keyPath("@sum.items.price"))
        #expect(try expression("items.@avg.price") == .keyPath("items.@avg.price"))
        #expect(try expression("SELF") == .evaluatedObject)
        #expect(try expression("self") == .evaluatedObject)
        #expect(try expression("SELF.name") == .keyPath("name"))
        #expect(try expression("#SELF") == .keyPath("SELF"))
        #expect(try expression("#and.#or") == .keyPath("and.or"))
        #expect(try expression("a.size.first") == .keyPath("a.size.first"))
        #expect(try expression("size") == .keyPath("size"))
        #expect(try expression("Zoë") == .keyPath("Zoë"))
        #expect(try expression("$x.age") == .member(.variable("x"), keyPath: "age"))
        #expect(try expression("$x.a.b") == .member(.variable("x"), keyPath: "a.b"))
        #expect(throws: PredicateParseError.self) { try expression("a.@bogus") }
        #expect(throws: PredicateParseError.self) { try expression("AND") }
    }

    @Test func literals() throws {
        #expect(try expression("42") == .constant(.int(42)))
        #expect(try expression("-42") == .constant(.int(-42)))
        #expect(try expression("1.5") == .constant(.double(1.5)))
        #expect(try expression(".5") == .constant(.double(0.5)))
        #expect(try expression("1e3") == .constant(.double(1000)))
        #expect(try expression("1.5E-3") == .constant(.double(0.0015)))
        #expect(try expression("0x1F") == .constant(.int(31)))
        #expect(try expression("0XfF") == .constant(.int(255)))
        #expect(try expression("0o17") == .constant(.int(15)))
        #expect(try expression("0b101") == .constant(.int(5)))
        #expect(try expression("9223372036854775807") == .constant(.int(.max)))
        #expect(try expression("-9223372036854775808") == .constant(.int(.min)))
        #expect(try expression("18446744073709551615") == .constant(.double(18446744073709551616.0)))
        #expect(try expression("TRUE") == .constant(.bool(true)))
        #expect(try expression("yes") == .constant(.bool(true)))
        #expect(try expression("FALSE") == .constant(.bool(false)))
        #expect(try expression("No") == .constant(.bool(false)))
        #expect(try expression("NULL") == .constant(.null))
        #expect(try expression("nil") == .constant(.null))
        #expect(try expression("{1, 'a', nil}") == .constant(.array([1, "a", .null])))
        #expect(try expression("{}") == .constant(.array([])))
        #expect(try expression("{1, {2, 3}}") == .constant(.array([1, [2, 3]])))
        #expect(try expression("{1, $x}") == .aggregate([.constant(1), .variable("x")]))
        // Numbers are compared as NSNumber does, so the exact case matters here.
        guard case .constant(.int) = try expression("2") else { Issue.record("2 is not an integer"); return }
        guard case .constant(.double) = try expression("2.0") else { Issue.record("2.0 is not a double"); return }
    }

    @Test func stringLiteralsAndEscapes() throws {
        #expect(try expression("'single'") == .constant("single"))
        #expect(try expression("\"double\"") == .constant("double"))
        #expect(try expression(#"'a\nb\tc\rd'"#) == .constant("a\nb\tc\rd"))
        #expect(try expression(#"'it\'s'"#) == .constant("it's"))
        #expect(try expression(#""say \"hi\"""#) == .constant("say \"hi\""))
        #expect(try expression(#"'back\\slash'"#) == .constant("back\\slash"))
        #expect(try expression(#"'\101\102'"#) == .constant("AB"))
        #expect(try expression(#"'\x41\x62'"#) == .constant("Ab"))
        #expect(try expression(#"'\u00e9\u0041'"#) == .constant("éA"))
        #expect(try expression(#"'\ud83d\ude00'"#) == .constant("😀"))
        #expect(try expression("'\"'") == .constant("\""))
        #expect(try expression("\"'\"") == .constant("'"))
        // Unknown escapes keep their backslash, for regular expressions.
        #expect(try expression(#"'\d+'"#) == .constant("\\d+"))
        // Quotes make specifiers and variables literal.
        #expect(try expression("'%@ $x %K'") == .constant("%@ $x %K"))
        #expect(throws: PredicateParseError.self) { try expression("'open") }
        #expect(throws: PredicateParseError.self) { try expression(#"'\u12'"#) }
        #expect(throws: PredicateParseError.self) { try expression(#"'\xZZ'"#) }
    }

    @Test func formatArguments() throws {
        #expect(try comparison("name == %@", "x").rightExpression == .constant("x"))
        #expect(try comparison("%K == 1", "a.b").leftExpression == .keyPath("a.b"))
        #expect(try comparison("a == %d", 3).rightExpression == .constant(.int(3)))
        #expect(try comparison("a == %i", Int32(3)).rightExpression == .constant(.int(3)))
        #expect(try comparison("a == %ld", 3).rightExpression == .constant(.int(3)))
        #expect(try comparison("a == %lld", Int64.max).rightExpression == .constant(.int(.max)))
        #expect(try comparison("a == %u", UInt(7)).rightExpression == .constant(.int(7)))
        #expect(try comparison("a == %lu", UInt64(7)).rightExpression == .constant(.int(7)))
        #expect(try comparison("a == %hd", Int16(7)).rightExpression == .constant(.int(7)))
        #expect(try comparison("a == %d", 3.9).rightExpression == .constant(.int(3)))
        #expect(try comparison("a == %d", true).rightExpression == .constant(.int(1)))
        #expect(try comparison("a == %f", 1.5).rightExpression == .constant(.double(1.5)))
        #expect(try comparison("a == %lf", 2).rightExpression == .constant(.double(2)))
        #expect(try comparison("a == %g", Float(0.5)).rightExpression == .constant(.double(0.5)))
        #expect(try comparison("a == %s", "c").rightExpression == .constant("c"))
        #expect(try comparison("a IN %@", ["x", "y"]).rightExpression == .constant(["x", "y"]))
        #expect(try comparison("a IN %@", Set([1])).rightExpression == .constant([1]))
        #expect(try comparison("a == %@", Optional<String>.none).rightExpression == .constant(.null))
        #expect(try comparison("a == %@", AttributeValue.null).rightExpression == .constant(.null))
        let date = Date(timeIntervalSinceReferenceDate: 1000)
        #expect(try comparison("a > %@", date).rightExpression == .constant(.date(date)))
        #expect(try comparison("a == %@", Decimal(string: "1.25")!).rightExpression == .constant(.decimal(Decimal(string: "1.25")!)))
        #expect(try comparison("a == %@", FormatArgumentList(["a", 1])).rightExpression == .constant(["a", 1]))
        let p = try parse("%K == %@ AND %K > %d", "name", "x", "age", 3)
        #expect(p == .and([
            .comparison(.keyPath("name"), .equalTo, .constant("x")),
            .comparison(.keyPath("age"), .greaterThan, .constant(.int(3))),
        ]))
        // Extra arguments are ignored, missing ones are errors.
        #expect(try parse("a == %@", 1, 2) == .comparison(.keyPath("a"), .equalTo, 1))
        #expect(throws: PredicateParseError.self) { try parse("a == %@") }
        #expect(throws: PredicateParseError.self) { try parse("%K == 1", 5) }
        #expect(throws: PredicateParseError.self) { try parse("a == %d", "x") }
        #expect(throws: PredicateParseError.self) { try parse("a == %s", 3) }
        #expect(throws: PredicateParseError.self) { try parse("a == %y", 3) }
        #expect(throws: PredicateParseError.self) { try parse("a == %%") }
        // An array argument of mixed types.
        #expect(try CorePredicate(format: "a IN %@", arguments: [FormatArgumentList(["x", 2])])
                == .comparison(.keyPath("a"), .in, .constant(["x", 2])))
    }

    @Test func variables() throws {
        #expect(try expression("$x") == .variable("x"))
        #expect(try expression("$AND") == .variable("AND"))
        #expect(try comparison("a == $value").rightExpression == .variable("value"))
        #expect(throws: PredicateParseError.self) { try expression("$") }
        #expect(try expression("$v := 5") == .assignment(variable: "v", .constant(5)))
        #expect(try expression("$v := $w := a + 1") == .assignment(
            variable: "v", .assignment(variable: "w", .keyPath("a") + .constant(1))))
    }

    @Test func arithmeticAndPrecedence() throws {
        let a = CoreExpression.keyPath("a"), b = CoreExpression.keyPath("b"), c = CoreExpression.keyPath("c")
        #expect(try expression("a + b") == .function("add:to:", arguments: [a, b]))
        #expect(try expression("a - b") == .function("from:subtract:", arguments: [a, b]))
        #expect(try expression("a * b") == .function("multiply:by:", arguments: [a, b]))
        #expect(try expression("a / b") == .function("divide:by:", arguments: [a, b]))
        #expect(try expression("a ** b") == .function("raise:toPower:", arguments: [a, b]))
        #expect(try expression("a + b * c") == a + b * c)
        #expect(try expression("(a + b) * c") == (a + b) * c)
        #expect(try expression("a - b - c") == (a - b) - c)
        #expect(try expression("a * b ** c") == a * .function("raise:toPower:", arguments: [b, c]))
        #expect(try expression("a ** b ** c") == .function("raise:toPower:", arguments: [
            a, .function("raise:toPower:", arguments: [b, c])]))
        // Unary minus binds tighter than **, looser than postfix.
        #expect(try expression("-2 ** 2") == .function("raise:toPower:", arguments: [-2, 2]))
        #expect(try expression("-a") == .function("from:subtract:", arguments: [0, a]))
        #expect(try expression("-a.b") == .function("from:subtract:", arguments: [0, .keyPath("a.b")]))
        #expect(try expression("- -3") == .constant(3))
        #expect(try expression("a & 3") == .function("bitwiseAnd:with:", arguments: [a, 3]))
        #expect(try expression("a | 3") == .function("bitwiseOr:with:", arguments: [a, 3]))
        #expect(try expression("a ^ 3") == .function("bitwiseXor:with:", arguments: [a, 3]))
        #expect(try expression("a << 3") == .function("leftshift:by:", arguments: [a, 3]))
        #expect(try expression("a >> 3") == .function("rightshift:by:", arguments: [a, 3]))
        #expect(try expression("~a") == .function("onesComplement:", arguments: [a]))
        #expect(try expression("a + 1 & 3") == .function("bitwiseAnd:with:", arguments: [a + 1, 3]))
        // Comparison binds looser than arithmetic.
        #expect(try parse("a + 1 > b * 2") == .comparison(a + 1, .greaterThan, b * 2))
        #expect(try parse("(a + 1) * 2 == 6") == .comparison((a + 1) * 2, .equalTo, 6))
    }

    @Test func functions() throws {
        let list = CoreExpression.constant([1, 2])
        #expect(try expression("sum({1, 2})") == .function("sum:", arguments: [list]))
        #expect(try expression("sum:({1, 2})") == .function("sum:", arguments: [list]))
        #expect(try expression("SUM({1, 2})") == .function("sum:", arguments: [list]))
        #expect(try expression("avg({1, 2})") == .function("average:", arguments: [list]))
        #expect(try expression("now()") == .function("now", arguments: []))
        #expect(try expression("random()") == .function("random", arguments: []))
        #expect(try expression("random({1, 2})") == .function("random:", arguments: [list]))
        #expect(try expression("random:({1, 2})") == .function("random:", arguments: [list]))
        #expect(try expression("modulus:by:(7, 2)") == .function("modulus:by:", arguments: [7, 2]))
        #expect(try expression("modulus(7, 2)") == .function("modulus:by:", arguments: [7, 2]))
        #expect(try expression("add:to:(1, 2)") == .constant(1) + .constant(2))
        #expect(try expression("leftshift:by:(1, 2)") == .function("leftshift:by:", arguments: [1, 2]))
        #expect(try expression("castObject:toType:(a, 'NSString')") == .cast(.keyPath("a"), toType: "NSString"))
        for function in PredicateFunction.allCases where function != .castObjectToType {
            let arguments = Array(repeating: "1", count: function.argumentCount).joined(separator: ", ")
            #expect(try expression("\(function.rawValue)(\(arguments))")
                    == .function(function.rawValue, arguments: Array(repeating: 1, count: function.argumentCount)))
        }
        #expect(throws: PredicateParseError.self) { try expression("nosuchfunction(1)") }
        #expect(throws: PredicateParseError.self) { try expression("sum(1, 2)") }
        #expect(throws: PredicateParseError.self) { try expression("now(1)") }
        #expect(try CoreExpression.call("sum", .keyPath("x")) == .function("sum:", arguments: [.keyPath("x")]))
        #expect(throws: PredicateParseError.self) { try CoreExpression.call("bogus:") }
    }

    @Test func specialForms() throws {
        #expect(try expression("FUNCTION(SELF, 'foo:', 1)")
                == .customFunction(receiver: .evaluatedObject, selector: "foo:", arguments: [1]))
        #expect(try expression("FUNCTION(name, %@)", "uppercaseString")
                == .customFunction(receiver: .keyPath("name"), selector: "uppercaseString", arguments: []))
        #expect(try expression("SUBQUERY(children, $c, $c.age > 5)") == .subquery(
            collection: .keyPath("children"), variable: "c",
            predicate: .comparison(.member(.variable("c"), keyPath: "age"), .greaterThan, 5)))
        #expect(try expression("SUBQUERY(a, $x, $x == 1).@count") == .member(.subquery(
            collection: .keyPath("a"), variable: "x", predicate: .comparison(.variable("x"), .equalTo, 1)),
            keyPath: "@count"))
        #expect(try expression("TERNARY(a > 1, 'x', 'y')") == .conditional(
            .comparison(.keyPath("a"), .greaterThan, 1), trueExpression: .constant("x"), falseExpression: .constant("y")))
        #expect(try expression("CAST(a, 'NSNumber')") == .cast(.keyPath("a"), toType: "NSNumber"))
        #expect(try expression("cast(726213600, \"NSDate\")")
                == .constant(.date(Date(timeIntervalSinceReferenceDate: 726213600))))
        #expect(try expression("CAST('E621E1F8-C36C-495A-93FC-0C247A3E6E5F', 'NSUUID')")
                == .constant(.uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)))
        #expect(try expression("a[FIRST]") == .index(.keyPath("a"), .first))
        #expect(try expression("a[last]") == .index(.keyPath("a"), .last))
        #expect(try expression("a[SIZE]") == .index(.keyPath("a"), .size))
        #expect(try expression("a[2]") == .index(.keyPath("a"), .expression(2)))
        #expect(try expression("a['k']") == .index(.keyPath("a"), .expression(.constant("k"))))
        #expect(try expression("a[first + 1]") == .index(.keyPath("a"), .expression(.keyPath("first") + 1)))
        #expect(try expression("SELF[FIRST].name") == .member(.index(.evaluatedObject, .first), keyPath: "name"))
        #expect(try expression("a UNION b") == .setOperation(.union, .keyPath("a"), .keyPath("b")))
        #expect(try expression("a INTERSECT b MINUS c") == .setOperation(
            .minus, .setOperation(.intersect, .keyPath("a"), .keyPath("b")), .keyPath("c")))
        #expect(try expression("ANYKEY") == .anyKey)
        #expect(throws: PredicateParseError.self) { try expression("FETCH(a, b, NO)") }
        #expect(throws: PredicateParseError.self) { try expression("SUBQUERY(a, x, x == 1)") }
        #expect(throws: PredicateParseError.self) { try expression("TERNARY(1, 2, 3)") }
        #expect(throws: PredicateParseError.self) { try expression("FUNCTION(SELF)") }
        #expect(throws: PredicateParseError.self) { try expression("CAST(a, b)") }
    }

    @Test func keywordsAreCaseInsensitive() throws {
        #expect(try parse("a == 1 and b == 2 or not c == 3") == parse("a == 1 AND b == 2 OR NOT c == 3"))
        #expect(try parse("any a in {1} && all b contains 'x'") == parse("ANY a IN {1} AND ALL b CONTAINS 'x'"))
        #expect(try parse("self == nil") == parse("SELF == NIL"))
        #expect(try parse("subquery(a, $x, $x == true).@count > 0") == parse("SUBQUERY(a, $x, $x == YES).@count > 0"))
    }

    @Test func whitespaceAndUnicode() throws {
        #expect(try parse("  a\t==\n1  ") == parse("a == 1"))
        #expect(try parse("a==1&&b!=2") == parse("a == 1 AND b != 2"))
        #expect(try parse("名前 == '値'") == .comparison(.keyPath("名前"), .equalTo, .constant("値")))
    }

    @Test func codeBuiltTrees() throws {
        let built = CorePredicate.comparison(.keyPath("age"), .greaterThanOrEqualTo, 18)
            && CorePredicate.comparison(.keyPath("name"), .beginsWith, .constant("J"), options: .caseInsensitive)
        #expect(built == (try parse("age >= 18 AND name BEGINSWITH[c] 'J'")))
        #expect(built.subpredicates.count == 2)
        #expect(!(built) == .not(built))
        let any = CorePredicate.comparison(.keyPath("children.name"), .equalTo, .constant("x"), modifier: .any)
        #expect(any.predicateFormat == "ANY children.name == \"x\"")
        #expect((any || .falsePredicate) == .or([any, .constant(false)]))
        #expect(CoreExpression.keyPath("a").constantValue == nil)
        #expect(CoreExpression.constant(1).isConstant)
    }

    @Test func constantsCompareAsNSNumber() {
        #expect(CoreExpression.constant(.int(1)) == .constant(.double(1)))
        #expect(CoreExpression.constant(.bool(true)) == .constant(.int(1)))
        #expect(CoreExpression.constant(.decimal(2)) == .constant(.int(2)))
        #expect(CoreExpression.constant(.int(1)) != .constant(.double(1.5)))
        #expect(CoreExpression.constant(.int(1)).hashValue == CoreExpression.constant(.double(1)).hashValue)
        #expect(CoreExpression.constant(.bool(false)).hashValue == CoreExpression.constant(.int(0)).hashValue)
        #expect(CoreExpression.constant([1, 2]) == .constant([.double(1), .decimal(2)]))
        #expect(CoreExpression.constant(.int(Int64.max)) != .constant(.double(9.223372036854775807e18)))
        #expect(CoreExpression.constant("1") != .constant(1))
        var set = Set<CorePredicate>()
        set.insert(.comparison(.keyPath("a"), .equalTo, .constant(.bool(true))))
        #expect(set.contains(.comparison(.keyPath("a"), .equalTo, .constant(.int(1)))))
    }
}
