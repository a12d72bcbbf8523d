import Foundation
import GRDB
import OpenCoreData
import PostgresNIO

/// Saves announced and heard through PostgreSQL's `NOTIFY` and `LISTEN`.
///
/// Each save adds, inside its transaction, one `pg_notify` per chunk of changed
/// IDs on the store's channel (`ocd_` + the store UUID); PostgreSQL delivers them
/// when the transaction commits, and never for one that rolls back. A payload is
/// `<origin> i<entity>=<pk>,<pk> u<entity>=... d<entity>=...`, the origin naming
/// the store object that saved, so it ignores its own; a batch delete of whole
/// tables sends `D<entity>,<entity>` (every row of those entities).
///
/// Every store listens on a connection of its own while it belongs to a
/// coordinator. A notification is handed off the event loop to a serial queue,
/// which merges the IDs into the coordinator's contexts that merge automatically
/// (``PersistentStoreCoordinator/mergeRemoteChanges(_:)``) and posts
/// `Notification.Name.persistentStoreRemoteChange`.
final class PostgreSQLRemoteChanges: Sendable {
    /// The channel: an identifier made from the store UUID (hex digits only).
    let channel: String
    /// This store object's name in payloads.
    let origin = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    /// The most bytes of IDs in one payload (PostgreSQL's limit is 8000).
    static let payloadLimit = 7_000

    private struct State {
        var connection: PostgresConnection?
        var listener: PostgresListenContext?
        weak var store: PostgreSQLStore?
        weak var coordinator: PersistentStoreCoordinator?
        /// Whether the store listens (between `start` and `stop`), so that a
        /// connection that closes by itself is opened again.
        var isListening = false
        /// How many times a closed listening connection was replaced.
        var reconnections = 0
    }
    private let state = Lock(State())
    private let queue = DispatchQueue(label: "OpenCoreData.PostgreSQLStore.remoteChanges")
    /// The longest wait between two attempts to listen again.
    static let longestRetryDelay: TimeInterval = 5

    init(storeIdentifier: String) {
        let hex = storeIdentifier.lowercased().filter { $0.isHexDigit }
        channel = "ocd_" + String(hex.prefix(40))
    }

    /// Starts listening for `store` of `coordinator` (on a connection of its own).
    /// When that connection closes without `stop()` (the server restarted, the
    /// network dropped it), the store listens again on a new one, retrying with
    /// growing waits; the changes announced meanwhile are lost, so each context
    /// that merges automatically then refreshes every object it holds. A failure
    /// to listen at the start leaves the store working without other servers'
    /// changes arriving by themselves.
    func start(store: PostgreSQLStore, coordinator: PersistentStoreCoordinator) {
        stop()
        state.withLock { state in
            state.store = store
            state.coordinator = coordinator
            state.isListening = true
        }
        if !listen() { stop() }
    }

    /// Opens the listening connection; false when it cannot.
    private func listen() -> Bool {
        guard let store = state.withLock({ $0.store }), let connection = try? store.pool.open() else { return false }
        let listener = connection.addListener(channel: channel) { [weak self] _, notification in
            guard let self else { return }
            let payload = notification.payload
            // Rows read ahead before this change may predate it.
            self.state.withLock { $0.store }?.pool.invalidateReadAhead()
            self.queue.async { [weak self] in self?.receive(payload) }
        }
        do {
            _ = try connection.query(PostgresQuery(unsafeSQL: "LISTEN \(channel)"), logger: store.pool.logger).wait()
        } catch {
            listener.stop()
            PostgreSQLConnectionPool.close(connection)
            return false
        }
        let kept = state.withLock { state -> Bool in
            guard state.isListening else { return false }
            state.connection = connection
            state.listener = listener
            return true
        }
        guard kept else {
            // Stopped meanwhile.
            listener.stop()
            PostgreSQLConnectionPool.close(connection)
            return true
        }
        connection.closeFuture.whenComplete { [weak self] _ in
            guard let self else { return }
            self.queue.async { [weak self] in self?.connectionClosed(connection) }
        }
        return true
    }

    /// Listens again after the listening connection closed by itself.
    private func connectionClosed(_ connection: PostgresConnection) {
        let lost = state.withLock { state -> Bool in
            guard state.isListening, state.connection === connection else { return false }
            state.connection = nil
            state.listener = nil
            return true
        }
        if lost { relisten(after: 0.05) }
    }

    private func relisten(after delay: TimeInterval) {
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, self.state.withLock({ $0.isListening && $0.connection == nil }) else { return }
            guard self.listen() else {
                self.relisten(after: min(delay * 2, PostgreSQLRemoteChanges.longestRetryDelay))
                return
            }
            // Announcements sent while no connection listened are lost.
            let (store, coordinator) = self.state.withLock { state in
                state.reconnections += 1
                return (state.store, state.coordinator)
            }
            guard let store, let coordinator else { return }
            store.pool.invalidateReadAhead()
            coordinator.refreshAfterMissedRemoteChanges()
            NotificationCenter.default.post(name: .persistentStoreRemoteChange, object: coordinator,
                                            userInfo: [PersistentStoreRemoteChangeKey.storeUUID: store.identifier])
        }
    }

    /// Stops listening and closes the listening connection.
    func stop() {
        let (connection, listener) = state.withLock { state -> (PostgresConnection?, PostgresListenContext?) in
            defer { state = State() }
            return (state.connection, state.listener)
        }
        listener?.stop()
        if let connection { PostgreSQLConnectionPool.close(connection) }
    }

    /// Whether a connection listens now (false while the store listens again).
    var isConnected: Bool { state.withLock { $0.connection != nil } }
    /// How many times a closed listening connection was replaced.
    var reconnections: Int { state.withLock { $0.reconnections } }

    /// Adds the `NOTIFY`s of `changes` to the save's transaction.
    func announce(_ changes: SaveChanges, historyTransaction: Int64? = nil, of store: PostgreSQLStore, _ session: PostgreSQLSession) throws {
        try announce(inserted: changes.inserted.map(\.objectID), updated: changes.updated.map(\.objectID),
                     deleted: changes.deleted.map(\.0), historyTransaction: historyTransaction, of: store, session)
    }

    /// Adds the `NOTIFY`s of changed IDs to the transaction of `session`.
    func announce(inserted: [ManagedObjectID] = [], updated: [ManagedObjectID] = [], deleted: [ManagedObjectID] = [],
                  historyTransaction: Int64? = nil, of store: PostgreSQLStore, _ session: PostgreSQLSession) throws {
        var parts: [String] = []
        func group(_ kind: Character, _ ids: [ManagedObjectID], store: PostgreSQLStore) {
            var byEntity: [Int: [Int64]] = [:]
            var order: [Int] = []
            var last: (entity: EntityDescription, number: Int?)?
            for id in ids {
                let number: Int?
                if let last, id.hasEntity(last.entity) {
                    number = last.number
                } else {
                    number = store.schema.entityNumber(id.entity)
                    last = (id.entity, number)
                }
                guard let key = id.primaryKey, let number else { continue }
                if byEntity[number] == nil { order.append(number) }
                byEntity[number, default: []].append(key)
            }
            for number in order {
                // Long lists are split so that each part fits in a payload.
                let keys = byEntity[number] ?? []
                for first in stride(from: 0, to: keys.count, by: 500) {
                    let chunk = keys[first..<min(keys.count, first + 500)]
                    parts.append("\(kind)\(number)=" + Self.commaSeparated(chunk))
                }
            }
        }
        group("i", inserted, store: store)
        group("u", updated, store: store)
        group("d", deleted, store: store)
        // Every payload names the save's history transaction (`t<number>`), so
        // that each notification can carry the history token.
        try send(parts, header: historyTransaction.map { origin + " t\($0)" } ?? origin, session)
    }

    /// `keys` in decimal, separated by commas (`12,7,-3`): the digits written
    /// straight into one buffer (a string per key cost a large save's
    /// announcement as much as its `DELETE`'s planning).
    static func commaSeparated(_ keys: ArraySlice<Int64>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(keys.count * 8)
        var digits: [UInt8] = Array(repeating: 0, count: 20)
        for (index, key) in keys.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            if key < 0 { bytes.append(UInt8(ascii: "-")) }
            var rest = key.magnitude
            var count = 0
            repeat {
                digits[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            while count > 0 {
                count -= 1
                bytes.append(digits[count])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Adds the `NOTIFY` of the deletion of every row of the entities numbered
    /// `entityNumbers` to the transaction of `session` (`D<n>,<n>`): receivers
    /// check which of their objects of those entities still exist.
    func announceDeletionOfAll(entityNumbers: [Int], _ session: PostgreSQLSession) throws {
        guard !entityNumbers.isEmpty else { return }
        try send(["D" + entityNumbers.map(String.init).joined(separator: ",")], session)
    }

    /// Sends `parts` in as few payloads as fit PostgreSQL's limit, all with one
    /// statement (the payloads are one array parameter).
    private func send(_ parts: [String], header: String? = nil, _ session: PostgreSQLSession) throws {
        let header = header ?? origin
        var payloads: [String] = []
        var payload = header
        for part in parts {
            if payload.utf8.count + part.utf8.count + 1 > PostgreSQLRemoteChanges.payloadLimit, payload != header {
                payloads.append(payload)
                payload = header
            }
            payload += " " + part
        }
        if payload != header { payloads.append(payload) }
        switch payloads.count {
        case 0:
            return
        case 1:
            try session.execute("SELECT pg_notify(?, ?)", [channel.databaseValue, payloads[0].databaseValue])
        default:
            var bindings = PostgresBindings(capacity: 2)
            bindings.append(channel)
            bindings.append(payloads)
            try session.execute(numbered: "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", bindings: bindings)
        }
    }

    /// Merges one payload from another store object.
    private func receive(_ payload: String) {
        let words = payload.split(separator: " ")
        guard let first = words.first, first != origin[...] else { return }
        let (store, coordinator) = state.withLock { ($0.store, $0.coordinator) }
        guard let store, let coordinator else { return }
        var changes: [String: [ManagedObjectID]] = [:]
        var deletedEntities: [EntityDescription] = []
        var historyTransaction: Int64?
        for word in words.dropFirst() {
            if word.first == "t" {
                historyTransaction = Int64(word.dropFirst())
                continue
            }
            if word.first == "D" {
                deletedEntities += word.dropFirst().split(separator: ",").compactMap { Int($0).flatMap(store.entity(forNumber:)) }
                continue
            }
            guard let kind = word.first, let equals = word.firstIndex(of: "="),
                  let number = Int(word[word.index(after: word.startIndex)..<equals]),
                  let entity = store.entity(forNumber: number) else { continue }
            let key: String
            switch kind {
            case "i": key = RemoteChangeKey.inserted
            case "u": key = RemoteChangeKey.updated
            case "d": key = RemoteChangeKey.deleted
            default: continue
            }
            for text in word[word.index(after: equals)...].split(separator: ",") {
                guard let pk = Int64(text) else { continue }
                changes[key, default: []].append(ManagedObjectID(entity: entity, in: store.idScopes, primaryKey: pk))
            }
        }
        if !deletedEntities.isEmpty {
            coordinator.mergeRemoteDeletionOfAll(deletedEntities, storeIdentifier: store.identifier) { [weak store] ids in
                guard let store else { return Set(ids) }
                return try store.existingObjectIDs(ids)
            }
        }
        guard !changes.isEmpty || !deletedEntities.isEmpty else { return }
        if !changes.isEmpty { coordinator.mergeRemoteChanges(changes) }
        var info: [String: Any] = [PersistentStoreRemoteChangeKey.storeUUID: store.identifier]
        if let historyTransaction {
            info[PersistentStoreRemoteChangeKey.historyToken] = PersistentHistoryToken(storeIdentifier: store.identifier,
                                                                                    transactionNumber: historyTransaction)
        }
        NotificationCenter.default.post(name: .persistentStoreRemoteChange, object: coordinator, userInfo: info)
    }
}
