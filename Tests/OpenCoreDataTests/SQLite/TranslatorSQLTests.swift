import Foundation
import GRDB
import OpenCoreDataPredicates
import Testing
@testable import OpenCoreData

/// The SQL text the translator writes, what it refuses, and the value encoding.
struct TranslatorSQLTests {
    private func statement(on entity: String = "Country", _ format: String, _ arguments: any FormatArgument...,
                           sort: [CoreSortDescriptor] = []) throws -> SQLFetchStatement {
        let fixture = try TranslatorFixture.make()
        let predicate = try CorePredicate(format: format, arguments: arguments)
        return try fixture.translator.selectStatement(for: fixture.fetch(entity, predicate, sort: sort))
    }

    private func wherePart(_ statement: SQLFetchStatement) -> String {
        guard let range = statement.sql.range(of: " WHERE ") else { return "" }
        let rest = statement.sql[range.upperBound...]
        return String(rest[..<(rest.range(of: " ORDER BY ")?.lowerBound ?? rest.endIndex)])
    }

    // MARK: Snapshots

    @Test("The select list, the table alias and the primary-key tie-breaker")
    func selectList() throws {
        let s = try statement(on: "Continent", "TRUEPREDICATE")
        // Continent's table holds Continent alone: its number (2) stands for Z_ENT.
        #expect(s.sql == "SELECT t0.Z_PK, 2, t0.Z_OPT, t0.ZNAME FROM ZCONTINENT t0 ORDER BY t0.Z_PK")
        #expect(s.entityNumber == 2)
        #expect(s.columns.map(\.columnName) == ["ZNAME"])
        #expect(s.columns.map(\.index) == [3])
    }

    @Test("Country columns: attributes, to-one keys and the destination entity column; no transient, no to-many")
    func countryColumns() throws {
        let fixture = try TranslatorFixture.make()
        let columns = try fixture.translator.selectedColumns(for: fixture.fetch("Country"), properties: nil)
        #expect(columns.map(\.columnName) == [
            "ZNAME", "ZPOPULATION", "ZAREA", "ZCODE", "ZFOUNDED", "ZISMEMBER", "ZIDENTIFIER", "ZWEBSITE", "ZFLAG", "ZGDP",
            "ZCONTINENT", "ZFAVORITEMOOD", "Z4_FAVORITEMOOD",
        ])
        #expect(columns.last?.kind == .toOneEntity)
    }

    @Test("Strings with options are bound and compared by ocd_compare")
    func boundStrings() throws {
        let s = try statement("name ==[cd] %@ OR name BEGINSWITH %@", "zoë", "Robert'); DROP TABLE ZCOUNTRY; --")
        #expect(wherePart(s) == "((ocd_compare(t0.ZNAME, ?, '==', 3)) OR (ocd_compare(t0.ZNAME, ?, 'BEGINSWITH', 0)))")
        #expect(s.arguments == ["zoë".databaseValue, "Robert'); DROP TABLE ZCOUNTRY; --".databaseValue])
        #expect(!s.sql.contains("zo"))
        #expect(!s.sql.contains("DROP"))
    }

    @Test("Equality, nil and ordering are two-valued")
    func nullSemantics() throws {
        #expect(wherePart(try statement("name == 'x'")) == "t0.ZNAME IS ?")
        #expect(wherePart(try statement("name != nil")) == "t0.ZNAME IS NOT NULL")
        #expect(wherePart(try statement("population > 5")) == "(t0.ZPOPULATION IS NOT NULL AND t0.ZPOPULATION > ?)")
        #expect(wherePart(try statement("NOT (population > 5)")) == "NOT (t0.ZPOPULATION IS NOT NULL AND t0.ZPOPULATION > ?)")
        #expect(wherePart(try statement("code IN {1, 2, nil}")) == "((t0.ZCODE IS NOT NULL AND t0.ZCODE IN (?, ?)) OR (t0.ZCODE IS NULL))")
    }

    @Test("To-one paths are LEFT JOINs, joined once")
    func toOneJoins() throws {
        let s = try statement(on: "Mood", "country.continent.name == 'Asia' AND country.name != 'x'")
        #expect(s.sql.contains("FROM ZMOOD t0 LEFT JOIN ZCOUNTRY t1 ON t1.Z_PK = t0.ZCOUNTRY LEFT JOIN ZCONTINENT t2 ON t2.Z_PK = t1.ZCONTINENT WHERE"))
        #expect(wherePart(s) == "((t2.ZNAME IS ?) AND (t1.ZNAME IS NOT ?))")
    }

    @Test("Object IDs compare primary keys, and the entity column when the destination has subentities")
    func objectIDs() throws {
        let fixture = try TranslatorFixture.make()
        let celebration = fixture.uri("Celebration", 5)
        #expect(wherePart(try statement("favoriteMood == %@", celebration)) == "(t0.ZFAVORITEMOOD IS ? AND t0.Z4_FAVORITEMOOD IS 5)")
        #expect(wherePart(try statement("continent == %@", fixture.uri("Continent", 2))) == "t0.ZCONTINENT IS ?")
        #expect(wherePart(try statement("SELF == %@", fixture.uri("Country", 2))) == "(t0.Z_PK IS ? AND t0.Z_ENT IS 3)")
        #expect(wherePart(try statement("SELF IN %@", AttributeValue.array([fixture.uri("Country", 2), fixture.uri("Country", 7)])))
            == "(t0.Z_PK IN (?, ?) AND t0.Z_ENT IS 3)")
    }

    @Test("To-many: EXISTS through the foreign key or the join table; @count subselects")
    func toMany() throws {
        #expect(wherePart(try statement("ANY moods.name == 'x'"))
            == "EXISTS (SELECT 1 FROM ZMOOD t1 WHERE t1.ZCOUNTRY = t0.Z_PK AND t1.ZNAME IS NOT NULL AND t1.ZNAME IS ?)")
        #expect(wherePart(try statement("ALL tags.name BEGINSWITH 'a'"))
            == "NOT EXISTS (SELECT 1 FROM Z_3TAGS j1 JOIN ZTAG t1 ON t1.Z_PK = j1.Z_6TAGS WHERE j1.Z_3COUNTRIES = t0.Z_PK AND t1.ZNAME IS NOT NULL AND NOT (ocd_compare(t1.ZNAME, ?, 'BEGINSWITH', 0)))")
        #expect(wherePart(try statement("moods.@count > 1"))
            == "IFNULL((SELECT COUNT(*) FROM ZMOOD t1 WHERE t1.ZCOUNTRY = t0.Z_PK) > ?, 0)")
    }

    @Test("Entity restriction only when the table holds other entities")
    func entityRestriction() throws {
        let fixture = try TranslatorFixture.make()
        let all = try fixture.translator.selectStatement(for: fixture.fetch("Mood"))
        #expect(!all.sql.contains("Z_ENT ="))
        #expect(!all.sql.contains("Z_ENT IN"))
        let onlyMoods = try fixture.translator.selectStatement(for: fixture.fetch("Mood", includesSubentities: false))
        #expect(onlyMoods.sql.contains("WHERE t0.Z_ENT = 4"))
        let celebrations = try fixture.translator.selectStatement(for: fixture.fetch("Celebration"))
        #expect(celebrations.sql.contains("WHERE t0.Z_ENT = 5"))
        #expect(celebrations.columns.map(\.columnName).contains("ZGUESTS"))
        #expect(try fixture.translator.countStatement(for: fixture.fetch("Mood", includesSubentities: false)).sql
            == "SELECT COUNT(*) FROM ZMOOD t0 WHERE t0.Z_ENT = 4")
    }

    @Test("Sorts: collations, direction, tie-breaker, limit and offset")
    func orderBy() throws {
        let fixture = try TranslatorFixture.make()
        let fetch = fixture.fetch("Country", sort: [
            CoreSortDescriptor(key: "continent.name", selector: .localizedCompare, locale: Locale(identifier: "sv")),
            CoreSortDescriptor(key: "name", ascending: false, selector: .caseInsensitiveCompare),
            CoreSortDescriptor(key: "population"),
        ], offset: 5, limit: 10)
        let s = try fixture.translator.selectStatement(for: fetch)
        #expect(s.sql.hasSuffix("FROM ZCOUNTRY t0 LEFT JOIN ZCONTINENT t1 ON t1.Z_PK = t0.ZCONTINENT ORDER BY t1.ZNAME COLLATE OCD_SORT_2_7376 ASC, t0.ZNAME COLLATE OCD_CASEINSENSITIVE DESC, t0.ZPOPULATION ASC, t0.Z_PK LIMIT 10 OFFSET 5"))
        #expect(s.collations == [SQLiteSortCollation(selector: .localizedCompare, localeIdentifier: "sv")])
        #expect(try fixture.translator.countStatement(for: fetch).sql
            == "SELECT COUNT(*) FROM (SELECT t0.Z_PK FROM ZCOUNTRY t0 ORDER BY t0.Z_PK LIMIT 10 OFFSET 5) counted")
    }

    // MARK: Unsupported

    private func expectUnsupported(_ format: String, _ arguments: any FormatArgument..., code: Int = 134091,
                                   mentioning: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fixture = try TranslatorFixture.make()
        let predicate = try CorePredicate(format: format, arguments: arguments)
        do {
            _ = try fixture.translator.selectStatement(for: fixture.fetch("Country", predicate))
            Issue.record("\(format) translated", sourceLocation: sourceLocation)
        } catch let error as CoreDataError {
            #expect(error.code.rawValue == code, "\(format): \(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(mentioning), "\(format): \(error.message)", sourceLocation: sourceLocation)
        }
    }

    @Test("What SQL cannot say throws 134091 naming the construct; unknown keys 134060")
    func unsupported() throws {
        try expectUnsupported("FUNCTION(name, 'uppercaseString') == 'X'", mentioning: "FUNCTION")
        try expectUnsupported("moods.score + 1 > 2", mentioning: "arithmetic on the to-many key path")
        try expectUnsupported("ANY name == 'x'", mentioning: "not a to-many key path")
        try expectUnsupported("ANY tags.countries.name == 'x'", mentioning: "more than one to-many")
        try expectUnsupported("moods.name == 'x'", mentioning: "to-many key path 'moods.name'")
        try expectUnsupported("name.length > 3", mentioning: "continues after the attribute")
        try expectUnsupported("scratch == 'x'", mentioning: "transient")
        try expectUnsupported("SUBQUERY(moods, $m, $m.score > 1).@sum == 1", mentioning: "SUBQUERY")
        try expectUnsupported("population ** 2 > 1", mentioning: "raise:toPower:")
        try expectUnsupported("TERNARY(population > 1, name, 'x') == 'x'", mentioning: "TERNARY")
        try expectUnsupported("continent.nmae == 'x'", code: 134060, mentioning: "nmae")
        try expectUnsupported("unknown > 3", code: 134060, mentioning: "Country")
    }

    @Test("Sort descriptors SQL cannot apply throw 134091")
    func unsupportedSorts() throws {
        let fixture = try TranslatorFixture.make()
        for descriptor in [
            CoreSortDescriptor(key: "name") { _, _ in .orderedSame },
            CoreSortDescriptor(key: nil),
            CoreSortDescriptor(key: "continent"),
            CoreSortDescriptor(key: "moods.name"),
        ] {
            #expect(throws: CoreDataError.self) {
                _ = try fixture.translator.selectStatement(for: fixture.fetch("Country", sort: [descriptor]))
            }
        }
    }

    @Test("Comparisons the evaluator rejects are rejected")
    func typeMismatches() throws {
        let fixture = try TranslatorFixture.make()
        for format in ["population > 'x'", "name BEGINSWITH 5", "population BEGINSWITH '1'", "name MATCHES '('",
                       "continent > %@"] {
            let predicate = try CorePredicate(format: format, fixture.uri("Continent", 1))
            #expect(throws: PredicateEvaluationError.self, "\(format)") {
                _ = try fixture.translator.selectStatement(for: fixture.fetch("Country", predicate))
            }
        }
    }

    // MARK: Registered functions

    @Test("ocd_compare answers as the evaluator, NULLs included")
    func compareFunction() throws {
        let queue = try DatabaseQueue()
        try queue.inDatabase { db in
            SQLiteFunctions.registerFunctions(db)
            func ask(_ sql: String, _ arguments: StatementArguments = []) throws -> Int? {
                try Int.fetchOne(db, sql: "SELECT " + sql, arguments: arguments)
            }
            #expect(try ask("ocd_compare(?, ?, 'LIKE', 3)", ["Zoë", "zo?"]) == 1)
            #expect(try ask("ocd_compare(?, ?, 'MATCHES', 0)", ["abc", "a.c"]) == 1)
            #expect(try ask("ocd_compare(?, ?, 'MATCHES', 0)", ["abcd", "a.c"]) == 0)
            #expect(try ask("ocd_compare(NULL, ?, 'BEGINSWITH', 0)", ["a"]) == 0)
            #expect(try ask("ocd_compare(NULL, NULL, '==', 3)") == 1)
            #expect(try ask("ocd_compare(?, ?, '==', 1)", ["STRASSE", "straße"]) == 1)
            #expect(try ask("ocd_compare(?, ?, '<', 0)", ["😀", "\u{FF21}"]) == 1)
            #expect(throws: DatabaseError.self) { try ask("ocd_compare(?, ?, 'MATCHES', 0)", ["a", "("]) }
            #expect(try String.fetchAll(db, sql: "SELECT column1 FROM (VALUES (?), (?), (?)) ORDER BY column1 COLLATE OCD_COMPARE",
                                        arguments: ["\u{FF21}", "😀", "B"]) == ["B", "😀", "\u{FF21}"])
            #expect(try String.fetchAll(db, sql: "SELECT column1 FROM (VALUES (?), (?)) ORDER BY column1 COLLATE OCD_CASEINSENSITIVE",
                                        arguments: ["b", "A"]) == ["A", "b"])
            let swedish = SQLiteSortCollation(selector: .localizedCompare, localeIdentifier: "sv_SE")
            SQLiteFunctions.ensureCollation(swedish, in: db)
            SQLiteFunctions.ensureCollation(swedish, in: db)
            let sorted = try String.fetchAll(db, sql: "SELECT column1 FROM (VALUES (?), (?), (?)) ORDER BY column1 COLLATE \(swedish.name)",
                                             arguments: ["Södertälje", "Sundsvall", "Stockholm"])
            #expect(sorted == ["Södertälje", "Sundsvall", "Stockholm"].sorted(using: [
                CoreSortDescriptor(key: nil, selector: .localizedCompare, locale: Locale(identifier: "sv_SE")),
            ]))
        }
    }

    // MARK: Value encoding

    @Test("Values are stored as Core Data stores them")
    func encoding() throws {
        let date = Date(timeIntervalSinceReferenceDate: 782_462_928.66)
        let uuid = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        #expect(SQLiteValueEncoding.databaseValue(.int(7), as: .integer16) == 7.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.bool(true), as: .boolean) == 1.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.int(2), as: .boolean) == 1.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.double(1.5), as: .float) == 1.5.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.decimal(Decimal(string: "2.5")!), as: .decimal) == 2.5.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.decimal(Decimal(12)), as: .decimal) == 12.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.string("é"), as: .string) == "é".databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.date(date), as: .date) == 782_462_928.66.databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.uuid(uuid), as: .uuid)
            == Data([0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF]).databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.uri(URL(string: "https://x.example/a%20b")!), as: .uri)
            == "https://x.example/a%20b".databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.data(Data([1, 2])), as: .binaryData) == Data([1, 2]).databaseValue)
        #expect(SQLiteValueEncoding.databaseValue(.null, as: .date) == .null)
        #expect(SQLiteValueEncoding.databaseValue(.string("x"), as: .date) == nil)
        #expect(SQLiteValueEncoding.databaseValue(.string("x"), as: .integer64) == nil)
    }

    @Test("Values read back, tolerantly and without trapping")
    func decoding() throws {
        let types: [AttributeType] = [.integer16, .integer32, .integer64, .boolean, .double, .float, .decimal, .string,
                                      .date, .uuid, .uri, .binaryData, .transformable, .undefined]
        let values: [AttributeValue] = [
            .int(-3), .bool(true), .double(2.25), .decimal(Decimal(string: "0.1")!), .string("Zoë"),
            .date(Date(timeIntervalSinceReferenceDate: 12.5)), .uuid(UUID()), .uri(URL(string: "x-coredata://S/E/p1")!),
            .data(Data([9, 8])),
        ]
        for type in types {
            for value in values {
                guard let stored = SQLiteValueEncoding.databaseValue(value, as: type) else { continue }
                let back = SQLiteValueEncoding.attributeValue(stored, as: type)
                if SQLDomain(type) == SQLDomain(value) ?? .opaque, type != .boolean {
                    #expect(back.isEquivalent(to: value) || type.isInteger, "\(type) \(value) -> \(back)")
                }
            }
        }
        let garbage: [DatabaseValue] = [.null, 1.databaseValue, (-1.5).databaseValue, Double.infinity.databaseValue,
                                        1e300.databaseValue, "junk".databaseValue, "12".databaseValue,
                                        Data([0xFF, 0xFE]).databaseValue, Data(count: 16).databaseValue]
        for type in types {
            for value in garbage { _ = SQLiteValueEncoding.attributeValue(value, as: type) }
        }
        #expect(SQLiteValueEncoding.attributeValue(3.databaseValue, as: .double) == .double(3))
        #expect(SQLiteValueEncoding.attributeValue(3.9.databaseValue, as: .integer32) == .int(3))
        #expect(SQLiteValueEncoding.attributeValue(1e300.databaseValue, as: .integer64) == .null)
        #expect(SQLiteValueEncoding.attributeValue(782_462_928.databaseValue, as: .date)
            == .date(Date(timeIntervalSinceReferenceDate: 782_462_928)))
        #expect(SQLiteValueEncoding.attributeValue(0.1.databaseValue, as: .decimal) == .decimal(Decimal(string: "0.1")!))
        #expect(SQLiteValueEncoding.attributeValue(7.databaseValue, as: .decimal) == .decimal(7))
        #expect(SQLiteValueEncoding.attributeValue("12".databaseValue, as: .integer16) == .int(12))
        #expect(SQLiteValueEncoding.attributeValue(0.databaseValue, as: .boolean) == .bool(false))
        #expect(SQLiteValueEncoding.attributeValue(Data([1, 2, 3]).databaseValue, as: .uuid) == .null)
        #expect(SQLiteValueEncoding.attributeValue("00112233-4455-6677-8899-AABBCCDDEEFF".databaseValue, as: .uuid)
            == .uuid(UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!))
    }
}
