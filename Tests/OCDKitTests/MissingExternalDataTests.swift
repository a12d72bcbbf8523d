import Foundation
import Testing
@testable import OCDKit
@testable import OpenCoreData

/// A store copied without its external data folder: every object still reads and
/// dumps; the missing values are marked, named on standard error, and `ocd` fails
/// once everything else is written.
@Suite("A store whose external data files are missing")
struct MissingExternalDataTests {
    @Test("Objects read with the missing value as nil; the dump writes every object and marks what is missing")
    func dumpMarksMissingFiles() throws {
        let folder = try TestScratch.folder("external")
        let url = folder.appendingPathComponent("Photos.sqlite")
        let model = try ManagedObjectModel {
            Entity("Photo") {
                Attribute("title", .string)
                Attribute("image", .binaryData, allowsExternalStorage: true)
            }
        }
        let big = Data(repeating: 7, count: ExternalBinaryStorage.defaultThreshold + 1)
        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = ManagedObjectContext(concurrencyType: .mainQueue)
            context.persistentStoreCoordinator = coordinator
            for (title, image) in [("kept", big), ("lost", big + Data([1])), ("small", Data([1, 2, 3]))] {
                let photo = ManagedObject(entity: model.entitiesByName["Photo"]!, insertInto: context)
                photo.setValue(title, forKey: "title")
                photo.setValue(image, forKey: "image")
            }
            try context.save()
        }
        // Lose one of the two external files.
        let external = folder.appendingPathComponent(".Photos_SUPPORT/_EXTERNAL_DATA")
        let files = try FileManager.default.contentsOfDirectory(atPath: external.path).sorted()
        #expect(files.count == 2)
        let lostFile = try #require(files.first { (try? Data(contentsOf: external.appendingPathComponent($0)))?.count == big.count + 1 })
        try FileManager.default.removeItem(at: external.appendingPathComponent(lostFile))

        // Reading: the value is nil, the object and its other values are there.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.readOnly: "1"])
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let photos = try context.fetch(FetchRequest<ManagedObject>(entityName: "Photo"))
        let byTitle = Dictionary(uniqueKeysWithValues: photos.map { ($0.value(forKey: "title") as? String ?? "", $0) })
        #expect(byTitle["lost"]?.value(forKey: "image") == nil)
        #expect(byTitle["kept"]?.value(forKey: "image") as? Data == big)
        #expect(byTitle["small"]?.value(forKey: "image") as? Data == Data([1, 2, 3]))

        // Dumping: every object, the missing one marked, then a failure.
        let dump = folder.appendingPathComponent("dump.jsonl")
        let sink = CommandOutput.Sink()
        #expect(throws: CommandFailure.self) {
            try CommandOutput.$sink.withValue(sink) {
                var command = try OCD.parseAsRoot(["store", "dump", url.path, "-o", dump.path])
                try command.run()
            }
        }
        let lines = try String(contentsOf: dump, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        let lost = try #require(lines.first { $0.contains("\"lost\"") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lost.utf8)) as? [String: Any])
        #expect((object["missing"] as? [String: String])?["image"] == "external data file \(lostFile)")
        #expect((object["values"] as? [String: Any])?["image"] is NSNull)
        #expect(!lines.contains { $0.contains("\"kept\"") && $0.contains("missing") })
        #expect(sink.warnings.count == 1)
        #expect(sink.warnings.first?.contains(lostFile) == true)
    }
}

/// `ocd model show` and `ocd model extract` on a store file.
@Suite("ocd model on a store")
struct ModelOfStoreTests {
    @Test("model show reads a store's cached model, model extract writes it as an Xcode model with its hashes")
    func showAndExtract() throws {
        let copy = try RealStoreCommandTests.copy("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        let shown = try runOCD(["model", "show", copy.path, "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: Any])
        let entities = try #require(json["entities"] as? [[String: Any]])
        #expect(Set(entities.compactMap { $0["name"] as? String }) == ["GeographicRegion", "Continent", "Country", "Mood"])

        let target = copy.deletingLastPathComponent().appendingPathComponent("Moody2.xcdatamodel")
        let output = try runOCD(["model", "extract", copy.path, "-o", target.path])
        #expect(output.contains("4 entities"))
        let extracted = try XcodeDataModel(contentsOf: target).currentModel()
        #expect(extracted.entityVersionHashesByName == (try SQLiteStore.storedModel(at: copy)).entityVersionHashesByName)
        // The extracted model opens the store it came from.
        let info = try runOCD(["store", "info", copy.path, "--model", target.path])
        #expect(info.contains("Mood: 4 objects") || info.contains("Mood:"))
    }

    @Test("A store without a model cache (framework 419) is read through a reconstructed model, with a warning")
    func reconstructedInfo() throws {
        let copy = try RealStoreCommandTests.copy("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite")
        let sink = CommandOutput.Sink()
        try CommandOutput.$sink.withValue(sink) {
            var command = try OCD.parseAsRoot(["store", "info", copy.path])
            try command.run()
        }
        #expect(sink.warnings.contains { $0.contains("reconstructed") })
        #expect(sink.text.contains("Book:"))
        // And dumps whole.
        let dump = copy.deletingLastPathComponent().appendingPathComponent("d.jsonl")
        try runOCD(["store", "dump", copy.path, "-o", dump.path])
        let lines = try String(contentsOf: dump, encoding: .utf8).split(separator: "\n")
        let header = try DumpHeader(DumpJSON.parse(String(try #require(lines.first))))
        #expect(lines.count == header.total + 1)
    }
}
