import Foundation
import GRDB

extension PersistentStoreCoordinator {
    /// Replaces the SQLite store at `destinationURL` with a copy of the one at
    /// `sourceURL` (`replacePersistentStore(at:destinationOptions:withPersistentStoreFrom:sourceOptions:type:)`).
    ///
    /// The copy is made with SQLite's backup API from a read-only connection (so
    /// committed changes still in the source's `-wal` are part of it), written
    /// beside the destination and renamed over it in one step; the destination's
    /// own `-wal` and `-shm` go, and its external-data folder is replaced by the
    /// source's. A store open in this coordinator at `destinationURL` is removed
    /// from it first.
    ///
    /// ```swift
    /// try coordinator.replacePersistentStore(at: liveURL, withPersistentStoreFrom: backupURL)
    /// ```
    ///
    /// - Parameters:
    ///   - destinationURL: The store to replace (created when missing).
    ///   - sourceURL: The store to copy; it is only read.
    ///   - type: The stores' type; only ``PersistentStoreType/sqlite`` has files.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile`` (260)
    ///   when there is no source; ``CoreDataError/Code/persistentStoreOperation``
    ///   (134070) when the files cannot be written. On failure the destination is
    ///   unchanged.
    public func replacePersistentStore(at destinationURL: URL, withPersistentStoreFrom sourceURL: URL,
                                       type: PersistentStoreType = .sqlite) throws {
        guard type == .sqlite else {
            throw CoreDataError(.persistentStoreOperation, "Only SQLite stores have files to replace")
        }
        guard FileManager.default.fileExists(atPath: sourceURL.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "No store at \(sourceURL.path)", url: sourceURL)
        }
        for store in persistentStores where store.url?.standardizedFileURL == destinationURL.standardizedFileURL {
            remove(store)
        }
        try Self.copyStoreFile(from: sourceURL, to: destinationURL, replacing: true)
    }

    /// Moves a store to a new location, and possibly a new type
    /// (`migratePersistentStore(_:to:options:type:)`): the store's objects are
    /// written to a new store at `url`, which replaces `store` in this coordinator.
    ///
    /// An SQLite store written as SQLite is copied with SQLite's backup API (the
    /// same file, store UUID included); any other pair is copied object by object
    /// with the same primary keys (object IDs keep their entity and key), in
    /// batches. The old store's files are left where they were.
    ///
    /// ```swift
    /// let backup = try coordinator.migratePersistentStore(store, to: backupURL, type: .sqlite)
    /// let inMemory = try coordinator.migratePersistentStore(store, to: nil, type: .inMemory)
    /// ```
    ///
    /// - Parameters:
    ///   - store: A store of this coordinator.
    ///   - url: The new store's file (nil for an in-memory store); nothing may exist there.
    ///   - options: Options of the new store.
    ///   - type: The new store's type.
    /// - Returns: The new store, added to the coordinator in place of `store`.
    /// - Throws: ``CoreDataError/Code/persistentStoreOperation`` (134070) when a
    ///   file exists at `url` or the copy fails; the errors of adding the new store.
    ///   On failure `store` stays in the coordinator and nothing is left at `url`.
    @discardableResult
    public func migratePersistentStore(_ store: any PersistentStore, to url: URL?, options: [String: String] = [:],
                                       type: PersistentStoreType) throws -> any PersistentStore {
        guard persistentStores.contains(where: { $0 === store }) else {
            throw CoreDataError(.persistentStoreOperation, "The store \(store.identifier) is not one of this coordinator's stores")
        }
        if let url, url.isFileURL, FileManager.default.fileExists(atPath: url.path) {
            throw CoreDataError(.persistentStoreOperation, "A file already exists at \(url.path)", url: url)
        }
        if store.type == .sqlite, type == .sqlite, let source = store.url, let url {
            try Self.copyStoreFile(from: source, to: url, replacing: false)
            let target: any PersistentStore
            do {
                target = try addPersistentStore(type: .sqlite, configuration: store.configurationName, at: url, options: options)
            } catch {
                try? Self.destroyStoreFiles(at: url)
                throw error
            }
            remove(store)
            return target
        }
        // Object by object, through a coordinator of its own until it is done.
        let scratch = PersistentStoreCoordinator(managedObjectModel: managedObjectModel)
        if type == .sqlite, let url {
            var metadata: [String: Any] = [:]
            if let source = store.url, store.type == .sqlite {
                for (key, value) in try SQLiteStoreMetadata.read(at: source) where !key.hasPrefix("NSStoreModel") { metadata[key] = value }
            }
            metadata[SQLiteStoreMetadata.storeUUIDKey] = store.identifier
            try SQLiteStoreFile.createStore(at: url, model: managedObjectModel, configurationName: store.configurationName, metadata: metadata)
        }
        // A store type of its own (a registered one) keeps the store's UUID when it
        // takes `NSStoreUUID` (as the PostgreSQL store does): object ID URIs stay valid.
        var targetOptions = options
        if targetOptions[SQLiteStoreMetadata.storeUUIDKey] == nil { targetOptions[SQLiteStoreMetadata.storeUUIDKey] = store.identifier }
        do {
            let target = try scratch.addPersistentStore(type: type, configuration: store.configurationName, at: url,
                                                        options: type == .sqlite ? options : targetOptions)
            try copyObjects(of: store, into: target, through: scratch)
            scratch.remove(target)
            let added: any PersistentStore
            if type == .sqlite, let url {
                added = try addPersistentStore(type: .sqlite, configuration: store.configurationName, at: url, options: options)
            } else {
                add(target)
                added = target
            }
            remove(store)
            return added
        } catch {
            if let url, url.isFileURL { try? Self.destroyStoreFiles(at: url) }
            throw error
        }
    }

    /// Copies every object of `store` (read through this coordinator) into
    /// `target` (written through `targetCoordinator`), keeping primary keys:
    /// attributes first, then relationships, in batches.
    private func copyObjects(of store: any PersistentStore, into target: any PersistentStore,
                             through targetCoordinator: PersistentStoreCoordinator) throws {
        let entities = (managedObjectModel.entities(forConfigurationName: store.configurationName) ?? []).filter { !$0.isAbstract }
        let reader = ManagedObjectContext(concurrencyType: .privateQueue)
        reader.persistentStoreCoordinator = self
        let writer = ManagedObjectContext(concurrencyType: .privateQueue)
        writer.persistentStoreCoordinator = targetCoordinator
        writer.validatesOnSave = false
        let batch = 500
        func sourceIDs(_ entity: EntityDescription) throws -> [ManagedObjectID] {
            let request = FetchRequest<ManagedObjectID>(entity: entity)
            request.resultType = .managedObjectID
            request.includesSubentities = false
            return try reader.fetch(request).filter { $0.storeIdentifier == store.identifier }
                .sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }
        }
        func targetID(_ id: ManagedObjectID) -> ManagedObjectID? {
            guard let key = id.primaryKey, let entity = managedObjectModel.entitiesByName[id.entity.name] else { return nil }
            return ManagedObjectID(entity: entity, storeIdentifier: target.identifier, primaryKey: key)
        }
        try reader.performAndWait {
            try writer.performAndWait {
                // Objects and attributes.
                for entity in entities {
                    let ids = try sourceIDs(entity)
                    for start in stride(from: 0, to: ids.count, by: batch) {
                        var made: [ManagedObject] = [], madeIDs: [ManagedObjectID] = []
                        for id in ids[start..<min(start + batch, ids.count)] {
                            let source = try reader.existingObject(with: id)
                            let copy = ManagedObject(entity: entity, insertInto: writer)
                            // Derived attributes too: their stored values are what the
                            // source store computed (neither store here recomputes them).
                            for (name, attribute) in entity.attributesByName where !attribute.isTransient {
                                try copy.setCheckedValue(source.attributeValue(forKey: name), forKey: name)
                            }
                            if let newID = targetID(id) {
                                made.append(copy)
                                madeIDs.append(newID)
                            }
                        }
                        try writer.assignObjectIDs(madeIDs, to: made)
                        try writer.save()
                        writer.reset()
                        reader.reset()
                    }
                }
                // Relationships: each to-many side (its inverses follow), and to-one
                // sides whose inverse is not a to-many.
                for entity in entities {
                    let relationships = entity.relationshipsByName.values.filter { relationship in
                        if relationship.isToMany { return true }
                        guard let inverse = relationship.inverseRelationship else { return true }
                        return !inverse.isToMany && relationship.name <= inverse.name
                    }
                    guard !relationships.isEmpty else { continue }
                    let ids = try sourceIDs(entity)
                    for start in stride(from: 0, to: ids.count, by: batch) {
                        for id in ids[start..<min(start + batch, ids.count)] {
                            guard let newID = targetID(id) else { continue }
                            let source = try reader.existingObject(with: id)
                            let copy = try writer.existingObject(with: newID)
                            for relationship in relationships {
                                let value = source.value(forKey: relationship.name)
                                func peer(_ object: ManagedObject) throws -> ManagedObject? {
                                    try targetID(object.objectID).map { try writer.existingObject(with: $0) }
                                }
                                if let one = value as? ManagedObject {
                                    try copy.setCheckedValue(try peer(one), forKey: relationship.name)
                                } else if let many = value as? [ManagedObject] {
                                    try copy.setCheckedValue(try many.compactMap(peer), forKey: relationship.name)
                                } else if let many = value as? Set<ManagedObject> {
                                    try copy.setCheckedValue(Set(try many.compactMap(peer)), forKey: relationship.name)
                                }
                            }
                        }
                        try writer.save()
                        writer.reset()
                        reader.reset()
                    }
                }
            }
        }
    }

    /// Copies an SQLite store into a new file beside `destination`, then renames
    /// it over `destination` (whose `-wal`/`-shm` go first).
    static func copyStoreFile(from source: URL, to destination: URL, replacing: Bool) throws {
        let fileManager = FileManager.default
        let temporary = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).copy-\(UUID().uuidString)")
        func removeTemporary() {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? fileManager.removeItem(atPath: temporary.path + suffix) }
        }
        do {
            try fileManager.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            let sourceQueue = try DatabaseQueue(path: source.path, configuration: .readOnlyLook("OpenCoreData.migratePersistentStore.source"))
            defer { try? sourceQueue.close() }
            let copyQueue = try DatabaseQueue(path: temporary.path, configuration: .writingLook("OpenCoreData.migratePersistentStore.copy"))
            try sourceQueue.backup(to: copyQueue)
            try copyQueue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try copyQueue.close()
            if replacing, fileManager.fileExists(atPath: destination.path) {
                let destinationQueue = try DatabaseQueue(path: destination.path, configuration: .writingLook("OpenCoreData.migratePersistentStore.destination"))
                try destinationQueue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
                try destinationQueue.close()
            }
            for suffix in ["-wal", "-shm", "-journal"] where fileManager.fileExists(atPath: destination.path + suffix) {
                try fileManager.removeItem(atPath: destination.path + suffix)
            }
            guard rename(temporary.path, destination.path) == 0 else {
                throw CoreDataError(.persistentStoreOperation, "Cannot move the copy to \(destination.path): \(String(cString: strerror(errno)))", url: destination)
            }
            // External binary data.
            let name = { (url: URL) in url.deletingLastPathComponent().appendingPathComponent(".\(url.deletingPathExtension().lastPathComponent)_SUPPORT") }
            let sourceSupport = name(source), destinationSupport = name(destination)
            if fileManager.fileExists(atPath: destinationSupport.path) { try fileManager.removeItem(at: destinationSupport) }
            if fileManager.fileExists(atPath: sourceSupport.path) { try fileManager.copyItem(at: sourceSupport, to: destinationSupport) }
        } catch let error as CoreDataError {
            removeTemporary()
            throw error
        } catch {
            removeTemporary()
            throw CoreDataError(.persistentStoreOperation, "Could not copy the store \(source.path) to \(destination.path): \(error)", url: destination)
        }
    }
}
