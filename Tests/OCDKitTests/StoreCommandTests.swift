import ArgumentParser
import Foundation
import Testing
@testable import OCDKit
@testable import OpenCoreData

@Suite("ocd store and ocd fetch")
struct StoreCommandTests {
    static let fixtures = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataTests/Fixtures/coredata/objcio+core-data")

    func copyMoody5() throws -> URL {
        let folder = try TestScratch.folder("ocd")
        let source = Self.fixtures.appendingPathComponent("Migrations/MigrationsTests/Moody 5.moody")
        let target = folder.appendingPathComponent("Moody 5.moody")
        try FileManager.default.copyItem(at: source, to: target)
        // The fixture has no -wal of its own: one beside it is left by a reader.
        if FileManager.default.fileExists(atPath: source.path + "-wal") {
            try? FileManager.default.copyItem(at: URL(fileURLWithPath: source.path + "-wal"), to: URL(fileURLWithPath: target.path + "-wal"))
        }
        return target
    }

    @discardableResult
    func run(_ arguments: [String]) throws -> String { try runOCD(arguments) }

    @Test("store info and fetch read a real store without its model, and never change it")
    func infoAndFetch() throws {
        let store = try copyMoody5()
        let before = try Data(contentsOf: store)
        let info = try JSONSerialization.jsonObject(with: Data(try run(["store", "info", store.path, "--json"]).utf8)) as? [String: Any]
        let entities = try #require(info?["entities"] as? [[String: Any]])
        #expect(entities.first { $0["name"] as? String == "Mood" }?["rows"] as? Int == 4)
        #expect(entities.first { $0["name"] as? String == "Country" }?["rows"] as? Int == 3)
        let fetched = try JSONSerialization.jsonObject(with: Data(try run(["fetch", store.path, "--entity", "Mood", "--predicate", "rating >= 0", "--sort", "date:desc", "--limit", "2", "--json"]).utf8)) as? [[String: Any]]
        #expect(fetched?.count == 2)
        let dates = fetched?.compactMap { ($0["attributes"] as? [String: Any])?["date"] as? String } ?? []
        #expect(dates == dates.sorted(by: >))
        #expect(try Data(contentsOf: store) == before)
        #expect(throws: (any Error).self) { try run(["fetch", store.path, "--entity", "Mood", "--predicate", "rating >="]) }
        #expect(throws: (any Error).self) { try run(["fetch", store.path, "--entity", "Nope"]) }
    }

    @Test("The fetch JSON lists URI, attributes, to-one URIs and to-many URI lists")
    func objectJSON() throws {
        let store = try copyMoody5()
        let (context, _) = try openStore(store.path, modelPath: nil)
        let countries = try context.fetch(FetchRequest<ManagedObject>(entityName: "Country"))
        let json = ObjectReport.json(try #require(countries.first))
        #expect((json["uri"] as? String)?.hasPrefix("x-coredata://374C5961-3E41-43E5-915C-383EA914074C/Country/p") == true)
        let relationships = try #require(json["relationships"] as? [String: Any])
        #expect(relationships["moods"] is [String])
        let moods = try context.fetch(FetchRequest<ManagedObject>(entityName: "Mood"))
        let moodJSON = ObjectReport.json(try #require(moods.first))
        #expect(((moodJSON["relationships"] as? [String: Any])?["country"] as? String)?.contains("/Country/p") == true)
        #expect((moodJSON["attributes"] as? [String: Any])?["date"] is String)
    }

    @Test("store create makes an empty store that opens with its model")
    func create() throws {
        let folder = try TestScratch.folder("ocd")
        let path = folder.appendingPathComponent("New.sqlite").path
        let model = Self.fixtures.appendingPathComponent("Migrations/Migrations/Moody.xcdatamodeld").path
        try run(["store", "create", path, "--model", model])
        try run(["store", "info", path, "--model", model])
        #expect(throws: (any Error).self) { try run(["store", "create", path, "--model", model]) }
    }
}

@Suite("ocd demo")
struct DemoCommandTests {
    @Test("The demo runs end to end on a SQLite store and narrates each step")
    func demo() async throws {
        let folder = try TestScratch.folder("ocd")
        let path = folder.appendingPathComponent("Moody.sqlite").path
        let output = try await runOCDAsync(["demo", "--store", path])
        let lines = output.split(separator: "\n").map { String($0) }
        // The stack and the model.
        #expect(output.contains("entity GeographicRegion (abstract)"))
        #expect(output.contains("entity Country : GeographicRegion"))
        // Inserting: temporary, then permanent IDs; the controller reports sections then rows.
        #expect(output.contains("a mood's ID is temporary: <x-coredata:///Mood/t"))
        #expect(output.contains("inverses are maintained"))
        #expect(output.contains("the mood's ID is now permanent: <x-coredata://"))
        let firstReport = try #require(lines.firstIndex { $0.contains("controller: will change") })
        #expect(lines[firstReport + 1].contains("insert section France at 0"))
        #expect(lines.filter { $0.contains("controller:     insert mood") }.count >= 6)
        #expect(output.contains("the list now: France ×2, Germany ×2, Sweden ×2"))
        // Faulting and uniquing.
        #expect(output.contains("the first is a fault: true"))
        #expect(output.contains("fired the fault: isFault = false"))
        #expect(output.contains("is the same object: true"))
        // Undo: a delete, then the same row back.
        #expect(output.contains("delete mood of 23:40 at [2, 0]"))
        #expect(output.contains("insert mood of 23:40 at [2, 0]"))
        // The background import merged into the main context and reported.
        #expect(output.contains("insert section Italy at 2"))
        #expect(output.contains("delete mood of 18:40 at [1, 1]"))
        #expect(output.contains("the list now: France ×2, Germany ×1, Italy ×2, Sweden ×2"))
        // SQL debug output of the statements in that step.
        // Moods are all of one entity: its number stands in for Z_ENT.
        let select = try #require(lines.first { $0.contains("CoreData: sql: SELECT t0.Z_PK, ") && $0.contains("FROM ZMOOD") })
        #expect(select.contains(", t0.Z_OPT, ") && !select.contains("t0.Z_ENT"))
        #expect(output.contains("LIMIT 3"))
        #expect(output.contains("CoreData: annotation: total fetch execution time:"))
        #expect(output.contains("→ 7 moods in all"))
        // Validation.
        #expect(output.contains("error 1610"))
        #expect(output.contains("after rollback: 7 moods, as before"))
        let info = try runOCD(["store", "info", path, "--json"])
        #expect(info.contains("\"Mood\""))
    }
}
