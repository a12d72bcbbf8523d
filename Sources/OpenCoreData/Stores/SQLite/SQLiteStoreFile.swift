import Foundation
import GRDB

/// Creating SQLite store files in Core Data's format.
///
/// ```swift
/// let schema = try SQLiteStoreFile.createStore(at: URL(fileURLWithPath: "Moody.sqlite"), model: model,
///                                              metadata: ["io.objc.Moody.CloudKitUserID": "..."])
/// try SQLiteStoreMetadata.read(at: url)["NSStoreUUID"]   // the new store's UUID
/// ```
public enum SQLiteStoreFile {
    /// Writes a new, empty store at `url` for `model`'s configuration (nil: every
    /// entity), and returns its schema.
    ///
    /// The file gets every table and index Core Data creates, one `Z_PRIMARYKEY`
    /// row per entity with `Z_MAX` 0, and `Z_METADATA` with the model's version
    /// hashes, a new UUID (or `metadata["NSStoreUUID"]`) and the app keys of
    /// `metadata`. The database uses WAL journaling, incremental auto-vacuum
    /// (`_NSAutoVacuumLevel` 2) and `synchronous = NORMAL`. `Z_MODELCACHE` holds
    /// the model's compiled archive, raw-DEFLATE compressed (see
    /// ``CompiledModelWriter``), so ``SQLiteStore/storedModel(at:)`` (and Core Data,
    /// when it infers a migration's source model) can open the store without it.
    ///
    /// Throws when a file already exists at `url` (nothing is overwritten), when the
    /// model is invalid, or when SQLite fails; no partial file is left behind.
    @discardableResult
    public static func createStore(at url: URL, model: ManagedObjectModel, configurationName: String? = nil,
                                   metadata: [String: Any] = [:]) throws -> SQLiteSchema {
        let fileManager = FileManager.default
        guard !fileManager.fileExists(atPath: url.path) else {
            throw CoreDataError(.persistentStoreOperation, "A file already exists at \(url.path)", url: url)
        }
        try model.validate()
        let schema = try SQLiteSchema(model: model, configurationName: configurationName)
        var storeMetadata = SQLiteStoreMetadata.metadata(for: model, configurationName: configurationName,
                                                         additionalValues: metadata)
        if let uuid = metadata[SQLiteStoreMetadata.storeUUIDKey] as? String { storeMetadata[SQLiteStoreMetadata.storeUUIDKey] = uuid }
        let modelCache = try CompiledModelWriter().modelCacheData(for: model)
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: .writingLook("OpenCoreData.SQLiteStoreFile.create"))
            defer { try? queue.close() }
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA auto_vacuum = 2")
                try db.execute(sql: "PRAGMA journal_mode = WAL")
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.inTransaction {
                    for statement in schema.creationStatements { try db.execute(sql: statement) }
                    for entity in schema.entities {
                        try db.execute(sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                                       arguments: [entity.entityNumber, entity.entityName, entity.superentityNumber])
                    }
                    try SQLiteStoreMetadata.write(storeMetadata, to: db)
                    try db.execute(sql: "INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", arguments: [modelCache])
                    return .commit
                }
            }
        } catch {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                try? fileManager.removeItem(atPath: url.path + suffix)
            }
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "creating the store")
        }
        return schema
    }
}
