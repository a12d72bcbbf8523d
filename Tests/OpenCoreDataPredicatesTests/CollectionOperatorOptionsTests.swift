import Foundation
import Testing
@testable import OpenCoreDataPredicates

/// `IN` and `CONTAINS` with set, array and dictionary arguments under every
/// comparison option: Foundation's `NSPredicate` answers true for
/// `name IN[c] %@` with the set {"Gold", "Silver", "Copper"} and the name "Gold"
/// (a case found by a peer's test suite), and compares strings in collections with
/// the options given.
@Suite struct CollectionOperatorOptionsTests {
    let gold = Person(1, "Gold", age: 1)
    let accented = Person(2, "Gôld", age: 2)
    let upper = Person(3, "GOLD", age: 3)

    func eval(_ format: String, _ object: Person, _ argument: any FormatArgument) throws -> Bool {
        try CorePredicate(format: format, argument).evaluate(with: object)
    }

    @Test func inASetUnderEveryOption() throws {
        let metals: Set<String> = ["Gold", "Silver", "Copper"]
        #expect(try eval("name IN %@", gold, metals))
        #expect(try eval("name IN[c] %@", gold, metals))
        #expect(try eval("name IN[d] %@", gold, metals))
        #expect(try eval("name IN[cd] %@", gold, metals))
        #expect(try !eval("name IN %@", upper, metals))
        #expect(try eval("name IN[c] %@", upper, metals))
        #expect(try !eval("name IN[d] %@", upper, metals))
        #expect(try eval("name IN[cd] %@", upper, metals))
        #expect(try !eval("name IN %@", accented, metals))
        #expect(try !eval("name IN[c] %@", accented, metals))
        #expect(try eval("name IN[d] %@", accented, metals))
        #expect(try eval("name IN[cd] %@", accented, metals))
    }

    @Test func inAnArrayAndADictionary() throws {
        let array = ["gold", "silver"]
        let dictionary = ["first": "gold", "second": "silver"]
        #expect(try !eval("name IN %@", gold, array))
        #expect(try eval("name IN[c] %@", gold, array))
        #expect(try eval("name IN[cd] %@", accented, array))
        // A dictionary's values are its members.
        #expect(try eval("name IN[c] %@", gold, dictionary))
        #expect(try !eval("name IN[c] %@", Person(4, "first", age: 4), dictionary))
    }

    @Test func containsOnCollectionsAndStrings() throws {
        let tagged = Person(5, "x", age: 5, tags: ["Gold", "Silver"])
        #expect(try CorePredicate(format: "tags CONTAINS[c] 'gold'").evaluate(with: tagged))
        #expect(try !CorePredicate(format: "tags CONTAINS 'gold'").evaluate(with: tagged))
        #expect(try CorePredicate(format: "tags CONTAINS[cd] 'GÔLD'").evaluate(with: tagged))
        #expect(try CorePredicate(format: "%@ CONTAINS[c] name", Set(["GOLD"])).evaluate(with: gold))
        #expect(try CorePredicate(format: "name CONTAINS[cd] 'OL'").evaluate(with: accented))
        #expect(try !CorePredicate(format: "name CONTAINS[c] 'OL'").evaluate(with: accented))
    }

    @Test func aSetLiteralAndAnNSSetStyleAggregate() throws {
        #expect(try CorePredicate(format: "name IN[c] {'gold', 'silver'}").evaluate(with: gold))
        #expect(try CorePredicate(format: "name IN[c] %@", FormatArgumentList(["GOLD", 1])).evaluate(with: gold))
    }
}

/// The bound on the alternatives `??` and `?:` make in a typed predicate.
@Suite struct TypedAlternativesBoundTests {
    @Test func moreAlternativesThanTheBoundAreAnError() throws {
        let limit = TypedPredicateTranslator.maximumAlternatives
        let atLimit = Array(repeating: TypedBranch(.constant(.int(1))), count: limit)
        #expect(try TypedPredicateTranslator.bounded(atLimit).count == limit)
        #expect(throws: TypedPredicateError.self) {
            try TypedPredicateTranslator.bounded(atLimit + [TypedBranch(.constant(.int(2)))])
        }
        // Arithmetic multiplies the alternatives of its operands.
        let eight = Array(repeating: TypedBranch(.keyPath("a"), when: .constant(true)), count: 8)
        #expect(try TypedPredicateTranslator.combine(eight, eight) { $0 + $1 }.count == 64)
        #expect(throws: TypedPredicateError.self) {
            try TypedPredicateTranslator.combine(eight, eight + [TypedBranch(.keyPath("b"))]) { $0 + $1 }
        }
    }
}
