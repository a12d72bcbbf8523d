import Foundation

extension PersistentStoreCoordinator {
    /// Deletes the SQLite store at `url` — the database, its `-wal` and `-shm`
    /// files and its support folder of external binary data — removing it from
    /// the coordinator first if it is open here (`destroyPersistentStore(at:type:options:)`).
    /// A store that does not exist is not an error.
    ///
    /// ```swift
    /// try coordinator.destroyPersistentStore(at: url, type: .sqlite)
    /// ```
    ///
    /// Other coordinators (or processes) that have the store open keep reading the
    /// deleted files until they close them.
    ///
    /// - Parameters:
    ///   - url: The store's file.
    ///   - type: The store's type; for a type other than ``PersistentStoreType/sqlite``
    ///     the store is only removed from the coordinator.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/persistentStoreOperation`` (134070) when a file
    ///   cannot be deleted.
    public func destroyPersistentStore(at url: URL, type: PersistentStoreType) throws {
        for store in persistentStores where store.type == type && store.url?.standardizedFileURL == url.standardizedFileURL {
            remove(store)
        }
        guard type == .sqlite else { return }
        try Self.destroyStoreFiles(at: url)
    }

    /// Deletes an SQLite store's files: the database, `-wal`, `-shm`, `-journal`
    /// and the `.<name>_SUPPORT` folder beside it.
    static func destroyStoreFiles(at url: URL) throws {
        let manager = FileManager.default
        let name = url.deletingPathExtension().lastPathComponent
        let support = url.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT", isDirectory: true)
        let files = [url.path, url.path + "-wal", url.path + "-shm", url.path + "-journal", support.path]
        do {
            for path in files where manager.fileExists(atPath: path) {
                try manager.removeItem(atPath: path)
            }
        } catch {
            throw CoreDataError(.persistentStoreOperation, "Could not delete the store at \(url.path): \(error.localizedDescription)", url: url)
        }
    }
}
