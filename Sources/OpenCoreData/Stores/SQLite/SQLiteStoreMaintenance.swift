import Foundation
import GRDB

extension SQLiteStore.Option {
    /// `NSSQLiteManualVacuumOption`: "1" rebuilds the store file when the store is
    /// added, defragmenting it and giving free pages back to the file system
    /// (SQLite's `VACUUM`).
    ///
    /// Deleting many objects leaves their pages free inside the file; the file
    /// only shrinks when it is rebuilt. A rebuild rewrites the whole file, so ask
    /// for it now and then (after a large cleanup), not on every launch.
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .sqlite, at: storeURL,
    ///                                    options: [SQLiteStore.Option.manualVacuum: "1"])
    /// ```
    ///
    /// Ignored by other stores, and by a store opened read-only.
    public static let manualVacuum = "NSSQLiteManualVacuumOption"

    /// `NSSQLiteAnalyzeOption`: "1" gathers statistics about the store's tables
    /// and indexes when the store is added, which SQLite's query planner uses to
    /// choose between indexes (SQLite's `ANALYZE`).
    ///
    /// ```swift
    /// try coordinator.addPersistentStore(type: .sqlite, at: storeURL,
    ///                                    options: [SQLiteStore.Option.analyze: "1"])
    /// ```
    ///
    /// Ignored by other stores, and by a store opened read-only.
    public static let analyze = "NSSQLiteAnalyzeOption"
}

extension SQLiteStore {
    /// Runs the maintenance the store's `options` ask for as it opens
    /// (``Option/manualVacuum``, ``Option/analyze``), on the store's own
    /// connection. A failure is an error of opening the store.
    func performOpeningMaintenance(options: [String: String]) throws {
        guard !isReadOnly else { return }
        let vacuum = Option.isOn(options[Option.manualVacuum])
        let analyze = Option.isOn(options[Option.analyze])
        guard vacuum || analyze else { return }
        do {
            // `VACUUM` runs outside any transaction: the connection's held read
            // transaction is given up first.
            try queue.writeWithoutTransaction { db in
                heldRead.release(db)
                if vacuum {
                    try db.execute(sql: "VACUUM")
                    // In WAL mode the rebuilt pages go to the WAL: copy them back
                    // now, so that the file itself shrinks.
                    try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                }
                if analyze { try db.execute(sql: "ANALYZE") }
            }
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: vacuum ? "vacuuming the store" : "analyzing the store")
        }
    }
}
