import Foundation
import Testing
import OpenCoreData
import OpenCoreDataPredicates

// The conformance table of typed queries: each `#Predicate` is paired with its
// format-string equivalent, and every pair selects the same objects on the SQLite
// store, on the in-memory store, among unsaved objects, and as Foundation's own
// evaluation of the typed predicate (the oracle: Swift's semantics).

@ManagedEntity
final class TQMood: ManagedObject {
    @Managed var name: String
    @Managed var note: String?
    @Managed var rating: Int16
    @Managed var score: Double
    @Managed var date: Date
    @Managed var isFavorite: Bool
    @Managed var uuid: UUID?
    @Managed var link: URL?
    @Managed var blob: Data?
    @Managed(inverse: "moods") var country: TQCountry?
    @Managed(inverse: "moods") var tags: Set<TQTag>
}

@ManagedEntity
final class TQCountry: ManagedObject {
    @Managed var name: String
    @Managed var code: Int16
    @Managed(inverse: "country") var moods: Set<TQMood>
}

@ManagedEntity
final class TQTag: ManagedObject {
    @Managed var label: String
    @Managed(inverse: "tags") var moods: Set<TQMood>
}

/// A class hierarchy: key paths of a subclass name inherited properties too.
@ManagedEntity
class TQBase: ManagedObject {
    @Managed var title: String
}

@ManagedEntity
class TQDerived: TQBase {
    @Managed var extra: Int16
    var computed: Int16 { extra * 2 }
}

/// A subclass without `@ManagedEntity` inherits the key paths of its superclass.
final class TQPlainDerived: TQDerived {}

struct TypedCase {
    var label: String
    var typed: Predicate<TQMood>
    /// The format-string equivalent, with its arguments; nil when only Swift's
    /// evaluation is the reference.
    var format: String?
    var arguments: [any FormatArgument] = []
}

/// The data set: eight moods, three countries, three tags.
struct TypedDataSet {
    static let cutoff = Date(timeIntervalSinceReferenceDate: 500_000_000)
    static let knownUUID = UUID(uuidString: "11111111-2222-3333-4444-555555555555")!
    static let knownURL = URL(string: "https://example.com/a")!
    static let knownData = Data([1, 2, 3])

    /// A coordinator with a new SQLite store of the typed-query model, in a scratch
    /// folder, and a main-queue context on it.
    static func sqliteStack(_ folder: String) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try TypedPredicateConformanceTests.model())
        try coordinator.addPersistentStore(type: .sqlite, at: try TestScratch.folder(folder).appendingPathComponent("t.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    /// ``sqliteStack(_:)`` with the data set saved in it.
    static func populatedContext(_ folder: String) throws -> (context: ManagedObjectContext, france: TQCountry, work: TQTag, first: TQMood) {
        let (_, context) = try sqliteStack(folder)
        let (france, work, first) = populate(context)
        try context.save()
        return (context, france, work, first)
    }

    static func populate(_ context: ManagedObjectContext) -> (france: TQCountry, work: TQTag, first: TQMood) {
        let france = TQCountry(context: context); france.name = "France"; france.code = 250
        let japan = TQCountry(context: context); japan.name = "Japan"; japan.code = 392
        let chile = TQCountry(context: context); chile.name = "Chile"; chile.code = 152
        let work = TQTag(context: context); work.label = "work"
        let weekend = TQTag(context: context); weekend.label = "weekend"
        let home = TQTag(context: context); home.label = "home"
        let rows: [(String, String?, Int16, Double, Double, Bool, TQCountry?, [TQTag])] = [
            ("Sunny", "bright", 5, 2.5, 600_000_000, true, france, [work, weekend]),
            ("Rainy", nil, 1, -1.0, 400_000_000, false, japan, [home]),
            ("Windy", "none", 3, 0.75, 450_000_000, false, nil, []),
            ("Stormy", "dark", 2, -3.5, 700_000_000, true, chile, [work]),
            ("Calm", nil, 4, 1.25, 550_000_000, false, france, [weekend, home, work]),
            ("Foggy", "grey", 3, 0.0, 300_000_000, true, japan, [weekend]),
            ("Snowy", "cold", 4, 3.0, 650_000_000, false, nil, [home]),
            ("Sultry", "hot", 2, 1.5, 350_000_000, false, chile, []),
        ]
        var first: TQMood?
        for (index, row) in rows.enumerated() {
            let mood = TQMood(context: context)
            mood.name = row.0
            mood.note = row.1
            mood.rating = row.2
            mood.score = row.3
            mood.date = Date(timeIntervalSinceReferenceDate: row.4)
            mood.isFavorite = row.5
            mood.country = row.6
            mood.tags = Set(row.7)
            if index == 0 {
                mood.uuid = knownUUID
                mood.link = knownURL
                mood.blob = knownData
                first = mood
            } else if index == 3 {
                mood.uuid = UUID()
                mood.link = URL(string: "https://example.com/b")
                mood.blob = Data([9])
            }
        }
        return (france, work, first!)
    }

    static func cases(france: TQCountry, work: TQTag, first: TQMood) -> [TypedCase] {
        let cutoff = Self.cutoff
        let uuid = Self.knownUUID
        let url = Self.knownURL
        let data = Self.knownData
        let names = ["Sunny", "Calm", "Nothing"]
        let band = 0.5..<2.5
        let franceID = france.objectID
        let workID = work.objectID
        let firstID = first.objectID
        return [
            TypedCase(label: "greater than", typed: #Predicate { $0.rating > 3 }, format: "rating > 3"),
            TypedCase(label: "and", typed: #Predicate { $0.rating >= 2 && $0.rating <= 4 }, format: "rating >= 2 AND rating <= 4"),
            TypedCase(label: "or", typed: #Predicate { $0.name == "Sunny" || $0.name == "Rainy" },
                      format: "name == 'Sunny' OR name == 'Rainy'"),
            TypedCase(label: "not", typed: #Predicate { !$0.isFavorite }, format: "NOT isFavorite == YES"),
            TypedCase(label: "bool equal", typed: #Predicate { $0.isFavorite == true }, format: "isFavorite == YES"),
            TypedCase(label: "not equal", typed: #Predicate { $0.rating != 3 }, format: "rating != 3"),
            TypedCase(label: "nil", typed: #Predicate { $0.note == nil }, format: "note == nil"),
            TypedCase(label: "not nil", typed: #Predicate { $0.note != nil }, format: "note != nil"),
            TypedCase(label: "optional equal", typed: #Predicate { $0.note == "dark" }, format: "note == 'dark'"),
            TypedCase(label: "contains", typed: #Predicate { $0.name.contains("un") }, format: "name CONTAINS 'un'"),
            TypedCase(label: "starts with", typed: #Predicate { $0.name.starts(with: "S") }, format: "name BEGINSWITH 'S'"),
            TypedCase(label: "nil coalescing", typed: #Predicate { ($0.note ?? "none") == "none" },
                      format: "note == nil OR note == 'none'"),
            TypedCase(label: "to-one key path", typed: #Predicate { $0.country?.name == "France" },
                      format: "country.name == 'France'"),
            TypedCase(label: "to-one number", typed: #Predicate { ($0.country?.code ?? 0) > 200 }, format: nil),
            TypedCase(label: "to-one nil", typed: #Predicate { $0.country == nil }, format: "country == nil"),
            TypedCase(label: "contains where", typed: #Predicate { $0.tags.contains { $0.label == "work" } },
                      format: "ANY tags.label == 'work'"),
            TypedCase(label: "all satisfy", typed: #Predicate { $0.tags.allSatisfy { $0.label != "work" } },
                      format: "SUBQUERY(tags, $t, $t.label == 'work').@count == 0"),
            TypedCase(label: "count", typed: #Predicate { $0.tags.count >= 2 }, format: "tags.@count >= 2"),
            TypedCase(label: "is empty", typed: #Predicate { $0.tags.isEmpty }, format: "tags.@count == 0"),
            TypedCase(label: "not empty", typed: #Predicate { !$0.tags.isEmpty }, format: "tags.@count > 0"),
            TypedCase(label: "filter count",
                      typed: #Predicate { $0.tags.filter { $0.label.starts(with: "w") }.count == 1 },
                      format: "SUBQUERY(tags, $t, $t.label BEGINSWITH 'w').@count == 1"),
            TypedCase(label: "captured array", typed: #Predicate { names.contains($0.name) }, format: "name IN %@",
                      arguments: [names]),
            TypedCase(label: "captured date", typed: #Predicate { $0.date < cutoff }, format: "date < %@", arguments: [cutoff]),
            TypedCase(label: "arithmetic", typed: #Predicate { $0.score * 2 + 1 > 4 }, format: "score * 2 + 1 > 4"),
            TypedCase(label: "subtraction", typed: #Predicate { $0.rating - 1 >= 3 }, format: "rating - 1 >= 3"),
            TypedCase(label: "division", typed: #Predicate { $0.score / 2 > 0.5 }, format: "score / 2 > 0.5"),
            TypedCase(label: "remainder", typed: #Predicate { $0.rating % 2 == 0 }, format: nil),
            TypedCase(label: "unary minus", typed: #Predicate { -$0.score > 0 }, format: nil),
            TypedCase(label: "conditional", typed: #Predicate { ($0.rating > 3 ? $0.score : -$0.score) > 1 }, format: nil),
            TypedCase(label: "conditional test", typed: #Predicate { $0.isFavorite ? $0.rating > 3 : $0.rating < 3 }, format: nil),
            TypedCase(label: "uuid", typed: #Predicate { $0.uuid == uuid }, format: "uuid == %@", arguments: [uuid]),
            TypedCase(label: "url", typed: #Predicate { $0.link == url }, format: "link == %@", arguments: [url]),
            TypedCase(label: "data", typed: #Predicate { $0.blob == data }, format: "blob == %@", arguments: [data]),
            TypedCase(label: "object", typed: #Predicate { $0.objectID == firstID }, format: "SELF == %@", arguments: [first]),
            TypedCase(label: "object ID", typed: #Predicate { $0.country?.objectID == franceID },
                      format: "country == %@", arguments: [franceID]),
            TypedCase(label: "to-many contains object", typed: #Predicate { $0.tags.contains { $0.objectID == workID } },
                      format: "ANY tags == %@", arguments: [work]),
            TypedCase(label: "closed range", typed: #Predicate { (2...4).contains($0.rating) }, format: "rating BETWEEN {2, 4}"),
            TypedCase(label: "captured range", typed: #Predicate { band.contains($0.score) },
                      format: "score >= 0.5 AND score < 2.5"),
            TypedCase(label: "string is empty", typed: #Predicate { !$0.name.isEmpty }, format: "NOT name == ''"),
            TypedCase(label: "flat map to a value",
                      typed: #Predicate { ($0.country.flatMap { $0.code > 200 ? "big" : "small" } ?? "none") == "small" },
                      format: nil),
            TypedCase(label: "forced unwrap", typed: #Predicate { $0.note != nil && $0.note!.contains("o") }, format: nil),
        ]
    }
}

@Suite("Typed predicates: conformance on every store")
struct TypedPredicateConformanceTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel(classes: [TQMood.self, TQCountry.self, TQTag.self])
    }

    func names(_ moods: [TQMood]) -> [String] { moods.map(\.name).sorted() }

    /// Runs every case on one store: the typed request, the format request and
    /// Swift's evaluation give the same moods.
    func check(storeType: PersistentStoreType, saved: Bool) throws {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
        if storeType == .sqlite {
            try coordinator.addPersistentStore(type: .sqlite, at: try TestScratch.folder("typed").appendingPathComponent("t.sqlite"))
        } else {
            try Fixtures.addStore(type: storeType, to: coordinator)
        }
        let writer = ManagedObjectContext(concurrencyType: .mainQueue)
        writer.persistentStoreCoordinator = coordinator
        var (france, work, first) = TypedDataSet.populate(writer)
        var context = writer
        if saved {
            try writer.save()
            // A fresh context: everything comes from the store.
            context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.persistentStoreCoordinator = coordinator
            france = try #require(try context.existingObject(with: france.objectID) as? TQCountry)
            work = try #require(try context.existingObject(with: work.objectID) as? TQTag)
            first = try #require(try context.existingObject(with: first.objectID) as? TQMood)
        }
        let all = try context.fetch(FetchRequest<TQMood>(entityName: "TQMood"))
        #expect(all.count == 8)
        for testCase in TypedDataSet.cases(france: france, work: work, first: first) {
            let expected = names(try all.filter { try testCase.typed.evaluate($0) })
            let translated = try CorePredicate(testCase.typed)
            let typedResult = names(try context.fetch(try FetchRequest<TQMood>(predicate: testCase.typed)))
            #expect(typedResult == expected, "\(testCase.label) [\(storeType), saved: \(saved)]: \(translated.predicateFormat)")
            let evaluated = names(try all.filter { try translated.evaluate(with: $0) })
            #expect(evaluated == expected, "\(testCase.label) evaluated in memory: \(translated.predicateFormat)")
            if let format = testCase.format {
                let request = FetchRequest<TQMood>(entityName: "TQMood")
                request.predicate = try CorePredicate(format: format, arguments: testCase.arguments)
                #expect(names(try context.fetch(request)) == expected, "\(testCase.label): format \(format)")
            }
        }
    }

    @Test func sqliteStore() throws { try check(storeType: .sqlite, saved: true) }
    @Test func inMemoryStore() throws { try check(storeType: .inMemory, saved: true) }
    #if PostgreSQLTests
    @Test(.enabled(if: PostgreSQLTestServer.isAvailable)) func postgreSQLStore() throws { try check(storeType: .postgreSQL, saved: true) }
    #endif
    @Test func unsavedObjects() throws { try check(storeType: .inMemory, saved: false) }

    @Test("Each typed predicate is one SQL statement with bound values")
    func oneStatementWithBoundValues() throws {
        let (context, france, work, first) = try TypedDataSet.populatedContext("typed-sql")
        for testCase in TypedDataSet.cases(france: france, work: work, first: first) {
            let request = try FetchRequest<TQMood>(predicate: testCase.typed)
            request.resultType = .managedObjectID
            // SQL debug output is process-wide: a test of another suite fetching
            // TQMood at the same moment adds its statements. A fetch that takes one
            // statement shows one in at least one of ten tries; one that takes two
            // never does.
            var statements: [String] = []
            for _ in 0..<10 {
                let lines = TypedLineCollector()
                _ = try SQLDebug.withOutput(level: 1, to: { line in lines.append(line) }) {
                    try context.fetch(request)
                }
                statements = lines.values.filter { $0.hasPrefix("CoreData: sql: SELECT") && $0.contains("ZTQMOOD") }
                if statements.count == 1 { break }
            }
            #expect(statements.count == 1, "\(testCase.label): \(statements)")
            for statement in statements {
                for literal in ["'Sunny'", "'France'", "'work'", "'un'", "'none'"] {
                    #expect(!statement.contains(literal), "\(testCase.label): a constant in the SQL: \(statement)")
                }
            }
        }
    }

    @Test("IN and CONTAINS with a set under [c], [d], [cd] in SQL and in memory")
    func inWithSetOptions() throws {
        for storeType in [PersistentStoreType.sqlite, .inMemory] {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: try Self.model())
            if storeType == .sqlite {
                try coordinator.addPersistentStore(type: .sqlite, at: try TestScratch.folder("typed-in").appendingPathComponent("t.sqlite"))
            } else {
                try coordinator.addPersistentStore(type: .inMemory)
            }
            let context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.persistentStoreCoordinator = coordinator
            for name in ["Gold", "GOLD", "Gôld", "Lead"] {
                let mood = TQMood(context: context)
                mood.name = name
                mood.date = Date()
                mood.rating = 1
                mood.score = 1
                mood.isFavorite = false
            }
            try context.save()
            let metals: Set<String> = ["gold", "Silver", "Copper"]
            func matching(_ format: String, _ argument: any FormatArgument) throws -> [String] {
                let request = FetchRequest<TQMood>(entityName: "TQMood")
                request.predicate = try CorePredicate(format: format, argument)
                return names(try context.fetch(request))
            }
            #expect(try matching("name IN %@", metals) == [])
            #expect(try matching("name IN[c] %@", metals) == ["GOLD", "Gold"], "\(storeType)")
            #expect(try matching("name IN[d] %@", Set(["Gold"])) == ["Gold", "Gôld"], "\(storeType)")
            #expect(try matching("name IN[cd] %@", metals) == ["GOLD", "Gold", "Gôld"], "\(storeType)")
            #expect(try matching("name IN[c] %@", ["gold", "lead"]) == ["GOLD", "Gold", "Lead"], "\(storeType)")
            #expect(try matching("name IN[c] %@", ["a": "gold"]) == ["GOLD", "Gold"], "\(storeType)")
            #expect(try matching("%@ CONTAINS[c] name", metals) == ["GOLD", "Gold"], "\(storeType)")
            #expect(try matching("name CONTAINS[cd] %@", "OL") == ["GOLD", "Gold", "Gôld"], "\(storeType)")
        }
    }
}

/// Collects lines from another thread.
final class TypedLineCollector: Sendable {
    private let lines = Lock<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var values: [String] { lines.withLock { $0 } }
}
