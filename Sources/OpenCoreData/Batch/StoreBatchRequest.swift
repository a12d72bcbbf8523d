import Foundation
import OpenCoreDataPredicates

/// A batch request as a store receives it: rows to insert, rows to update with
/// values or expressions, rows to delete. No managed object is involved.
///
/// ```swift
/// var fetch = StoreFetch(entity: mood)
/// fetch.predicate = try CorePredicate(format: "rating < 2")
/// let changed = try store.execute(.update(fetch, values: [ratingIndex: .keyPath("rating") + 1]))
/// ```
///
/// Every store gets an implementation over its rows for free
/// (``PersistentStore/fetchRows(_:)`` and ``PersistentStore/save(_:)``): one atomic
/// save, with `Z_OPT` versions bumped on every updated row. Deletes apply the delete
/// rules in the store as Core Data's batch deletes do: cascade relationships delete
/// their destinations too, nullify relationships clear the inverse to-one of their
/// destinations (an inverse that is not optional fails the request, error 134030),
/// a deny relationship with destinations fails it (1600), and join-table rows go.
public enum StoreBatchRequest: Sendable {
    /// New rows of `entity`, each a value per attribute index (missing attributes
    /// get their default value).
    case insert(entity: EntityDescription, rows: [[Int: AttributeValue]])
    /// The rows of the fetch get new values: a constant or an expression evaluated
    /// against each row, per property index.
    case update(StoreFetch, values: [Int: CoreExpression])
    /// The rows of the fetch are deleted.
    case delete(StoreFetch)
    /// The rows of these objects are deleted.
    case deleteObjects([ManagedObjectID])
}

extension PersistentStore {
    /// Runs a batch request over the store's rows in one save.
    ///
    /// - Parameter request: The rows to insert, update or delete.
    /// - Returns: The IDs of the rows inserted, updated or deleted (deletes by
    ///   cascade included).
    /// - Throws: The errors of ``executeOverRows(_:)``.
    public func execute(_ request: StoreBatchRequest) throws -> [ManagedObjectID] {
        try executeOverRows(request)
    }

    /// The default batch execution: rows fetched, changed and saved at once.
    ///
    /// - Parameter request: The rows to insert, update or delete.
    /// - Returns: The IDs of the rows inserted, updated or deleted (deletes by
    ///   cascade included).
    /// - Throws: ``CoreDataError``:
    ///   ``CoreDataError/Code/managedObjectValidation`` (1550) for a value of the
    ///   wrong type; ``CoreDataError/Code/persistentStoreUnsupportedRequestType``
    ///   (134091) for an update of a property that is not an attribute;
    ///   ``CoreDataError/Code/validationRelationshipDeniedDelete`` (1600) when a
    ///   deny relationship has destinations;
    ///   ``CoreDataError/Code/persistentStoreSave`` (134030) when a delete would
    ///   break a mandatory inverse; any error of the store's save.
    public func executeOverRows(_ request: StoreBatchRequest) throws -> [ManagedObjectID] {
        switch request {
        case let .insert(entity, values):
            let ids = try newObjectIDs(for: entity, count: values.count)
            var changes = SaveChanges()
            changes.inserted = try zip(ids, values).map { id, values in
                try RowSnapshot(objectID: id, version: 1, values: StoreBatchExecution.insertedValues(entity, values))
            }
            if !changes.inserted.isEmpty { try save(changes) }
            return ids
        case let .update(fetch, values):
            var unsorted = fetch
            unsorted.sortDescriptors = []
            let rows = try fetchRows(unsorted)
            let graph = StoreRowGraph(store: self)
            var changes = SaveChanges()
            for row in rows {
                var updated = row
                for (index, expression) in values.sorted(by: { $0.key < $1.key }) {
                    updated.rowValues[index] = .attribute(try StoreBatchExecution.value(expression, for: row, index: index, graph: graph))
                }
                changes.updated.append(updated)
                changes.changedProperties[row.objectID] = values.keys.sorted()
            }
            if !changes.updated.isEmpty { try save(changes) }
            return rows.map(\.objectID)
        case .delete(let fetch):
            var unsorted = fetch
            unsorted.sortDescriptors = []
            return try StoreBatchExecution.delete(try fetchRows(unsorted), in: self)
        case .deleteObjects(let ids):
            return try StoreBatchExecution.delete(try ids.compactMap { try row(for: $0) }, in: self)
        }
    }
}

/// The pieces of the default batch execution.
enum StoreBatchExecution {
    /// The values of a new row: the given attributes, defaults elsewhere.
    static func insertedValues(_ entity: EntityDescription, _ given: [Int: AttributeValue]) throws -> [SnapshotValue] {
        var values = ManagedObjectContext.initialValues(for: entity)
        for (index, value) in given {
            guard index < values.count, let attribute = entity.allProperties[index] as? AttributeDescription else { continue }
            values[index] = .attribute(try typed(value, attribute))
        }
        return values.array
    }

    /// A value in the representation of an attribute, or a validation error naming it.
    static func typed(_ value: AttributeValue, _ attribute: AttributeDescription) throws -> AttributeValue {
        guard let coerced = AttributeValueCoercion.coerce(value, to: attribute.attributeType) else {
            throw CoreDataError(.managedObjectValidation,
                                "\(attribute.entity?.name ?? "?").\(attribute.name): \(value) is not a \(attribute.attributeType.xcodeName)",
                                entityName: attribute.entity?.name, key: attribute.name, valueDescription: "\(value)")
        }
        return coerced
    }

    /// The new value of an updated property of `row`.
    static func value(_ expression: CoreExpression, for row: RowSnapshot, index: Int, graph: StoreRowGraph) throws -> AttributeValue {
        guard let attribute = row.objectID.entity.allProperties[index] as? AttributeDescription else {
            throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                "A batch update can only change attributes, not '\(row.objectID.entity.allProperties[index].name)'",
                                entityName: row.objectID.entity.name)
        }
        let result: AttributeValue
        if case .constant(let value) = expression {
            result = value
        } else {
            result = try expression.value(with: RowObject(row: row, graph: graph)).attributeValue ?? .null
        }
        return try typed(result, attribute)
    }

    /// Deletes rows and applies the delete rules, in one save.
    static func delete(_ rows: [RowSnapshot], in store: any PersistentStore) throws -> [ManagedObjectID] {
        var deleted: [ManagedObjectID: RowSnapshot] = [:]
        var order: [ManagedObjectID] = []
        var pending = rows
        for row in rows where deleted[row.objectID] == nil {
            deleted[row.objectID] = row
            order.append(row.objectID)
        }
        // Nullified inverses: destination row, then the indexes to clear.
        var nullified: [ManagedObjectID: (RowSnapshot, Set<Int>)] = [:]
        while let row = pending.popLast() {
            let entity = row.objectID.entity
            for property in entity.allProperties {
                guard let relationship = property as? RelationshipDescription else { continue }
                switch relationship.deleteRule {
                case .noAction: continue
                case .nullify where relationship.inverseRelationship?.isToMany != false: continue
                default: break
                }
                let destinations: [ManagedObjectID]
                if relationship.isToMany {
                    if case .toMany(let ids?)? = row.value(named: relationship.name) {
                        destinations = ids
                    } else {
                        destinations = try store.relatedObjectIDs(of: row.objectID, relationship: relationship)
                    }
                } else if case .toOne(let id?)? = row.value(named: relationship.name) {
                    destinations = [id]
                } else {
                    destinations = []
                }
                switch relationship.deleteRule {
                case .cascade:
                    for id in destinations where deleted[id] == nil {
                        guard let destination = try store.row(for: id) else { continue }
                        deleted[id] = destination
                        order.append(id)
                        pending.append(destination)
                    }
                case .deny:
                    if destinations.contains(where: { deleted[$0] == nil }) {
                        throw CoreDataError(.validationRelationshipDeniedDelete,
                                            "Batch delete failed: \(row.objectID) has objects in its deny relationship '\(relationship.name)'",
                                            entityName: entity.name, objectDescription: row.objectID.description, key: relationship.name)
                    }
                case .nullify:
                    guard let inverse = relationship.inverseRelationship, !inverse.isToMany else { continue }
                    for id in destinations where deleted[id] == nil {
                        if !inverse.isOptional {
                            throw CoreDataError(.persistentStoreSave,
                                                "Batch delete failed due to mandatory OTO nullify inverse on \(inverse.entity?.name ?? "?")/\(inverse.name)",
                                                entityName: inverse.entity?.name, objectDescription: id.description, key: inverse.name)
                        }
                        guard let index = id.entity.propertyIndex(named: inverse.name) else { continue }
                        if var entry = nullified[id] {
                            entry.1.insert(index)
                            nullified[id] = entry
                        } else if let destination = try store.row(for: id) {
                            nullified[id] = (destination, [index])
                        }
                    }
                case .noAction:
                    continue
                }
            }
        }
        var changes = SaveChanges()
        changes.deleted = order.compactMap { id in deleted[id].map { (id, $0.version) } }
        for (id, entry) in nullified.sorted(by: { ($0.key.primaryKey ?? 0) < ($1.key.primaryKey ?? 0) }) where deleted[id] == nil {
            var row = entry.0
            for index in entry.1 {
                if case .toOne(let target?) = row.rowValues[index], deleted[target] != nil { row.rowValues[index] = .toOne(nil) }
            }
            changes.updated.append(row)
            changes.changedProperties[id] = entry.1.sorted()
        }
        if !changes.deleted.isEmpty { try store.save(changes) }
        return order
    }
}
