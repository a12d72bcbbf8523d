import GRDB

extension Configuration {
    /// The configuration of a short read-only look at a store file (its metadata,
    /// its model cache, a copy's source), labelled `label`.
    ///
    /// Another connection may hold a lock for a moment even in WAL mode: a store
    /// closing checkpoints its `-wal` under an exclusive lock, a rollback-journal
    /// store locks readers out while it commits. Such a look waits for it, up to
    /// `timeout` seconds, as the store itself does (`NSPersistentStoreTimeoutOption`),
    /// instead of failing with `SQLITE_BUSY` at once.
    ///
    /// ```swift
    /// let queue = try DatabaseQueue(path: url.path, configuration: .readOnlyLook("OpenCoreData.SQLiteStoreMetadata"))
    /// ```
    package static func readOnlyLook(_ label: String, timeout: Double = 30) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = label
        configuration.busyMode = .timeout(timeout)
        return configuration
    }

    /// The configuration of a short writing look at a store file (a migration's
    /// copy and its swap, a new store's tables), labelled `label`: it waits for a
    /// moment's lock held by another connection, up to `timeout` seconds, as
    /// ``readOnlyLook(_:timeout:)`` does, instead of failing with `SQLITE_BUSY`.
    ///
    /// ```swift
    /// let queue = try DatabaseQueue(path: copy.path, configuration: .writingLook("OpenCoreData.StoreMigrator.copy"))
    /// ```
    package static func writingLook(_ label: String, timeout: Double = 30) -> Configuration {
        var configuration = Configuration()
        configuration.label = label
        configuration.busyMode = .timeout(timeout)
        // A write may fire Core Data's own triggers, which call its functions.
        configuration.prepareDatabase { db in SQLiteFunctions.registerTriggerFunctions(db) }
        return configuration
    }
}
