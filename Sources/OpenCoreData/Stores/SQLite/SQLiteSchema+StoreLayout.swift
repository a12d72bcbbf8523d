import Foundation

/// A schema is the layout the SQL translator works with: every table and column
/// name it uses comes from the store's schema.
///
/// ```swift
/// let translator = SQLFetchTranslator(layout: schema, storeIdentifier: uuid)
/// ```
extension SQLiteSchema: SQLStoreLayout {
    func tableName(for entity: EntityDescription) -> String? {
        table(for: entity)
    }

    func entityNumber(for entity: EntityDescription) -> Int? {
        entityNumber(entity)
    }

    func columnName(for property: PropertyDescription, in entity: EntityDescription) -> String? {
        column(for: property, in: entity)
    }

    func entityColumnName(for relationship: RelationshipDescription, in entity: EntityDescription) -> String? {
        if case .toOne(_, let entityColumn, _)? = storage(for: relationship, in: entity) { return entityColumn }
        return nil
    }

    func toManyStorage(for relationship: RelationshipDescription, in entity: EntityDescription) -> ToManyStorage? {
        switch storage(for: relationship, in: entity) {
        case .toMany(let table, let column, let order)?:
            return .foreignKey(table: table, column: column, orderColumn: order)
        case .joinTable(let join)?:
            return .joinTable(table: join.tableName, sourceColumn: join.sourceColumn,
                              destinationColumn: join.destinationColumn, orderColumn: join.orderColumn)
        default:
            return nil
        }
    }
}
