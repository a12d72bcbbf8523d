import Foundation

/// What a registered store type is given to open a store: the coordinator's
/// model, the configuration, the URL and the options of
/// ``PersistentStoreCoordinator/addPersistentStore(type:configuration:at:options:)``.
public struct PersistentStoreRequest: Sendable {
    /// The coordinator's model (frozen).
    public let model: ManagedObjectModel
    /// The model configuration whose entities the store holds (nil: all).
    public let configurationName: String?
    /// The store's location.
    public let url: URL?
    /// Core Data's store options and the store type's own.
    public let options: [String: String]
}

extension PersistentStoreCoordinator {
    /// The store types added with ``registerStoreType(_:factory:)``.
    static let registeredStoreTypes = Lock<[PersistentStoreType: @Sendable (PersistentStoreRequest) throws -> any PersistentStore]>([:])

    /// Makes `type` a store type that
    /// ``addPersistentStore(type:configuration:at:options:)`` (and so
    /// ``PersistentStoreDescription`` and ``PersistentContainer``) can open, as
    /// Core Data's `NSPersistentStoreCoordinator.registerStoreClass(_:type:)` does
    /// for a custom store class. Registering a type again replaces its factory.
    ///
    /// ```swift
    /// extension PersistentStoreType {
    ///     static let journal = PersistentStoreType(rawValue: "Journal")
    /// }
    /// PersistentStoreCoordinator.registerStoreType(.journal) { request in
    ///     try JournalStore(url: request.url, model: request.model, options: request.options)
    /// }
    /// try coordinator.addPersistentStore(type: .journal, at: journalURL)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The store type; ``PersistentStoreType/sqlite`` and
    ///     ``PersistentStoreType/inMemory`` are built in and cannot be replaced.
    ///   - factory: Opens a store for a request; its errors are those of
    ///     `addPersistentStore`.
    public static func registerStoreType(_ type: PersistentStoreType,
                                         factory: @escaping @Sendable (PersistentStoreRequest) throws -> any PersistentStore) {
        precondition(type != .sqlite && type != .inMemory, "OpenCoreData: the \(type.rawValue) store type is built in")
        registeredStoreTypes.withLock { $0[type] = factory }
    }

    /// Merges changes another coordinator made to a store (another process, or
    /// another server on a shared database) into this coordinator's contexts that
    /// merge automatically (``ManagedObjectContext/automaticallyMergesChangesFromParent``),
    /// each on its own queue, without waiting for them. Stores that learn of
    /// other writers' saves call it; the row cache is emptied first, so faults
    /// read the new rows.
    ///
    /// - Parameter changes: The IDs of the inserted, updated and deleted objects,
    ///   by the keys of ``RemoteChangeKey``.
    package func mergeRemoteChanges(_ changes: [String: [ManagedObjectID]]) {
        forgetCachedRows()
        let targets = mergeTargets.withLock { $0.values.compactMap(\.context) }
        guard !targets.isEmpty else { return }
        let summary = ContextSaveSummary(insertedObjectIDs: Set(changes[RemoteChangeKey.inserted] ?? []),
                                         updatedObjectIDs: Set(changes[RemoteChangeKey.updated] ?? []),
                                         deletedObjectIDs: Set(changes[RemoteChangeKey.deleted] ?? []))
        for target in targets {
            target.perform { target.mergeChanges(from: summary) }
        }
    }

    /// Merges another coordinator's deletion of every row of `entities` in the
    /// store `storeIdentifier` (a batch delete of whole tables, announced without
    /// its keys): each context that merges automatically asks `stillExisting`
    /// which of its registered objects of those entities still have a row (one
    /// inserted since would), and merges the others as deleted. When the check
    /// fails, the context refreshes its objects instead.
    ///
    /// - Parameters:
    ///   - entities: The entities whose rows were all deleted.
    ///   - storeIdentifier: The store's identifier.
    ///   - stillExisting: The IDs among those given whose rows exist now.
    package func mergeRemoteDeletionOfAll(_ entities: [EntityDescription], storeIdentifier: String,
                                          stillExisting: @escaping @Sendable ([ManagedObjectID]) throws -> Set<ManagedObjectID>) {
        forgetCachedRows()
        let targets = mergeTargets.withLock { $0.values.compactMap(\.context) }
        let kinds = Set(entities.map(ObjectIdentifier.init))
        for target in targets {
            target.perform {
                let candidates = target.registry.objects.map(\.objectID).filter {
                    $0.storeIdentifier == storeIdentifier && kinds.contains(ObjectIdentifier($0.entity))
                }
                guard !candidates.isEmpty else { return }
                guard let existing = try? stillExisting(candidates) else {
                    target.refreshAllObjects()
                    return
                }
                let deleted = Set(candidates).subtracting(existing)
                guard !deleted.isEmpty else { return }
                target.mergeChanges(from: ContextSaveSummary(insertedObjectIDs: [], updatedObjectIDs: [], deletedObjectIDs: deleted))
            }
        }
    }

    /// Tells this coordinator's contexts that merge automatically that changes
    /// may have been made that no one announced (a store stopped hearing other
    /// writers for a while): the row cache is emptied and each context refreshes
    /// its objects (``ManagedObjectContext/refreshAllObjects()``: objects without
    /// unsaved changes become faults and read their rows again).
    package func refreshAfterMissedRemoteChanges() {
        forgetCachedRows()
        let targets = mergeTargets.withLock { $0.values.compactMap(\.context) }
        for target in targets {
            target.perform { target.refreshAllObjects() }
        }
    }
}
