import Foundation
import Testing
@testable import OpenCoreDataPredicates

@Suite struct SortDescriptorTests {
    func sortedNames(_ names: [String], _ selector: SortSelector, _ locale: String? = nil) -> [String] {
        let descriptor = CoreSortDescriptor(key: nil, selector: selector, locale: locale.map(Locale.init(identifier:)))
        return names.sorted(using: descriptor)
    }

    @Test func germanAndSwedishCollation() {
        // Köln before Kyllburg in German (ö is an o); Sundsvall before Södertälje in
        // Swedish (ö after z).
        #expect(sortedNames(["Kyllburg", "Köln"], .localizedCompare, "de_DE") == ["Köln", "Kyllburg"])
        #expect(sortedNames(["Södertälje", "Sundsvall"], .localizedCompare, "sv_SE") == ["Sundsvall", "Södertälje"])
        #expect(sortedNames(["Sundsvall", "Södertälje"], .localizedCompare, "de_DE") == ["Södertälje", "Sundsvall"])
        #expect(sortedNames(["Kyllburg", "Köln"], .localizedCaseInsensitiveCompare, "de") == ["Köln", "Kyllburg"])
        #expect(sortedNames(["Södertälje", "Sundsvall"], .localizedStandardCompare, "sv") == ["Sundsvall", "Södertälje"])
        #expect(sortedNames(["Sundsvall", "Södertälje", "Stockholm"], .localizedCompare, "sv")
                == ["Stockholm", "Sundsvall", "Södertälje"])
    }

    @Test func nordicAndSpanishCollation() {
        // Danish: Ø after Z, and "Aa" is Å, the last letter.
        #expect(sortedNames(["Aarhus", "Ølstykke-Stenløse", "Viborg"], .localizedCompare, "da_DK")
                == ["Viborg", "Ølstykke-Stenløse", "Aarhus"])
        #expect(sortedNames(["ø", "z", "æ", "å"], .localizedCompare, "da") == ["z", "æ", "ø", "å"])
        #expect(sortedNames(["ø", "z", "æ", "å"], .localizedCompare, "nb") == ["z", "æ", "ø", "å"])
        // Swedish and Finnish: å, ä, ö after z.
        #expect(sortedNames(["ö", "ä", "z", "å"], .localizedCompare, "sv") == ["z", "å", "ä", "ö"])
        #expect(sortedNames(["ö", "ä", "z", "å"], .localizedCompare, "fi") == ["z", "å", "ä", "ö"])
        // Spanish: ñ between n and o; English: ä with a.
        #expect(sortedNames(["o", "ñ", "n"], .localizedCompare, "es") == ["n", "ñ", "o"])
        #expect(sortedNames(["b", "ä", "a"], .localizedCompare, "en_US") == ["a", "ä", "b"])
        #expect(sortedNames(["côte", "cote", "côté", "coté"], .localizedCompare, "fr_FR").first == "cote")
    }

    @Test func selectors() {
        let names = ["b", "B", "a", "A"]
        // compare: is by code unit: uppercase first.
        #expect(sortedNames(names, .compare) == ["A", "B", "a", "b"])
        // caseInsensitiveCompare: keeps the original order of equal keys (stable).
        #expect(sortedNames(names, .caseInsensitiveCompare) == ["a", "A", "b", "B"])
        #expect(sortedNames(names, .localizedCompare, "en") == ["a", "A", "b", "B"])
        #expect(sortedNames(["file10", "file2", "File1"], .localizedStandardCompare, "en") == ["File1", "file2", "file10"])
        #expect(sortedNames(["file10", "file2"], .localizedCompare, "en") == ["file10", "file2"])
        #expect(sortedNames(["x10", "x9", "x100"], .localizedStandardCompare, "en") == ["x9", "x10", "x100"])
        #expect(SortSelector(rawValue: "localizedStandardCompare:") == .localizedStandardCompare)
    }

    @Test func numbersDatesAndNil() {
        let values: [Any?] = [3, nil, 1.5, 2, Decimal(string: "2.5")!, true]
        let sorted = values.sorted(using: CoreSortDescriptor(key: nil))
        #expect(sorted.map { EvaluatedValue(any: $0).attributeValue?.doubleValue ?? -1 } == [-1, 1, 1.5, 2, 2.5, 3])
        let descending = values.sorted(using: CoreSortDescriptor(key: nil, ascending: false))
        #expect(EvaluatedValue(any: descending.last ?? 0).isNull)
        let d1 = Date(timeIntervalSinceReferenceDate: 1), d2 = Date(timeIntervalSinceReferenceDate: 2)
        #expect([d2, d1].sorted(using: CoreSortDescriptor(key: nil)) == [d1, d2])
        // Values of kinds Foundation cannot compare are ordered by kind, not an error.
        let mixed: [Any] = ["a", 1, d1]
        #expect(mixed.sorted(using: CoreSortDescriptor(key: nil)).map { "\($0)" } == ["1", "a", "\(d1)"])
    }

    @Test func multipleKeysAndStability() {
        let people: [[String: Any]] = [
            ["name": "Carol", "age": 30, "n": 0], ["name": "alice", "age": 25, "n": 1],
            ["name": "Bob", "age": 30, "n": 2], ["name": "Alice", "age": 25, "n": 3],
            ["name": "Dave", "n": 4],
        ]
        let byAgeThenName = [
            CoreSortDescriptor(key: "age", ascending: false),
            CoreSortDescriptor(key: "name", selector: .caseInsensitiveCompare),
        ]
        let sorted = people.sorted(using: byAgeThenName)
        #expect(sorted.map { $0["n"] as? Int } == [2, 0, 1, 3, 4])
        var inPlace = people
        inPlace.sort(using: byAgeThenName)
        #expect(inPlace.map { $0["n"] as? Int } == [2, 0, 1, 3, 4])
        #expect(byAgeThenName.compare(people[0], people[2]) == .orderedDescending)
        #expect(byAgeThenName.compare(people[1], people[3]) == .orderedSame)
        #expect(byAgeThenName[0].compare(people[4], people[0]) == .orderedDescending)
        #expect(CoreSortDescriptor(key: "age").compare(people[4], people[0]) == .orderedAscending)
        // A key path through objects.
        let ada = Person(1, "Ada", age: 36, friends: [Person(2, "Zed", age: 1)])
        let bob = Person(3, "Bob", age: 20, friends: [Person(4, "Amy", age: 1)])
        #expect([ada, bob].sorted(using: CoreSortDescriptor(key: "friends.@count", ascending: true)).map(\.id) == [1, 3])
        #expect([ada, bob].sorted(using: CoreSortDescriptor(key: "age")).map(\.id) == [3, 1])
        #expect([ada, bob].sorted(using: [CoreSortDescriptor(key: "name", ascending: false)]).map(\.id) == [3, 1])
    }

    @Test func comparatorAndProperties() {
        let byLength = CoreSortDescriptor(key: "title") { a, b in
            let x = a.attributeValue?.stringValue?.count ?? 0
            let y = b.attributeValue?.stringValue?.count ?? 0
            return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        }
        let items: [[String: String]] = [["title": "ccc"], ["title": "a"], ["title": "bb"]]
        #expect(items.sorted(using: byLength).map { $0["title"] } == ["a", "bb", "ccc"])
        #expect(items.sorted(using: byLength.reversed).map { $0["title"] } == ["ccc", "bb", "a"])
        #expect(byLength.hasComparator)
        #expect(byLength.selector == nil)
        #expect(byLength == byLength)
        let plain = CoreSortDescriptor(key: "name", ascending: false, selector: .localizedCompare)
        #expect(plain.key == "name")
        #expect(!plain.ascending)
        #expect(plain.selector == .localizedCompare)
        #expect(!plain.hasComparator)
        #expect(plain.description == "(name, descending, localizedCompare:)")
        #expect(CoreSortDescriptor(key: "name") == CoreSortDescriptor(key: "name", ascending: true, selector: .compare))
        #expect(CoreSortDescriptor(key: "name") != plain)
        #expect(Set([plain, plain.reversed.reversed]).count == 1)
    }

    @Test func canonicallyEquivalentStringsCompareSame() {
        let d = CoreSortDescriptor(key: nil)
        #expect(d.compare("\u{e9}", "e\u{301}") == .orderedSame)
        #expect(d.compare("a", "b") == .orderedAscending)
        #expect(CoreSortDescriptor(key: nil, selector: .caseInsensitiveCompare).compare("Straße", "STRASSE") == .orderedSame)
    }
}
