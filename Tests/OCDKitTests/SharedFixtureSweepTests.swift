import Foundation
import GRDB
import Testing
@testable import OCDKit
@testable import OpenCoreData

/// Every Core Data store in `../shared/fixtures/coredata`, in one sweep: each opens
/// without its model (its cache, or a model reconstructed from its schema) and
/// with the model version that wrote it when a fixture bundle has one, with the
/// object counts plain SQL counts; `ocd store dump` writes every object; a store
/// created here from that model has the store's tables, columns and numbering.
///
/// Stores are found by their SQLite header, so a fixture added later is swept too.
/// Several of them may only be used from `../shared` (their SOURCES row says so),
/// so this suite reads them there and is skipped when the folder is absent (a
/// fresh clone without the project's shared folder).
@Suite("Every shared fixture store, in one sweep", .enabled(if: SharedFixtures.available, "../shared/fixtures/coredata is absent"))
struct SharedFixtureSweepTests {
    @Test("opens without a model and with its own, counts equal plain SQL, dumps whole", arguments: SharedFixtures.stores)
    func sweep(store: String) throws {
        let copy = try SharedFixtures.copy(store)
        let expected = try SharedFixtures.plainCounts(copy)
        #expect(!expected.isEmpty, "\(store): no entity rows found by plain SQL")

        // Without a model: the cache, or the reconstruction.
        let info = try SharedFixtures.info(copy, modelArguments: [])
        for (entity, rows) in expected where rows > 0 {
            #expect(info[entity] == rows, "\(store) without a model: \(entity)")
        }
        for (entity, rows) in info where expected[entity] == nil {
            #expect(rows == 0, "\(store) without a model: \(entity) is not in Z_PRIMARYKEY")
        }

        // With the model version that wrote it, when a fixture bundle has it.
        if let model = try SharedFixtures.writingModel(for: store) {
            let withModel = try SharedFixtures.info(copy, modelArguments: ["--model", model.path])
            for (entity, rows) in withModel {
                #expect(rows == expected[entity] ?? 0, "\(store) with \(model.lastPathComponent): \(entity)")
            }
        }

        // The dump writes every object.
        let dump = copy.deletingLastPathComponent().appendingPathComponent("dump.jsonl")
        _ = try? runOCD(["store", "dump", copy.path, "--output", dump.path])
        let lines = try String(contentsOf: dump, encoding: .utf8).split(separator: "\n")
        #expect(lines.count - 1 == expected.values.reduce(0, +), "\(store): dumped objects")
    }

    @Test("The model reconstructed from each store's schema reads every row; the extracted model keeps the version hashes",
          arguments: SharedFixtures.stores)
    func reconstructionAndExtraction(store: String) throws {
        let copy = try SharedFixtures.copy(store)
        let expected = try SharedFixtures.plainCounts(copy)
        let reconstructed = try SQLiteStore.reconstructedModel(at: copy)
        #expect(reconstructed.isReconstructed)
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: reconstructed)
        let opened = try coordinator.addPersistentStore(type: .sqlite, at: copy, options: [:])
        #expect(opened.isReadOnly, "\(store): a reconstructed model opens read-only")
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        for entity in reconstructed.entities {
            let request = FetchRequest<ManagedObject>(entity: entity)
            request.includesSubentities = false
            #expect(try context.count(for: request) == expected[entity.name] ?? 0, "\(store): \(entity.name)")
            // Every object's values and relationships read.
            request.fetchLimit = 20
            for object in try context.fetch(request) {
                for property in entity.allProperties { _ = object.value(forKey: property.name) }
            }
        }

        // `ocd model extract` writes the store's model as an Xcode model with its hashes.
        let folder = copy.deletingLastPathComponent().appendingPathComponent("Extracted.xcdatamodel")
        try runOCD(["model", "extract", copy.path, "-o", folder.path])
        let extracted = try XcodeDataModel(contentsOf: folder).currentModel()
        let (source, _) = try SQLiteStore.readingModel(at: copy)
        #expect(extracted.entityVersionHashesByName == source.entityVersionHashesByName, "\(store): extracted hashes")
    }

    @Test("Every store of a multi-version bundle migrates to the bundle's newest version: counts kept, schema of a new store",
          .enabled(if: ProcessInfo.processInfo.environment["OCD_UNDER_SANITIZER"] == nil,
                   "hundreds of migration steps over Wire's stores: run by the plain suite; the migration tests of the repository's fixtures run under the sanitizers"),
          arguments: SharedFixtures.stores)
    func migratesToNewest(store: String) throws {
        guard let bundle = try SharedFixtures.bundle(for: store) else { return }
        let copy = try SharedFixtures.copy(store)
        let beforeCopy = try SharedFixtures.copy(store)
        let before = try SharedFixtures.plainCounts(copy)
        let repository = SharedFixtures.root.appendingPathComponent(String(store.split(separator: "/")[0]))
        let output: String
        do {
            output = try runOCD(["store", "migrate", copy.path, "--model", bundle.path, "--mappings", repository.path])
        } catch let failure as CommandFailure where failure.description.contains("needs the migration policy class") {
            // The app's mapping models name its own policy classes (app code, not in
            // the fixture): the command refuses them and leaves the store alone, as
            // checked here; the versions still migrate with inferred mappings.
            #expect(try SharedFixtures.plainCounts(copy) == before)
            output = try runOCD(["store", "migrate", copy.path, "--model", bundle.path])
        }
        #expect(output.contains("Migrated") || output.contains("nothing to migrate"), "\(store): \(output)")

        let current = try XcodeDataModel(contentsOf: bundle).currentModel()
        #expect(current.incompatibilities(withName: nil, storeMetadata: try SQLiteStoreMetadata.read(at: copy)).isEmpty,
                "\(store): the migrated store's hashes are the newest version's")
        // Every object of an entity every version has is still there (inferred steps
        // keep every object; an entity a version dropped comes back empty).
        let after = try SharedFixtures.plainCounts(copy)
        let versions = try XcodeDataModel(contentsOf: bundle)
        let everywhere = try versions.versionNames.reduce(Set(current.entitiesByName.keys)) { kept, name in
            kept.intersection(try versions.model(forVersion: name).entitiesByName.keys)
        }
        if !output.contains("(mapping model") {
            for (entity, rows) in before where everywhere.contains(entity) {
                #expect(after[entity] == rows, "\(store): \(entity) after migration")
            }
        }
        // Values kept: every attribute every version has, with one type throughout,
        // holds the same value in each object's row (plain SQL on both files, each
        // attribute's column read from each store's own schema).
        if !output.contains("(mapping model") {
            let sourceModel = try SharedFixtures.writingModel(for: store).map { try loadModel($0.path) }
                ?? SQLiteStore.readingModel(at: beforeCopy).model
            let kept = try SharedFixtures.attributeValues(before: beforeCopy, model: sourceModel, after: copy,
                                                          model: current, versions: versions)
            #expect(kept.differing.isEmpty, "\(store): values changed by the migration in \(kept.differing.prefix(5))")
            // Every such attribute was found in both stores (a bundle that renames
            // its attributes between versions, as Example's, has none).
            #expect(kept.compared == kept.candidates, "\(store): \(kept.candidates - kept.compared) attributes not found")
        }
        // It opens with the newest version, and has a new store's tables and columns.
        _ = try SharedFixtures.info(copy, modelArguments: ["--model", bundle.path])
        let created = copy.deletingLastPathComponent().appendingPathComponent("created.sqlite")
        try SQLiteStoreFile.createStore(at: created, model: current)
        let (migratedLayout, createdLayout) = (try SharedFixtures.layout(copy), try SharedFixtures.layout(created))
        #expect(Set(migratedLayout.tables.keys) == Set(createdLayout.tables.keys), "\(store): tables after migration")
        for (table, columns) in createdLayout.tables {
            #expect(migratedLayout.tables[table] == columns, "\(store): columns of \(table) after migration")
        }
    }

    @Test("A store created from the model that wrote a fixture store has its tables, columns and numbering",
          arguments: SharedFixtures.stores)
    func createdSchema(store: String) throws {
        guard let modelURL = try SharedFixtures.writingModel(for: store) else { return }
        let model = try loadModel(modelURL.path)
        let real = try SharedFixtures.copy(store)
        let created = real.deletingLastPathComponent().appendingPathComponent("created.sqlite")
        try SQLiteStoreFile.createStore(at: created, model: model)
        let realLayout = try SharedFixtures.layout(real)
        let createdLayout = try SharedFixtures.layout(created)
        #expect(createdLayout.numbers == realLayout.numbers, "\(store): Z_PRIMARYKEY")
        #expect(createdLayout.tables == realLayout.tables, "\(store): tables and columns")
    }
}

/// The shared fixtures: where they are, which stores they hold, and plain-SQL facts about them.
enum SharedFixtures {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/coredata")

    static var available: Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent("SOURCES.md").path) }

    /// Every SQLite file with a `Z_PRIMARYKEY` table, by path relative to ``root``.
    static let stores: [String] = {
        guard available, let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        var found: [String] = []
        for case let url as URL in walker {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                  !url.lastPathComponent.hasSuffix("-wal"), !url.lastPathComponent.hasSuffix("-shm"),
                  let handle = try? FileHandle(forReadingFrom: url) else { continue }
            let magic = try? handle.read(upToCount: 16)
            try? handle.close()
            guard magic == Data("SQLite format 3\0".utf8) else { continue }
            found.append(String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1)))
        }
        return found.sorted()
    }()

    /// A copy of a store and its -wal/-shm in a scratch folder (its external data
    /// folder is not copied: a store without it is dumped whole too).
    static func copy(_ relativePath: String) throws -> URL {
        try RealStoreCommandTests.copy(relativePath, from: root)
    }

    /// Rows per entity name, counted with plain SQL (`Z_ENT` of each entity's table).
    static func plainCounts(_ url: URL) throws -> [String: Int] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in
            var rows: [(Int, String, Int)] = []
            for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000") {
                rows.append((row[0], row[1], row[2] ?? 0))
            }
            func root(_ number: Int) -> String? {
                var current = number
                var steps = 0
                while let up = rows.first(where: { $0.0 == current })?.2, up != 0, steps < 100 { current = up; steps += 1 }
                return rows.first { $0.0 == current }?.1
            }
            var counts: [String: Int] = [:]
            for (number, name, _) in rows {
                guard let rootName = root(number), try db.tableExists("Z" + rootName.uppercased()) else { continue }
                counts[name] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \"Z\(rootName.uppercased())\" WHERE Z_ENT = ?",
                                                arguments: [number]) ?? 0
            }
            return counts
        }
    }

    /// `ocd store info --json`'s rows per entity.
    static func info(_ url: URL, modelArguments: [String]) throws -> [String: Int] {
        let output = try runOCD(["store", "info", url.path, "--json"] + modelArguments)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let entities = try #require(json["entities"] as? [[String: Any]])
        var counts: [String: Int] = [:]
        for entity in entities {
            if let name = entity["name"] as? String, let rows = entity["rows"] as? Int { counts[name] = rows }
        }
        return counts
    }

    /// The `.xcdatamodel` version, among the fixture bundles of the store's
    /// repository folder, whose version hashes match the store's metadata.
    static func writingModel(for store: String) throws -> URL? {
        let folder = root.appendingPathComponent(String(store.split(separator: "/")[0]))
        // Read from a copy: opening a WAL store, even read-only, may write its -shm.
        let metadata = try SQLiteStoreMetadata.read(at: copy(store))
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return nil }
        for case let url as URL in walker where url.pathExtension == "xcdatamodel" {
            guard let model = try? XcodeDataModel(contentsOf: url).currentModel() else { continue }
            if model.incompatibilities(withName: nil, storeMetadata: metadata).isEmpty { return url }
        }
        return nil
    }

    /// The multi-version `.xcdatamodeld` bundle one of whose versions wrote the
    /// store (matched by version hashes, or the bundle beside a store whose writing
    /// version it lacks but whose cache it can migrate from), nil when none.
    static func bundle(for store: String) throws -> URL? {
        if let version = try writingModel(for: store) {
            let bundle = version.deletingLastPathComponent()
            guard bundle.pathExtension == "xcdatamodeld",
                  (try? XcodeDataModel(contentsOf: bundle))?.versionNames.count ?? 0 > 1 else { return nil }
            return bundle
        }
        // Wire's store1-24: written by a version no longer in the bundle.
        return store.hasPrefix("wireapp+")
            ? root.appendingPathComponent("wireapp+wire-ios-data-model/Resources/zmessaging.xcdatamodeld") : nil
    }

    /// Compares two stores' values attribute by attribute: for every entity and
    /// attribute that every version of `versions` has with one type, the rows of
    /// that entity hold the same value before and after (columns from each store's
    /// own schema). Returns the number of such attributes, of those compared, and
    /// those whose values differ.
    static func attributeValues(before: URL, model sourceModel: ManagedObjectModel, after: URL, model: ManagedObjectModel,
                                versions: XcodeDataModel) throws -> (candidates: Int, compared: Int, differing: [String]) {
        let all = try versions.versionNames.map { try versions.model(forVersion: $0) }
        func schema(_ url: URL, _ model: ManagedObjectModel) throws -> SQLiteSchema {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            return try queue.read { db in try SQLiteSchema(reading: db, model: model) }
        }
        let (old, new) = (try schema(before, sourceModel), try schema(after, model))
        let queue = try DatabaseQueue(path: after.path)
        defer { try? queue.close() }
        try queue.inDatabase { db in try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [before.path]) }
        var candidates = 0, compared = 0
        var differing: [String] = []
        let q = SQLiteIdentifier.quoted
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            guard let oldMapping = old.mapping(forEntityNamed: entity.name), let newMapping = new.mapping(forEntityNamed: entity.name) else { continue }
            for attribute in entity.properties.compactMap({ $0 as? AttributeDescription })
            where !attribute.isTransient && !(attribute is DerivedAttributeDescription) && !(attribute is CompositeAttributeDescription) {
                let sameEverywhere = all.allSatisfy { version in
                    version.entitiesByName[entity.name]?.attributesByName[attribute.name]?.attributeType == attribute.attributeType
                }
                guard sameEverywhere, sourceModel.entitiesByName[entity.name]?.attributesByName[attribute.name] != nil else { continue }
                candidates += 1
                guard let oldColumn = old.column(forProperty: attribute.name, ofEntityNamed: entity.name),
                      let newColumn = new.column(forProperty: attribute.name, ofEntityNamed: entity.name) else { continue }
                compared += 1
                let changed = try queue.inDatabase { db in
                    try Int.fetchOne(db, sql: """
                        SELECT COUNT(*) FROM old.\(q(oldMapping.tableName)) o JOIN main.\(q(newMapping.tableName)) n ON n.Z_PK = o.Z_PK
                        WHERE o.Z_ENT = ? AND n.Z_ENT = ? AND o.\(q(oldColumn)) IS NOT n.\(q(newColumn))
                        """, arguments: [oldMapping.entityNumber, newMapping.entityNumber]) ?? 0
                }
                if changed > 0 { differing.append("\(entity.name).\(attribute.name)") }
            }
        }
        return (candidates, compared, differing)
    }

    /// A store's entity numbering and its Core Data tables with their columns
    /// (history tables and SQLite's own left out). Columns as a set: a store
    /// migrated in place appends the columns a later version added.
    static func layout(_ url: URL) throws -> (numbers: [String: Int], tables: [String: Set<String>]) {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in
            var numbers: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT < 16000") {
                numbers[row[1]] = row[0]
            }
            var tables: [String: Set<String>] = [:]
            for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%'")
            where name != "Z_MODELCACHE" {
                tables[name] = Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [name]))
            }
            return (numbers, tables)
        }
    }
}
