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
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let source = Self.fixtures.appendingPathComponent("Migrations/MigrationsTests/Moody 5.moody")
        let target = folder.appendingPathComponent("Moody 5.moody")
        try FileManager.default.copyItem(at: source, to: target)
        try FileManager.default.copyItem(at: URL(fileURLWithPath: source.path + "-wal"), to: URL(fileURLWithPath: target.path + "-wal"))
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
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
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
    func demo() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("Moody.sqlite").path
        let output = try runOCD(["demo", "--store", path])
        #expect(output.contains("inverses are maintained"))
        #expect(output.contains("first is a fault: true"))
        #expect(output.contains("fired the fault: isFault = false"))
        #expect(output.contains("is the registered one: true"))
        #expect(output.contains("deleted and saved: 6 moods remain"))
        #expect(output.contains("error 1610"))
        #expect(output.contains("after rollback: 6 moods"))
        let info = try runOCD(["store", "info", path, "--json"])
        #expect(info.contains("\"Mood\""))
    }
}
