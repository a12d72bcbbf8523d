import ArgumentParser
import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates

extension StoreCommand {
    struct Dump: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write every object of a store as JSON Lines or CSV files.",
            discussion: """
                JSON Lines (the default): a header line (the store's UUID, the number of objects \
                of each entity), then one line per object: {"entity", "uri", "values"}, with \
                relationships as object URIs. CSV: a folder with store.json (the header) and one \
                <Entity>.csv per entity. Objects are read in batches: memory stays flat \
                whatever the size of the store.
                """
        )
        @Argument(help: "The store file.") var path: String
        @Option(help: "The model; without it, the model cached in the store.") var model: String?
        @Option(help: "jsonl or csv.") var format: String = DumpFormat.jsonl.rawValue
        @Option(name: .shortAndLong, help: "The file (jsonl; default: standard output) or folder (csv) to write.") var output: String?
        @Option(help: "Objects read per batch.") var batchSize: Int = 1000

        func run() throws {
            guard let format = DumpFormat(rawValue: format) else { throw CommandFailure("unknown format '\(format)' (jsonl or csv)") }
            guard batchSize > 0 else { throw CommandFailure("--batch-size must be positive") }
            if format == .csv, output == nil { throw CommandFailure("csv needs --output FOLDER") }
            do {
                try StoreDumper(path: path, modelPath: model, batchSize: batchSize).dump(format: format, output: output)
            } catch let error as CoreDataError {
                throw CommandFailure(error.description)
            } catch let error as DatabaseError {
                throw CommandFailure("reading \(path): \(error.message ?? "\(error)")")
            }
        }
    }

    struct Load: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a store from a model and load a dump into it.",
            discussion: """
                Reads what `ocd store dump` writes (a .jsonl file or a CSV folder). Objects keep \
                their primary keys and the store its UUID, so object URIs are the dump's. Loads in \
                batches, one transaction each, into a new file beside the store, which takes the \
                store's name only when everything loaded: on a bad line (reported with its line \
                number) nothing is created.
                """
        )
        @Argument(help: "The dump: a .jsonl file or a CSV folder.") var input: String
        @Option(name: .long, help: "The store file to create (must not exist).") var to: String
        @Option(help: "The model (.xcdatamodeld, .xcdatamodel, .momd, .mom), or a store whose cached model to use.") var model: String
        @Option(help: "Objects saved per transaction.") var batchSize: Int = 1000

        func run() throws {
            guard batchSize > 0 else { throw CommandFailure("--batch-size must be positive") }
            do {
                let loaded = try StoreLoader(input: input, storePath: to, model: loadModelOrStoredModel(model), batchSize: batchSize).load()
                emit("Loaded \(loaded) object(s) into \(to)")
            } catch let error as CoreDataError {
                throw CommandFailure(error.description)
            } catch let error as DatabaseError {
                throw CommandFailure("loading \(input): \(error.message ?? "\(error)")")
            }
        }
    }
}

/// A model file, or the model cached in a SQLite store file.
func loadModelOrStoredModel(_ path: String) throws -> ManagedObjectModel {
    let url = URL(fileURLWithPath: path)
    if let handle = try? FileHandle(forReadingFrom: url), let magic = try? handle.read(upToCount: 16) {
        try? handle.close()
        if magic == Data("SQLite format 3\0".utf8) { return try readingModel(url) }
    }
    return try loadModel(path)
}

// MARK: - Dumping

/// Writes every object of a store, entity by entity (by name), each entity's
/// objects by primary key. Keys are paged with one indexed query per batch and
/// the context is reset after each batch, so memory does not grow with the store.
struct StoreDumper {
    let path: String
    let modelPath: String?
    let batchSize: Int

    func dump(format: DumpFormat, output: String?) throws {
        let (context, store) = try openSQLiteStore(path, modelPath: modelPath)
        let model = try require_(context.persistentStoreCoordinator?.managedObjectModel, "no model")
        let keys = try DatabaseQueue(path: path, configuration: .readOnlyLook("ocd.dump.keys"))
        defer { try? keys.close() }

        // The entities with rows of their own, and their counts (for the header and
        // the progress bar).
        var entities: [(entity: EntityDescription, mapping: SQLiteSchema.EntityMapping)] = []
        for entity in model.entities.sorted(by: { $0.name < $1.name }) where !entity.isAbstract {
            guard let mapping = store.schema.entities.first(where: { $0.entityName == entity.name }) else { continue }
            entities.append((entity, mapping))
        }
        var counts: [String: Int] = [:]
        try keys.read { db in
            for (entity, mapping) in entities {
                counts[entity.name] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(SQLiteIdentifier.quoted(mapping.tableName)) WHERE Z_ENT = ?",
                                                      arguments: [mapping.entityNumber]) ?? 0
            }
        }
        let header = DumpHeader(storeUUID: store.identifier, counts: counts)
        let progress = DumpProgress(total: header.total, label: "objects")

        var jsonl: DumpOutput?
        if format == .jsonl {
            jsonl = try DumpOutput(path: output)
            try jsonl?.write(json: header.json)
        } else if let output {
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let headerFile = try DumpOutput(path: (output as NSString).appendingPathComponent("store.json"))
            try headerFile.write(line: header.json.text)
            try headerFile.close()
        }

        var missingCount = 0
        for (entity, mapping) in entities {
            let properties = dumpedProperties(of: entity)
            let missing = try missingExternalData(of: entity, mapping: mapping, store: store, keys: keys)
            var csv: DumpOutput?
            if format == .csv, let output {
                csv = try DumpOutput(path: (output as NSString).appendingPathComponent("\(entity.name).csv"))
                try csv?.write(line: CSV.row(["uri"] + properties.map(\.name)))
            }
            let prefetch = properties.compactMap { ($0 as? RelationshipDescription)?.isToMany == true ? $0.name : nil }
            var after: Int64 = 0
            while true {
                let page = try keys.read { db in
                    try Int64.fetchAll(db, sql: "SELECT Z_PK FROM \(SQLiteIdentifier.quoted(mapping.tableName)) WHERE Z_ENT = ? AND Z_PK > ? ORDER BY Z_PK LIMIT ?",
                                       arguments: [mapping.entityNumber, after, batchSize])
                }
                guard let last = page.last else { break }
                after = last
                let ids = page.map { ManagedObjectID(entity: entity, storeIdentifier: store.identifier, primaryKey: $0) }
                let request = FetchRequest<ManagedObject>(entity: entity)
                request.includesSubentities = false
                request.predicate = try CorePredicate(format: "self IN %@", ids)
                request.relationshipKeyPathsForPrefetching = prefetch
                request.returnsObjectsAsFaults = false
                let objects = try context.fetch(request).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
                for object in objects {
                    var record = Self.record(object, properties: properties)
                    if let key = object.objectID.primaryKey, let gone = missing[key] {
                        record.missing = gone
                        for (attribute, what) in gone.sorted(by: { $0.key < $1.key }) {
                            warn("\(record.uri) \(attribute): \(what) is missing; dumped as null")
                        }
                        missingCount += gone.count
                    }
                    if let csv {
                        try csv.write(line: CSV.row([record.uri] + properties.map { Self.cell(record.values[$0.name] ?? .null, for: $0) }))
                    } else {
                        try jsonl?.write(json: record.json)
                    }
                }
                progress.advance(objects.count)
                context.reset()
            }
            try csv?.close()
        }
        try jsonl?.close()
        progress.finish()
        if missingCount > 0 {
            throw CommandFailure("\(missingCount) value\(missingCount == 1 ? " was" : "s were") missing from the store's external data folder (every object was dumped; see the warnings)")
        }
    }

    /// The external data files the rows of `entity` name that are not there, by
    /// primary key and attribute (a store copied without its `_SUPPORT` folder).
    private func missingExternalData(of entity: EntityDescription, mapping: SQLiteSchema.EntityMapping, store: SQLiteStore,
                                     keys: DatabaseQueue) throws -> [Int64: [String: String]] {
        let storage = ExternalBinaryStorage(storeURL: URL(fileURLWithPath: path))
        var missing: [Int64: [String: String]] = [:]
        for case let attribute as AttributeDescription in entity.allProperties where attribute.allowsExternalBinaryDataStorage {
            guard let column = store.schema.column(forProperty: attribute.name, ofEntityNamed: entity.name) else { continue }
            let rows = try keys.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT Z_PK, \(SQLiteIdentifier.quoted(column)) FROM \(SQLiteIdentifier.quoted(mapping.tableName))
                    WHERE Z_ENT = ? AND \(SQLiteIdentifier.quoted(column)) IS NOT NULL
                    """, arguments: [mapping.entityNumber])
            }
            for row in rows {
                guard let key = row[0] as Int64?, let data = row[1] as Data?,
                      let reference = ExternalBinaryStorage.externalReference(in: data) else { continue }
                let file = storage.fileURL(for: reference)
                if !FileManager.default.fileExists(atPath: file.path) {
                    missing[key, default: [:]][attribute.name] = "external data file \(file.lastPathComponent)"
                }
            }
        }
        return missing
    }

    /// A CSV cell: a to-many relationship's URIs separated by spaces, other values
    /// as ``DumpValues/cell(_:)`` writes them.
    static func cell(_ json: DumpJSON, for property: PropertyDescription) -> String? {
        if (property as? RelationshipDescription)?.isToMany == true, case .array(let uris) = json {
            return uris.compactMap { if case .string(let uri) = $0 { return uri } else { return nil } }.joined(separator: " ")
        }
        if let attribute = property as? AttributeDescription, DumpValues.isTree(attribute.attributeType), json != .null {
            return json.text   // a tree is JSON text in its cell, strings quoted
        }
        return DumpValues.cell(json)
    }

    /// An object ID's URI (the dump writes millions: no `URL` made).
    static func uri(_ id: ManagedObjectID) -> String { id.uriString }

    static func record(_ object: ManagedObject, properties: [PropertyDescription]) -> DumpRecord {
        var values: [String: DumpJSON] = [:]
        for property in properties {
            switch property {
            case let relationship as RelationshipDescription:
                if relationship.isToMany {
                    var ids = object.objects(forRelationship: property.name).map(\.objectID)
                    if !relationship.isOrdered {
                        ids.sort { ($0.entity.name, $0.primaryKey ?? 0) < ($1.entity.name, $1.primaryKey ?? 0) }
                    }
                    values[property.name] = .array(ids.map { .string(uri($0)) })
                } else {
                    let id = object.primitiveValue(forKey: property.name) as? ManagedObjectID
                    values[property.name] = id.map { .string(uri($0)) } ?? .null
                }
            case let attribute as AttributeDescription:
                values[property.name] = DumpValues.json(object.attributeValue(forKey: property.name), type: attribute.attributeType)
            default:
                continue
            }
        }
        return DumpRecord(entity: object.entity.name, uri: uri(object.objectID), values: values)
    }
}


// MARK: - Loading

/// Loads a dump into a new store: pass 1 inserts the objects with their
/// attributes under their dumped primary keys, pass 2 sets the relationships;
/// each batch is one save (one transaction). The store is built under a temporary
/// name beside its final one and renamed at the end, so a failure leaves nothing.
struct StoreLoader {
    let input: String
    let storePath: String
    let model: ManagedObjectModel
    let batchSize: Int

    /// A bad line: where, and what.
    struct BadLine: CustomStringConvertible {
        var line: Int
        var reason: String
        var description: String { "line \(line): \(reason)" }
    }

    /// The records of the dump, with the line each starts on.
    final class Records {
        let header: DumpHeader
        private let reader: LineReader
        private let csvFiles: [(entity: String, path: String)]
        private var csvIndex = -1
        private var csvReader: LineReader?
        private var csvColumns: [String] = []
        private(set) var file: String
        let model: ManagedObjectModel

        init(input: String, model: ManagedObjectModel) throws {
            self.model = model
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory) else {
                throw CommandFailure("no dump at \(input)")
            }
            if isDirectory.boolValue {
                let headerPath = (input as NSString).appendingPathComponent("store.json")
                reader = try LineReader(path: headerPath)
                file = headerPath
                let names = (try? FileManager.default.contentsOfDirectory(atPath: input)) ?? []
                csvFiles = names.filter { $0.hasSuffix(".csv") }.sorted()
                    .map { (String($0.dropLast(4)), (input as NSString).appendingPathComponent($0)) }
            } else {
                reader = try LineReader(path: input)
                file = input
                csvFiles = []
            }
            guard let first = reader.next() else { throw CommandFailure("\(file): empty, no header line") }
            do {
                header = try DumpHeader(DumpJSON.parse(first))
            } catch {
                throw CommandFailure("\(file): line 1: \(error)")
            }
            if isDirectory.boolValue { csvIndex = 0 }
        }

        /// The next record, or a bad line, or nil at the end.
        func next() -> (line: Int, record: Result<DumpRecord, BadLine>)? {
            if csvIndex < 0 {
                guard let text = reader.next() else { return nil }
                let line = reader.lineNumber
                if text.isEmpty { return next() }
                do {
                    return (line, .success(try DumpRecord(DumpJSON.parse(text))))
                } catch {
                    return (line, .failure(BadLine(line: line, reason: "\(error)")))
                }
            }
            while true {
                if csvReader == nil {
                    guard csvIndex < csvFiles.count else { return nil }
                    let (_, path) = csvFiles[csvIndex]
                    file = path
                    guard let reader = try? LineReader(path: path), let header = reader.nextRecord() else {
                        csvIndex += 1
                        continue
                    }
                    csvReader = reader
                    csvColumns = header.fields.map { $0 ?? "" }
                    guard csvColumns.first == "uri" else {
                        csvReader = nil
                        csvIndex += 1
                        return (1, .failure(BadLine(line: 1, reason: "\(path): the first column must be uri")))
                    }
                }
                guard let reader = csvReader, let (line, fields) = reader.nextRecord() else {
                    csvReader = nil
                    csvIndex += 1
                    continue
                }
                let entityName = csvFiles[csvIndex].entity
                guard fields.count == csvColumns.count else {
                    return (line, .failure(BadLine(line: line, reason: "\(file): \(fields.count) fields, the header has \(csvColumns.count)")))
                }
                guard let entity = model.entitiesByName[entityName] else {
                    return (line, .failure(BadLine(line: line, reason: "\(file): the model has no entity \(entityName)")))
                }
                var values: [String: DumpJSON] = [:]
                do {
                    for (column, cell) in zip(csvColumns.dropFirst(), fields.dropFirst()) {
                        guard let property = entity.propertiesByName[column] else {
                            throw DumpValues.Invalid(description: "the entity \(entityName) has no property '\(column)'")
                        }
                        values[column] = try DumpValues.json(cell: cell, for: property)
                    }
                } catch {
                    return (line, .failure(BadLine(line: line, reason: "\(file): \(error)")))
                }
                return (line, .success(DumpRecord(entity: entityName, uri: fields[0] ?? "", values: values)))
            }
        }
    }

    /// Loads the dump; returns the number of objects loaded.
    func load() throws -> Int {
        let target = URL(fileURLWithPath: storePath)
        let fileManager = FileManager.default
        guard !fileManager.fileExists(atPath: target.path) else {
            throw CommandFailure("\(storePath) exists already: load creates a new store")
        }
        let header = try Records(input: input, model: model).header
        let temporary = target.deletingLastPathComponent()
            .appendingPathComponent(".\(target.lastPathComponent).loading-\(UUID().uuidString)")
        func removeTemporary() {
            for suffix in ["", "-wal", "-shm"] { try? fileManager.removeItem(atPath: temporary.path + suffix) }
        }
        do {
            _ = try SQLiteStoreFile.createStore(at: temporary, model: model,
                                                metadata: [SQLiteStoreMetadata.storeUUIDKey: header.storeUUID])
            let count = try loadObjects(into: temporary, total: header.total)
            // Every connection closed, the write-ahead log folded into the file:
            // one file to move.
            // A read the removed store held may end a moment later (its idle timer
            // closes it): wait for it rather than fail with "database is locked".
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(path: temporary.path, configuration: configuration)
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try queue.close()
            guard !fileManager.fileExists(atPath: target.path) else {
                throw CommandFailure("\(storePath) appeared while loading: not replaced")
            }
            try fileManager.moveItem(at: temporary, to: target)
            removeTemporary()
            return count
        } catch {
            removeTemporary()
            throw error
        }
    }

    private func loadObjects(into url: URL, total: Int) throws -> Int {
        let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
        defer { coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        context.undoManager = nil
        // A copy of a store, made in batches: see `validatesOnSave`.
        context.validatesOnSave = false
        return try context.performAndWait { () throws -> Int in
            try loadObjects(context: context, coordinator: coordinator, total: total)
        }
    }

    private func loadObjects(context: ManagedObjectContext, coordinator: PersistentStoreCoordinator, total: Int) throws -> Int {
        var bad: [BadLine] = []
        func fail() throws -> Never {
            let shown = bad.prefix(20).map(\.description).joined(separator: "\n  ")
            let more = bad.count > 20 ? "\n  (and \(bad.count - 20) more)" : ""
            throw CommandFailure("\(input): \(bad.count) bad line(s), nothing loaded:\n  \(shown)\(more)")
        }
        func id(_ uri: String) throws -> ManagedObjectID {
            guard let url = URL(string: uri), let id = coordinator.managedObjectID(forURIRepresentation: url) else {
                throw DumpValues.Invalid(description: "'\(uri)' is not an object URI of the dumped store")
            }
            return id
        }

        // Pass 1: objects and attributes, under their dumped keys.
        var loaded = Set<ManagedObjectID>()
        let progress = DumpProgress(total: total * 2, label: "steps")
        let records = try Records(input: input, model: model)
        var batch: [(ManagedObject, ManagedObjectID)] = []
        func saveBatch() throws {
            guard bad.isEmpty, !batch.isEmpty else { batch = []; return }
            try context.assignObjectIDs(batch.map(\.1), to: batch.map(\.0))
            try context.save()
            context.reset()
            progress.advance(batch.count)
            batch = []
        }
        while let (line, parsed) = records.next() {
            do {
                let record = try parsed.get()
                guard let entity = model.entitiesByName[record.entity], !entity.isAbstract else {
                    throw DumpValues.Invalid(description: "the model has no concrete entity \(record.entity)")
                }
                let objectID = try id(record.uri)
                guard objectID.entity.name == entity.name else {
                    throw DumpValues.Invalid(description: "\(record.uri) names entity \(objectID.entity.name), the line \(entity.name)")
                }
                guard loaded.insert(objectID).inserted else { throw DumpValues.Invalid(description: "\(record.uri) appears twice") }
                var attributes: [(String, AttributeValue)] = []
                for (key, json) in record.values {
                    guard let property = entity.propertiesByName[key] else {
                        throw DumpValues.Invalid(description: "the entity \(entity.name) has no property '\(key)'")
                    }
                    // (Derived attributes too: the copy keeps what the store holds.)
                    guard let attribute = property as? AttributeDescription, !attribute.isTransient else { continue }
                    do {
                        attributes.append((key, try DumpValues.attributeValue(json, type: attribute.attributeType)))
                    } catch {
                        throw DumpValues.Invalid(description: "\(entity.name).\(key): \(error)")
                    }
                }
                guard bad.isEmpty else { continue }
                let object = ManagedObject(entity: entity, insertInto: context)
                for (key, value) in attributes { object.setAttributeValue(value, forKey: key) }
                batch.append((object, objectID))
                if batch.count >= batchSize { try saveBatch() }
            } catch let error as BadLine {
                bad.append(error)
            } catch let error as DumpValues.Invalid {
                bad.append(BadLine(line: line, reason: error.description))
            } catch let error as CoreDataError {
                if bad.isEmpty { throw CommandFailure("\(records.file): line \(line): \(error.description)") }
            }
            if bad.count > 1000 { break }
        }
        if !bad.isEmpty { try fail() }
        try saveBatch()

        // Pass 2: relationships, each pair set from one side (both sides of an
        // ordered relationship: each keeps its own order).
        let relationshipRecords = try Records(input: input, model: model)
        var changed = 0
        func saveRelationships() throws {
            guard changed > 0 else { return }
            try context.save()
            context.reset()
            progress.advance(changed)
            changed = 0
        }
        while let (line, parsed) = relationshipRecords.next() {
            guard case .success(let record) = parsed, let entity = model.entitiesByName[record.entity] else { continue }
            do {
                let source = try id(record.uri)
                var object: ManagedObject?
                for (key, json) in record.values {
                    guard let relationship = entity.relationshipsByName[key], !relationship.isTransient,
                          Self.setsFromThisSide(relationship) else { continue }
                    let targets: [ManagedObjectID]
                    switch json {
                    case .null: targets = []
                    case .string(let uri): targets = [try id(uri)]
                    case .array(let uris):
                        targets = try uris.map { uri in
                            guard case .string(let text) = uri else { throw DumpValues.Invalid(description: "\(entity.name).\(key): \(uri.text) is not an object URI") }
                            return try id(text)
                        }
                    default:
                        throw DumpValues.Invalid(description: "\(entity.name).\(key): \(json.text) is not an object URI")
                    }
                    if targets.isEmpty { continue }
                    for target in targets {
                        guard loaded.contains(target) else {
                            throw DumpValues.Invalid(description: "\(entity.name).\(key): no object \(target.uriRepresentation().absoluteString) in the dump")
                        }
                        // Saves do not validate here: a destination of another
                        // entity would be written as a key into the wrong table.
                        guard let destination = relationship.destinationEntity, target.entity.isKindOf(entity: destination) else {
                            throw DumpValues.Invalid(description: "\(entity.name).\(key): \(target.uriRepresentation().absoluteString) is not a \(relationship.destinationEntity?.name ?? "?")")
                        }
                    }
                    if !relationship.isToMany, targets.count > 1 {
                        throw DumpValues.Invalid(description: "\(entity.name).\(key) is to-one: one URI, not \(targets.count)")
                    }
                    let owner = object ?? context.object(with: source)
                    object = owner
                    let destinations = targets.map { context.object(with: $0) }
                    if relationship.isToMany {
                        try owner.setCheckedValue(relationship.isOrdered ? destinations as Any : Set(destinations) as Any, forKey: key)
                    } else {
                        try owner.setCheckedValue(destinations[0], forKey: key)
                    }
                }
                changed += 1
                if changed >= batchSize { try saveRelationships() }
            } catch let error as DumpValues.Invalid {
                bad.append(BadLine(line: line, reason: error.description))
                if bad.count > 1000 { break }
            }
        }
        if !bad.isEmpty { try fail() }
        try saveRelationships()
        progress.finish()
        return loaded.count
    }

    /// Whether pass 2 sets `relationship` (the other side of its pair follows by
    /// inverse maintenance): a relationship without inverse; an ordered one (its
    /// order is its own); otherwise the to-one side of a one-to-many, and of two
    /// sides alike the one whose entity and name sort first.
    static func setsFromThisSide(_ relationship: RelationshipDescription) -> Bool {
        guard let inverse = relationship.inverseRelationship else { return true }
        if relationship.isOrdered { return true }
        if inverse.isOrdered { return false }
        if relationship.isToMany != inverse.isToMany { return !relationship.isToMany }
        let this = (relationship.entity?.name ?? "", relationship.name)
        let other = (inverse.entity?.name ?? "", inverse.name)
        return this <= other
    }
}

extension StoreLoader.BadLine: Error {}
