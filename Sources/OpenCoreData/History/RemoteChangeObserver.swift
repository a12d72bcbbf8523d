import Foundation
import GRDB
import Synchronization

extension Notification.Name {
    /// Posted when a store opened with ``NSPersistentStoreRemoteChangeNotificationPostOptionKey``
    /// changes (`NSPersistentStoreRemoteChangeNotification`): after this
    /// coordinator's own saves, and — found by polling SQLite's `PRAGMA
    /// data_version` — after saves by other coordinators or processes on the same
    /// file. `object` is the coordinator; `userInfo` holds the store's URL
    /// (``PersistentStoreRemoteChangeKey/storeURL``), UUID and, when the store
    /// tracks history, the current ``PersistentHistoryToken``.
    ///
    /// ```swift
    /// let options = [NSPersistentHistoryTrackingKey: "1", NSPersistentStoreRemoteChangeNotificationPostOptionKey: "1"]
    /// try coordinator.addPersistentStore(type: .sqlite, at: url, options: options)
    /// for await note in NotificationCenter.default.notifications(named: .persistentStoreRemoteChange) {
    ///     let token = note.userInfo?[PersistentStoreRemoteChangeKey.historyToken] as? PersistentHistoryToken
    ///     // fetch history after the last token you processed…
    /// }
    /// ```
    public static let persistentStoreRemoteChange = Notification.Name("NSPersistentStoreRemoteChangeNotification")
}

/// The `userInfo` keys of `Notification.Name.persistentStoreRemoteChange`, as Core Data names them.
public enum PersistentStoreRemoteChangeKey {
    /// The store's file URL (`NSPersistentStoreURLKey`).
    public static let storeURL = "storeURL"
    /// The store's history token after the change (`NSPersistentHistoryTokenKey`),
    /// when the store tracks history.
    public static let historyToken = "historyToken"
    /// The store's UUID (`NSStoreUUIDKey`).
    public static let storeUUID = "NSStoreUUID"
}

/// Watches one SQLite store for changes and posts `.persistentStoreRemoteChange`.
///
/// Other writers are found by polling `PRAGMA data_version` on the store's own
/// connection (a cheap read that changes only when another connection commits)
/// from a timer on a utility queue; the store's own saves post directly. The
/// timer starts when the store is added to a coordinator and stops when it is
/// removed or the store goes away.
final class RemoteChangeObserver: Sendable {
    private struct State {
        var timer: DispatchSourceTimer?
        var lastVersion: Int?
        weak var coordinator: PersistentStoreCoordinator?
        weak var store: SQLiteStore?
    }

    private let queue: DatabaseQueue
    /// The store connection's held read transaction, given up before asking: its
    /// snapshot does not see other connections' commits.
    private let heldRead: SQLiteHeldRead
    private let interval: Double
    private let state = Lock(State())

    init(queue: DatabaseQueue, heldRead: SQLiteHeldRead, interval: Double) {
        self.queue = queue
        self.heldRead = heldRead
        self.interval = max(0.01, interval)
    }

    deinit {
        state.withLock { $0.timer?.cancel() }
    }

    /// Starts polling for `store` of `coordinator`.
    func start(store: SQLiteStore, coordinator: PersistentStoreCoordinator) {
        let version = currentVersion()
        let interval = self.interval
        state.withLock { state in
            state.timer?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .utility))
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.resume()
            state.timer = timer
            state.lastVersion = version
            state.coordinator = coordinator
            state.store = store
        }
    }

    /// Stops polling; no more notifications are posted.
    func stop() {
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            state.coordinator = nil
            state.store = nil
        }
    }

    /// Posts for a save made through the store itself.
    func storeDidSave(_ store: SQLiteStore) {
        guard let coordinator = state.withLock({ $0.timer == nil ? nil : $0.coordinator }) else { return }
        post(store, coordinator)
    }

    private func currentVersion() -> Int? {
        try? queue.unsafeRead { db in
            heldRead.release(db)
            return try Int.fetchOne(db, sql: "PRAGMA data_version")
        }
    }

    private func poll() {
        guard let version = currentVersion() else { return }
        let target = state.withLock { state -> (SQLiteStore, PersistentStoreCoordinator)? in
            guard state.timer != nil, let store = state.store, let coordinator = state.coordinator else { return nil }
            defer { state.lastVersion = version }
            return state.lastVersion != nil && state.lastVersion != version ? (store, coordinator) : nil
        }
        if let (store, coordinator) = target { post(store, coordinator) }
    }

    private func post(_ store: SQLiteStore, _ coordinator: PersistentStoreCoordinator) {
        var info: [String: Any] = [PersistentStoreRemoteChangeKey.storeUUID: store.identifier]
        if let url = store.url { info[PersistentStoreRemoteChangeKey.storeURL] = url }
        if store.isTrackingHistory, let token = try? store.currentHistoryToken() {
            info[PersistentStoreRemoteChangeKey.historyToken] = token
        }
        NotificationCenter.default.post(name: .persistentStoreRemoteChange, object: coordinator, userInfo: info)
    }
}
