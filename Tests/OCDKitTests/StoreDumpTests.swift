import Foundation
import OpenCoreDataPredicates
import Testing
@testable import OCDKit
@testable import OpenCoreData

/// `ocd store dump` and `ocd store load`: every fixture store round-trips (dump,
/// load into a new store, dump again: the same bytes), every value type survives,
/// and a bad line is reported by number with nothing created.
@Suite("ocd store dump and load")
struct StoreDumpTests {
    /// Dumps `store`, loads the dump into a new store, dumps that: both dumps must
    /// be the same, in both formats. Returns the first dump.
    @discardableResult
    static func roundTrip(_ store: URL, model: String?) throws -> String {
        let folder = try TestScratch.folder("dump")
        let modelArguments = model.map { ["--model", $0] } ?? []
        let first = folder.appendingPathComponent("first.jsonl").path
        try runOCD(["store", "dump", store.path, "-o", first] + modelArguments)
        let dumped = try String(contentsOfFile: first, encoding: .utf8)

        // JSON Lines.
        let loaded = folder.appendingPathComponent("loaded.sqlite").path
        let report = try runOCD(["store", "load", first, "--to", loaded, "--model", model ?? store.path, "--batch-size", "7"])
        #expect(report.hasPrefix("Loaded "))
        let second = folder.appendingPathComponent("second.jsonl").path
        try runOCD(["store", "dump", loaded, "-o", second] + modelArguments)
        #expect(try String(contentsOfFile: second, encoding: .utf8) == dumped, "\(store.lastPathComponent): JSON Lines round trip")

        // CSV.
        let csv = folder.appendingPathComponent("csv").path
        try runOCD(["store", "dump", store.path, "--format", "csv", "-o", csv] + modelArguments)
        let fromCSV = folder.appendingPathComponent("fromcsv.sqlite").path
        try runOCD(["store", "load", csv, "--to", fromCSV, "--model", model ?? store.path])
        let third = folder.appendingPathComponent("third.jsonl").path
        try runOCD(["store", "dump", fromCSV, "-o", third] + modelArguments)
        #expect(try String(contentsOfFile: third, encoding: .utf8) == dumped, "\(store.lastPathComponent): CSV round trip")
        return dumped
    }

    @Test("Every fixture store round-trips through dump and load, as JSON Lines and as CSV",
          arguments: RealStoreCommandTests.stores.map(\.store))
    func fixtureRoundTrip(store: String) throws {
        let entry = try #require(RealStoreCommandTests.stores.first { $0.store == store })
        let copy = try RealStoreCommandTests.copy(store)
        // Model1.sqlite (framework 419) has no model cache: it is read with its model.
        let model = store.hasSuffix("Model1.sqlite")
            ? entry.model.map { RealStoreCommandTests.fixtures.appendingPathComponent($0).path } : nil
        let dumped = try Self.roundTrip(copy, model: model)
        let lines = dumped.split(separator: "\n")
        let header = try DumpHeader(DumpJSON.parse(String(try #require(lines.first))))
        #expect(lines.count == header.total + 1)
        #expect(header.total > 0 || store.contains("TestModel"))
    }

    /// Every attribute type, odd values, ordered and many-to-many relationships.
    static func makeStore(at url: URL) throws {
        let model = try ManagedObjectModel {
            Entity("Item", className: "ManagedObject") {
                Attribute("i16", .integer16)
                Attribute("i32", .integer32)
                Attribute("i64", .integer64)
                Attribute("decimal", .decimal)
                Attribute("double", .double)
                Attribute("float", .float)
                Attribute("string", .string)
                Attribute("flag", .boolean)
                Attribute("date", .date)
                Attribute("data", .binaryData)
                Attribute("uuid", .uuid)
                Attribute("uri", .uri)
                Attribute("tree", .transformable)
                Relationship("owner", to: "Owner", inverse: "items")
                Relationship("tags", to: "Tag", inverse: "items", toMany: true)
            }
            Entity("Owner", className: "ManagedObject") {
                Attribute("name", .string, optional: false)
                Relationship("items", to: "Item", inverse: "owner", toMany: true, ordered: true)
                Relationship("best", to: "Owner", inverse: "bestOf")
                Relationship("bestOf", to: "Owner", inverse: "best", toMany: true)
            }
            Entity("Tag", className: "ManagedObject") {
                Attribute("name", .string)
                Relationship("items", to: "Item", inverse: "tags", toMany: true)
            }
        }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .sqlite, at: url)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            let entities = model.entitiesByName
            let tags = (0..<3).map { n -> ManagedObject in
                let tag = ManagedObject(entity: entities["Tag"]!, insertInto: context)
                tag.setValue("tag \(n)", forKey: "name")
                return tag
            }
            let owners = (0..<2).map { n -> ManagedObject in
                let owner = ManagedObject(entity: entities["Owner"]!, insertInto: context)
                owner.setValue(n == 0 ? "Zoë \"the\" owner,\nsecond line" : "", forKey: "name")
                return owner
            }
            owners[0].setValue(owners[1], forKey: "best")
            owners[1].setValue(owners[1], forKey: "best")
            var items: [ManagedObject] = []
            for n in 0..<10 {
                let item = ManagedObject(entity: entities["Item"]!, insertInto: context)
                if n == 9 { items.append(item); continue }   // every value nil
                item.setValue(Int16.min + Int16(n), forKey: "i16")
                item.setValue(Int32.max - Int32(n), forKey: "i32")
                item.setValue(Int64.min + Int64(n), forKey: "i64")
                item.setValue(Decimal(string: "12345678901234567890.123456789")! + Decimal(n), forKey: "decimal")
                // (No NaN: SQLite stores it as NULL.)
                item.setValue([2.5, .infinity, -.infinity, 0.1, -0.5, 1e-300, 5e300, 1.0, 3][n], forKey: "double")
                item.setValue(Float(n) / 3, forKey: "float")
                item.setValue(["", " padded ", "a,b", "\"q\"", "tab\tnew\nline", "🙂 ünïcödé", "\u{1}", "x", "  "][n], forKey: "string")
                item.setValue(n % 2 == 0, forKey: "flag")
                item.setValue(Date(timeIntervalSinceReferenceDate: n == 0 ? 123.456 : 700_000_000.123456789 * Double(n)), forKey: "date")
                item.setValue(Data((0..<UInt8(n * 5)).map { $0 &* 37 }), forKey: "data")
                item.setValue(UUID(), forKey: "uuid")
                item.setValue(URL(string: "https://example.com/\(n)?q=a,b")!, forKey: "uri")
                item.setValue(AttributeValue.dictionary([
                    "when": .date(Date(timeIntervalSinceReferenceDate: 0.000_001 * Double(n))),
                    "bytes": .data(Data([1, 2, UInt8(n)])), "one": .double(1.0), "n": .int(Int64(n)),
                    "list": .array([.null, .string("s"), .decimal(Decimal(n)), .uuid(UUID()), .uri(URL(string: "file:///x")!)]),
                ]), forKey: "tree")
                item.setValue(owners[n % 2], forKey: "owner")
                item.setValue(Set(tags.prefix(n % 4)), forKey: "tags")
                items.append(item)
            }
            // An order that is not the insertion order.
            owners[0].setValue(Array(items.filter { ($0.value(forKey: "owner") as? ManagedObject) === owners[0] }.reversed()),
                               forKey: "items")
            try context.save()
        }
    }

    @Test("Every attribute type, odd strings, ordered, reflexive and many-to-many relationships round-trip exactly")
    func valuesRoundTrip() throws {
        let folder = try TestScratch.folder("dump")
        let store = folder.appendingPathComponent("Values.sqlite")
        try Self.makeStore(at: store)
        let dumped = try Self.roundTrip(store, model: nil)
        #expect(dumped.contains("\"double\":\"-inf\""))
        #expect(dumped.contains("\"date\":\"2001-01-01T00:02:03.456Z\""))    // exact at milliseconds: ISO 8601

        // The loaded store holds the same values, read through OpenCoreData.
        let loaded = folder.appendingPathComponent("copy.sqlite")
        try runOCD(["store", "dump", store.path, "-o", folder.appendingPathComponent("d.jsonl").path])
        try runOCD(["store", "load", folder.appendingPathComponent("d.jsonl").path, "--to", loaded.path, "--model", store.path])
        let (original, _) = try openStore(store.path, modelPath: nil)
        let (copy, _) = try openStore(loaded.path, modelPath: nil)
        for entity in ["Item", "Owner", "Tag"] {
            let request = FetchRequest<ManagedObject>(entityName: entity)
            let a = try original.fetch(request).sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
            let b = try copy.fetch(request).sorted { $0.objectID.primaryKey! < $1.objectID.primaryKey! }
            #expect(a.count == b.count)
            for (x, y) in zip(a, b) {
                #expect(x.objectID.uriRepresentation() == y.objectID.uriRepresentation())
                for property in x.entity.allProperties where property is AttributeDescription {
                    let left = x.attributeValue(forKey: property.name), right = y.attributeValue(forKey: property.name)
                    if case .double(let l) = left, case .double(let r) = right, l.isNaN { #expect(r.isNaN); continue }
                    #expect(left == right, "\(entity).\(property.name)")
                }
                for property in x.entity.allProperties where property is RelationshipDescription {
                    let left = x.objects(forRelationship: property.name).map { $0.objectID.uriRepresentation() }
                    let right = y.objects(forRelationship: property.name).map { $0.objectID.uriRepresentation() }
                    if (property as? RelationshipDescription)?.isOrdered == true {
                        #expect(left == right, "\(entity).\(property.name) in order")
                    } else {
                        #expect(Set(left) == Set(right), "\(entity).\(property.name)")
                    }
                }
            }
        }
        // New objects in the copy take keys above the loaded ones.
        let writable = try PersistentStoreCoordinator.validated(managedObjectModel: SQLiteStore.storedModel(at: loaded))
        _ = try writable.addPersistentStore(type: .sqlite, at: loaded)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = writable
        try context.performAndWait {
            let owner = ManagedObject(entity: writable.managedObjectModel.entitiesByName["Owner"]!, insertInto: context)
            owner.setValue("new", forKey: "name")
            try context.obtainPermanentIDs(for: [owner])
            #expect(owner.objectID.primaryKey! > 2)
        }
    }

    @Test("A bad line is reported with its number, and nothing is created")
    func badLines() throws {
        let folder = try TestScratch.folder("dump")
        let store = folder.appendingPathComponent("Values.sqlite")
        try Self.makeStore(at: store)
        let dump = folder.appendingPathComponent("d.jsonl")
        try runOCD(["store", "dump", store.path, "-o", dump.path])
        var lines = try String(contentsOf: dump, encoding: .utf8).split(separator: "\n").map(String.init)
        let target = folder.appendingPathComponent("never.sqlite")

        func expectFailure(_ edited: [String], mentions expected: [String]) throws {
            try (edited.joined(separator: "\n") + "\n").write(to: dump, atomically: true, encoding: .utf8)
            do {
                try runOCD(["store", "load", dump.path, "--to", target.path, "--model", store.path])
                Issue.record("the load succeeded")
            } catch {
                let message = "\(error)"
                for text in expected { #expect(message.contains(text), "\(message)") }
            }
            #expect(!FileManager.default.fileExists(atPath: target.path))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("loading") }
            #expect(leftovers.isEmpty)
        }
        let itemLine = try #require(lines.firstIndex { $0.contains("\"entity\":\"Item\"") && $0.contains("\"i16\":-32768") })
        var edited = lines
        edited[itemLine] = lines[itemLine].replacingOccurrences(of: "\"i16\":-32768", with: "\"i16\":\"many\"")
        edited[itemLine + 1] = lines[itemLine + 1].replacingOccurrences(of: "\"flag\":", with: "\"colour\":1,\"flag\":")
        try expectFailure(edited, mentions: ["line \(itemLine + 1):", "Item.i16", "line \(itemLine + 2):", "'colour'", "2 bad line(s)"])
        edited = lines
        edited[2] = "{\"entity\": \"Item\", \"uri\": "
        try expectFailure(edited, mentions: ["line 3:", "invalid JSON"])
        edited = lines
        edited[itemLine] = lines[itemLine].replacingOccurrences(of: "\"i32\":2147483647", with: "\"i32\":2147483648")
        try expectFailure(edited, mentions: ["line \(itemLine + 1):", "out of range"])
        // A relationship to an object the dump does not have.
        edited = lines
        edited.removeAll { $0.contains("/Tag/p1\",\"values\"") }
        try expectFailure(edited, mentions: ["/Tag/p1", "no object"])
        // A relationship to an object of another entity (saves do not validate).
        edited = lines
        let tagURI = try #require(lines.first { $0.contains("\"entity\":\"Tag\"") }?.split(separator: "\"").dropFirst(7).first)
        #expect(tagURI.hasSuffix("/Tag/p1"))
        let ownerLine = try #require(lines.firstIndex { $0.contains("\"entity\":\"Owner\"") && $0.contains("\"best\":\"x-coredata") })
        edited[ownerLine] = lines[ownerLine].replacingOccurrences(of: #""best":"x-coredata://[^"]*""#, with: "\"best\":\"\(tagURI)\"", options: .regularExpression)
        try expectFailure(edited, mentions: ["line \(ownerLine + 1):", "Owner.best", "is not a Owner"])
        // A dump whose header is not one.
        lines[0] = "{}"
        try expectFailure(lines, mentions: ["line 1", "not a store dump"])
    }

    @Test("The dump's JSON reader reads what it writes, and refuses malformed text")
    func jsonCodec() throws {
        let value = DumpJSON.object([
            "s": .string("quote \" backslash \\ newline \n tab \t control \u{1} emoji 🙂 separator \u{2028}"),
            "n": .int(.min), "d": .double(0.1), "big": .double(1e300), "a": .array([.null, .bool(true), .object([:])]),
        ])
        #expect(try DumpJSON.parse(value.text) == value)
        #expect(try DumpJSON.parse(#""\ud83d\ude42""#) == .string("🙂"))
        #expect(try DumpJSON.parse("1.0") == .double(1))
        #expect(try DumpJSON.parse("12") == .int(12))
        // Values JSON has no literal for, by attribute type and in trees.
        #expect(DumpValues.json(.double(.nan), type: .double) == .string("nan"))
        #expect(try DumpValues.attributeValue(.string("-inf"), type: .float) == .double(-.infinity))
        let tree = AttributeValue.array([.double(1), .double(.infinity), .date(Date(timeIntervalSinceReferenceDate: 0.1)), .decimal(Decimal(string: "1.50")!)])
        #expect(try DumpValues.attributeValue(DumpJSON.parse(DumpValues.json(tree, type: .transformable).text), type: .transformable) == tree)
        for seconds in [0, 123.456, -0.001, -1.5, 1e9 + 0.25, 1.0 / 3, 2e15] {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            #expect(try DumpValues.date(DumpValues.date(date)) == date, "\(seconds)")
        }
        for bad in ["", "{", "[1,]", "\"abc", "tru", "1 2", "{\"a\" 1}", "\"\\ud800x\"", String(repeating: "[", count: 600)] {
            #expect(throws: DumpJSON.SyntaxError.self, "\(bad.prefix(20))") { try DumpJSON.parse(bad) }
        }
        #expect(CSV.fields("a,,\"\",\"x,\"\"y\"\"\"") == ["a", nil, "", "x,\"y\""])
        // URIs written without URL, as uriRepresentation() writes them.
        let entity = EntityDescription(name: "Mood_2")
        let id = ManagedObjectID(entity: entity, storeIdentifier: "374C5961-3E41-43E5-915C-383EA914074C", primaryKey: 42)
        #expect(StoreDumper.uri(id) == id.uriRepresentation().absoluteString)
        let odd = ManagedObjectID(entity: EntityDescription(name: "Mööd"), storeIdentifier: "S", primaryKey: 1)
        #expect(StoreDumper.uri(odd) == odd.uriRepresentation().absoluteString)
        #expect(CSV.fields("\"open") == nil)
    }
}
