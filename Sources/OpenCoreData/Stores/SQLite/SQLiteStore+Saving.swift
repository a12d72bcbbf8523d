import Foundation
import GRDB
import GRDBSQLite
import OpenCoreDataPredicates

extension SQLiteStore: ChangesRowsBehindSaves {
    func takeRowsChangedBehindSave() -> [ManagedObjectID] {
        triggerAffectedRows.take().compactMap { row in
            entity(forNumber: row.entityNumber).map {
                ManagedObjectID(entity: $0, storeIdentifier: identifier, primaryKey: row.primaryKey)
            }
        }
    }

    /// Applies one save in one transaction: version checks (`Z_OPT`), inserts,
    /// updates of changed columns only, deletes, join-table rows and order keys.
    /// On any failure the transaction rolls back and nothing is written.
    public func save(_ changes: SaveChanges) throws {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The store \(url?.path ?? identifier) is read-only", url: url)
        }
        let changes = history == nil ? changes : HistoryAttribution.attributed(changes)
        _ = triggerAffectedRows.take()
        do {
            try writeChanges(changes)
        } catch {
            _ = triggerAffectedRows.take()
            // The transaction rolled back. When rows changed in the store since they
            // were read, that is the error, with every conflict (as Core Data reports
            // it): gather them outside the failed transaction.
            try read("checking versions") { db in try checkVersions(changes, db) }
            throw error
        }
    }

    /// Writes one save in one transaction. Updates and deletes carry their version
    /// check (`AND Z_OPT = ?`): a row that changed since it was read makes the save
    /// fail, without a separate `SELECT` for every row.
    private func writeChanges(_ changes: SaveChanges) throws {
        try write("saving") { db in
            let tombstones = try history?.tombstones(of: changes.deleted, schema: schema, db) ?? [:]
            let cache = self.savePlans
            let bytes = cache.boundBytes
            var last: (entity: ObjectIdentifier, plan: InsertPlan)?
            // Whether an inserted row's entity has to-many relationships (written
            // after every row is in, below).
            var insertsToMany = false
            // Rows are read in place, and the values of the rows a few places ahead
            // are asked for while this one is written (see `Prefetching`).
            try changes.inserted.withUnsafeBufferPointer { rows in
                for index in rows.indices {
                    Prefetching.values(of: rows, at: index + Prefetching.distance)
                    let key = ObjectIdentifier(rows[index].objectID.entity)
                    let plan: InsertPlan
                    if let last, last.entity == key {
                        plan = last.plan
                    } else if let known = cache.inserts[key] {
                        plan = known
                    } else {
                        plan = try insertPlan(for: rows[index].objectID, db)
                        if keepsPlans(for: rows[index].objectID.entity) { cache.inserts[key] = plan }
                    }
                    last = (key, plan)
                    if plan.hasToMany { insertsToMany = true }
                    try insert(rows[index], plan, bytes, db)
                }
            }
            for row in changes.updated {
                guard row.objectID.primaryKey != nil else { continue }
                let indexes = changes.changedProperties[row.objectID] ?? Array(row.rowValues.indices)
                let key = UpdateKey(entity: ObjectIdentifier(row.objectID.entity), indexes: indexes)
                let plan: UpdatePlan
                if let known = cache.updates[key] {
                    plan = known
                } else {
                    plan = try updatePlan(for: row, indexes: indexes, db)
                    if keepsPlans(for: row.objectID.entity) { cache.updates[key] = plan }
                }
                try update(row, plan, bytes, db)
            }
            var lastDelete: (entity: ObjectIdentifier, plan: DeletePlan)?
            for (id, version) in changes.deleted {
                let key = ObjectIdentifier(id.entity)
                let plan: DeletePlan
                if let lastDelete, lastDelete.entity == key {
                    plan = lastDelete.plan
                } else if let known = cache.deletes[key] {
                    plan = known
                } else {
                    plan = try deletePlan(for: id, db)
                    if keepsPlans(for: id.entity) { cache.deletes[key] = plan }
                }
                lastDelete = (key, plan)
                try delete(id, version: version, plan, db)
            }
            if insertsToMany {
                // In place, by index: a `for row in` loop copies each row (a retain
                // and a release of its values' page, cold by now).
                try changes.inserted.withUnsafeBufferPointer { rows in
                    for index in rows.indices where rows[index].objectID.entity.frozenHasToMany ?? true {
                        try writeToMany(rows[index], changed: nil, db)
                    }
                }
            }
            for row in changes.updated { try writeToMany(row, changed: changes.changedProperties[row.objectID], db) }
            try history?.record(changes, tombstones: tombstones, schema: schema, db)
        }
        remoteChanges?.storeDidSave(self)
    }

    private func table(_ id: ManagedObjectID) throws -> String {
        guard let table = schema.table(for: id.entity) else {
            throw CoreDataError(.persistentStoreSave, "The store has no table for entity '\(id.entityName)'", entityName: id.entityName)
        }
        return SQLiteIdentifier.quoted(table)
    }

    private func checkVersions(_ changes: SaveChanges, _ db: Database) throws {
        var conflicts: [CoreDataError] = []
        func check(_ id: ManagedObjectID, _ expected: Int64) throws {
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

    /// Where the properties at `indexes` of `entity` are stored: the schema lookups
    /// of ``assignments(_:storages:)``, done once per entity rather than per row.
    private func storages(of entity: EntityDescription, indexes: [Int]) -> [(Int, PropertyDescription, SQLiteSchema.PropertyStorage)] {
        let properties = entity.allProperties
        return indexes.compactMap { index in
            guard index < properties.count, let storage = schema.storage(for: properties[index], in: entity) else { return nil }
            return (index, properties[index], storage)
        }
    }

    /// The column assignments of a row's properties, given where they are stored.
    private func assignments(_ row: RowSnapshot, storages: [(Int, PropertyDescription, SQLiteSchema.PropertyStorage)]) throws -> [(String, DatabaseValue)] {
        var result: [(String, DatabaseValue)] = []
        result.reserveCapacity(storages.count)
        try forEachAssignment(row, storages: storages) { result.append(($0, $1)) }
        return result
    }

    /// Calls `body` with each column assignment of a row's properties, in order,
    /// given where they are stored (inserts bind them as they come).
    private func forEachAssignment(_ row: RowSnapshot, storages: [(Int, PropertyDescription, SQLiteSchema.PropertyStorage)],
                                   _ body: (String, DatabaseValue) throws -> Void) throws {
        for entry in storages { try forEachAssignment(row, entry, body) }
    }

    /// Calls `body` with the column assignments of one property of a row.
    private func forEachAssignment(_ row: RowSnapshot, _ entry: (Int, PropertyDescription, SQLiteSchema.PropertyStorage),
                                   _ body: (String, DatabaseValue) throws -> Void) throws {
        func append(_ assignment: (String, DatabaseValue)) throws { try body(assignment.0, assignment.1) }
        let (index, property, storage) = entry
        guard index < row.rowValues.count else { return }
        switch (storage, row.rowValues[index]) {
        case (.column(let column), .attribute(let value)):
            guard let attribute = property as? AttributeDescription else { return }
            try append((column, try encode(value, for: attribute)))
        case (.composite(let columns), .attribute(let value)):
            guard let composite = property as? CompositeAttributeDescription else { return }
            for (path, column) in columns {
                let element = composite.element(of: value, path: path)
                let elementType = composite.elementType(path: path)
                try append((column, elementType.flatMap { SQLiteValueEncoding.databaseValue(element, as: $0) } ?? .null))
            }
        case (.toOne(let column, let entityColumn, _), .toOne(let id)):
            try append((column, id?.primaryKey.map { $0.databaseValue } ?? .null))
            if let entityColumn {
                try append((entityColumn, id.flatMap { schema.entityNumber($0.entity) }.map { $0.databaseValue } ?? .null))
            }
        default:
            return
        }
    }

    /// The columns a plan assigns from a row's values, in parameter order, and
    /// how: plain attributes (a number, string, date or Boolean stored in one
    /// column) are bound straight from their values (`bindPlain`), every other
    /// property through its encoded assignments (`forEachAssignment`).
    fileprivate struct ColumnBindings {
        let columns: [String]
        let storages: [(Int, PropertyDescription, SQLiteSchema.PropertyStorage)]
        /// For each of `storages`: the type of a plain attribute, nil for every
        /// other property.
        let plainTypes: [AttributeType?]
        /// For each of `storages`: the index of its value in a row (read on its own,
        /// as reading the whole tuple copies it through its type metadata).
        let valueIndexes: [Int]

        init(columns: [String], storages: [(Int, PropertyDescription, SQLiteSchema.PropertyStorage)]) {
            self.columns = columns
            self.storages = storages
            self.plainTypes = storages.map { _, property, storage in
                guard case .column = storage, let attribute = property as? AttributeDescription else { return nil }
                switch attribute.attributeType {
                case .integer16, .integer32, .integer64, .boolean, .double, .float, .string, .date: return attribute.attributeType
                default: return nil
                }
            }
            self.valueIndexes = storages.map(\.0)
        }
    }

    /// Binds the columns of `bindings` from `row`'s values to the parameters from
    /// `firstParameter` on; false when the row's values do not fill exactly those
    /// columns (a row that does not match its entity).
    ///
    /// Bound with SQLite's C API as they are encoded: GRDB's `StatementArguments`
    /// boxes every value in an existential and validates it again, several times
    /// the cost of the statement.
    private func bindColumns(_ row: RowSnapshot, _ bindings: ColumnBindings, from firstParameter: Int32, _ handle: SQLiteStatement,
                             _ bytes: SQLiteBoundBytes) throws -> Bool {
        var bound = 0
        var matches = true
        let values = row.rowValues
        let columns = bindings.columns
        for position in bindings.storages.indices {
            if let type = bindings.plainTypes[position], bound < columns.count {
                let index = bindings.valueIndexes[position]
                if index < values.count, case .attribute(let value) = values[index],
                   try bindPlain(value, as: type, at: firstParameter + Int32(bound), handle, bytes) {
                    bound += 1
                    continue
                }
            }
            try forEachAssignment(row, bindings.storages[position]) { column, value in
                guard bound < columns.count, column == columns[bound] else { matches = false; return }
                try bind(value.storage, at: firstParameter + Int32(bound), handle, bytes)
                bound += 1
            }
        }
        return matches && bound == columns.count
    }

    /// How the rows of one entity are inserted: the statement (built and prepared
    /// once), the entity number, and where each property goes.
    fileprivate final class InsertPlan {
        let statement: Statement
        let entityNumber: Int
        let bindings: ColumnBindings
        /// Whether the entity has to-many relationships (written after the rows).
        let hasToMany: Bool

        init(statement: Statement, entityNumber: Int, bindings: ColumnBindings, hasToMany: Bool) {
            self.statement = statement
            self.entityNumber = entityNumber
            self.bindings = bindings
            self.hasToMany = hasToMany
        }
    }

    private func insertPlan(for id: ManagedObjectID, _ db: Database) throws -> InsertPlan {
        let entity = id.entity
        guard let number = schema.entityNumber(entity) else {
            throw CoreDataError(.persistentStoreSave, "Can't insert \(id): the store has no entity number for '\(entity.name)'", entityName: entity.name)
        }
        let storages = storages(of: entity, indexes: Array(entity.allProperties.indices))
        // The columns every row of the entity assigns (a row of initial values).
        let template = RowSnapshot(objectID: id, version: 1, rowValues: ManagedObjectContext.initialValues(for: entity))
        let columns = try assignments(template, storages: storages).map(\.0)
        let names = ["Z_PK", "Z_ENT", "Z_OPT"] + columns.map(SQLiteIdentifier.quoted)
        let placeholders = Array(repeating: "?", count: names.count).joined(separator: ", ")
        let statement = try db.cachedStatement(sql: "INSERT INTO \(try table(id)) (\(names.joined(separator: ", "))) VALUES (\(placeholders))")
        // Rows are bound straight to the SQLite statement (see `insert`); GRDB is told
        // once that the statement has a valid set of arguments, so that `execute()`
        // runs it with its current bindings.
        statement.setUncheckedArguments(StatementArguments(Array(repeating: DatabaseValue.null, count: names.count)))
        let hasToMany = entity.allProperties.contains { ($0 as? RelationshipDescription)?.isToMany == true }
        return InsertPlan(statement: statement, entityNumber: number, bindings: ColumnBindings(columns: columns, storages: storages), hasToMany: hasToMany)
    }

    private func insert(_ row: RowSnapshot, _ plan: InsertPlan, _ bytes: SQLiteBoundBytes, _ db: Database) throws {
        guard let pk = row.objectID.primaryKey else {
            throw CoreDataError(.persistentStoreSave, "Can't insert \(row.objectID): no primary key")
        }
        let handle = plan.statement.sqliteStatement
        // The statement ran for the previous row: SQLite binds only after a reset.
        sqlite3_reset(handle)
        bytes.beginRow()
        try bindInt64(pk, at: 1, handle)
        try bindInt64(Int64(plan.entityNumber), at: 2, handle)
        try bindInt64(1, at: 3, handle)
        guard try bindColumns(row, plan.bindings, from: 4, handle, bytes) else {
            throw CoreDataError(.persistentStoreSave, "Can't insert \(row.objectID): its values do not match the properties of '\(row.objectID.entityName)'",
                                entityName: row.objectID.entityName)
        }
        try runBound(plan.statement, db)
    }

    /// Runs a statement of a save plan (an `INSERT`, `UPDATE` or `DELETE` bound
    /// through the C API) to its end.
    ///
    /// Stepped with the C API rather than GRDB's `execute()`, whose checks
    /// (aborted transactions, suspension, the statement's database region for
    /// observation) would be paid on every row: the store's connection has no
    /// observers, runs in the store's own transaction (`inWriteTransaction`, which
    /// rolls back on the error thrown here), and is never suspended.
    private func runBound(_ statement: Statement, _ db: Database) throws {
        let handle = statement.sqliteStatement
        let code = sqlite3_step(handle)
        guard code == SQLITE_DONE else {
            let message = String(cString: sqlite3_errmsg(db.sqliteConnection))
            sqlite3_reset(handle)
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: statement.sql)
        }
    }

    /// Binds the value of a plain attribute of `type` to parameter `index`, exactly
    /// as `encode(_:for:)` would encode it, for the pairs of value and type saves
    /// meet most (a number, string or date of the attribute's own type, or null);
    /// false for any other pair, which goes through `encode`.
    private func bindPlain(_ value: AttributeValue, as type: AttributeType, at index: Int32, _ handle: SQLiteStatement,
                           _ bytes: SQLiteBoundBytes) throws -> Bool {
        let code: Int32
        switch (value, type) {
        case (.null, _):
            code = sqlite3_bind_null(handle, index)
        case (.int(let int), .integer16), (.int(let int), .integer32), (.int(let int), .integer64):
            code = sqlite3_bind_int64(handle, index, int)
        case (.bool(let bool), .boolean):
            code = sqlite3_bind_int64(handle, index, bool ? 1 : 0)
        case (.double(let double), .double), (.double(let double), .float):
            code = sqlite3_bind_double(handle, index, double)
        case (.date(let date), .date):
            code = sqlite3_bind_double(handle, index, date.timeIntervalSinceReferenceDate)
        case (.string(let string), .string):
            code = bytes.bindText(string, at: index, handle)
        default:
            return false
        }
        guard code == SQLITE_OK else {
            throw CoreDataError(.persistentStoreSave, "SQLite could not bind parameter \(index) of a statement of the save (code \(code))")
        }
        return true
    }

    /// Binds one value to parameter `index` of a statement; strings and blobs are
    /// read from `bytes`, which keeps a copy until the row has run.
    private func bind(_ value: DatabaseValue.Storage, at index: Int32, _ handle: SQLiteStatement, _ bytes: SQLiteBoundBytes) throws {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(handle, index)
        case .int64(let int): code = sqlite3_bind_int64(handle, index, int)
        case .double(let double): code = sqlite3_bind_double(handle, index, double)
        case .string(let string): code = bytes.bindText(string, at: index, handle)
        case .blob(let data): code = data.withUnsafeBytes { bytes.bindBlob($0, at: index, handle) }
        }
        try checkBound(code, at: index)
    }

    /// Binds an integer to parameter `index` of a statement.
    private func bindInt64(_ value: Int64, at index: Int32, _ handle: SQLiteStatement) throws {
        try checkBound(sqlite3_bind_int64(handle, index, value), at: index)
    }

    @inline(__always)
    private func checkBound(_ code: Int32, at index: Int32) throws {
        guard code == SQLITE_OK else {
            throw CoreDataError(.persistentStoreSave, "SQLite could not bind parameter \(index) of a statement of the save (code \(code))")
        }
    }

    /// The statements of a save are prepared once per entity (and, for updates, per
    /// set of changed properties) and bound through SQLite's C API row after row.
    fileprivate struct UpdateKey: Hashable {
        let entity: ObjectIdentifier
        let indexes: [Int]
    }

    /// How rows of one entity with one set of changed properties are updated.
    fileprivate struct UpdatePlan {
        let statement: Statement
        let bindings: ColumnBindings
    }

    /// Whether the plans of `entity`'s rows are kept for later saves: plans are
    /// keyed by entity identity, which only the entities of the store's own model
    /// (alive as long as the store) keep unique.
    private func keepsPlans(for entity: EntityDescription) -> Bool {
        model.entitiesByName[entity.name] === entity
    }

    private func updatePlan(for row: RowSnapshot, indexes: [Int], _ db: Database) throws -> UpdatePlan {
        let entity = row.objectID.entity
        let storages = storages(of: entity, indexes: indexes)
        // The columns every row of the entity assigns, from a row of initial values
        // (the plan is kept: a malformed first row must not shape it).
        let template = RowSnapshot(objectID: row.objectID, version: 1, rowValues: ManagedObjectContext.initialValues(for: entity))
        let columns = try assignments(template, storages: storages).map(\.0)
        let sets = ["Z_OPT = Z_OPT + 1"] + columns.map { "\(SQLiteIdentifier.quoted($0)) = ?" }
        let statement = try db.cachedStatement(sql: "UPDATE \(try table(row.objectID)) SET \(sets.joined(separator: ", ")) WHERE Z_PK = ? AND Z_OPT = ?")
        statement.setUncheckedArguments(StatementArguments(Array(repeating: DatabaseValue.null, count: columns.count + 2)))
        return UpdatePlan(statement: statement, bindings: ColumnBindings(columns: columns, storages: storages))
    }

    private func update(_ row: RowSnapshot, _ plan: UpdatePlan, _ bytes: SQLiteBoundBytes, _ db: Database) throws {
        guard let pk = row.objectID.primaryKey else { return }
        let handle = plan.statement.sqliteStatement
        sqlite3_reset(handle)
        bytes.beginRow()
        guard try bindColumns(row, plan.bindings, from: 1, handle, bytes) else {
            throw CoreDataError(.persistentStoreSave, "Can't update \(row.objectID): its values do not match the properties of '\(row.objectID.entityName)'",
                                entityName: row.objectID.entityName)
        }
        let bound = Int32(plan.bindings.columns.count)
        try bindInt64(pk, at: bound + 1, handle)
        try bindInt64(row.version, at: bound + 2, handle)
        try runBound(plan.statement, db)
        if sqlite3_changes(db.sqliteConnection) != 1 { throw versionConflict(row.objectID) }
    }

    /// How rows of one entity are deleted: with and without a version check, and
    /// the join-table rows of its many-to-many relationships.
    fileprivate struct DeletePlan {
        let checked: Statement
        let unchecked: Statement
        let joinRows: [Statement]
    }

    private func deletePlan(for id: ManagedObjectID, _ db: Database) throws -> DeletePlan {
        let table = try table(id)
        let checked = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE Z_PK = ? AND Z_OPT = ?")
        checked.setUncheckedArguments([0, 0])
        let unchecked = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE Z_PK = ?")
        unchecked.setUncheckedArguments([0])
        var joinRows: [Statement] = []
        for property in id.entity.allProperties {
            guard let relationship = property as? RelationshipDescription,
                  case .joinTable(let join)? = schema.storage(for: relationship, in: id.entity) else { continue }
            let statement = try db.cachedStatement(sql: "DELETE FROM \(SQLiteIdentifier.quoted(join.tableName)) WHERE \(SQLiteIdentifier.quoted(join.sourceColumn)) = ?")
            statement.setUncheckedArguments([0])
            joinRows.append(statement)
        }
        return DeletePlan(checked: checked, unchecked: unchecked, joinRows: joinRows)
    }

    private func versionConflict(_ id: ManagedObjectID) -> CoreDataError {
        CoreDataError(.managedObjectMerge, "Optimistic locking failure: \(id) changed in the store since it was read",
                      entityName: id.entityName, objectDescription: id.description)
    }

    /// Deletes a row; `version` > 0 is the version it must still have.
    private func delete(_ id: ManagedObjectID, version: Int64, _ plan: DeletePlan, _ db: Database) throws {
        guard let pk = id.primaryKey else { return }
        let statement = version > 0 ? plan.checked : plan.unchecked
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        try bindInt64(pk, at: 1, handle)
        if version > 0 { try bindInt64(version, at: 2, handle) }
        try runBound(statement, db)
        if version > 0 && sqlite3_changes(db.sqliteConnection) != 1 { throw versionConflict(id) }
        // Join-table rows of the object's many-to-many relationships go with it.
        for join in plan.joinRows {
            sqlite3_reset(join.sqliteStatement)
            try bindInt64(pk, at: 1, join.sqliteStatement)
            try runBound(join, db)
        }
    }

    /// Writes the to-many relationships of a row that are stored outside it: join
    /// tables, hidden foreign keys of to-many relationships without inverse, and the
    /// order keys of ordered relationships.
    private func writeToMany(_ row: RowSnapshot, changed: [Int]?, _ db: Database) throws {
        guard let pk = row.objectID.primaryKey else { return }
        let entity = row.objectID.entity
        for index in changed ?? Array(row.rowValues.indices) where index < row.rowValues.count {
            guard let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany,
                  case .toMany(let ids?) = row.rowValues[index],
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

/// The insert, update and delete plans of a store's saves (statements prepared
/// once, how each row's values are bound), kept from one save to the next: a
/// save of one object would otherwise spend more building them than running
/// them. Entities are keyed by identity; the store's model keeps them alive.
///
/// `@unchecked Sendable`: the plans are only touched inside the store's write
/// blocks, which its database queue runs one at a time.
final class SQLiteSavePlans: @unchecked Sendable {
    /// The bytes of the strings and blobs bound to the row being written.
    let boundBytes = SQLiteBoundBytes()
    fileprivate var inserts: [ObjectIdentifier: SQLiteStore.InsertPlan] = [:]
    fileprivate var updates: [SQLiteStore.UpdateKey: SQLiteStore.UpdatePlan] = [:]
    fileprivate var deletes: [ObjectIdentifier: SQLiteStore.DeletePlan] = [:]
}
