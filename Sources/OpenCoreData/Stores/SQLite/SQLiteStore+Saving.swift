import Foundation
import GRDB
import OpenCoreDataPredicates

extension SQLiteStore {
    /// Applies one save in one transaction: version checks (`Z_OPT`), inserts,
    /// updates of changed columns only, deletes, join-table rows and order keys.
    /// On any failure the transaction rolls back and nothing is written.
    public func save(_ changes: SaveChanges) throws {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The store \(url?.path ?? identifier) is read-only", url: url)
        }
        let changes = history == nil ? changes : HistoryAttribution.attributed(changes)
        try write("saving") { db in
            try checkVersions(changes, db)
            let tombstones = try history?.tombstones(of: changes.deleted, schema: schema, db) ?? [:]
            for row in changes.inserted { try insert(row, db) }
            for row in changes.updated { try update(row, changed: changes.changedProperties[row.objectID], db) }
            for (id, _) in changes.deleted { try delete(id, db) }
            for row in changes.inserted { try writeToMany(row, changed: nil, db) }
            for row in changes.updated { try writeToMany(row, changed: changes.changedProperties[row.objectID], db) }
            try history?.record(changes, tombstones: tombstones, schema: schema, db)
        }
        remoteChanges?.storeDidSave(self)
    }

    private func table(_ id: ObjectID) throws -> String {
        guard let table = schema.table(for: id.entity) else {
            throw CoreDataError(.persistentStoreSave, "The store has no table for entity '\(id.entityName)'", entityName: id.entityName)
        }
        return SQLiteIdentifier.quoted(table)
    }

    private func checkVersions(_ changes: SaveChanges, _ db: Database) throws {
        var conflicts: [CoreDataError] = []
        func check(_ id: ObjectID, _ expected: Int64) throws {
            guard let pk = id.primaryKey else { return }
            let found = try Int64.fetchOne(try db.cachedStatement(sql: "SELECT Z_OPT FROM \(try table(id)) WHERE Z_PK = ?"), arguments: [pk])
            if found != expected {
                let what = found.map { "version \($0) in the store" } ?? "deleted from the store"
                conflicts.append(CoreDataError(.managedObjectMerge, "\(id) was read at version \(expected) but is now \(what)",
                                               entityName: id.entityName, objectDescription: id.description))
            }
        }
        for row in changes.updated { try check(row.objectID, row.version) }
        for (id, version) in changes.deleted where version > 0 { try check(id, version) }
        if !conflicts.isEmpty {
            throw CoreDataError(.managedObjectMerge, "Optimistic locking failure: \(conflicts.count) object(s) changed in the store since they were read",
                                underlyingErrors: conflicts)
        }
    }

    /// The column assignments of the properties at `indexes` of a row.
    private func assignments(_ row: RowSnapshot, indexes: [Int]) throws -> [(String, DatabaseValue)] {
        let entity = row.objectID.entity
        var result: [(String, DatabaseValue)] = []
        for index in indexes where index < row.values.count {
            let property = entity.allProperties[index]
            guard let storage = schema.storage(for: property, in: entity) else { continue }
            switch (storage, row.values[index]) {
            case (.column(let column), .attribute(let value)):
                guard let attribute = property as? AttributeDescription else { continue }
                result.append((column, try encode(value, for: attribute)))
            case (.composite(let columns), .attribute(let value)):
                guard let composite = property as? CompositeAttributeDescription else { continue }
                for (path, column) in columns {
                    let element = compositeElement(value, path: path)
                    let elementType = compositeElementType(composite, path: path)
                    result.append((column, elementType.flatMap { SQLiteValueEncoding.databaseValue(element, as: $0) } ?? .null))
                }
            case (.toOne(let column, let entityColumn, _), .toOne(let id)):
                result.append((column, id?.primaryKey.map { $0.databaseValue } ?? .null))
                if let entityColumn {
                    result.append((entityColumn, id.flatMap { schema.entityNumber($0.entity) }.map { $0.databaseValue } ?? .null))
                }
            default:
                continue
            }
        }
        return result
    }

    private func compositeElement(_ value: AttributeValue, path: String) -> AttributeValue {
        var current = value
        for part in path.split(separator: ".") {
            guard case .dictionary(let dictionary) = current else { return .null }
            current = dictionary[String(part)] ?? .null
        }
        return current
    }

    private func compositeElementType(_ composite: CompositeAttributeDescription, path: String) -> AttributeType? {
        var elements = composite.elements
        var type: AttributeType?
        for part in path.split(separator: ".") {
            guard let element = elements.first(where: { $0.name == part }) else { return nil }
            type = element.attributeType
            elements = (element as? CompositeAttributeDescription)?.elements ?? []
        }
        return type
    }

    private func insert(_ row: RowSnapshot, _ db: Database) throws {
        guard let pk = row.objectID.primaryKey, let number = schema.entityNumber(row.objectID.entity) else {
            throw CoreDataError(.persistentStoreSave, "Can't insert \(row.objectID): no primary key or entity number")
        }
        let values = try assignments(row, indexes: Array(row.values.indices))
        var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
        var arguments: [DatabaseValue] = [pk.databaseValue, number.databaseValue, 1.databaseValue]
        for (column, value) in values {
            columns.append(SQLiteIdentifier.quoted(column))
            arguments.append(value)
        }
        let placeholders = Array(repeating: "?", count: columns.count).joined(separator: ", ")
        try db.cachedStatement(sql: "INSERT INTO \(try table(row.objectID)) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))").execute(arguments: StatementArguments(arguments))
    }

    private func update(_ row: RowSnapshot, changed: [Int]?, _ db: Database) throws {
        guard let pk = row.objectID.primaryKey else { return }
        let values = try assignments(row, indexes: changed ?? Array(row.values.indices))
        var sets = ["Z_OPT = Z_OPT + 1"]
        var arguments: [DatabaseValue] = []
        for (column, value) in values {
            sets.append("\(SQLiteIdentifier.quoted(column)) = ?")
            arguments.append(value)
        }
        arguments.append(pk.databaseValue)
        try db.cachedStatement(sql: "UPDATE \(try table(row.objectID)) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ?").execute(arguments: StatementArguments(arguments))
    }

    private func delete(_ id: ObjectID, _ db: Database) throws {
        guard let pk = id.primaryKey else { return }
        try db.cachedStatement(sql: "DELETE FROM \(try table(id)) WHERE Z_PK = ?").execute(arguments: [pk])
        // Join-table rows of the object's many-to-many relationships go with it.
        for property in id.entity.allProperties {
            guard let relationship = property as? RelationshipDescription,
                  case .joinTable(let join)? = schema.storage(for: relationship, in: id.entity) else { continue }
            try db.cachedStatement(sql: "DELETE FROM \(SQLiteIdentifier.quoted(join.tableName)) WHERE \(SQLiteIdentifier.quoted(join.sourceColumn)) = ?").execute(arguments: [pk])
        }
    }

    /// Writes the to-many relationships of a row that are stored outside it: join
    /// tables, hidden foreign keys of to-many relationships without inverse, and the
    /// order keys of ordered relationships.
    private func writeToMany(_ row: RowSnapshot, changed: [Int]?, _ db: Database) throws {
        guard let pk = row.objectID.primaryKey else { return }
        let entity = row.objectID.entity
        for index in changed ?? Array(row.values.indices) where index < row.values.count {
            guard let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany,
                  case .toMany(let ids?) = row.values[index],
                  let storage = schema.storage(for: relationship, in: entity) else { continue }
            switch storage {
            case .joinTable(let join):
                // Both sides of a many-to-many change together; one writes the rows:
                // the ordered side, else the side whose relationship sorts first.
                if let inverse = relationship.inverseRelationship, !ownsJoinRows(relationship, inverse) { continue }
                try db.cachedStatement(sql: "DELETE FROM \(SQLiteIdentifier.quoted(join.tableName)) WHERE \(SQLiteIdentifier.quoted(join.sourceColumn)) = ?").execute(arguments: [pk])
                for (position, id) in ids.enumerated() {
                    guard let destination = id.primaryKey else { continue }
                    if let order = join.orderColumn {
                        try db.cachedStatement(sql: "INSERT OR REPLACE INTO \(SQLiteIdentifier.quoted(join.tableName)) (\(SQLiteIdentifier.quoted(join.sourceColumn)), \(SQLiteIdentifier.quoted(join.destinationColumn)), \(SQLiteIdentifier.quoted(order))) VALUES (?, ?, ?)").execute(arguments: [pk, destination, (position + 1) * 1024])
                    } else {
                        try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(SQLiteIdentifier.quoted(join.tableName)) (\(SQLiteIdentifier.quoted(join.sourceColumn)), \(SQLiteIdentifier.quoted(join.destinationColumn))) VALUES (?, ?)").execute(arguments: [pk, destination])
                    }
                }
            case .toMany(let tableName, let foreignKey, let orderColumn):
                let table = SQLiteIdentifier.quoted(tableName)
                let fk = SQLiteIdentifier.quoted(foreignKey)
                if relationship.inverseRelationship == nil {
                    try db.cachedStatement(sql: "UPDATE \(table) SET \(fk) = NULL WHERE \(fk) = ?").execute(arguments: [pk])
                }
                for (position, id) in ids.enumerated() {
                    guard let destination = id.primaryKey else { continue }
                    if let orderColumn {
                        try db.cachedStatement(sql: "UPDATE \(table) SET \(fk) = ?, \(SQLiteIdentifier.quoted(orderColumn)) = ? WHERE Z_PK = ?").execute(arguments: [pk, (position + 1) * 1024, destination])
                    } else if relationship.inverseRelationship == nil {
                        try db.cachedStatement(sql: "UPDATE \(table) SET \(fk) = ? WHERE Z_PK = ?").execute(arguments: [pk, destination])
                    }
                }
            default:
                continue
            }
        }
    }

    private func ownsJoinRows(_ relationship: RelationshipDescription, _ inverse: RelationshipDescription) -> Bool {
        if relationship.isOrdered != inverse.isOrdered { return relationship.isOrdered }
        let mine = (relationship.entity?.name ?? "") + "." + relationship.name
        let theirs = (inverse.entity?.name ?? "") + "." + inverse.name
        return mine <= theirs
    }
}
