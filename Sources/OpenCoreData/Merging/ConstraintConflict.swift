import Foundation
import OpenCoreDataPredicates

/// A uniqueness-constraint conflict found by a save (`NSConstraintConflict`):
/// objects that would share the values of one of their entity's
/// ``EntityDescription/uniquenessConstraints`` with a stored object, or with each
/// other.
///
/// With the ``MergePolicy/error`` policy the save fails with
/// ``CoreDataError/Code/managedObjectConstraintMerge`` (133021), one underlying
/// error per conflict. The other policies merge the conflicting objects into
/// one, as Core Data does: the stored object (or the first of the new ones)
/// survives, references to the others move to it, and the others leave the
/// context. Only new objects are merged away: a changed stored object that
/// conflicts with another stored one fails the save with every policy. What the survivor holds depends on the policy:
///
/// | Policy | Survivor's values |
/// |---|---|
/// | ``MergePolicy/mergeByPropertyObjectTrump``, ``MergePolicy/overwrite`` | the new object's: its non-nil attributes (defaults included) and to-one relationships replace the stored ones |
/// | ``MergePolicy/mergeByPropertyStoreTrump``, ``MergePolicy/rollback`` | the stored object's (the new object fills only what the stored one lacks) |
///
/// To-many relationships are united in both cases.
///
/// ```swift
/// context.mergePolicy = .mergeByPropertyObjectTrump
/// let tag = Tag(context: context)
/// tag.name = "work"              // "work" is already stored: the save updates that row
/// try context.save()
/// ```
public final class ConstraintConflict {
    /// The property names of the constraint.
    public let constraint: [String]
    /// The values the objects share, by property name.
    public let constraintValues: [String: Any]
    /// The stored object the new ones conflict with (nil when new objects
    /// conflict among themselves).
    public let databaseObject: ManagedObject?
    /// The stored values of ``databaseObject``.
    public let databaseSnapshot: [String: Any]?
    /// The new or changed objects in conflict.
    public let conflictingObjects: [ManagedObject]
    /// The values of ``conflictingObjects``, in the same order.
    public let conflictingSnapshots: [[String: Any]]

    init(constraint: [String], values: [String: AttributeValue], databaseObject: ManagedObject?, databaseRow: RowSnapshot?,
         conflictingObjects: [ManagedObject]) {
        self.constraint = constraint
        constraintValues = values.compactMapValues(\.nativeValue)
        self.databaseObject = databaseObject
        databaseSnapshot = databaseRow.map { MergeConflict.snapshot($0.rowValues, $0.objectID.entity) }
        self.conflictingObjects = conflictingObjects
        conflictingSnapshots = conflictingObjects.map { MergeConflict.snapshot($0.storage ?? RowValues(), $0.entity) }
    }

    var error: CoreDataError {
        let entity = (databaseObject ?? conflictingObjects.first)?.entity.name
        let values = constraint.map { "\($0) = \(constraintValues[$0].map { "\($0)" } ?? "nil")" }.joined(separator: ", ")
        let with = databaseObject.map { "the stored object \($0.objectID)" } ?? "each other"
        return CoreDataError(.managedObjectConstraintMerge,
                             "Uniqueness constraint (\(constraint.joined(separator: ", "))) violated: \(conflictingObjects.map(\.objectID.description).joined(separator: ", ")) share \(values) with \(with)",
                             entityName: entity, objectDescription: conflictingObjects.first?.objectID.description)
    }
}

extension ManagedObjectContext {
    /// The uniqueness-constraint conflicts of the unsaved changes: new objects, and
    /// changed ones whose constrained values changed, against the stored objects
    /// (as this context would save them) and against each other. A constraint
    /// with a nil value does not apply (as in SQLite).
    func uniquenessConflicts() throws -> [ConstraintConflict] {
        func constrained(_ entity: EntityDescription) -> Bool {
            var current: EntityDescription? = entity
            while let entity = current {
                if !entity.uniquenessConstraints.isEmpty { return true }
                current = entity.superentity
            }
            return false
        }
        // Most models have no constraints at all: no need to look at each object.
        if let model = persistentStoreCoordinator?.managedObjectModel, !model.entities.contains(where: { !$0.uniquenessConstraints.isEmpty }) {
            return []
        }
        let candidates = strong.filter { constrained($0.entity) && ($0.insertedFlag || $0.isUpdated) && !$0.deletedFlag }
        guard !candidates.isEmpty else { return [] }
        var conflicts: [ConstraintConflict] = []
        var firstByKey: [String: ManagedObject] = [:]
        var conflictIndexByKey: [String: Int] = [:]
        for object in candidates {
            var entity: EntityDescription? = object.entity
            while let declaring = entity {
                defer { entity = declaring.superentity }
                for constraint in declaring.uniquenessConstraints {
                    guard let values = constrainedValues(of: object, constraint) else { continue }
                    if !object.insertedFlag {
                        let changed = Set(object.changedIndexes().map { object.entity.allProperties[$0].name })
                        guard constraint.contains(where: changed.contains) else { continue }
                    }
                    // Among the objects of this save.
                    let key = "\(declaring.name)|\(constraint)|\(constraint.map { "\(values[$0] ?? .null)" })"
                    if let first = firstByKey[key] {
                        if let index = conflictIndexByKey[key] {
                            let previous = conflicts[index]
                            conflicts[index] = ConstraintConflict(constraint: constraint, values: values, databaseObject: nil, databaseRow: nil,
                                                                  conflictingObjects: previous.conflictingObjects + [object])
                        } else {
                            conflictIndexByKey[key] = conflicts.count
                            conflicts.append(ConstraintConflict(constraint: constraint, values: values, databaseObject: nil, databaseRow: nil,
                                                                conflictingObjects: [first, object]))
                        }
                        continue
                    }
                    firstByKey[key] = object
                    // Against the stored objects, as this context will leave them.
                    var fetch = StoreFetch(entity: declaring)
                    fetch.predicate = constraint.dropFirst().reduce(equals(constraint[0], values)) { $0 && equals($1, values) }
                    for row in try sourceRows(fetch) where row.objectID != object.objectID {
                        if let registered = registry[row.objectID], registered.hasChanges {
                            if registered.deletedFlag { continue }
                            if constrainedValues(of: registered, constraint) != values { continue }
                        }
                        conflicts.append(ConstraintConflict(constraint: constraint, values: values, databaseObject: self.object(with: row.objectID),
                                                            databaseRow: row, conflictingObjects: [object]))
                    }
                }
            }
        }
        return conflicts
    }

    private func equals(_ key: String, _ values: [String: AttributeValue]) -> CorePredicate {
        .comparison(.keyPath(key), .equalTo, .constant(values[key] ?? .null))
    }

    /// The attribute values of a constraint, or nil when one is nil (or not an attribute).
    private func constrainedValues(of object: ManagedObject, _ constraint: [String]) -> [String: AttributeValue]? {
        guard !constraint.isEmpty else { return nil }
        var values: [String: AttributeValue] = [:]
        for key in constraint {
            guard let index = object.entity.propertyIndex(named: key), object.entity.allProperties[index] is AttributeDescription,
                  case .attribute(let value)? = object.slot(index), !value.isNull else { return nil }
            values[key] = value
        }
        return values
    }

    /// Merges the objects of one constraint conflict into one, by a built-in merge
    /// type (see ``ConstraintConflict``).
    func apply(_ conflict: ConstraintConflict, _ type: MergePolicy.MergeType) {
        var objects = conflict.conflictingObjects.filter { $0.managedObjectContext === self }
        guard let survivor = conflict.databaseObject ?? objects.first, survivor.managedObjectContext === self else { return }
        // Only new objects are merged away; a changed stored object in conflict
        // stays a conflict (the save fails).
        objects.removeAll { $0 === survivor || !$0.insertedFlag }
        let newWins = type == .mergeByPropertyObjectTrump || type == .overwrite
        fireFault(survivor)
        for loser in objects {
            for (index, property) in survivor.entity.allProperties.enumerated() {
                guard !property.isTransient, let loserIndex = loser.entity.propertyIndex(named: property.name),
                      let value = loser.slot(loserIndex) else { continue }
                let mine = survivor.slot(index)
                switch (property, value) {
                case (let relationship as RelationshipDescription, _) where relationship.isToMany:
                    let added = (loser.value(forKey: property.name) as? any Sequence).map(sequenceElements) ?? []
                    let objects = added.compactMap { $0 as? ManagedObject }
                    guard !objects.isEmpty else { continue }
                    let existing = (survivor.value(forKey: property.name) as? any Sequence).map(sequenceElements)?.compactMap { $0 as? ManagedObject } ?? []
                    let union = existing + objects.filter { object in !existing.contains { $0 === object } }
                    survivor.setValue(relationship.isOrdered ? union as Any : Set(union) as Any, forKey: property.name)
                case (is RelationshipDescription, .toOne(let id)):
                    guard let id, newWins || mine == .toOne(nil) else { continue }
                    survivor.setValue(self.object(with: id), forKey: property.name)
                case (is AttributeDescription, .attribute(let attribute)):
                    let empty = mine == nil || mine == .attribute(.null)
                    guard !attribute.isNull, newWins || empty else { continue }
                    survivor.setSlot(index, value)
                default:
                    continue
                }
            }
            // The loser leaves: its relationships are detached, and the objects
            // that pointed to it point to the survivor.
            let loserID = loser.objectID
            for object in registry.objects where object !== loser && object !== survivor {
                guard let storage = object.storage else { continue }
                for (index, value) in storage.enumerated() {
                    switch value {
                    case .toOne(loserID?):
                        object.setSlot(index, .toOne(survivor.objectID))
                    case .toMany(let ids?) where ids.contains(loserID):
                        let replaced = ids.map { $0 == loserID ? survivor.objectID : $0 }
                        var seen = Set<ManagedObjectID>()
                        object.setSlot(index, .toMany(replaced.filter { seen.insert($0).inserted }))
                    default:
                        continue
                    }
                }
            }
            uninsert(loser)
        }
        processPendingChanges()
    }
}
