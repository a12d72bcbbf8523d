import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// An object exposing its values through `KeyValueCoding`, as managed objects will.
final class Person: KeyValueCoding {
    let id: Int
    var name: String?
    var age: Int
    var friends: [Person]
    var tags: Set<String>

    init(_ id: Int, _ name: String?, age: Int, friends: [Person] = [], tags: Set<String> = []) {
        self.id = id
        self.name = name
        self.age = age
        self.friends = friends
        self.tags = tags
    }

    func value(forKey key: String) -> Any? {
        switch key {
        case "name": return name
        case "age": return age
        case "friends": return friends
        case "tags": return tags
        case "id": return id
        default: return nil
        }
    }

    var predicateIdentity: AttributeValue? { .uri(URL(string: "x-coredata://store/Person/p\(id)")!) }

    func performPredicateFunction(_ selector: String, arguments: [EvaluatedValue]) throws -> EvaluatedValue {
        switch selector {
        case "greeting": return .value(.string("Hello, \(name ?? "")"))
        case "ageIn:":
            guard case .value(let years) = arguments.first, let n = years.int64Value else { return .null }
            return .value(.int(Int64(age) + n))
        default: throw PredicateEvaluationError.unsupported(selector)
        }
    }
}

@Suite struct EvaluationTests {
    func eval(_ format: String, _ object: Any? = nil, _ arguments: any FormatArgument...) throws -> Bool {
        try CorePredicate(format: format, arguments: arguments).evaluate(with: object)
    }

    func value(_ format: String, _ object: Any? = nil) throws -> EvaluatedValue {
        try CoreExpression(format: format).value(with: object)
    }

    /// The value, compared with `==` the way NSNumber compares (`2.0 == 2`).
    func attribute(_ format: String, _ object: Any? = nil) throws -> Loose {
        Loose(value: try value(format, object).attributeValue)
    }

    struct Loose: CustomStringConvertible {
        var value: AttributeValue?
        var description: String { value.map { CoreExpression.constant($0).description } ?? "not a value" }
        static func == (l: Loose, r: AttributeValue) -> Bool { l.value?.isEquivalent(to: r) ?? false }
    }

    // MARK: Numbers

    @Test func numbersCompareAcrossKinds() throws {
        #expect(try eval("1 == 1.0"))
        #expect(try eval("YES == 1"))
        #expect(try eval("NO == 0"))
        #expect(try eval("a == 2", ["a": 2.0]))
        #expect(try eval("a == %@", ["a": 2], Decimal(2)))
        #expect(try eval("a < 2.5", ["a": 2]))
        #expect(try eval("a > 2.5", ["a": Decimal(string: "2.6")!]))
        #expect(try eval("a < 9223372036854775807", ["a": 9.2e18]))
        #expect(!(try eval("a == 9007199254740993", ["a": 9007199254740992.0])))
        #expect(try eval("a BETWEEN {1, 3}", ["a": 3]))
        #expect(!(try eval("a BETWEEN {1, 3}", ["a": 3.01])))
        #expect(try eval("a IN {1, 2}", ["a": 2.0]))
        #expect(try eval("a >= 1", ["a": true]))
        #expect(AttributeValue.int(3).compare(.double(3.5)) == .orderedAscending)
        #expect(AttributeValue.bool(true).compare(.int(1)) == .orderedSame)
        #expect(AttributeValue.decimal(Decimal(string: "0.1")!).compare(.double(0.1)) == .orderedSame)
        #expect(AttributeValue.string("a").compare(.int(1)) == nil)
        #expect(AttributeValue.null.compare(.int(1)) == .orderedAscending)
        #expect(AttributeValue.double(.nan).compare(.int(0)) == .orderedAscending)
        #expect(AttributeValue.int(.max).compare(.double(9.3e18)) == .orderedAscending)
        #expect(AttributeValue.int(.min).compare(.double(-9.3e18)) == .orderedDescending)
    }

    @Test func datesAndOtherScalars() throws {
        let d1 = Date(timeIntervalSinceReferenceDate: 100), d2 = Date(timeIntervalSinceReferenceDate: 200)
        #expect(try eval("d < %@", ["d": d1], d2))
        #expect(try eval("d BETWEEN %@", ["d": d1], [d1, d2]))
        #expect(try eval("d == %@", ["d": d1], d1))
        #expect(try eval("d > CAST(50, 'NSDate')", ["d": d1]))
        let uuid = UUID()
        #expect(try eval("u == %@", ["u": uuid], uuid))
        #expect(try eval("b == %@", ["b": Data([1, 2])], Data([1, 2])))
        #expect(try eval("u == %@", ["u": URL(string: "https://a.b")!], URL(string: "https://a.b")!))
    }

    // MARK: nil

    @Test func nilRules() throws {
        #expect(try eval("nil == nil"))
        #expect(try eval("missing == nil", ["a": 1]))
        #expect(try eval("a == nil", ["a": NSNull()]))
        #expect(try eval("a == nil", ["a": AttributeValue.null]))
        #expect(try eval("a == nil", ["a": Optional<Int>.none as Any]))
        #expect(!(try eval("a == nil", ["a": 0])))
        #expect(try eval("a != nil", ["a": 0]))
        #expect(!(try eval("a < nil", ["a": 1])))
        #expect(!(try eval("a > nil", ["a": 1])))
        #expect(!(try eval("nil < a", ["a": 1])))
        #expect(!(try eval("nil <= nil")))
        #expect(!(try eval("a BEGINSWITH 'x'", [String: Any]())))
        #expect(!(try eval("a CONTAINS 'x'", [String: Any]())))
        #expect(!(try eval("a IN {1}", [String: Any]())))
        #expect(try eval("a IN {1, nil}", [String: Any]()))
        #expect(!(try eval("1 IN a", [String: Any]())))
        #expect(!(try eval("a BETWEEN {1, 2}", [String: Any]())))
        #expect(!(try eval("a BETWEEN {nil, 2}", ["a": 1])))
        #expect(!(try eval("a.b.c == 1", nil)))
        #expect(try eval("key == nil", NSNull()))
        #expect(try eval("a + 1 == nil", [String: Any]()))
    }

    // MARK: Strings

    @Test func stringEqualityIsLiteral() throws {
        #expect(try eval("a == 'Zoë'", ["a": "Zoë"]))
        #expect(!(try eval("a == 'ada'", ["a": "Ada"])))
        // Precomposed and decomposed forms differ for ==, as -[NSString isEqual:] says.
        #expect(!(try eval("a == %@", ["a": "\u{e9}"], "e\u{301}")))
        #expect(try eval("a ==[c] %@", ["a": "\u{e9}"], "E\u{301}"))
        #expect(try eval("a ==[d] %@", ["a": "\u{e9}"], "e"))
    }

    @Test(arguments: ["Saint-\u{c9}tienne", "Saint-E\u{301}tienne"])
    func caseAndDiacriticInsensitive(city: String) throws {
        for search in ["saint-etienne", "SAINT-ÉTIENNE", "Saint-e\u{301}tienne", "saint-étienne"] {
            #expect(try eval("name ==[cd] %@", ["name": city], search), "\(city) vs \(search)")
            #expect(try eval("name BEGINSWITH[cd] %@", ["name": city], String(search.prefix(7))))
            #expect(try eval("name CONTAINS[cd] 'ETIEN'", ["name": city]))
            #expect(try eval("name ENDSWITH[cd] 'ÉTIENNE'", ["name": city]))
            #expect(try eval("name LIKE[cd] 'saint-e*'", ["name": city]))
        }
        #expect(!(try eval("name ==[c] 'saint-etienne'", ["name": city])))
        #expect(try eval("name ==[c] 'saint-\u{e9}tienne'", ["name": city]))
        #expect(!(try eval("name ==[d] 'saint-etienne'", ["name": city])))
        #expect(try eval("name ==[d] 'Saint-Etienne'", ["name": city]))
    }

    @Test func unicodeCaseFolding() throws {
        #expect(try eval("a ==[c] 'STRASSE'", ["a": "straße"]))
        #expect(try eval("a ==[c] 'ΣΑΣ'", ["a": "σας"]))
        #expect(try eval("a ==[cd] 'arhus'", ["a": "Århus"]))
        #expect(!(try eval("a ==[cd] 'aarhus'", ["a": "Århus"])))
    }

    @Test func stringOrder() throws {
        #expect(try eval("a < 'b'", ["a": "a"]))
        #expect(try eval("a < 'a'", ["a": "B"]))  // uppercase first without [c]
        #expect(try eval("a <[c] 'b'", ["a": "Ada"]))
        #expect(try eval("a >= %@", ["a": "e\u{301}"], "\u{e9}"))
        #expect(try eval("a BETWEEN {'b', 'c'}", ["a": "bz"]))
    }

    @Test func prefixSuffixContains() throws {
        #expect(try eval("a BEGINSWITH 'Jo'", ["a": "John"]))
        #expect(!(try eval("a BEGINSWITH 'jo'", ["a": "John"])))
        #expect(try eval("a BEGINSWITH[c] 'jo'", ["a": "John"]))
        #expect(try eval("a ENDSWITH 'hn'", ["a": "John"]))
        #expect(try eval("a CONTAINS 'oh'", ["a": "John"]))
        #expect(!(try eval("a CONTAINS ''", ["a": "John"])))
        #expect(!(try eval("a BEGINSWITH 'e'", ["a": "\u{e9}t\u{e9}"])))
        #expect(try eval("a BEGINSWITH[d] 'e'", ["a": "\u{e9}t\u{e9}"]))
        #expect(try eval("'oh' IN a", ["a": "John"]))
        #expect(throws: PredicateEvaluationError.self) { try eval("a BEGINSWITH 1", ["a": "1"]) }
        #expect(throws: PredicateEvaluationError.self) { try eval("a CONTAINS 1", ["a": "1"]) }
    }

    @Test func like() throws {
        let cases: [(String, String, Bool)] = [
            ("abc", "a*", true), ("a", "a*", true), ("a\nb", "a*", true), ("axb", "a?b", true),
            ("ab", "a?b", false), ("axxb", "a?b", false), ("a.b", "a.b", true), ("axb", "a.b", false),
            ("a+b", "a+b", true), ("[ab]", "[ab]", true), ("a", "[ab]", false), ("x", "a|x", false),
            ("a*b", "a\\*b", true), ("axb", "a\\*b", false), ("a?", "a\\?", true), ("a\\b", "a\\\\b", true),
            ("", "*", true), ("", "?", false), ("abcabc", "*c*c", true), ("abcab", "*c*c", false),
            ("😀x", "?x", true), ("e\u{301}", "?", true),
        ]
        for (string, pattern, expected) in cases {
            #expect(try eval("SELF LIKE %@", string, pattern) == expected, "\(string) LIKE \(pattern)")
        }
        #expect(try eval("SELF LIKE[c] 'A?C'", "abc"))
        #expect(try eval("SELF LIKE[cd] 'É*'", "etoile"))
    }

    @Test func matches() throws {
        #expect(try eval("SELF MATCHES '[a-z]+'", "abc"))
        #expect(!(try eval("SELF MATCHES '[a-z]+'", "abc1")))
        #expect(!(try eval("SELF MATCHES 'b'", "abc")))  // the whole string
        #expect(try eval("SELF MATCHES 'a|ab'", "ab"))
        #expect(try eval("SELF MATCHES %@", "a\nb", ".*^b$"))
        #expect(try eval("SELF MATCHES %@", "a\nb", "a.b"))
        #expect(try eval("SELF MATCHES[c] 'JOHN'", "john"))
        #expect(try eval(#"SELF MATCHES '\d+'"#, "123"))
        #expect(try eval(#"SELF MATCHES '\\d+'"#, "123"))
        #expect(try eval(#"SELF MATCHES %@"#, "a.b", #"\Qa.b"#))
        #expect(try eval(#"SELF MATCHES %@"#, "a.bc", #"\Qa.b\Ec"#))
        #expect(try eval("SELF MATCHES[d] 'etoile'", "étoile"))
        #expect(throws: PredicateEvaluationError.invalidRegularExpression("(unclosed")) {
            try eval("SELF MATCHES '(unclosed'", "x")
        }
        #expect(throws: PredicateEvaluationError.self) { try eval("SELF MATCHES 1", "x") }
    }

    // MARK: Collections

    @Test func inAndContains() throws {
        let object: [String: Any] = [
            "list": ["a", "b"], "set": Set(["x", "y"]), "dict": ["k": "v", "n": 1], "name": "xyz",
        ]
        #expect(try eval("'a' IN list", object))
        #expect(try eval("list CONTAINS 'b'", object))
        #expect(!(try eval("list CONTAINS 'z'", object)))
        #expect(try eval("'x' IN set", object))
        #expect(try eval("set CONTAINS 'y'", object))
        #expect(try eval("'v' IN dict", object))
        #expect(try eval("dict CONTAINS 1", object))
        #expect(!(try eval("'k' IN dict", object)))
        #expect(try eval("name CONTAINS 'y'", object))
        #expect(try eval("name IN 'wxyz'", object))
        #expect(try eval("'A' IN[c] list", object))
        #expect(try eval("name IN {'abc', 'xyz'}", object))
        #expect(try eval("%@ IN %@", nil, 1, [1.0, 2.0]))
        #expect(throws: PredicateEvaluationError.self) { try eval("'a' IN 5") }
        #expect(throws: PredicateEvaluationError.self) { try eval("5 CONTAINS 'a'") }
    }

    @Test func aggregateQualifiers() throws {
        let object: [String: Any] = ["nums": [1, 5, 9], "names": ["Ann", "Bob"], "empty": [Int]()]
        #expect(try eval("ANY nums == 5", object))
        #expect(!(try eval("ANY nums == 7", object)))
        #expect(try eval("SOME nums > 8", object))
        #expect(try eval("ALL nums > 0", object))
        #expect(!(try eval("ALL nums > 2", object)))
        #expect(try eval("NONE nums > 100", object))
        #expect(!(try eval("NONE nums > 5", object)))
        #expect(try eval("ANY names BEGINSWITH[c] 'b'", object))
        #expect(try eval("ALL empty > 0", object))
        #expect(!(try eval("ANY empty > 0", object)))
        #expect(try eval("NONE empty > 0", object))
        #expect(try eval("ANY nums IN {9, 10}", object))
        #expect(!(try eval("ANY missing == 1", object)))
        #expect(throws: PredicateEvaluationError.self) { try eval("ANY names.@count == 1", ["names": "x"]) }
        #expect(throws: PredicateEvaluationError.self) { try eval("ANY n == 1", ["n": 1]) }
    }

    @Test func keyPathsThroughCollections() throws {
        let ada = Person(1, "Ada", age: 36, friends: [Person(2, "Alan", age: 41), Person(3, "Grace", age: 45)])
        #expect(try eval("ANY friends.name == 'Grace'", ada))
        #expect(try eval("friends.@count == 2", ada))
        #expect(try eval("friends.@sum.age == 86", ada))
        #expect(try eval("friends.@avg.age == 43", ada))
        #expect(try eval("friends.@max.age == 45", ada))
        #expect(try eval("friends.@min.name == 'Alan'", ada))
        #expect(try attribute("friends.name", ada) == ["Alan", "Grace"])
        #expect(try attribute("friends.@unionOfObjects.name", ada) == ["Alan", "Grace"])
        let numbers: [String: Any] = ["a": [1, 2, 2, nil as Int? as Any, 3], "b": [[1, 2], [2, 3]]]
        #expect(try attribute("a.@count", numbers) == 5)
        #expect(try attribute("a.@sum", numbers) == 8)
        #expect(try attribute("a.@avg", numbers) == 2)
        #expect(try attribute("a.@distinctUnionOfObjects.self", numbers) == [1, 2, 3])
        #expect(try attribute("b.@unionOfArrays.self", numbers) == [1, 2, 2, 3])
        #expect(try attribute("b.@distinctUnionOfArrays.self", numbers) == [1, 2, 3])
        #expect(try attribute("@sum.a", ["x": ["a": 1], "y": ["a": 2]]) == 3)
        #expect(ada.value(forKeyPath: "friends.@count") as? AttributeValue == 2)
        #expect((["a": ["b": 1]] as [String: Any]).value(forKeyPath: "a.b") as? AttributeValue == 1)
        #expect(AttributeValue.dictionary(["a": ["b": "c"]]).value(forKeyPath: "a.b") as? AttributeValue == "c")
        #expect(try eval("description == 'Do'", "Do"))
        #expect(try eval("length == 3", "abc"))
        #expect(throws: PredicateEvaluationError.self) { try eval("bogus == 1", "abc") }
    }

    @Test func objectsAndIdentity() throws {
        let alan = Person(2, "Alan", age: 41)
        let ada = Person(1, "Ada", age: 36, friends: [alan], tags: ["math"])
        #expect(try eval("SELF == %@", ada, AttributeValue.uri(URL(string: "x-coredata://store/Person/p1")!)))
        #expect(try eval("%@ IN friends", ada, AttributeValue.uri(URL(string: "x-coredata://store/Person/p2")!)))
        #expect(try CorePredicate(format: "friends[FIRST] == $other").evaluate(with: ada, substitutionVariables: ["other": alan]))
        #expect(try CorePredicate(format: "$other IN friends").evaluate(with: ada, substitutionVariables: ["other": alan]))
        #expect(!(try CorePredicate(format: "$other IN friends").evaluate(with: ada, substitutionVariables: ["other": ada])))
        #expect(try eval("'math' IN tags", ada))
        #expect(try eval("FUNCTION(SELF, 'greeting') == 'Hello, Ada'", ada))
        #expect(try eval("FUNCTION(SELF, 'ageIn:', 4) == 40", ada))
        #expect(try eval("FUNCTION(name, 'length') == 3", ada))
        #expect(throws: PredicateEvaluationError.self) { try eval("FUNCTION(SELF, 'nope:', 1) == 1", ada) }
        let people = [ada, alan, Person(3, nil, age: 5)]
        #expect(try people.filtered(by: CorePredicate(format: "age > 30")).map(\.id) == [1, 2])
        #expect(try people.filtered(by: CorePredicate(format: "name == nil")).map(\.id) == [3])
    }

    @Test func subqueries() throws {
        let ada = Person(1, "Ada", age: 36, friends: [Person(2, "Alan", age: 41), Person(3, "Grace", age: 45)])
        #expect(try eval("SUBQUERY(friends, $f, $f.age > 40).@count == 2", ada))
        #expect(try eval("SUBQUERY(friends, $f, $f.age > age AND $f.name BEGINSWITH 'G').@count == 1", ada))
        #expect(try eval("SUBQUERY(friends, $f, SUBQUERY($f.friends, $g, $g.age > 0).@count == 0).@count == 2", ada))
        #expect(try eval("SUBQUERY(nums, $n, $n > 1) == {2, 3}", ["nums": [1, 2, 3]]))
        #expect(try eval("SUBQUERY(missing, $n, $n > 1).@count == 0", ["nums": [1, 2, 3]]))
        #expect(throws: PredicateEvaluationError.self) { try eval("SUBQUERY(a, $n, $n > 1).@count == 0", ["a": 1]) }
        // The iteration variable is restored afterwards.
        let p = try CorePredicate(format: "SUBQUERY(nums, $x, $x > 1).@count == 2 AND $x == 'outer'")
        #expect(try p.evaluate(with: ["nums": [1, 2, 3]], substitutionVariables: ["x": "outer"]))
    }

    @Test func indexes() throws {
        let object: [String: Any] = ["a": [1, 2, 0], "d": ["k": "v"], "s": Set([7])]
        #expect(try eval("a[FIRST] == 1", object))
        #expect(try eval("a[LAST] == 0", object))
        #expect(try eval("a[SIZE] == 3", object))
        #expect(try eval("a[1] == 2", object))
        #expect(try eval("d['k'] == 'v'", object))
        #expect(try eval("d[SIZE] == 1", object))
        #expect(try eval("s[FIRST] == 7", object))
        #expect(try eval("missing[FIRST] == nil", object))
        #expect(try eval("SELF[FIRST] == 1", [1, 2, 0]))
        #expect(throws: PredicateEvaluationError.self) { try eval("a[3] == 1", object) }
        #expect(throws: PredicateEvaluationError.self) { try eval("a[-1] == 1", object) }
        #expect(throws: PredicateEvaluationError.self) { try eval("a['x'] == 1", object) }
    }

    // MARK: Functions

    @Test func statistics() throws {
        #expect(try attribute("sum({1, 2, 3})") == 6)
        #expect(try attribute("sum({1, 2.5})") == 3.5)
        #expect(try attribute("sum({})") == 0)
        #expect(try attribute("count({1, 2, 3})") == 3)
        #expect(try attribute("min({3, 1, 2})") == 1)
        #expect(try attribute("max({3, 1, 2})") == 3)
        #expect(try attribute("max({'b', 'a'})") == "b")
        #expect(try attribute("average({1, 2, 3})") == 2)
        #expect(try attribute("average({})") == .null)
        #expect(try attribute("median({1, 2, 2, 3, 4, 7, 9})") == 3)
        #expect(try attribute("median({1, 2, 3, 4})") == 2.5)
        #expect(try attribute("mode({1, 2, 2, 3, 4, 7, 9})") == [2])
        #expect(try attribute("mode({1, 1, 2, 2})") == [1, 2])
        #expect(try attribute("stddev({2, 4, 4, 4, 5, 5, 7, 9})") == 2)
        #expect(try attribute("sum(a)", [["a": 1], ["a": 2]]) == 3)
        #expect(try attribute("sum({9223372036854775807, 1})") == .double(9.223372036854775808e18))
        #expect(throws: PredicateEvaluationError.self) { try value("sum({'a'})") }
        #expect(throws: PredicateEvaluationError.self) { try value("max({'a', 1})") }
    }

    @Test func mathematics() throws {
        #expect(try attribute("sqrt(16)") == 4)
        #expect(try attribute("log(1000)") == 3)
        #expect(try attribute("ln(1)") == 0)
        #expect(try attribute("exp(0)") == 1)
        #expect(try attribute("floor(-0.5)") == -1)
        #expect(try attribute("ceiling(0.2)") == 1)
        #expect(try attribute("abs(-3)") == 3)
        #expect(try attribute("abs(-9223372036854775808)") == .double(9.223372036854775808e18))
        #expect(try attribute("trunc(-2.7)") == -2)
        #expect(try attribute("8 + 2") == 10)
        #expect(try attribute("8 - 2") == 6)
        #expect(try attribute("8 * 2") == 16)
        #expect(try attribute("7 / 2") == 3.5)
        #expect(try attribute("8 ** 2") == 64)
        #expect(try attribute("modulus:by:(7, 3)") == 1)
        #expect(try attribute("modulus:by:(7.5, 2)") == 1.5)
        #expect(try attribute("9223372036854775807 + 1") == .double(9.223372036854775808e18))
        #expect(try attribute("-9223372036854775808 - 1") == .double(-9.223372036854775808e18))
        #expect(try attribute("9223372036854775807 * 2") == .double(1.8446744073709552e19))
        #expect(try attribute("modulus:by:(-9223372036854775808, -1)") == 0)
        #expect(try attribute("1 / 0") == .double(.infinity))
        #expect(try attribute("-1 / 0") == .double(-.infinity))
        guard case .value(.double(let nan)) = try value("0 / 0") else { Issue.record("0/0"); return }
        #expect(nan.isNaN)
        #expect(throws: PredicateEvaluationError.arithmetic("modulus:by: 1 by zero")) { try value("modulus:by:(1, 0)") }
        #expect(try attribute("a + b", ["a": 8, "b": 2]) == 10)
        #expect(try attribute("a + b", ["a": Decimal(string: "0.1")!, "b": 2]) == .decimal(Decimal(string: "2.1")!))
        #expect(throws: PredicateEvaluationError.self) { try value("'a' + 1") }
    }

    @Test func bitsStringsAndOthers() throws {
        #expect(try attribute("5 & 3") == 1)
        #expect(try attribute("5 | 3") == 7)
        #expect(try attribute("5 ^ 3") == 6)
        #expect(try attribute("1 << 4") == 16)
        #expect(try attribute("1 << 64") == 0)
        #expect(try attribute("-16 >> 2") == -4)
        #expect(try attribute("~5") == -6)
        #expect(try attribute("onesComplement(0)") == -1)
        #expect(try attribute("uppercase('abc')") == "ABC")
        #expect(try attribute("lowercase('ÀB')") == "àb")
        #expect(try attribute("length('Zoë')") == 3)
        #expect(try attribute("noindex(5)") == 5)
        #expect(throws: PredicateEvaluationError.self) { try value("uppercase(1)") }
        #expect(throws: PredicateEvaluationError.self) { try value("1e300 & 1") }
        guard case .value(.double(let r)) = try value("random()") else { Issue.record("random"); return }
        #expect(r >= 0 && r < 1)
        guard case .value(.int(let n)) = try value("randomn(10)") else { Issue.record("randomn"); return }
        #expect((0..<10).contains(n))
        #expect(throws: PredicateEvaluationError.self) { try value("randomn(0)") }
        #expect(try [1, 2].contains(attribute("random({1, 2})").value?.int64Value ?? 0))
        guard case .value(.date(let now)) = try value("now()") else { Issue.record("now"); return }
        #expect(abs(now.timeIntervalSinceNow) < 60)
    }

    @Test func castsAndConditionals() throws {
        #expect(try attribute("CAST('12', 'NSNumber')") == 12)
        #expect(try attribute("CAST('1.5', 'NSNumber')") == 1.5)
        #expect(try attribute("CAST(CAST(0, 'NSDate'), 'NSNumber')") == 0)
        #expect(try attribute("CAST(d, 'NSNumber')", ["d": Date(timeIntervalSinceReferenceDate: 5)]) == 5)
        #expect(try attribute("CAST(n, 'NSDate')", ["n": 5]) == .date(Date(timeIntervalSinceReferenceDate: 5)))
        #expect(try attribute("CAST('2001-01-01T00:00:10Z', 'NSDate')") == .date(Date(timeIntervalSinceReferenceDate: 10)))
        #expect(try attribute("CAST(12, 'NSString')") == "12")
        #expect(try attribute("CAST(n, 'NSString')", ["n": 1.5]) == "1.5")
        #expect(try attribute("CAST(n, 'NSDecimalNumber')", ["n": 2]) == .decimal(2))
        #expect(throws: PredicateEvaluationError.self) { try value("CAST(1, 'NSFoo')") }
        #expect(throws: PredicateEvaluationError.self) { try value("CAST('x', 'NSDate')") }
        #expect(try attribute("TERNARY(a > 1, 'big', 'small')", ["a": 5]) == "big")
        #expect(try attribute("TERNARY(a > 1, 'big', 'small')", ["a": 0]) == "small")
        #expect(try eval("CAST(now(), 'NSNumber') > 0"))
    }

    @Test func variablesAndAssignment() throws {
        let p = try CorePredicate(format: "a == $x")
        #expect(try p.evaluate(with: ["a": 1], substitutionVariables: ["x": 1]))
        #expect(throws: PredicateEvaluationError.unboundVariable("x")) { try p.evaluate(with: ["a": 1]) }
        #expect(try eval("($v := a + 1) == 2 AND $v == 2", ["a": 1]))
        #expect(try CoreExpression(format: "$x + 1").value(substitutionVariables: ["x": 41]).attributeValue == 42)
    }

    @Test func setOperations() throws {
        #expect(try eval("{1, 2} UNION {2, 3} == {1, 2, 3}"))
        #expect(try eval("({1, 2} UNION {2, 3}).@count == 3"))
        #expect(try eval("({1, 2, 3} INTERSECT {2, 3, 4}) == {3, 2}"))
        #expect(try eval("({1, 2, 3} MINUS {2}) == {1, 3}"))
        #expect(try eval("(a UNION b) CONTAINS 5", ["a": [1], "b": Set([5])]))
    }

    @Test func errorsWhereFoundationRaises() throws {
        #expect(throws: PredicateEvaluationError.self) { try eval("SELF.foo <= 2", ["foo": "2"]) }
        #expect(!(try eval("foo == 2", ["foo": "2"])))
        #expect(try eval("foo != 2", ["foo": "2"]))
        #expect(throws: PredicateEvaluationError.self) { try eval("d < 'x'", ["d": Date()]) }
        #expect(throws: PredicateEvaluationError.self) { try eval("a BETWEEN 5", ["a": 1]) }
        #expect(throws: PredicateEvaluationError.self) { try eval("ANYKEY == 1", ["a": 1]) }
        #expect(throws: PredicateEvaluationError.self) { try eval("a.@count == 1", ["a": 1]) }
        let error = PredicateEvaluationError.typeMismatch("x")
        #expect(error.description.contains("x"))
    }

    @Test func anyValueConversions() throws {
        #expect(EvaluatedValue(any: nil).isNull)
        #expect(EvaluatedValue(any: Optional<Optional<Int>>.some(nil) as Any?).isNull)
        #expect(EvaluatedValue(any: Int8(3)).attributeValue == 3)
        #expect(EvaluatedValue(any: UInt64.max).attributeValue == .double(1.8446744073709552e19))
        #expect(EvaluatedValue(any: Float(0.5)).attributeValue == 0.5)
        #expect(EvaluatedValue(any: NSNumber(value: 2.5)).attributeValue == 2.5)
        #expect(EvaluatedValue(any: Substring("ab")).attributeValue == "ab")
        #expect(EvaluatedValue(any: [1, 2] as [Any]).collectionElements?.count == 2)
        #expect(EvaluatedValue(any: AttributeValue.array([1])).collectionElements?.count == 1)
        #expect(EvaluatedValue(any: (1...3)).collectionElements?.count == 3)
        if case .collection(_, let ordered) = EvaluatedValue(any: Set([1])) { #expect(!ordered) } else { Issue.record("set") }
        struct Opaque {}
        if case .object = EvaluatedValue(any: Opaque()) {} else { Issue.record("opaque") }
        #expect(EvaluatedValue(any: ["a": 1]).anyValue is [String: Any?])
    }
}
