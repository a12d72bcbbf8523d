import Foundation

/// How a save resolves conflicts with changes others saved meanwhile
/// (`NSMergePolicy`).
///
/// A context reads an object at one version of its row (`Z_OPT`); when it saves
/// changes to that object and the stored row has moved on — another context or
/// process saved it — the save meets an *optimistic locking conflict*. The
/// context's ``ManagedObjectContext/mergePolicy`` decides what happens:
///
/// | Policy | Outcome |
/// |---|---|
/// | ``error`` (the default) | the save fails with ``CoreDataError/Code/managedObjectMerge`` (133020), one underlying error per conflict; nothing is written |
/// | ``mergeByPropertyStoreTrump`` | per property: what changed in the store wins, the object's other changes are saved |
/// | ``mergeByPropertyObjectTrump`` | per property: what the object changed wins, the store's other changes are kept |
/// | ``overwrite`` | the object's state is written as a whole, replacing the stored row |
/// | ``rollback`` | the object's changes are dropped, it takes the stored state |
///
/// ```swift
/// let context = container.newBackgroundContext()
/// context.mergePolicy = .mergeByPropertyObjectTrump
/// try await context.perform { try context.save() }   // never fails on a conflict
/// ```
///
/// Subclass it to decide yourself: override ``resolve(optimisticLockingConflicts:)``,
/// change the objects of the conflicts (or call `super` for a built-in
/// behaviour), and the context writes them; throw to make the save fail.
///
/// ```swift
/// final class KeepHighestRating: MergePolicy {
///     override func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
///         try super.resolve(optimisticLockingConflicts: conflicts)   // by property, object trump
///         for conflict in conflicts {
///             let stored = conflict.persistedSnapshot?["rating"] as? Int ?? 0
///             let mine = conflict.sourceObject.value(forKey: "rating") as? Int ?? 0
///             conflict.sourceObject.setValue(max(stored, mine), forKey: "rating")
///         }
///     }
/// }
/// context.mergePolicy = KeepHighestRating(merge: .mergeByPropertyObjectTrump)
/// ```
///
/// An object deleted from the store meanwhile cannot be updated: with every policy
/// but ``error`` it is removed from the context and from the save. An object this
/// context deletes while the store changed it stays deleted, except with
/// ``rollback``, which restores it with the stored values. Relationship values are
/// resolved property by property like attributes; the inverse on the objects at
/// the other end is the one each side saved.
///
/// `@unchecked Sendable`: a policy is shared by contexts on any queue, and the
/// built-in one holds nothing but its immutable ``mergeType``. Subclasses must keep
/// to immutable state too (policies are called on the saving context's queue, and
/// one may be set on several contexts).
open class MergePolicy: @unchecked Sendable {
    /// The built-in behaviours (`NSMergePolicyType`).
    public enum MergeType: Sendable, Hashable {
        /// Conflicts make the save fail (`NSErrorMergePolicyType`).
        case error
        /// Changes in the store win per property (`NSMergeByPropertyStoreTrumpMergePolicyType`).
        case mergeByPropertyStoreTrump
        /// The object's changes win per property (`NSMergeByPropertyObjectTrumpMergePolicyType`).
        case mergeByPropertyObjectTrump
        /// The object replaces the stored row (`NSOverwriteMergePolicyType`).
        case overwrite
        /// The object's changes are dropped (`NSRollbackMergePolicyType`).
        case rollback
    }

    /// The policy's built-in behaviour.
    public let mergeType: MergeType

    /// A policy of the given type (`init(merge:)`).
    ///
    /// - Parameter type: The built-in behaviour.
    public init(merge type: MergeType) {
        mergeType = type
    }

    /// Conflicts make the save fail (`NSErrorMergePolicy`), the default.
    public static let error = MergePolicy(merge: .error)
    /// Store changes win per property (`NSMergeByPropertyStoreTrumpMergePolicy`).
    public static let mergeByPropertyStoreTrump = MergePolicy(merge: .mergeByPropertyStoreTrump)
    /// Object changes win per property (`NSMergeByPropertyObjectTrumpMergePolicy`).
    public static let mergeByPropertyObjectTrump = MergePolicy(merge: .mergeByPropertyObjectTrump)
    /// The object overwrites the stored row (`NSOverwriteMergePolicy`).
    public static let overwrite = MergePolicy(merge: .overwrite)
    /// The object's changes are dropped (`NSRollbackMergePolicy`).
    public static let rollback = MergePolicy(merge: .rollback)

    /// Resolves the optimistic locking conflicts of a save, before the context
    /// tries again: the built-in behaviour of ``mergeType``. Throwing makes the
    /// save fail with that error (nothing is written).
    ///
    /// - Parameter conflicts: The objects whose stored rows changed since they
    ///   were read.
    /// - Throws: With ``MergeType/error``, ``CoreDataError`` with code
    ///   ``CoreDataError/Code/managedObjectMerge`` (133020), one underlying error
    ///   per conflict.
    open func resolve(optimisticLockingConflicts conflicts: [MergeConflict]) throws {
        guard mergeType != .error else {
            throw CoreDataError(.managedObjectMerge, "Optimistic locking failure: \(conflicts.count) object(s) changed in the store since they were read",
                                underlyingErrors: conflicts.map(\.error))
        }
        for conflict in conflicts {
            conflict.sourceObject.managedObjectContext?.apply(conflict, mergeType)
        }
    }

    /// Resolves the uniqueness-constraint conflicts of a save, before the context
    /// tries again: the built-in behaviour of ``mergeType`` (see
    /// ``ConstraintConflict``). Throwing makes the save fail with that error
    /// (nothing is written).
    ///
    /// - Parameter conflicts: The objects sharing the values of a uniqueness
    ///   constraint, with each other or with a stored row.
    /// - Throws: With ``MergeType/error``, ``CoreDataError`` with code
    ///   ``CoreDataError/Code/managedObjectConstraintMerge`` (133021), one
    ///   underlying error per conflict.
    open func resolve(constraintConflicts conflicts: [ConstraintConflict]) throws {
        guard mergeType != .error else {
            throw CoreDataError(.managedObjectConstraintMerge, "Uniqueness constraint failure: \(conflicts.count) conflict(s)",
                                underlyingErrors: conflicts.map(\.error))
        }
        for conflict in conflicts {
            (conflict.databaseObject ?? conflict.conflictingObjects.first)?.managedObjectContext?.apply(conflict, mergeType)
        }
    }
}

/// An optimistic locking conflict: an object this context saves whose stored row
/// changed since the context read it (`NSMergeConflict`).
///
/// Snapshots are dictionaries of property values by name, as ``ManagedObject/value(forKey:)``
/// returns them but with relationships as ``ManagedObjectID``s (a `Set` for to-many, an
/// array for ordered ones) and `nil` values left out.
public final class MergeConflict {
    /// The object in conflict.
    public let sourceObject: ManagedObject
    /// The object's current values, with its unsaved changes.
    public let objectSnapshot: [String: Any]?
    /// The values the context read, its version ``oldVersionNumber``.
    public let cachedSnapshot: [String: Any]?
    /// The values in the store now, nil when the object was deleted from it.
    public let persistedSnapshot: [String: Any]?
    /// The stored version (`Z_OPT`), 0 when the object was deleted from the store.
    public let newVersionNumber: Int
    /// The version the context read.
    public let oldVersionNumber: Int

    let persistedRow: RowSnapshot?

    init(object: ManagedObject, persisted: RowSnapshot?) {
        sourceObject = object
        objectSnapshot = object.storage.map { MergeConflict.snapshot($0, object.entity) }
        cachedSnapshot = object.committed.map { MergeConflict.snapshot($0.rowValues, object.entity) }
        persistedSnapshot = persisted.map { MergeConflict.snapshot($0.rowValues, object.entity) }
        newVersionNumber = Int(persisted?.version ?? 0)
        oldVersionNumber = Int(object.committed?.version ?? 0)
        persistedRow = persisted
    }

    var error: CoreDataError {
        let id = sourceObject.objectID
        let what = persistedRow == nil ? "deleted from the store" : "version \(newVersionNumber) in the store"
        return CoreDataError(.managedObjectMerge, "\(id) was read at version \(oldVersionNumber) but is now \(what)",
                             entityName: id.entityName, objectDescription: id.description)
    }

    static func snapshot(_ values: RowValues, _ entity: EntityDescription) -> [String: Any] {
        var result: [String: Any] = [:]
        for (index, property) in entity.allProperties.enumerated() where index < values.count {
            switch values[index] {
            case .attribute(let value):
                if let native = value.nativeValue { result[property.name] = native }
            case .toOne(let id):
                if let id { result[property.name] = id }
            case .toMany(let ids?):
                result[property.name] = (property as? RelationshipDescription)?.isOrdered == true ? ids as Any : Set(ids) as Any
            case .toMany(nil):
                continue
            }
        }
        return result
    }
}

extension ManagedObjectContext {
    /// Saves, resolving optimistic locking conflicts with ``mergePolicy`` and
    /// trying again (a few times: others may keep saving meanwhile).
    func saveResolvingConflicts() throws {
        var attempts = 0
        while true {
            processPendingChanges()
            let constraintConflicts = try uniquenessConflicts()
            if !constraintConflicts.isEmpty {
                attempts += 1
                if attempts > 4 || mergePolicy === MergePolicy.error {
                    if mergePolicy === MergePolicy.error { try mergePolicy.resolve(constraintConflicts: constraintConflicts) }
                    throw CoreDataError(.managedObjectConstraintMerge, "Uniqueness constraint conflicts remain after resolving them",
                                        underlyingErrors: constraintConflicts.map(\.error))
                }
                try mergePolicy.resolve(constraintConflicts: constraintConflicts)
                continue
            }
            do {
                try saveOnce()
                return
            } catch let error as CoreDataError where error.code == .managedObjectMerge {
                attempts += 1
                // The conflicts read the stored rows: the row cache learns them, so
                // a refreshed object sees the stored state even when the save fails.
                let conflicts = try optimisticLockingConflicts()
                for conflict in conflicts { if let row = conflict.persistedRow { persistentStoreCoordinator?.updateCachedRow(row) } }
                if mergePolicy === MergePolicy.error || attempts > 16 { throw error }
                if !conflicts.isEmpty { try mergePolicy.resolve(optimisticLockingConflicts: conflicts) }
            }
        }
    }

    /// The changed objects whose stored row moved on since they were read.
    func optimisticLockingConflicts() throws -> [MergeConflict] {
        guard let coordinator = persistentStoreCoordinator else { return [] }
        var conflicts: [MergeConflict] = []
        for object in strong where object.hasChanges && !object.insertedFlag {
            guard let committed = object.committed, let store = coordinator.store(for: object.objectID) else { continue }
            guard object.deletedFlag || object.hasPersistentChangedValues else { continue }
            var row = try store.row(for: object.objectID)
            if row?.version == committed.version { continue }
            if var loaded = row {
                for (index, property) in object.entity.allProperties.enumerated() where index < loaded.rowValues.count {
                    guard case .toMany(nil) = loaded.rowValues[index], let relationship = property as? RelationshipDescription else { continue }
                    loaded.rowValues[index] = .toMany(try store.relatedObjectIDs(of: object.objectID, relationship: relationship))
                }
                row = loaded
            }
            conflicts.append(MergeConflict(object: object, persisted: row))
        }
        return conflicts
    }

    /// Applies a built-in merge type to one conflict.
    func apply(_ conflict: MergeConflict, _ type: MergePolicy.MergeType) {
        let object = conflict.sourceObject
        guard object.managedObjectContext === self else { return }
        guard let persisted = conflict.persistedRow else {
            // Deleted from the store: nothing left to update.
            pendingDeletes.removeAll { $0 === object }
            unregister(object)
            object.deletedFlag = false
            return
        }
        if object.deletedFlag {
            if type == .rollback {
                object.deletedFlag = false
                deletedObjectsByID.remove(object)
                object.storage = persisted.rowValues
            }
            object.committed = persisted
            return
        }
        let current = object.storage ?? persisted.rowValues
        let cached = object.committed?.rowValues ?? persisted.rowValues
        var merged = current
        for index in merged.indices where index < persisted.rowValues.count && index < cached.count {
            let stored = persisted.rowValues[index]
            switch type {
            case .rollback:
                merged[index] = stored
            case .overwrite, .error:
                continue
            case .mergeByPropertyObjectTrump:
                if ManagedObject.same(current[index], cached[index]) { merged[index] = stored }
            case .mergeByPropertyStoreTrump:
                if !ManagedObject.same(stored, cached[index]) { merged[index] = stored }
            }
        }
        object.storage = merged
        object.committed = persisted
        if !object.hasChanges && !retainsRegisteredObjects { strong.remove(object) }
    }
}
