import Foundation
import GRDB

/// The metadata of a SQLite store: the `Z_METADATA` table's one row, with the
/// store's UUID in `Z_UUID` and a binary property list in `Z_PLIST`.
///
/// The dictionary holds, as Core Data writes it:
///
/// | Key | Value |
/// |---|---|
/// | `NSStoreType` | `"SQLite"` |
/// | `NSStoreUUID` | the UUID, from `Z_UUID` (not inside the plist) |
/// | `NSStoreModelVersionHashes` | entity name → 32-byte version hash |
/// | `NSStoreModelVersionHashesVersion` | `3` |
/// | `NSStoreModelVersionIdentifiers` | the model's version identifiers |
/// | `NSStoreModelVersionHashesDigest`, `NSStoreModelVersionChecksumKey` | digests of the hashes |
/// | `NSPersistenceFrameworkVersion` | the writing framework's version |
/// | `_NSAutoVacuumLevel` | `"2"` |
///
/// plus the keys an app stores with `setMetadata`.
///
/// ```swift
/// let metadata = try SQLiteStoreMetadata.read(at: storeURL)   // never changes the store
/// if model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata) { ... }
/// ```
public enum SQLiteStoreMetadata {
    /// The store type recorded in `NSStoreType`.
    public static let storeType = "SQLite"
    /// The framework version OpenCoreData records in `NSPersistenceFrameworkVersion`
    /// (that of the newest Core Data whose stores were examined, macOS 26).
    public static let frameworkVersion = 1526

    public static let storeTypeKey = "NSStoreType"
    public static let storeUUIDKey = "NSStoreUUID"
    public static let versionHashesKey = "NSStoreModelVersionHashes"
    public static let versionHashesVersionKey = "NSStoreModelVersionHashesVersion"
    public static let versionIdentifiersKey = "NSStoreModelVersionIdentifiers"
    public static let versionHashesDigestKey = "NSStoreModelVersionHashesDigest"
    public static let versionChecksumKey = "NSStoreModelVersionChecksumKey"
    public static let frameworkVersionKey = "NSPersistenceFrameworkVersion"
    public static let autoVacuumLevelKey = "_NSAutoVacuumLevel"

    // MARK: Reading

    /// The metadata of the store at `url`, `NSStoreUUID` included. The store is
    /// opened read-only and never changed (WAL stores are read with their `-wal`).
    ///
    /// - Parameter url: The store's file.
    /// - Returns: The metadata, by Core Data's keys.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) when there is no file; ``CoreDataError/Code/fileReadCorruptFile``
    ///   (259) when it is not a SQLite database or has no readable `Z_METADATA`.
    public static func read(at url: URL) throws -> [String: Any] {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "No store file at \(url.path)", url: url)
        }
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: .readOnlyLook("OpenCoreData.SQLiteStoreMetadata"))
            defer { try? queue.close() }
            return try queue.read { db in try read(from: db, url: url) }
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "reading the metadata")
        }
    }

    /// The metadata in an open store's `Z_METADATA`, `NSStoreUUID` included.
    public static func read(from db: Database, url: URL? = nil) throws -> [String: Any] {
        guard try SQLiteSchemaReader.tableExists(db, "Z_METADATA") else {
            throw CoreDataError(.fileReadCorruptFile, "The store has no Z_METADATA table: it is not a Core Data store", url: url)
        }
        guard let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1") else {
            throw CoreDataError(.fileReadCorruptFile, "The store's Z_METADATA table is empty", url: url)
        }
        guard let blob = SQLiteStoreErrors.data(row[1]), !blob.isEmpty else {
            throw CoreDataError(.fileReadCorruptFile, "The store's Z_METADATA has no metadata property list", url: url)
        }
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: blob, options: [], format: nil)
        } catch {
            throw CoreDataError(.fileReadCorruptFile, "The store's metadata is not a valid property list: \(error)", url: url)
        }
        guard var metadata = plist as? [String: Any] else {
            throw CoreDataError(.fileReadCorruptFile, "The store's metadata is not a dictionary", url: url)
        }
        if let uuid = SQLiteStoreErrors.string(row[0]) { metadata[storeUUIDKey] = uuid }
        if metadata[storeTypeKey] == nil { metadata[storeTypeKey] = storeType }
        return metadata
    }

    // MARK: Writing

    /// The metadata Core Data writes for a new store of `model`'s configuration
    /// (nil: every entity), with `additionalValues` (app keys) merged in.
    ///
    /// ```swift
    /// let metadata = SQLiteStoreMetadata.metadata(for: model, additionalValues: ["myKey": "value"])
    /// metadata["NSStoreModelVersionHashes"]   // ["Mood": <32 bytes>, ...]
    /// ```
    public static func metadata(for model: ManagedObjectModel, configurationName: String? = nil,
                                storeUUID: String = UUID().uuidString,
                                additionalValues: [String: Any] = [:]) -> [String: Any] {
        let entities = model.entities(forConfigurationName: configurationName) ?? model.entities
        var hashes: [String: Data] = [:]
        for entity in entities { hashes[entity.name] = entity.versionHash }
        var metadata = additionalValues
        metadata[storeTypeKey] = storeType
        metadata[storeUUIDKey] = storeUUID
        metadata[versionHashesKey] = hashes
        metadata[versionHashesVersionKey] = 3
        metadata[versionIdentifiersKey] = model.versionIdentifiers.sorted()
        metadata[versionHashesDigestKey] = model.versionHashesDigest
        metadata[versionChecksumKey] = model.versionChecksum
        metadata[frameworkVersionKey] = frameworkVersion
        metadata[autoVacuumLevelKey] = "2"
        return metadata
    }

    /// Writes `metadata` into an open store's `Z_METADATA` (row `Z_VERSION` 1):
    /// `NSStoreUUID` goes to `Z_UUID` (a new UUID when absent), the rest to
    /// `Z_PLIST` as a binary property list.
    ///
    /// Throws ``CoreDataError/Code/persistentStoreSave`` when a value can't be
    /// stored in a property list.
    public static func write(_ metadata: [String: Any], to db: Database) throws {
        var plist = metadata
        let uuid = (plist.removeValue(forKey: storeUUIDKey) as? String) ?? UUID().uuidString
        if plist[storeTypeKey] == nil { plist[storeTypeKey] = storeType }
        for (key, value) in plist where !isPropertyListValue(value) {
            throw CoreDataError(.persistentStoreSave, "The metadata value for '\(key)' can't be stored in a property list",
                                key: key, valueDescription: "\(type(of: value))")
        }
        let data: Data
        do {
            data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        } catch {
            throw CoreDataError(.persistentStoreSave, "The metadata can't be written as a property list: \(error)")
        }
        try db.execute(sql: "INSERT OR REPLACE INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                       arguments: [uuid, data])
    }

    /// Whether a value is made only of property-list types.
    static func isPropertyListValue(_ value: Any, depth: Int = 0) -> Bool {
        guard depth < 512 else { return false }
        switch value {
        case is String, is Bool, is Int, is Int8, is Int16, is Int32, is Int64, is UInt, is UInt8, is UInt16,
             is UInt32, is UInt64, is Double, is Float, is Date, is Data, is NSNumber, is NSString, is NSDate, is NSData:
            return true
        case let array as [Any]:
            return array.allSatisfy { isPropertyListValue($0, depth: depth + 1) }
        case let dictionary as [String: Any]:
            return dictionary.values.allSatisfy { isPropertyListValue($0, depth: depth + 1) }
        default:
            return false
        }
    }

    // MARK: Compatibility

    /// Throws ``CoreDataError/Code/persistentStoreIncompatibleVersionHash``
    /// (134100) when a store with `metadata` can't be opened with `model`'s
    /// configuration, naming each entity that differs.
    ///
    /// ```swift
    /// try SQLiteStoreMetadata.checkCompatibility(of: SQLiteStoreMetadata.read(at: url), with: model)
    /// ```
    ///
    /// - Parameters:
    ///   - metadata: The store's metadata, as ``read(at:)`` returns it.
    ///   - model: The model to open the store with.
    ///   - configurationName: The model configuration; nil for the default one.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/persistentStoreIncompatibleVersionHash`` (134100);
    ///   when several entities differ, one underlying error each.
    public static func checkCompatibility(of metadata: [String: Any], with model: ManagedObjectModel,
                                          configurationName: String? = nil) throws {
        let problems = model.incompatibilities(withName: configurationName, storeMetadata: metadata)
        guard !problems.isEmpty else { return }
        throw CoreDataError(.persistentStoreIncompatibleVersionHash,
                            "The model used to open the store is incompatible with the one used to create the store: "
                                + problems.joined(separator: "; "),
                            entityName: firstQuotedName(in: problems[0]),
                            underlyingErrors: problems.count > 1
                                ? problems.map { CoreDataError(.persistentStoreIncompatibleVersionHash, $0,
                                                               entityName: firstQuotedName(in: $0)) }
                                : [])
    }

    private static func firstQuotedName(in message: String) -> String? {
        let parts = message.split(separator: "'", omittingEmptySubsequences: false)
        return parts.count >= 3 ? String(parts[1]) : nil
    }
}
