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
/// the store object that saved, so it ignores its own.
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
    }
    private let state = Lock(State())
    private let queue = DispatchQueue(label: "OpenCoreData.PostgreSQLStore.remoteChanges")

    init(storeIdentifier: String) {
        let hex = storeIdentifier.lowercased().filter { $0.isHexDigit }
        channel = "ocd_" + String(hex.prefix(40))
    }

    /// Starts listening for `store` of `coordinator` (on a connection of its own).
    /// A failure to listen leaves the store working without other servers'
    /// changes arriving by themselves.
    func start(store: PostgreSQLStore, coordinator: PersistentStoreCoordinator) {
        stop()
        guard let connection = try? store.pool.open() else { return }
        let listener = connection.addListener(channel: channel) { [weak self] _, notification in
            guard let self else { return }
            let payload = notification.payload
            self.queue.async { [weak self] in self?.receive(payload) }
        }
        do {
            _ = try connection.query(PostgresQuery(unsafeSQL: "LISTEN \(channel)"), logger: store.pool.logger).wait()
        } catch {
            listener.stop()
            PostgreSQLConnectionPool.close(connection)
            return
        }
        state.withLock { state in
            state.connection = connection
            state.listener = listener
            state.store = store
            state.coordinator = coordinator
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

    /// Adds the `NOTIFY`s of `changes` to the save's transaction.
    func announce(_ changes: SaveChanges, of store: PostgreSQLStore, _ session: PostgreSQLSession) throws {
        try announce(inserted: changes.inserted.map(\.objectID), updated: changes.updated.map(\.objectID),
                     deleted: changes.deleted.map(\.0), of: store, session)
    }

    /// Adds the `NOTIFY`s of changed IDs to the transaction of `session`.
    func announce(inserted: [ManagedObjectID] = [], updated: [ManagedObjectID] = [], deleted: [ManagedObjectID] = [],
                  of store: PostgreSQLStore, _ session: PostgreSQLSession) throws {
        var parts: [String] = []
        func group(_ kind: Character, _ ids: [ManagedObjectID], store: PostgreSQLStore) {
            var byEntity: [Int: [Int64]] = [:]
            var order: [Int] = []
            for id in ids {
                guard let key = id.primaryKey, let number = store.schema.entityNumber(id.entity) else { continue }
                if byEntity[number] == nil { order.append(number) }
                byEntity[number, default: []].append(key)
            }
            for number in order {
                // Long lists are split so that each part fits in a payload.
                let keys = byEntity[number] ?? []
                for first in stride(from: 0, to: keys.count, by: 500) {
                    let chunk = keys[first..<min(keys.count, first + 500)]
                    parts.append("\(kind)\(number)=" + chunk.map(String.init).joined(separator: ","))
                }
            }
        }
        group("i", inserted, store: store)
        group("u", updated, store: store)
        group("d", deleted, store: store)
        try send(parts, session)
    }

    /// Sends `parts` in as few payloads as fit PostgreSQL's limit, all with one
    /// statement (the payloads are one array parameter).
    private func send(_ parts: [String], _ session: PostgreSQLSession) throws {
        var payloads: [String] = []
        var payload = origin
        for part in parts {
            if payload.utf8.count + part.utf8.count + 1 > PostgreSQLRemoteChanges.payloadLimit, payload != origin {
                payloads.append(payload)
                payload = origin
            }
            payload += " " + part
        }
        if payload != origin { payloads.append(payload) }
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
        for word in words.dropFirst() {
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
                changes[key, default: []].append(ManagedObjectID(entity: entity, storeIdentifier: store.identifier, primaryKey: pk))
            }
        }
        guard !changes.isEmpty else { return }
        coordinator.mergeRemoteChanges(changes)
        NotificationCenter.default.post(name: .persistentStoreRemoteChange, object: coordinator,
                                        userInfo: [PersistentStoreRemoteChangeKey.storeUUID: store.identifier])
    }
}
