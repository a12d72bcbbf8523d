import ArgumentParser
import Foundation
import OpenCoreData
import OpenCoreDataPredicates

/// Loads a model from any of the files Core Data users have.
func loadModel(_ path: String) throws -> ManagedObjectModel {
    let url = URL(fileURLWithPath: path)
    if ["mom", "momd"].contains(url.pathExtension.lowercased()) {
        return try CompiledModelBundle(contentsOf: url).currentModel()
    }
    return try XcodeDataModel(contentsOf: url).currentModel()
}

/// Opens a store read-only, with `modelPath` or the model cached in the store: a
/// SQLite file, or a store named by its URL (`postgres://user@host:port/database`,
/// with `?schema=name` for a schema other than `public`; see ``StoreURLOpener``).
func openStore(_ path: String, modelPath: String?) throws -> (ManagedObjectContext, any PersistentStore) {
    if let scheme = storeURLScheme(path) { return try openStore(url: path, scheme: scheme, modelPath: modelPath) }
    let (context, store) = try openSQLiteStore(path, modelPath: modelPath)
    return (context, store)
}

/// Opens a SQLite store file read-only, with `modelPath` or the model cached in the store.
func openSQLiteStore(_ path: String, modelPath: String?) throws -> (ManagedObjectContext, SQLiteStore) {
    if storeURLScheme(path) != nil { throw CommandFailure("\(path) is not a store file: this command reads SQLite store files") }
    let url = URL(fileURLWithPath: path)
    guard FileManager.default.fileExists(atPath: url.path) else {
        throw CoreDataError(.fileReadNoSuchFile, "No store at \(url.path)", url: url)
    }
    let model = try modelPath.map(loadModel) ?? readingModel(url)
    // The throwing path: a model from a file that fails validation is an error, never a trap.
    let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model)
    let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.readOnly: "1"])
    guard let sqlite = store as? SQLiteStore else { throw CoreDataError(.persistentStoreOpen, "Not a SQLite store: \(path)") }
    let context = ManagedObjectContext(concurrencyType: .mainQueue)
    context.persistentStoreCoordinator = coordinator
    return (context, sqlite)
}

/// The model a store file is read with when no model is given: its cached model,
/// else one reconstructed from its schema (with a warning on standard error).
func readingModel(_ url: URL) throws -> ManagedObjectModel {
    let (model, source) = try SQLiteStore.readingModel(at: url)
    if case .reconstructed(let reason) = source {
        warn("\(reason): the model was reconstructed from the store's schema (names as its columns give them; read-only)")
    }
    return model
}

/// A store's metadata by Core Data's keys, as Foundation values.
func storeMetadata(_ path: String, _ store: any PersistentStore) throws -> [String: Any] {
    if let sqlite = store as? SQLiteStore, let url = sqlite.url { return try SQLiteStoreMetadata.read(at: url) }
    var metadata: [String: Any] = ["NSStoreUUID": store.identifier]
    for (key, value) in store.metadata { metadata[key] = value.nativeValue ?? NSNull() }
    return metadata
}

func printJSON(_ value: Any) throws {
    let data = try JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
    emit(String(decoding: data, as: UTF8.self))
}

struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Create and inspect SQLite stores in Core Data's format.",
        subcommands: [Create.self, Info.self, Dump.self, Load.self, Migrate.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an empty store for a model.")
        @Argument(help: "The store file to create.") var path: String
        @Option(help: "The model (.xcdatamodeld, .xcdatamodel, .momd or .mom).") var model: String

        func run() throws {
            do {
                let loaded = try loadModel(model)
                try SQLiteStoreFile.createStore(at: URL(fileURLWithPath: path), model: loaded)
                emit("Created \(path) with \(loaded.entities.count) entities")
            } catch let error as CoreDataError {
                throw CommandFailure(error.description)
            }
        }
    }

    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a store's metadata and its objects per entity.")
        @Argument(help: "The store file, or a PostgreSQL store's URL (postgres://user@host:port/database?schema=name).") var path: String
        @Option(help: "The model; without it, the model cached in the store.") var model: String?
        @Flag(help: "Print JSON.") var json = false

        func run() throws {
            do {
                let (context, store) = try openStore(path, modelPath: model)
                let model = try require_(context.persistentStoreCoordinator?.managedObjectModel, "no model")
                var entities: [[String: Any]] = []
                for entity in model.entities {
                    let request = FetchRequest<ManagedObject>(entity: entity)
                    request.includesSubentities = false
                    entities.append(["name": entity.name, "rows": try context.count(for: request)])
                }
                let metadata = try storeMetadata(path, store)
                if json {
                    var plain: [String: Any] = [:]
                    for (key, value) in metadata { plain[key] = ModelReport.jsonValue(AttributeValue(anyValue: value)) }
                    if let hashes = metadata["NSStoreModelVersionHashes"] as? [String: Data] {
                        plain["NSStoreModelVersionHashes"] = hashes.mapValues { $0.map { String(format: "%02x", $0) }.joined() }
                    }
                    try printJSON(["path": path, "uuid": store.identifier, "metadata": plain, "entities": entities])
                } else {
                    emit("Store \(path)")
                    emit("  UUID \(store.identifier)")
                    for key in metadata.keys.sorted() where key != "NSStoreModelVersionHashes" {
                        emit("  \(key): \(metadata[key].map { "\($0)" } ?? "")")
                    }
                    for entity in entities {
                        emit("  \(entity["name"] ?? ""): \(entity["rows"] ?? 0) objects")
                    }
                }
            } catch let error as CoreDataError {
                throw CommandFailure(error.description)
            }
        }
    }
}

struct FetchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch objects from a store with a predicate and a sort."
    )
    @Argument(help: "The store file, or a PostgreSQL store's URL (postgres://user@host:port/database?schema=name).") var path: String
    @Option(help: "The model; without it, the model cached in the store.") var model: String?
    @Option(help: "The entity to fetch (subentities included).") var entity: String
    @Option(help: "A predicate in Core Data's format language.") var predicate: String?
    @Option(help: "Sort keys: key[:desc],...") var sort: String?
    @Option(help: "At most this many objects.") var limit: Int?
    @Option(help: "Skip this many objects.") var offset: Int?
    @Flag(help: "Print a JSON array.") var json = false

    func run() throws {
        do {
            let (context, _) = try openStore(path, modelPath: model)
            let request = FetchRequest<ManagedObject>(entityName: entity)
            if let predicate { request.predicate = try CorePredicate(format: predicate) }
            if let sort {
                request.sortDescriptors = sort.split(separator: ",").map { part in
                    let pieces = part.split(separator: ":")
                    let descending = pieces.count > 1 && pieces[1].lowercased().hasPrefix("desc")
                    return CoreSortDescriptor(key: String(pieces[0]), ascending: !descending)
                }
            }
            request.fetchLimit = limit ?? 0
            request.fetchOffset = offset ?? 0
            let objects = try context.fetch(request)
            let rendered = objects.map(ObjectReport.json)
            if json {
                try printJSON(rendered)
            } else {
                for object in rendered {
                    emit("\(object["uri"] ?? "") (\(object["entity"] ?? ""))")
                    for section in ["attributes", "relationships"] {
                        for (key, value) in ((object[section] as? [String: Any]) ?? [:]).sorted(by: { $0.key < $1.key }) {
                            emit("  \(key) = \(value)")
                        }
                    }
                }
                emit("\(objects.count) object(s)")
            }
        } catch let error as CoreDataError {
            throw CommandFailure(error.description)
        } catch let error as PredicateParseError {
            throw CommandFailure("\(error)")
        }
    }
}

/// Renders managed objects for `ocd fetch`.
enum ObjectReport {
    /// `{"uri", "entity", "attributes": {...}, "relationships": {name: URI or [URI]}}`.
    static func json(_ object: ManagedObject) -> [String: Any] {
        var attributes: [String: Any] = [:]
        var relationships: [String: Any] = [:]
        for property in object.entity.allProperties {
            switch property {
            case let relationship as RelationshipDescription:
                if relationship.isToMany {
                    relationships[property.name] = object.objects(forRelationship: property.name)
                        .map { $0.objectID.uriRepresentation().absoluteString }
                } else {
                    relationships[property.name] = (object.value(forKey: property.name) as? ManagedObject)?
                        .objectID.uriRepresentation().absoluteString ?? NSNull()
                }
            case is AttributeDescription:
                attributes[property.name] = ModelReport.jsonValue(object.attributeValue(forKey: property.name))
            default:
                continue
            }
        }
        return ["uri": object.objectID.uriRepresentation().absoluteString, "entity": object.entity.name,
                "attributes": attributes, "relationships": relationships]
    }
}

/// Unwraps or fails with a clear message.
func require_<T>(_ value: T?, _ message: String = "internal error") throws -> T {
    guard let value else { throw CommandFailure(message) }
    return value
}
