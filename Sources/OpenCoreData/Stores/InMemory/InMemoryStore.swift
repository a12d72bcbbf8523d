import Foundation
import OpenCoreDataPredicates
import Synchronization

/// A persistent store that keeps its rows in memory (`NSInMemoryStoreType`): fast,
/// and gone when the coordinator goes away. Ideal for tests and caches.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .inMemory)
/// let context = ManagedObjectContext(concurrencyType: .mainQueue)
/// context.persistentStoreCoordinator = coordinator
/// ```
///
/// It evaluates predicates and sort descriptors with the predicate module's
/// evaluator, applies each save atomically, and checks optimistic-locking versions
/// exactly like the SQLite store.
public final class InMemoryStore: PersistentStore {
    public let identifier: String
    /// The scopes of the store's object IDs, with its identifier interned (see `ManagedObjectID`).
    let idScopes: ManagedObjectID.Scopes
    public var type: PersistentStoreType { .inMemory }
    public var url: URL? { nil }
    public let configurationName: String?
    public let isReadOnly: Bool
    let model: ManagedObjectModel

    struct State: Sendable {
        /// Rows by concrete entity name, then primary key.
        var rows: [String: [Int64: RowSnapshot]] = [:]
        /// The last primary key handed out, per root entity.
        var maxPrimaryKey: [String: Int64] = [:]
        var metadata: [String: AttributeValue] = [:]

        func row(_ id: ManagedObjectID) -> RowSnapshot? {
            guard let pk = id.primaryKey else { return nil }
            return rows[id.entity.name]?[pk]
        }
    }

    private let state: Lock<State>

    /// Creates an empty in-memory store for `model`.
    ///
    /// - Parameters:
    ///   - model: The model of the stored objects.
    ///   - configurationName: The model configuration whose entities the store
    ///     holds; nil for all.
    ///   - identifier: The store's identifier (`NSStoreUUID`), part of every
    ///     object ID URI.
    ///   - readOnly: Whether saving to the store is refused.
    public init(model: ManagedObjectModel, configurationName: String? = nil, identifier: String = UUID().uuidString,
                readOnly: Bool = false) {
        self.model = model
        self.identifier = identifier
        self.idScopes = ManagedObjectID.Scopes(storeName: .named(identifier))
        self.configurationName = configurationName
        self.isReadOnly = readOnly
        var initial = State()
        initial.metadata = [
            "NSStoreType": "InMemory",
            "NSStoreUUID": .string(identifier),
            "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionHashes": .dictionary(model.entityVersionHashesByName.mapValues { .data($0) }),
            "NSStoreModelVersionIdentifiers": .array(model.versionIdentifiers.sorted().map { .string($0) }),
        ]
        self.state = Lock(initial)
    }

    public var metadata: [String: AttributeValue] {
        state.withLock { $0.metadata }
    }

    /// Replaces the app's own metadata keys (Core Data's keys are kept).
    ///
    /// - Parameters:
    ///   - value: The value, or nil to remove the key.
    ///   - key: The metadata key.
    public func setMetadataValue(_ value: AttributeValue?, forKey key: String) {
        state.withLock { $0.metadata[key] = value }
    }

    // MARK: Reading

    public func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] {
        let snapshot = state.withLock { $0 }
        let entities = fetch.includesSubentities ? fetch.entity.selfAndDescendants : [fetch.entity]
        var candidates: [RowSnapshot] = []
        for entity in entities {
            guard let rows = snapshot.rows[entity.name] else { continue }
            candidates.append(contentsOf: rows.values)
        }
        candidates.sort { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
        let graph = RowGraph(state: snapshot)
        if let predicate = fetch.predicate {
            candidates = try candidates.filter { row in
                try predicate.evaluate(with: RowObject(row: row, graph: graph))
            }
        }
        if !fetch.sortDescriptors.isEmpty {
            let objects = candidates.map { RowObject(row: $0, graph: graph) }
            candidates = objects.sorted(using: fetch.sortDescriptors).map(\.row)
        }
        if fetch.fetchOffset > 0 { candidates = Array(candidates.dropFirst(fetch.fetchOffset)) }
        if fetch.fetchLimit > 0 { candidates = Array(candidates.prefix(fetch.fetchLimit)) }
        return candidates
    }

    public func count(_ fetch: StoreFetch) throws -> Int {
        var unlimited = fetch
        unlimited.sortDescriptors = []
        return try fetchRows(unlimited).count
    }

    public func row(for objectID: ManagedObjectID) throws -> RowSnapshot? {
        state.withLock { $0.row(objectID) }
    }

    public func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        try state.withLock { state -> [ManagedObjectID] in
            guard let row = state.row(objectID) else {
                throw CoreDataError(.managedObjectReferentialIntegrity,
                                    "The object \(objectID) no longer exists in the store", objectDescription: objectID.description)
            }
            guard let index = objectID.entity.propertyIndex(named: relationship.name), index < row.rowValues.count,
                  case .toMany(let ids) = row.rowValues[index] else { return [] }
            return (ids ?? []).filter { state.row($0) != nil }
        }
    }

    public func newObjectIDs(for entity: EntityDescription, count: Int) throws -> [ManagedObjectID] {
        let root = entity.rootEntity.name
        let first = state.withLock { state -> Int64 in
            let start = (state.maxPrimaryKey[root] ?? 0) + 1
            state.maxPrimaryKey[root] = start + Int64(count) - 1
            return start
        }
        let scope = idScopes.scope(for: entity)
        return (0..<count).map { ManagedObjectID(scope: scope, primaryKey: first + Int64($0)) }
    }

    public func reserveObjectIDs(_ objectIDs: [ManagedObjectID]) throws {
        state.withLock { state in
            for id in objectIDs {
                guard case .permanent(let key) = id.key else { continue }
                let root = id.entity.rootEntity.name
                state.maxPrimaryKey[root] = max(state.maxPrimaryKey[root] ?? 0, key)
            }
        }
    }

    // MARK: Writing

    public func save(_ changes: SaveChanges) throws {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The store \(identifier) is read-only")
        }
        try state.withLock { state in
            var conflicts: [CoreDataError] = []
            for row in changes.updated {
                let current = state.row(row.objectID)
                if current?.version != row.version {
                    conflicts.append(conflict(row.objectID, expected: row.version, found: current?.version))
                }
            }
            for (id, version) in changes.deleted where version > 0 {
                let current = state.row(id)
                if let current, current.version != version {
                    conflicts.append(conflict(id, expected: version, found: current.version))
                }
            }
            if !conflicts.isEmpty {
                throw CoreDataError(.managedObjectMerge, "Optimistic locking failure: \(conflicts.count) object(s) changed in the store since they were read",
                                    underlyingErrors: conflicts)
            }
            var next = state
            for row in changes.inserted {
                guard let pk = row.objectID.primaryKey else {
                    throw CoreDataError(.persistentStoreSave, "Can't insert \(row.objectID): its ID is temporary")
                }
                var stored = row
                stored.version = 1
                stored.rowValues = row.rowValues.mapValues { value in
                    if case .toMany(nil) = value { return .toMany([]) }
                    return value
                }
                next.rows[row.objectID.entity.name, default: [:]][pk] = stored
            }
            for row in changes.updated {
                guard let pk = row.objectID.primaryKey, var stored = next.rows[row.objectID.entity.name]?[pk] else { continue }
                let changed = changes.changedProperties[row.objectID] ?? Array(row.rowValues.indices)
                for index in changed where index < row.rowValues.count && index < stored.rowValues.count {
                    if case .toMany(nil) = row.rowValues[index] { continue }
                    stored.rowValues[index] = row.rowValues[index]
                }
                stored.version += 1
                next.rows[row.objectID.entity.name]?[pk] = stored
            }
            for (id, _) in changes.deleted {
                guard let pk = id.primaryKey else { continue }
                next.rows[id.entity.name]?[pk] = nil
            }
            Self.updateDerivedAttributes(in: &next, model: model)
            state = next
        }
    }

    /// Derived attributes that follow relationships (`rel.attr`, `rel.@count`,
    /// `rel.attr.@sum`), computed again over every row that has one, as the SQLite
    /// store's triggers keep them (the own-row forms come computed with the rows).
    static func updateDerivedAttributes(in state: inout State, model: ManagedObjectModel) {
        // Computed from the saved rows first (no derivation reads another's value),
        // then written.
        var updates: [(entity: String, key: Int64, index: Int, value: AttributeValue)] = []
        for entity in model.entities {
            let derivations = entity.derivations.filter { !$0.form.isOwnRow }
            guard !derivations.isEmpty, let rows = state.rows[entity.name] else { continue }
            for (key, row) in rows {
                for derivation in derivations where derivation.index < row.rowValues.count {
                    updates.append((entity.name, key, derivation.index, derivedValue(derivation.form, of: row, in: state)))
                }
            }
        }
        for update in updates {
            state.rows[update.entity]?[update.key]?.rowValues[update.index] = .attribute(update.value)
        }
    }

    private static func derivedValue(_ form: DerivationForm, of row: RowSnapshot, in state: State) -> AttributeValue {
        switch form {
        case .toOne(let relationship, let key):
            guard case .toOne(let id?)? = row.value(named: relationship), let target = state.row(id) else { return .null }
            return target.value(named: key)?.attributeValue ?? .null
        case .aggregate(let relationship, let key, let aggregate):
            let ids: [ManagedObjectID]
            if case .toMany(let list?)? = row.value(named: relationship) { ids = list } else { ids = [] }
            switch aggregate {
            case .count: return .int(Int64(ids.count))
            case .sum:
                guard let key else { return .null }
                var integer: Int64 = 0, double = 0.0, isDouble = false
                for id in ids {
                    switch state.row(id)?.value(named: key)?.attributeValue {
                    case .int(let value)?: integer &+= value
                    case .double(let value)?: double += value; isDouble = true
                    case .decimal(let value)?: double += NSDecimalNumber(decimal: value).doubleValue; isDouble = true
                    default: continue
                    }
                }
                return isDouble ? .double(double + Double(integer)) : .int(integer)
            }
        case .copy, .transform, .now:
            return .null   // computed with the row as the context saves, never here
        }
    }

    private func conflict(_ id: ManagedObjectID, expected: Int64, found: Int64?) -> CoreDataError {
        let what = found.map { "version \($0) in the store" } ?? "deleted from the store"
        return CoreDataError(.managedObjectMerge, "\(id) was read at version \(expected) but is now \(what)",
                             entityName: id.entityName, objectDescription: id.description)
    }
}

/// Lets predicates and sort descriptors walk the rows of an in-memory state and
/// their relationships.
struct RowGraph: RowSource {
    let state: InMemoryStore.State
    func row(_ id: ManagedObjectID) -> RowSnapshot? { state.row(id) }
    func relatedIDs(of row: RowSnapshot, _ relationship: RelationshipDescription) -> [ManagedObjectID] {
        if case .toMany(let ids?)? = row.value(named: relationship.name) { return ids }
        return []
    }
}
