import Foundation
import GRDB

/// Migrates SQLite store files, safely: the store is either migrated or left
/// exactly as it was.
///
/// ```swift
/// let versions = try ModelVersionBundle(contentsOf: URL(fileURLWithPath: "Model.xcdatamodeld"))
/// let plan = try MigrationPlan.progressive(storeAt: storeURL, versions: versions)
/// try StoreMigrator.migrateStore(at: storeURL, plan: plan)
/// ```
///
/// How a migration keeps the store safe:
/// 1. The store is copied, with SQLite's backup API, from a read-only connection
///    into a sibling file `.<name>.migrationdestination_41b5a6b5c6e848c462a8480cd24caef3`
///    (Core Data's name): committed changes that sit only in `-wal` are part of
///    the copy, and neither the store nor its `-wal` is written.
/// 2. Each step runs on the copy in one transaction.
/// 3. Only when every step succeeded, the store's `-wal` is checkpointed into it
///    (its content does not change) and the copy is renamed over the store, one
///    atomic `rename`. A failure or a crash before that leaves the store, and any
///    leftover copy is removed by the next migration.
public enum StoreMigrator {
    /// The suffix of the sibling file a migration works on (Core Data's).
    static let destinationSuffix = ".migrationdestination_41b5a6b5c6e848c462a8480cd24caef3"

    /// What a migration did.
    public struct Report: Sendable {
        /// Per step: the destination tables built anew.
        public var rebuiltTables: [[String]] = []
        /// Per step: the destination tables left as they were.
        public var keptTables: [[String]] = []
        /// Every SQL statement run, in order.
        public var statements: [String] = []
    }

    /// Runs `plan` on the SQLite store at `url`: steps that run in place with SQL
    /// (``MigrationPlan/Step/runsInPlace``) on the working copy, the others through
    /// a ``MigrationManager`` into a new file that becomes the working copy.
    ///
    /// - Parameters:
    ///   - url: The store.
    ///   - plan: The steps to take.
    ///   - configurationName: The configuration the store holds.
    ///   - progress: Called with each step's index and its progress (0 to 1).
    /// - Returns: What was done.
    /// - Throws: ``CoreDataError/Code/migration`` (134110) naming the step and what
    ///   failed ("Cannot migrate store in-place: ..." for a mandatory attribute
    ///   without values); the ``MigrationManager`` errors of a step through objects
    ///   (134170 for a policy class that is not registered, 134120 when cancelled);
    ///   ``CoreDataError/Code/migrationConstraintViolation`` (134111) when the
    ///   migrated rows break a uniqueness constraint. The store is unchanged.
    @discardableResult
    public static func migrateStore(at url: URL, plan: MigrationPlan, configurationName: String? = nil,
                                    progress: ((_ step: Int, _ fraction: Float) -> Void)? = nil) throws -> Report {
        var report = Report()
        guard !plan.isEmpty else { return report }
        let fileManager = FileManager.default
        guard fileManager.fileExists(atPath: url.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "No store file at \(url.path)", url: url)
        }
        let folder = url.deletingLastPathComponent()
        let copy = folder.appendingPathComponent("." + url.lastPathComponent + destinationSuffix)
        let next = folder.appendingPathComponent("." + url.lastPathComponent + destinationSuffix + "-next")
        func remove(_ file: URL) {
            for suffix in ["", "-wal", "-shm", "-journal"] { try? fileManager.removeItem(atPath: file.path + suffix) }
        }
        func removeCopies() {
            remove(copy)
            remove(next)
        }
        removeCopies()
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            // 1. The copy.
            do {
                let sourceQueue = try DatabaseQueue(path: url.path, configuration: .readOnlyLook("OpenCoreData.StoreMigrator.source"))
                defer { try? sourceQueue.close() }
                let copyQueue = try DatabaseQueue(path: copy.path, configuration: .writingLook("OpenCoreData.StoreMigrator.copy"))
                defer { try? copyQueue.close() }
                try sourceQueue.backup(to: copyQueue)
            }
            FaultPoints.reach("copied")
            // 2. The steps, each on the copy.
            for (index, step) in plan.steps.enumerated() {
                if MigrationDebug.level > 0 { MigrationDebug.log("step \(index + 1)/\(plan.steps.count): \(step)") }
                do {
                    if step.runsInPlace {
                        let migration = SQLiteInPlaceMigration(sourceModel: step.sourceModel, destinationModel: step.destinationModel,
                                                               mapping: step.mappingModel, configurationName: configurationName)
                        let queue = try DatabaseQueue(path: copy.path, configuration: .writingLook("OpenCoreData.StoreMigrator.step"))
                        defer { try? queue.close() }
                        let stepReport = try queue.writeWithoutTransaction { db -> SQLiteInPlaceMigration.Report in
                            SQLiteFunctions.registerFunctions(db)
                            var result = SQLiteInPlaceMigration.Report()
                            try db.inTransaction {
                                result = try migration.run(db)
                                return .commit
                            }
                            return result
                        }
                        report.rebuiltTables.append(stepReport.rebuiltTables)
                        report.keptTables.append(stepReport.keptTables)
                        report.statements += stepReport.statements
                    } else {
                        let manager = MigrationManager(sourceModel: step.sourceModel, destinationModel: step.destinationModel)
                        manager.progressHandler = { progress?(index, $0) }
                        try manager.migrateStore(from: copy, with: step.mappingModel, to: next)
                        // Everything in the main file before it moves: a connection of
                        // the manager's store may still be closing, its log not yet
                        // checkpointed, and a renamed file leaves its log behind.
                        try checkpointFully(next, label: "OpenCoreData.StoreMigrator.next")
                        remove(copy)
                        guard rename(next.path, copy.path) == 0 else {
                            throw CoreDataError(.fileWriteUnknown, "Cannot rename the migrated store: \(String(cString: strerror(errno)))", url: url)
                        }
                        remove(next)
                        report.rebuiltTables.append([])
                        report.keptTables.append([])
                    }
                } catch var error as CoreDataError {
                    error.message = "step \(step.sourceVersion) -> \(step.destinationVersion): " + error.message
                    throw error
                }
                progress?(index, 1)
            }
            FaultPoints.reach("migrated")
            do {
                let queue = try DatabaseQueue(path: copy.path, configuration: .writingLook("OpenCoreData.StoreMigrator.vacuum"))
                defer { try? queue.close() }
                try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA incremental_vacuum") }
            }
            try checkpointFully(copy, label: "OpenCoreData.StoreMigrator.vacuum")
            // 3. The swap: the store's -wal goes into the store (same content), then
            // the copy replaces the store in one rename.
            let storeQueue = try DatabaseQueue(path: url.path, configuration: .writingLook("OpenCoreData.StoreMigrator.swap"))
            try storeQueue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try storeQueue.close()
            FaultPoints.reach("checkpointed")
            for suffix in ["-wal", "-shm", "-journal"] where fileManager.fileExists(atPath: url.path + suffix) {
                // A -wal left after the checkpoint is empty; none may outlive the swap.
                try fileManager.removeItem(atPath: url.path + suffix)
            }
            guard rename(copy.path, url.path) == 0 else {
                throw CoreDataError(.fileWriteUnknown, "Cannot replace \(url.path) with the migrated store: \(String(cString: strerror(errno)))", url: url)
            }
            FaultPoints.reach("renamed")
            removeCopies()
        } catch var error as CoreDataError {
            removeCopies()
            if error.url == nil { error.url = url }
            throw error
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            removeCopies()
            throw CoreDataError(.migrationConstraintViolation, "Cannot migrate store in-place: \(error.message ?? "a constraint is violated")", url: url)
        } catch {
            removeCopies()
            let underlying = SQLiteStoreErrors.coreDataError(error, url: url, doing: "migrating the store")
            throw CoreDataError(.migration, "Cannot migrate store in-place: \(underlying.message)", url: url, underlyingErrors: [underlying])
        }
        if MigrationDebug.level > 0 {
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            MigrationDebug.log(String(format: "migration completed successfully in %2.2f seconds", seconds))
        }
        return report
    }

    /// The model that wrote a store: among `candidates` (in order) the first whose
    /// entity version hashes match the store's metadata, else the model in the
    /// store's `Z_MODELCACHE` when its hashes match.
    ///
    /// - Parameters:
    ///   - url: The store.
    ///   - metadata: Its metadata.
    ///   - candidates: Models to try, by name (a bundle's versions).
    ///   - configurationName: The configuration the store holds.
    /// - Returns: The model and its name (`"the store's model cache"` for the cached one).
    /// - Throws: ``CoreDataError/Code/migrationMissingSourceModel`` (134130) when
    ///   none matches.
    public static func sourceModel(forStoreAt url: URL, metadata: [String: Any], candidates: [(name: String, model: ManagedObjectModel)],
                                   configurationName: String? = nil) throws -> (name: String, model: ManagedObjectModel) {
        for candidate in candidates where candidate.model.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) {
            return candidate
        }
        if let cached = try? SQLiteStore.storedModel(at: url),
           cached.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) {
            return ("the store's model cache", cached)
        }
        throw CoreDataError(.migrationMissingSourceModel,
                            "Persistent store migration failed, missing source managed object model: no model matches the entity version hashes of the store at \(url.path)",
                            url: url)
    }

    /// Core Data's automatic migration when a store is added: when the store at
    /// `url` was written by another model, find its model (the versions of
    /// `model`'s bundle, then the store's model cache), a mapping (an
    /// `.xcmappingmodel` beside the bundle made for the two versions, else inferred
    /// when `infers`), and migrate.
    static func migrateIfNeeded(storeAt url: URL, to model: ManagedObjectModel, configurationName: String?, infers: Bool) throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        let metadata = try SQLiteStoreMetadata.read(at: url)
        if model.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) { return }
        // A store with no metadata hashes (not a Core Data store) is left to the store to refuse.
        guard metadata[SQLiteStoreMetadata.versionHashesKey] != nil else { return }
        var candidates: [(name: String, model: ManagedObjectModel)] = []
        var mappingModels: [(name: String, model: MappingModel)] = []
        if let bundleURL = model.versionBundleURL, let versions = try? ModelVersionBundle(contentsOf: bundleURL) {
            for name in versions.versionNames.reversed() {
                if let version = try? versions.model(forVersion: name) { candidates.append((name, version)) }
            }
            // Mapping models beside the bundle (as Core Data finds them in the app's
            // bundle): one made for the store's version and this model wins over inference.
            let folder = bundleURL.deletingLastPathComponent()
            let siblings = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
            for file in siblings.sorted(by: { $0.path < $1.path }) where file.pathExtension == "xcmappingmodel" {
                if let mapping = try? MappingModel(contentsOf: file, versions: versions) {
                    mappingModels.append((file.deletingPathExtension().lastPathComponent, mapping))
                }
            }
        }
        let source = try sourceModel(forStoreAt: url, metadata: metadata, candidates: candidates, configurationName: configurationName)
        let plan = try MigrationPlan.direct(storeMetadata: metadata, sourceModel: source, destinationModel: ("the current model", model),
                                            mappingModels: mappingModels, infersMappingModel: infers, configurationName: configurationName)
        try migrateStore(at: url, plan: plan, configurationName: configurationName)
    }
}

/// Moves the whole write-ahead log of the store at `url` into its main file
/// (`wal_checkpoint(TRUNCATE)`), waiting for other connections' reads as the
/// store's busy timeout allows; throws when the log could not be emptied, so that
/// a file about to be renamed never leaves committed rows behind in its log.
private func checkpointFully(_ url: URL, label: String) throws {
    let queue = try DatabaseQueue(path: url.path, configuration: .writingLook(label))
    defer { try? queue.close() }
    let busy = try queue.writeWithoutTransaction { db in
        try Int.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)") ?? 0
    }
    if busy != 0 {
        throw CoreDataError(.migration, "Cannot move the write-ahead log of \(url.lastPathComponent) into the store: another connection keeps reading it",
                            url: url)
    }
}
