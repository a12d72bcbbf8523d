import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// `predicateFormat` in Apple's forms.
@Suite struct PrintingTests {
    func format(_ format: String, _ arguments: any FormatArgument...) throws -> String {
        try CorePredicate(format: format, arguments: arguments).predicateFormat
    }

    @Test(arguments: [
        // Comparisons: Apple prints "==" for "=", keeps the other operators, uppercases keywords.
        ("name = 'John' AND age > 30", #"name == "John" AND age > 30"#),
        ("a != 1", "a != 1"), ("a <> 1", "a != 1"), ("a =< 1", "a <= 1"), ("a => 1", "a >= 1"),
        ("name beginswith[c] 'j'", #"name BEGINSWITH[c] "j""#),
        ("name contains[cd] 'citroen'", #"name CONTAINS[cd] "citroen""#),
        ("name like[d] 'x*'", #"name LIKE[d] "x*""#),
        ("name matches '.*'", #"name MATCHES ".*""#),
        ("a in {1,2,3}", "a IN {1, 2, 3}"),
        ("a between {1,10}", "a BETWEEN {1, 10}"),
        ("any children.name == 'x'", #"ANY children.name == "x""#),
        ("some children.name == 'x'", #"ANY children.name == "x""#),
        ("all children.age > 12", "ALL children.age > 12"),
        ("none children.age > 12", "NONE children.age > 12"),
        // Compound predicates: compound subpredicates in parentheses.
        ("(a == 1 OR b == 2) AND c == 3", "(a == 1 OR b == 2) AND c == 3"),
        ("a == 1 AND (b == 2 OR c == 3)", "a == 1 AND (b == 2 OR c == 3)"),
        ("a == 1 AND b == 2 AND c == 3", "a == 1 AND b == 2 AND c == 3"),
        ("(a == 1 AND b == 2) AND c == 3", "(a == 1 AND b == 2) AND c == 3"),
        ("a == 1 OR b == 2 AND c == 3", "a == 1 OR (b == 2 AND c == 3)"),
        ("NOT (name == 'Bob')", #"NOT name == "Bob""#),
        ("!(a == 1) && b == 2", "(NOT a == 1) AND b == 2"),
        ("NOT (a == 1 OR b == 2)", "NOT (a == 1 OR b == 2)"),
        ("TRUEPREDICATE", "TRUEPREDICATE"), ("falsepredicate", "FALSEPREDICATE"),
        // Expressions.
        ("SELF == 'x'", #"SELF == "x""#), ("self.name == 'x'", #"name == "x""#),
        ("a == $var", "a == $var"), ("a == nil", "a == nil"), ("a == NULL", "a == nil"),
        ("flag == YES", "flag == 1"), ("flag == false", "flag == 0"),
        ("a == 30", "a == 30"), ("a == 1.5", "a == 1.5"), ("a == 30.0", "a == 30"), ("a == 0.1", "a == 0.1"),
        ("a == 1e20", "a == 1e+20"), ("a == 0x10", "a == 16"), ("a == -2.5", "a == -2.5"),
        (#"a == "say \"hi\"""#, #"a == "say \"hi\"""#), (#"a == 'back\\slash'"#, #"a == "back\\slash""#),
        ("a == 'it\\'s'", #"a == "it's""#), ("a == 'tab\\there'", "a == \"tab\there\""),
        ("sum({1, 2}) == 3", "sum:({1, 2}) == 3"), ("now() > d", "now() > d"),
        ("average(scores) > 2", "average:(scores) > 2"), ("modulus(a, 2) == 1", "modulus:by:(a, 2) == 1"),
        ("FUNCTION(SELF, 'foo:', 1) == 2", "FUNCTION(SELF, 'foo:', 1) == 2"),
        ("SUBQUERY(children, $c, $c.age > 5).@count > 0", "SUBQUERY(children, $c, $c.age > 5).@count > 0"),
        ("TERNARY(a > 1, 'x', 'y') == 'x'", #"TERNARY(a > 1, "x", "y") == "x""#),
        ("CAST(a, 'NSNumber') > 5", #"CAST(a, "NSNumber") > 5"#),
        ("CAST(599529600, 'NSDate') < d", #"CAST(599529600.000000, "NSDate") < d"#),
        ("a[FIRST] == 1", "a[FIRST] == 1"), ("a[size] == 1", "a[SIZE] == 1"), ("d['k'] == 1", #"d["k"] == 1"#),
        ("a UNION b CONTAINS 1", "a UNION b CONTAINS 1"), ("anykey == 1", "ANYKEY == 1"),
        ("$v := 5 == 5", "$v := 5 == 5"), ("#and == 1", "#and == 1"), ("@sum.items.price < 1000", "@sum.items.price < 1000"),
        // Operators: nested ones in parentheses, as Apple writes "a + (b * 2)".
        ("a + b == 10", "a + b == 10"), ("a + b * 2 == 5", "a + (b * 2) == 5"), ("(a + b) * 2 == 5", "(a + b) * 2 == 5"),
        ("a - b - c == 1", "(a - b) - c == 1"), ("a ** b == 64", "a ** b == 64"), ("a & 3 == a", "a & 3 == a"),
        ("bitwiseOr:with:(a, 1) == 1", "a | 1 == 1"), ("-a == 1", "0 - a == 1"), ("- 5 == x", "-5 == x"),
    ])
    func appleForms(input: String, expected: String) throws {
        #expect(try format(input) == expected)
    }

    @Test func argumentsAreSubstitutedAtParseTime() throws {
        #expect(try format("name == %@ AND age > %d", "x", 3) == #"name == "x" AND age > 3"#)
        #expect(try format("%K like %@+$b+$c", "$single", "b\"") == #"$single LIKE ("b\"" + $b) + $c"#)
        #expect(try format("a IN %@", ["x", "y"]) == #"a IN {"x", "y"}"#)
        #expect(try format("a == %@", true) == "a == 1")
        #expect(try format("a == %@", 2.0) == "a == 2")
        #expect(try format("a == %@", Decimal(string: "1.25")!) == "a == 1.25")
        #expect(try format("a == %@", Optional<Int>.none) == "a == nil")
        let date = Date(timeIntervalSinceReferenceDate: 726213600)
        #expect(try format("d > %@", date) == #"d > CAST(726213600.000000, "NSDate")"#)
        #expect(try format("d > %@", Date(timeIntervalSinceReferenceDate: -978307200.5))
                == #"d > CAST(-978307200.500000, "NSDate")"#)
    }

    @Test func constantsWithoutLiteralsReadBack() throws {
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let values: [AttributeValue] = [
            .uuid(uuid), .uri(URL(string: "https://example.com/a?b=c")!), .data(Data([0, 1, 2, 255])),
            .dictionary(["b": 2, "a": "x"]), .double(.nan), .double(.infinity), .double(-.infinity),
            .date(Date(timeIntervalSinceReferenceDate: 0.123456789)), .decimal(Decimal(string: "-12.5")!),
        ]
        #expect(try format("a == %@", AttributeValue.uuid(uuid)) == #"a == CAST("E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "NSUUID")"#)
        #expect(try format("a == %@", AttributeValue.dictionary(["b": 2, "a": "x"]))
                == #"a == CAST({{"a", "x"}, {"b", 2}}, "NSDictionary")"#)
        for value in values {
            let predicate = CorePredicate.comparison(.keyPath("a"), .equalTo, .constant(value))
            let reread = try CorePredicate(format: predicate.predicateFormat)
            #expect(reread == predicate, "\(predicate.predicateFormat)")
        }
    }

    @Test func codeBuiltTrees() {
        #expect(CorePredicate.and([]).predicateFormat == "TRUEPREDICATE")
        #expect(CorePredicate.or([]).predicateFormat == "FALSEPREDICATE")
        let a = CorePredicate.comparison(.keyPath("a"), .equalTo, 1)
        let b = CorePredicate.comparison(.keyPath("b"), .lessThan, .constant(2.5))
        #expect(CorePredicate.and([.and([a, b]), a]).predicateFormat == "(a == 1 AND b < 2.5) AND a == 1")
        #expect(CorePredicate.not(.not(a)).predicateFormat == "NOT (NOT a == 1)")
        #expect(CorePredicate.not(.constant(true)).predicateFormat == "NOT TRUEPREDICATE")
        let c = CorePredicate.comparison(
            .keyPath("name"), .like, .constant("J*"), modifier: .all, options: [.caseInsensitive, .diacriticInsensitive])
        #expect(c.predicateFormat == #"ALL name LIKE[cd] "J*""#)
        #expect(CoreExpression.function("sum:", arguments: [.keyPath("items.price")]).description == "sum:(items.price)")
        #expect((CoreExpression.keyPath("a") + .keyPath("b") * 2).description == "a + (b * 2)")
        #expect(CoreExpression.member(.constant(.int(-1)), keyPath: "x").description == "(-1).x")
        #expect(CoreExpression.index(.keyPath("a"), .expression(.keyPath("first"))).description == "a[#first]")
        #expect(CoreExpression.keyPath("in.x").description == "#in.x")
        #expect(c.description == c.predicateFormat)
    }
}
