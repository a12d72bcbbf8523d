import Foundation
import GRDB
import OpenCoreDataPredicates
import Testing
@testable import OpenCoreData

/// A fetch the SQL translation must answer exactly as the in-memory store does
/// (which evaluates with `CorePredicate.evaluate` and sorts with
/// `sorted(using:)`).
struct TranslatorCase: Sendable, CustomTestStringConvertible {
    var entity: String
    var format: String
    var arguments: [AttributeValue]
    var includesSubentities = true

    init(on entity: String = "Country", _ format: String, _ arguments: AttributeValue..., includesSubentities: Bool = true) {
        self.entity = entity
        self.format = format
        self.arguments = arguments
        self.includesSubentities = includesSubentities
    }

    var testDescription: String { "\(entity): \(format)" }
}

private let store = TranslatorFixture.storeIdentifier
private func uri(_ entity: String, _ pk: Int64, store: String = TranslatorFixture.storeIdentifier) -> AttributeValue {
    .uri(URL(string: "x-coredata://\(store)/\(entity)/p\(pk)")!)
}
private let d1900 = TranslatorFixture.date(1900)
private let d1950 = TranslatorFixture.date(1950)

let stringCases: [TranslatorCase] = [
    TranslatorCase("name == 'Deutschland'"),
    TranslatorCase("name == 'zoe'"),
    TranslatorCase("name != 'Japan'"),
    TranslatorCase("name == nil"),
    TranslatorCase("name != nil"),
    TranslatorCase("name ==[c] 'zoë'"),
    TranslatorCase("name ==[d] 'zoe'"),
    TranslatorCase("name ==[cd] 'ZOE'"),
    TranslatorCase("name ==[cd] 'ecole'"),
    TranslatorCase("name == %@", "\u{E9}cole"),
    TranslatorCase("name ==[c] 'STRASSENLAND'"),
    TranslatorCase("name !=[cd] 'zoe'"),
    TranslatorCase("name < 'M'"),
    TranslatorCase("name <= 'Sverige'"),
    TranslatorCase("name > 'Z'"),
    TranslatorCase("name >[c] 's'"),
    TranslatorCase("name < %@", "\u{FF21}"),
    TranslatorCase("name >= %@", "\u{E9}cole"),
    TranslatorCase("name BETWEEN {'A', 'T'}"),
    TranslatorCase("name BETWEEN[c] {'a', 't'}"),
    TranslatorCase("name BEGINSWITH 'Ö'"),
    TranslatorCase("name BEGINSWITH[cd] 'o'"),
    TranslatorCase("name ENDSWITH 'land'"),
    TranslatorCase("name ENDSWITH[c] 'LAND'"),
    TranslatorCase("name CONTAINS 'ch'"),
    TranslatorCase("name CONTAINS[cd] 'E'"),
    TranslatorCase("name CONTAINS ''"),
    TranslatorCase("name BEGINSWITH nil"),
    TranslatorCase("name LIKE '*land'"),
    TranslatorCase("name LIKE[c] 's?erige'"),
    TranslatorCase("name LIKE[cd] '*ECOLE*'"),
    TranslatorCase("name LIKE '?'"),
    TranslatorCase("name MATCHES '[A-Z].*'"),
    TranslatorCase("name MATCHES[c] 'z.*'"),
    TranslatorCase("name MATCHES[cd] '(oster|ecole).*'"),
    TranslatorCase("name MATCHES '.*land'"),
    TranslatorCase("name IN {'Japan', 'zoe', nil}"),
    TranslatorCase("name IN {'Japan', 'zoe'}"),
    TranslatorCase("name IN[c] {'japan', 'ZOE'}"),
    TranslatorCase("name IN 'Deutschland und Österreich'"),
    TranslatorCase("'Sverige' IN name"),
    TranslatorCase("name CONTAINS[c] 'SVER'"),
    TranslatorCase("NOT (name == 'Japan')"),
    TranslatorCase("NOT (name BEGINSWITH 'S')"),
    TranslatorCase("NOT (name ==[cd] 'zoe')"),
    TranslatorCase("name == 5"),
    TranslatorCase("name IN %@", .array(["Japan", 5, .null, "Sverige"])),
    TranslatorCase("name IN {}"),
    TranslatorCase("NOT (name IN {'Japan'})"),
    TranslatorCase("name ==[cd] continent.name"),
    TranslatorCase("name < continent.name"),
    TranslatorCase("name != 5"),
]

let numberCases: [TranslatorCase] = [
    TranslatorCase("population > 9000000"),
    TranslatorCase("population >= 9000000.0"),
    TranslatorCase("population == 9e6"),
    TranslatorCase("population < 5"),
    TranslatorCase("population != 4"),
    TranslatorCase("population == nil"),
    TranslatorCase("NOT (population > 10000000)"),
    TranslatorCase("area > population"),
    TranslatorCase("area < population"),
    TranslatorCase("area == population"),
    TranslatorCase("population BETWEEN {1, 10000000}"),
    TranslatorCase("area BETWEEN {0, 1.5}"),
    TranslatorCase("code IN {40, 752, 5}"),
    TranslatorCase("code IN {40, '752'}"),
    TranslatorCase("population == '9000000'"),
    TranslatorCase("population != 'x'"),
    TranslatorCase("isMember == YES"),
    TranslatorCase("isMember == NO"),
    TranslatorCase("isMember == nil"),
    TranslatorCase("isMember != 1"),
    TranslatorCase("gdp > 1"),
    TranslatorCase("gdp == 4.2"),
    TranslatorCase("gdp < 0.55"),
    TranslatorCase("population + 1 > 9000000"),
    TranslatorCase("area * 2 < 10"),
    TranslatorCase("population - code == 8999960"),
    TranslatorCase("population + nil == nil"),
    TranslatorCase("code < 1 + 2"),
    TranslatorCase("founded > %@", d1900),
    TranslatorCase("founded < %@", d1950),
    TranslatorCase("founded == nil"),
    TranslatorCase("founded BETWEEN %@", .array([d1900, d1950])),
    TranslatorCase("founded <= now()"),
    TranslatorCase("founded == 5"),
    TranslatorCase("identifier == %@", TranslatorFixture.uuid(3)),
    TranslatorCase("identifier != %@", TranslatorFixture.uuid(3)),
    TranslatorCase("identifier > %@", TranslatorFixture.uuid(9)),
    TranslatorCase("website == %@", .uri(URL(string: "https://at.example")!)),
    TranslatorCase("website < %@", .uri(URL(string: "https://b.example")!)),
    TranslatorCase("flag == %@", .data(Data([1, 2]))),
    TranslatorCase("flag > %@", .data(Data([1]))),
    TranslatorCase("flag < %@", .data(Data([1]))),
    TranslatorCase("TRUEPREDICATE"),
    TranslatorCase("FALSEPREDICATE"),
    TranslatorCase("(population > 1000000 AND continent.name == 'Europe') OR name BEGINSWITH 'J'"),
    TranslatorCase("NOT (population > 1000000 OR isMember == YES)"),
]

let relationshipCases: [TranslatorCase] = [
    TranslatorCase("continent.name == 'Europe'"),
    TranslatorCase("continent.name ==[cd] 'amerique'"),
    TranslatorCase("continent.name == nil"),
    TranslatorCase("continent.name != 'Europe'"),
    TranslatorCase("continent == nil"),
    TranslatorCase("continent != nil"),
    TranslatorCase("continent == %@", uri("Continent", 2)),
    TranslatorCase("continent != %@", uri("Continent", 2)),
    TranslatorCase("continent IN %@", .array([uri("Continent", 1), uri("Continent", 3)])),
    TranslatorCase("continent IN %@", .array([uri("Continent", 3), .null])),
    TranslatorCase("continent == %@", uri("Continent", 2, store: "OTHER-STORE")),
    TranslatorCase("continent == %@", uri("Country", 2)),
    TranslatorCase("continent == 'Europe'"),
    TranslatorCase("favoriteMood == %@", uri("Celebration", 5)),
    TranslatorCase("favoriteMood == %@", uri("Mood", 5)),
    TranslatorCase("favoriteMood == %@", uri("Mood", 3)),
    TranslatorCase("favoriteMood.name == 'happy'"),
    TranslatorCase("favoriteMood.score > 0.6"),
    TranslatorCase("favoriteMood.country.name == 'Japan'"),
    TranslatorCase("favoriteMood.country == SELF"),
    TranslatorCase("SELF == %@", uri("Country", 3)),
    TranslatorCase("SELF != %@", uri("Country", 3)),
    TranslatorCase("SELF IN %@", .array([uri("Country", 1), uri("Country", 5), uri("Mood", 1)])),
    TranslatorCase("ANY moods.name == 'happy'"),
    TranslatorCase("ANY moods.name ==[cd] 'ZOE'"),
    TranslatorCase("ALL moods.score > 0.2"),
    TranslatorCase("NONE moods.name == 'Sad'"),
    TranslatorCase("ANY moods.name == nil"),
    TranslatorCase("ALL moods.name != nil"),
    TranslatorCase("SOME moods.score < 0.5"),
    TranslatorCase("NOT (ANY moods.name == 'happy')"),
    TranslatorCase("ANY moods == %@", uri("Mood", 2)),
    TranslatorCase("ANY tags.name == 'eu'"),
    TranslatorCase("ANY tags.name BEGINSWITH[c] 'i'"),
    TranslatorCase("ALL tags.name != 'eu'"),
    TranslatorCase("NONE tags.name IN {'alps', 'Nordic'}"),
    TranslatorCase("ANY tags == %@", uri("Tag", 2)),
    TranslatorCase("%@ IN tags", uri("Tag", 4)),
    TranslatorCase("tags CONTAINS %@", uri("Tag", 4)),
    TranslatorCase("'eu' IN tags.name"),
    TranslatorCase("tags.name CONTAINS 'alps'"),
    TranslatorCase("ANY tags.name == nil"),
    TranslatorCase("ANY cities.name == nil"),
    TranslatorCase("ALL cities.name BEGINSWITH 'S'"),
    TranslatorCase("ANY cities.name ==[cd] 'munchen'"),
    TranslatorCase("moods.@count == 2"),
    TranslatorCase("moods.@count == 0"),
    TranslatorCase("tags.@count >= 2"),
    TranslatorCase("cities.@count > 1"),
    TranslatorCase("moods.@sum.score > 1"),
    TranslatorCase("moods.@sum.score == 0"),
    TranslatorCase("moods.@avg.score < 0.6"),
    TranslatorCase("moods.@avg.score == nil"),
    TranslatorCase("moods.@max.score == 1"),
    TranslatorCase("moods.@min.name == 'Sad'"),
    TranslatorCase("continent.countries.@count > 5"),
    TranslatorCase("continent.countries.@count == nil"),
    TranslatorCase("ANY continent.countries.name == 'Japan'"),
    TranslatorCase("SUBQUERY(moods, $m, $m.score > 0.4 AND $m.name != nil).@count > 0"),
    TranslatorCase("SUBQUERY(tags, $t, $t.name BEGINSWITH[c] 'n' OR $t.name == 'eu').@count == 2"),
    TranslatorCase("SUBQUERY(moods, $m, ANY $m.country.tags.name == 'eu').@count > 0"),
    TranslatorCase("SUBQUERY(cities, $c, $c.name == nil).@count == 1"),
    TranslatorCase("SUBQUERY(moods, $m, $m.score * 1000000 > area).@count > 0"),
    TranslatorCase("moods.@avg.score > favoriteMood.score"),
    TranslatorCase("ANY moods.score > gdp"),
    TranslatorCase("SUBQUERY(moods, $m, $m.score > 0.4).@count == moods.@count"),
    TranslatorCase("continent.name IN {'Asia', nil}"),
    TranslatorCase("NOT (continent.name IN {'Asia', 'Europe'})"),
    TranslatorCase("population BETWEEN {code, area}"),
    TranslatorCase("area IN {population, 1.5, 'x'}"),
    TranslatorCase(on: "Mood", "country.name == 'Deutschland'"),
    TranslatorCase(on: "Mood", "country.continent.name == 'Asia'"),
    TranslatorCase(on: "Mood", "name ==[cd] 'elan'"),
    TranslatorCase(on: "Mood", "score == nil"),
    TranslatorCase(on: "Mood", "country == nil"),
    TranslatorCase(on: "Mood", "score > 0", includesSubentities: false),
    TranslatorCase(on: "Mood", "TRUEPREDICATE", includesSubentities: false),
    TranslatorCase(on: "Celebration", "guests > 10"),
    TranslatorCase(on: "Celebration", "TRUEPREDICATE"),
    TranslatorCase(on: "Mood", "SELF == %@", uri("Celebration", 7)),
    TranslatorCase(on: "Mood", "SELF == %@", uri("Mood", 7)),
    TranslatorCase(on: "Mood", "country.favoriteMood == SELF"),
    TranslatorCase(on: "Tag", "ANY countries.continent.name == 'Asia'"),
    TranslatorCase(on: "Tag", "countries.@count == 0"),
    TranslatorCase(on: "City", "country.name BEGINSWITH 'D'"),
    TranslatorCase(on: "City", "name == nil"),
]

struct TranslatorConformanceTests {
    private func check(_ testCase: TranslatorCase, sort: [CoreSortDescriptor] = []) throws {
        let fixture = try TranslatorFixture.make()
        let predicate = try CorePredicate(format: testCase.format, arguments: testCase.arguments)
        let fetch = fixture.fetch(testCase.entity, predicate, sort: sort, includesSubentities: testCase.includesSubentities)
        let expected = try fixture.memoryKeys(fetch)
        let actual = try fixture.sqlKeys(fetch)
        let sql = try fixture.translator.selectStatement(for: fetch).sql
        #expect(actual == expected, "\(testCase.format): SQL \(sql)")
        #expect(try fixture.sqlCount(fetch) == expected.count)
    }

    @Test("Strings: case, accents, normalization, LIKE, MATCHES, IN", arguments: stringCases)
    func strings(_ testCase: TranslatorCase) throws {
        try check(testCase)
    }

    @Test("Numbers, Booleans, decimals, dates, UUIDs, URIs, data, arithmetic, compounds", arguments: numberCases)
    func numbers(_ testCase: TranslatorCase) throws {
        try check(testCase)
    }

    @Test("To-one paths, object IDs, ANY/ALL/NONE, @count, aggregates, SUBQUERY, entities", arguments: relationshipCases)
    func relationships(_ testCase: TranslatorCase) throws {
        try check(testCase)
    }

    @Test("Cases are not vacuous: most of them select some rows but not all")
    func casesDiscriminate() throws {
        let fixture = try TranslatorFixture.make()
        var discriminating = 0
        let all = stringCases + numberCases + relationshipCases
        for testCase in all {
            let predicate = try CorePredicate(format: testCase.format, arguments: testCase.arguments)
            let fetch = fixture.fetch(testCase.entity, predicate, includesSubentities: testCase.includesSubentities)
            let total = try fixture.memoryKeys(fixture.fetch(testCase.entity, includesSubentities: testCase.includesSubentities)).count
            let count = try fixture.memoryKeys(fetch).count
            if count > 0 && count < total { discriminating += 1 }
        }
        #expect(discriminating * 10 >= all.count * 8)
    }

    // MARK: Sorting

    static let sorts: [(String, [CoreSortDescriptor])] = [
        ("name", [CoreSortDescriptor(key: "name")]),
        ("name desc", [CoreSortDescriptor(key: "name", ascending: false)]),
        ("name caseInsensitive", [CoreSortDescriptor(key: "name", selector: .caseInsensitiveCompare)]),
        ("name localized de", [CoreSortDescriptor(key: "name", selector: .localizedCompare, locale: Locale(identifier: "de_DE"))]),
        ("name localized sv", [CoreSortDescriptor(key: "name", selector: .localizedCompare, locale: Locale(identifier: "sv_SE"))]),
        ("name localized sv desc", [CoreSortDescriptor(key: "name", ascending: false, selector: .localizedCompare,
                                                       locale: Locale(identifier: "sv_SE"))]),
        ("name localizedCaseInsensitive de", [CoreSortDescriptor(key: "name", selector: .localizedCaseInsensitiveCompare,
                                                                 locale: Locale(identifier: "de"))]),
        ("name localizedStandard", [CoreSortDescriptor(key: "name", selector: .localizedStandardCompare,
                                                       locale: Locale(identifier: "en_US"))]),
        ("name localized current", [CoreSortDescriptor(key: "name", selector: .localizedCompare)]),
        ("population, name", [CoreSortDescriptor(key: "population"), CoreSortDescriptor(key: "name")]),
        ("area desc", [CoreSortDescriptor(key: "area", ascending: false)]),
        ("founded", [CoreSortDescriptor(key: "founded")]),
        ("isMember desc, name", [CoreSortDescriptor(key: "isMember", ascending: false), CoreSortDescriptor(key: "name")]),
        ("continent.name, name", [CoreSortDescriptor(key: "continent.name"), CoreSortDescriptor(key: "name")]),
        ("continent.name desc", [CoreSortDescriptor(key: "continent.name", ascending: false)]),
        ("moods.@count desc", [CoreSortDescriptor(key: "moods.@count", ascending: false)]),
        ("identifier", [CoreSortDescriptor(key: "identifier")]),
        ("website desc", [CoreSortDescriptor(key: "website", ascending: false)]),
        ("gdp", [CoreSortDescriptor(key: "gdp")]),
        ("flag", [CoreSortDescriptor(key: "flag")]),
        ("favoriteMood.country.name", [CoreSortDescriptor(key: "favoriteMood.country.name")]),
    ]

    @Test("Sort descriptors give the in-memory order", arguments: 0..<sorts.count)
    func sorting(_ index: Int) throws {
        let fixture = try TranslatorFixture.make()
        let (label, descriptors) = Self.sorts[index]
        let fetch = fixture.fetch("Country", sort: descriptors)
        let expected = try fixture.memoryKeys(fetch)
        #expect(try fixture.sqlKeys(fetch) == expected, "\(label)")
    }

    @Test("Localized sorts differ by locale, and SQL follows")
    func localizedSortsDiffer() throws {
        let fixture = try TranslatorFixture.make()
        let predicate = try CorePredicate(format: "name IN {'Åland', 'Österreich', 'Sverige', 'Japan', 'zoe', 'ZOË'}")
        func names(_ locale: String) throws -> [Int64] {
            let fetch = fixture.fetch("Country", predicate, sort: [
                CoreSortDescriptor(key: "name", selector: .localizedCompare, locale: Locale(identifier: locale)),
            ])
            let sql = try fixture.sqlKeys(fetch)
            #expect(sql == (try fixture.memoryKeys(fetch)))
            return sql
        }
        let german = try names("de_DE"), swedish = try names("sv_SE")
        #expect(german != swedish)
        // German sorts Å with A and Ö with O; Swedish after Z.
        #expect(german.first == 4)
        #expect(swedish.suffix(2) == [4, 2])
    }

    @Test("Mood sorts with subentities, to-one paths, nils")
    func moodSorts() throws {
        let fixture = try TranslatorFixture.make()
        for descriptors in [
            [CoreSortDescriptor(key: "country.name"), CoreSortDescriptor(key: "score", ascending: false)],
            [CoreSortDescriptor(key: "score")],
            [CoreSortDescriptor(key: "name", selector: .caseInsensitiveCompare)],
            [CoreSortDescriptor(key: "country.continent.name", ascending: false)],
        ] {
            let fetch = fixture.fetch("Mood", sort: descriptors)
            #expect(try fixture.sqlKeys(fetch) == (try fixture.memoryKeys(fetch)), "\(descriptors)")
        }
    }

    @Test("Offset and limit, with and without sort; counts apply them as the in-memory store does")
    func offsetAndLimit() throws {
        let fixture = try TranslatorFixture.make()
        let predicate = try CorePredicate(format: "population > 3")
        for (offset, limit) in [(0, 3), (2, 0), (2, 4), (20, 5), (0, 0)] {
            for sort in [[], [CoreSortDescriptor(key: "name", selector: .caseInsensitiveCompare)]] {
                let fetch = fixture.fetch("Country", predicate, sort: sort, offset: offset, limit: limit)
                let expected = try fixture.memoryKeys(fetch)
                #expect(try fixture.sqlKeys(fetch) == expected, "offset \(offset) limit \(limit)")
                #expect(try fixture.sqlCount(fetch) == (try fixture.memory.count(fetch)))
            }
        }
    }
}
