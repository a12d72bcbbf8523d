import Foundation
import OpenCoreDataPredicates

/// Where a ``RowObject`` finds the rows its relationships lead to: a store's
/// rows, an in-memory state.
protocol RowSource {
    /// The row of `id`, or nil when there is none.
    func row(_ id: ManagedObjectID) -> RowSnapshot?
    /// The IDs a to-many relationship of `row` holds.
    func relatedIDs(of row: RowSnapshot, _ relationship: RelationshipDescription) -> [ManagedObjectID]
}

/// A store row seen through key-value coding, so that predicates, sort
/// descriptors and expressions evaluate against rows as against objects:
/// attributes are their values, a to-one relationship the destination's row, a
/// to-many relationship a collection of rows (an array when ordered), and
/// `objectID` the row's URI.
struct RowObject: KeyValueCoding {
    let row: RowSnapshot
    let graph: any RowSource

    func value(forKey key: String) -> Any? {
        guard let index = row.objectID.entity.propertyIndex(named: key), index < row.rowValues.count else {
            if key == "objectID" { return AttributeValue.uri(row.objectID.uriRepresentation()) }
            return nil
        }
        switch row.rowValues[index] {
        case .attribute(let value):
            return value
        case .toOne(let id):
            return id.flatMap { graph.row($0) }.map { RowObject(row: $0, graph: graph) }
        case .toMany:
            guard let relationship = row.objectID.entity.allProperties[index] as? RelationshipDescription else { return nil }
            let objects = graph.relatedIDs(of: row, relationship).compactMap { graph.row($0) }.map { RowObject(row: $0, graph: graph) }
            if relationship.isOrdered { return objects }
            return EvaluatedValue.collection(objects.map { .object($0) }, isOrdered: false)
        }
    }

    var predicateIdentity: AttributeValue? { .uri(row.objectID.uriRepresentation()) }
}
