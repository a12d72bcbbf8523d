import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

extension PostgreSQLStore {
    /// Applies one save in one transaction: inserts (several rows per
    /// statement), updates of the changed columns with their version check
    /// (`AND Z_OPT = ?`), deletes, join-table rows and order keys, then a `NOTIFY`
    /// of the changed IDs, which PostgreSQL delivers when the transaction commits.
    /// On any failure the transaction rolls back and nothing is written; when rows
    /// changed since they were read, the error is 133020 listing every conflict.
    public func save(_ changes: SaveChanges) throws {
        if isReadOnly {
            throw CoreDataError(.persistentStoreSave, "The PostgreSQL store \(identifier) is read-only", url: url)
        }
        // Batch requests run over rows are recorded as the executing context.
        let changes = history == nil ? changes : HistoryAttribution.attributed(changes)
        do {
            try pool.withSession { session in
                try session.transaction { try write(changes, session) }
            }
        } catch {
            // Rolled back. A version conflict is reported with every conflicting row,
            // gathered outside the failed transaction.
            if let error = error as? CoreDataError, error.code == .managedObjectMerge {
                try withSession("checking versions") { session in try checkVersions(changes, session) }
            }
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreSave, doing: "saving", url: url)
        }
    }

    private func write(_ changes: SaveChanges, _ session: PostgreSQLSession) throws {
        let tombstones = try history?.tombstones(of: changes.deleted, store: self, session) ?? [:]
        try insert(changes.inserted, session)
        try update(changes.updated, changedProperties: changes.changedProperties, session)
        try delete(changes.deleted, session)
        for row in changes.inserted { try writeToMany(row, changed: nil, session) }
        for row in changes.updated { try writeToMany(row, changed: changes.changedProperties[row.objectID], session) }
        let transaction = try history?.record(changes, tombstones: tombstones, store: self, session)
        try remoteChanges.announce(changes, historyTransaction: transaction, of: self, session)
        FaultPoints.reach("before-commit")
    }

    /// The most rows one `UPDATE ... FROM (VALUES ...)` or `DELETE ... USING
    /// (VALUES ...)` names (PostgreSQL takes at most 65,535 parameters).
    static let rowsPerStatement = 5_000

    /// The most read versions the deleted rows of one table may have for a
    /// `DELETE` per version; more, and one `DELETE` joins (key, version) pairs.
    static let versionsPerDelete = 4

    /// Updates rows that change the same columns of the same table together: one
    /// `UPDATE ... FROM unnest(keys, versions, column values...)` per group (a
    /// column whose values an array cannot carry exactly sends the group as
    /// `UPDATE ... FROM (VALUES ...)`, `rowsPerStatement` rows a statement), each
    /// row matched by key and read version. A statement that changes fewer rows
    /// than it names met a version conflict.
    private func update(_ rows: [RowSnapshot], changedProperties: [ManagedObjectID: [Int]], _ session: PostgreSQLSession) throws {
        struct Group {
            let table: String
            let columns: [String]
            var rows: [(pk: Int64, version: Int64, values: [DatabaseValue])] = []
        }
        var groups: [Group] = []
        var index: [String: Int] = [:]
        var last: (entity: EntityDescription, table: String)?
        for row in rows {
            guard let pk = row.objectID.primaryKey else { continue }
            let indexes = changedProperties[row.objectID] ?? Array(row.values.indices)
            let assignments = try self.assignments(row, indexes: indexes)
            let table: String
            if let last, row.objectID.hasEntity(last.entity) {
                table = last.table
            } else {
                table = try self.table(row.objectID)
                last = (row.objectID.entity, table)
            }
            let columns = assignments.map(\.0)
            let key = table + "\u{0}" + columns.joined(separator: "\u{0}")
            let group: Int
            if let known = index[key] {
                group = known
            } else {
                groups.append(Group(table: table, columns: columns))
                group = groups.count - 1
                index[key] = group
            }
            groups[group].rows.append((pk, row.version, assignments.map(\.1)))
        }
        let q = SQLiteIdentifier.quoted
        for group in groups {
            let types = try group.columns.map { try columnType(group.table, $0) }
            // One statement for the group when every column can be an array.
            let matrix = group.columns.indices.map { column in group.rows.map { $0.values[column] } }
            if let arrays = PostgreSQLBinaryArray.columns(matrix, types: types) {
                var bindings = PostgresBindings(capacity: arrays.count + 2)
                bindings.append(group.rows.map(\.pk))
                bindings.append(group.rows.map(\.version))
                for array in arrays { bindings.append(array) }
                let sets = ["Z_OPT = t.Z_OPT + 1"] + group.columns.enumerated().map { "\(q($0.element)) = \(arrays[$0.offset].element("v.c\($0.offset)"))" }
                let parameters = ["$1::int8[]", "$2::int8[]"] + arrays.indices.map { "$\($0 + 3)::\(arrays[$0].parameterType)" }
                let names = ["pk", "opt"] + group.columns.indices.map { "c\($0)" }
                let sql = "UPDATE \(group.table) t SET \(sets.joined(separator: ", ")) FROM unnest(\(parameters.joined(separator: ", "))) AS v(\(names.joined(separator: ", "))) WHERE t.Z_PK = v.pk AND t.Z_OPT = v.opt"
                if try session.execute(numbered: sql, bindings: bindings) != group.rows.count { throw versionConflict(count: group.rows.count) }
                continue
            }
            let sets = ["Z_OPT = t.Z_OPT + 1"] + group.columns.enumerated().map { "\(q($0.element)) = v.c\($0.offset)" }
            let names = ["pk", "opt"] + group.columns.indices.map { "c\($0)" }
            let tuple = "(?::BIGINT, ?::BIGINT" + types.map { ", ?::" + $0 }.joined() + ")"
            let perStatement = max(1, min(PostgreSQLStore.rowsPerStatement, 60_000 / (group.columns.count + 2)))
            var start = 0
            while start < group.rows.count {
                let chunk = group.rows[start..<min(group.rows.count, start + perStatement)]
                start += chunk.count
                var arguments: [DatabaseValue] = []
                arguments.reserveCapacity(chunk.count * (group.columns.count + 2))
                for row in chunk { arguments += [row.pk.databaseValue, row.version.databaseValue] + row.values }
                let sql = "UPDATE \(group.table) t SET \(sets.joined(separator: ", ")) FROM (VALUES "
                    + Array(repeating: tuple, count: chunk.count).joined(separator: ", ")
                    + ") AS v(\(names.joined(separator: ", "))) WHERE t.Z_PK = v.pk AND t.Z_OPT = v.opt"
                if try session.execute(sql, arguments) != chunk.count { throw versionConflict(count: chunk.count) }
            }
        }
    }

    /// Deletes rows by table: for rows read at a version, one `DELETE ... WHERE
    /// Z_OPT = version AND Z_PK = ANY(keys)` per version (or one `DELETE ...
    /// USING unnest(keys, versions)` for many versions), one `DELETE ... WHERE
    /// Z_PK = ANY(keys)` for the others; then their join-table rows.
    private func delete(_ deleted: [(ManagedObjectID, Int64)], _ session: PostgreSQLSession) throws {
        var byTable: [(table: String, entities: [EntityDescription], checked: [(Int64, Int64)], unchecked: [Int64])] = []
        var index: [String: Int] = [:]
        // The group of the last row's entity (the table looked up once per run
        // of rows of one entity).
        var last: (entity: EntityDescription, position: Int)?
        for (id, version) in deleted {
            guard let pk = id.primaryKey else { continue }
            let position: Int
            if let last, id.hasEntity(last.entity) {
                position = last.position
            } else {
                let table = try self.table(id)
                if let known = index[table] {
                    position = known
                } else {
                    byTable.append((table, [], [], []))
                    position = byTable.count - 1
                    index[table] = position
                }
                if !byTable[position].entities.contains(where: { $0 === id.entity }) { byTable[position].entities.append(id.entity) }
                last = (id.entity, position)
            }
            if version > 0 { byTable[position].checked.append((pk, version)) } else { byTable[position].unchecked.append(pk) }
        }
        let q = SQLiteIdentifier.quoted
        // Each statement takes its keys (and read versions) as arrays, one
        // statement for any number of rows.
        func keyArrays(_ arrays: [Int64]...) -> PostgresBindings {
            var bindings = PostgresBindings(capacity: arrays.count)
            for array in arrays { bindings.append(array) }
            return bindings
        }
        for group in byTable {
            if !group.checked.isEmpty {
                // Rows read at a few versions (most saves: one): a statement per
                // version, `Z_OPT = v AND Z_PK = ANY(keys)`, which the server
                // filters as fast as keys alone; else every (key, version) pair
                // joined, which costs it more per row.
                var byVersion: [Int64: [Int64]] = [:]
                if let version = group.checked.first?.1, group.checked.allSatisfy({ $0.1 == version }) {
                    byVersion[version] = group.checked.map(\.0)
                } else {
                    for (pk, version) in group.checked where byVersion.count <= Self.versionsPerDelete || byVersion[version] != nil {
                        byVersion[version, default: []].append(pk)
                    }
                }
                if byVersion.count <= Self.versionsPerDelete {
                    for (version, keys) in byVersion.sorted(by: { $0.key < $1.key }) {
                        var bindings = keyArrays(keys)
                        bindings.append(version)
                        let changed = try session.execute(numbered: "DELETE FROM \(group.table) WHERE Z_OPT = $2 AND Z_PK = ANY($1::int8[])",
                                                          bindings: bindings)
                        if changed != keys.count { throw versionConflict(count: keys.count) }
                    }
                } else {
                    let sql = "DELETE FROM \(group.table) t USING unnest($1::int8[], $2::int8[]) AS v(pk, opt) WHERE t.Z_PK = v.pk AND t.Z_OPT = v.opt"
                    let changed = try session.execute(numbered: sql, bindings: keyArrays(group.checked.map(\.0), group.checked.map(\.1)))
                    if changed != group.checked.count { throw versionConflict(count: group.checked.count) }
                }
            }
            if !group.unchecked.isEmpty {
                try session.execute(numbered: "DELETE FROM \(group.table) WHERE Z_PK = ANY($1::int8[])", bindings: keyArrays(group.unchecked))
            }
            // Join-table rows of the deleted sources.
            var joins: [String: String] = [:]
            for entity in group.entities {
                for property in entity.allProperties {
                    guard let relationship = property as? RelationshipDescription,
                          case .joinTable(let join)? = schema.storage(for: relationship, in: entity) else { continue }
                    joins[join.tableName] = join.sourceColumn
                }
            }
            guard !joins.isEmpty else { continue }
            let keys = group.checked.map(\.0) + group.unchecked
            for (table, column) in joins.sorted(by: { $0.key < $1.key }) {
                try session.execute(numbered: "DELETE FROM \(q(table)) WHERE \(q(column)) = ANY($1::int8[])", bindings: keyArrays(keys))
            }
        }
    }

    /// The PostgreSQL type of a column (for the casts of a `VALUES` list, whose
    /// parameters have no column to take their type from).
    private func columnType(_ quotedTable: String, _ column: String) throws -> String {
        let key = SQLiteIdentifier.key(column)
        for table in schema.tables where SQLiteIdentifier.quoted(table.name) == quotedTable {
            if let found = table.columns.first(where: { SQLiteIdentifier.key($0.name) == key }) {
                return PostgreSQLSchema.columnType(found.declaredType)
            }
        }
        throw CoreDataError(.persistentStoreSave, "The store's table \(quotedTable) has no column \(column)")
    }

    /// Inserts rows of the same entity together: up to 10,000 rows in one
    /// `INSERT ... SELECT ... FROM unnest($1, $2, ...)`, one array parameter per
    /// column (`PostgreSQLBinaryArray`); rows whose values an array cannot carry
    /// exactly go in `INSERT ... VALUES (...), (...)` statements instead.
    private func insert(_ rows: [RowSnapshot], _ session: PostgreSQLSession) throws {
        var start = 0
        while start < rows.count {
            let entity = rows[start].objectID.entity
            let plan = insertPlan(for: entity)
            let columns = plan.flatMap(\.columns)
            var end = start
            while end < rows.count, end - start < 10_000, rows[end].objectID.entity === entity { end += 1 }
            guard let number = schema.entityNumber(entity) else {
                throw CoreDataError(.persistentStoreSave, "The store has no entity number for '\(entity.name)'", entityName: entity.name)
            }
            let table = try self.table(rows[start].objectID)
            var keys: [DatabaseValue] = []
            keys.reserveCapacity(end - start)
            var matrix = Array(repeating: [DatabaseValue](), count: columns.count)
            for index in matrix.indices { matrix[index].reserveCapacity(end - start) }
            for row in rows[start..<end] {
                guard let pk = row.objectID.primaryKey else {
                    throw CoreDataError(.persistentStoreSave, "Can't insert \(row.objectID): no primary key")
                }
                keys.append(pk.databaseValue)
                try appendInsertValues(of: row, plan: plan, to: &matrix)
            }
            let names = ["Z_PK", "Z_ENT", "Z_OPT"] + columns.map(SQLiteIdentifier.quoted)
            if try !insertArrays(table: table, names: names, entityNumber: number, keys: keys, columns: columns, matrix: matrix, session) {
                let tuples = keys.indices.map { row in matrix.map { $0[row] } }
                try insertTuples(table: table, names: names, entityNumber: number, keys: keys, tuples: tuples, session)
            }
            start = end
        }
    }

    /// A stored property of an inserted row: where it is in the entity's
    /// `allProperties`, how it is stored, and the columns it fills, in order.
    private struct InsertedProperty {
        let index: Int
        let property: PropertyDescription
        let storage: SQLiteSchema.PropertyStorage
        let columns: [String]
        /// A composite's element paths, in the order of `columns`.
        let paths: [String]
    }

    /// The properties an inserted row of `entity` stores in its table's row, in
    /// the order of their columns.
    private func insertPlan(for entity: EntityDescription) -> [InsertedProperty] {
        var plan: [InsertedProperty] = []
        for (index, property) in entity.allProperties.enumerated() {
            guard let storage = schema.storage(for: property, in: entity) else { continue }
            switch storage {
            case .column(let column):
                plan.append(InsertedProperty(index: index, property: property, storage: storage, columns: [column], paths: []))
            case .composite(let elements):
                let paths = elements.keys.sorted().filter { elements[$0] != nil }
                plan.append(InsertedProperty(index: index, property: property, storage: storage,
                                             columns: paths.compactMap { elements[$0] }, paths: paths))
            case .toOne(let column, let entityColumn, _):
                plan.append(InsertedProperty(index: index, property: property, storage: storage,
                                             columns: [column] + (entityColumn.map { [$0] } ?? []), paths: []))
            default:
                continue
            }
        }
        return plan
    }

    /// Appends the column values of an inserted row to `matrix` (one array per
    /// column of `plan`, in its order): NULL for a value the row lacks.
    private func appendInsertValues(of row: RowSnapshot, plan: [InsertedProperty], to matrix: inout [[DatabaseValue]]) throws {
        var column = 0
        for stored in plan {
            let value = row.value(at: stored.index)
            switch stored.storage {
            case .column:
                if case .attribute(let attributeValue)? = value, let attribute = stored.property as? AttributeDescription {
                    matrix[column].append(try encode(attributeValue, for: attribute))
                } else {
                    matrix[column].append(.null)
                }
            case .composite:
                let composite = stored.property as? CompositeAttributeDescription
                for (offset, path) in stored.paths.enumerated() {
                    if case .attribute(let attributeValue)? = value, let composite {
                        let element = composite.element(of: attributeValue, path: path)
                        let type = composite.elementType(path: path)
                        matrix[column + offset].append(type.flatMap { SQLiteValueEncoding.databaseValue(element, as: $0) } ?? .null)
                    } else {
                        matrix[column + offset].append(.null)
                    }
                }
            case .toOne(_, let entityColumn, _):
                var id: ManagedObjectID?
                if case .toOne(let destination)? = value { id = destination }
                matrix[column].append(id?.primaryKey.map { $0.databaseValue } ?? .null)
                if entityColumn != nil {
                    matrix[column + 1].append(id.flatMap { schema.entityNumber($0.entity) }.map { Int64($0).databaseValue } ?? .null)
                }
            default:
                break
            }
            column += stored.columns.count
        }
    }

    /// One `INSERT ... SELECT ... FROM unnest(...)` of the rows; false, writing
    /// nothing, when a column's values do not fit an array of its type.
    private func insertArrays(table: String, names: [String], entityNumber: Int, keys: [DatabaseValue], columns: [String],
                              matrix: [[DatabaseValue]], _ session: PostgreSQLSession) throws -> Bool {
        let types = try ["BIGINT"] + columns.map { try columnType(table, $0) }
        guard let arrays = PostgreSQLBinaryArray.columns([keys] + matrix, types: types) else { return false }
        var bindings = PostgresBindings(capacity: arrays.count)
        for array in arrays { bindings.append(array) }
        let aliases = arrays.indices.map { "v\($0)" }
        let selected = ["v0", "\(entityNumber)", "1"] + arrays.indices.dropFirst().map { arrays[$0].element("v\($0)") }
        let parameters = arrays.indices.map { "$\($0 + 1)::\(arrays[$0].parameterType)" }
        let sql = "INSERT INTO \(table) (\(names.joined(separator: ", "))) SELECT \(selected.joined(separator: ", ")) FROM unnest(\(parameters.joined(separator: ", "))) AS v(\(aliases.joined(separator: ", ")))"
        try session.execute(numbered: sql, bindings: bindings)
        return true
    }

    /// `INSERT ... VALUES (...), (...)` of the rows, several hundred a statement.
    private func insertTuples(table: String, names: [String], entityNumber: Int, keys: [DatabaseValue], tuples: [[DatabaseValue]],
                              _ session: PostgreSQLSession) throws {
        let perStatement = max(1, min(500, 60_000 / names.count))
        let tuple = "(" + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")"
        var start = 0
        while start < tuples.count {
            let end = min(tuples.count, start + perStatement)
            var arguments: [DatabaseValue] = []
            arguments.reserveCapacity((end - start) * names.count)
            for index in start..<end {
                arguments += [keys[index], Int64(entityNumber).databaseValue, (1 as Int64).databaseValue]
                arguments += tuples[index]
            }
            let sql = "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES "
                + Array(repeating: tuple, count: end - start).joined(separator: ", ")
            try session.execute(sql, arguments)
            start = end
        }
    }

    /// The column assignments of the properties at `indexes` of a row.
    private func assignments(_ row: RowSnapshot, indexes: [Int]) throws -> [(String, DatabaseValue)] {
        let entity = row.objectID.entity
        let properties = entity.allProperties
        let values = row.values
        var result: [(String, DatabaseValue)] = []
        for index in indexes where index < properties.count && index < values.count {
            let property = properties[index]
            guard let storage = schema.storage(for: property, in: entity) else { continue }
            switch (storage, values[index]) {
            case (.column(let column), .attribute(let value)):
                guard let attribute = property as? AttributeDescription else { continue }
                result.append((column, try encode(value, for: attribute)))
            case (.composite(let columns), .attribute(let value)):
                guard let composite = property as? CompositeAttributeDescription else { continue }
                for (path, column) in columns {
                    let element = composite.element(of: value, path: path)
                    let type = composite.elementType(path: path)
                    result.append((column, type.flatMap { SQLiteValueEncoding.databaseValue(element, as: $0) } ?? .null))
                }
            case (.toOne(let column, let entityColumn, _), .toOne(let id)):
                result.append((column, id?.primaryKey.map { $0.databaseValue } ?? .null))
                if let entityColumn {
                    result.append((entityColumn, id.flatMap { schema.entityNumber($0.entity) }.map { Int64($0).databaseValue } ?? .null))
                }
            default:
                continue
            }
        }
        return result
    }

    /// Writes the to-many relationships of a row stored outside it: join-table
    /// rows, hidden foreign keys of to-many relationships without inverse, order keys.
    private func writeToMany(_ row: RowSnapshot, changed: [Int]?, _ session: PostgreSQLSession) throws {
        guard let pk = row.objectID.primaryKey else { return }
        let entity = row.objectID.entity
        let values = row.values
        let q = SQLiteIdentifier.quoted
        for index in changed ?? Array(values.indices) where index < values.count && index < entity.allProperties.count {
            guard let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany,
                  case .toMany(let ids?) = values[index],
                  let storage = schema.storage(for: relationship, in: entity) else { continue }
            switch storage {
            case .joinTable(let join):
                // Both sides of a many-to-many change together; one writes the rows.
                if let inverse = relationship.inverseRelationship, !ownsJoinRows(relationship, inverse) { continue }
                try session.execute("DELETE FROM \(q(join.tableName)) WHERE \(q(join.sourceColumn)) = ?", [pk.databaseValue])
                let keys = ids.compactMap(\.primaryKey)
                guard !keys.isEmpty else { continue }
                var arguments: [DatabaseValue] = []
                var tuples: [String] = []
                for (position, key) in keys.enumerated() {
                    arguments += [pk.databaseValue, key.databaseValue]
                    if join.orderColumn != nil { arguments.append(Int64((position + 1) * 1024).databaseValue) }
                    tuples.append(join.orderColumn == nil ? "(?, ?)" : "(?, ?, ?)")
                }
                var names = [q(join.sourceColumn), q(join.destinationColumn)]
                if let order = join.orderColumn { names.append(q(order)) }
                try session.execute("INSERT INTO \(q(join.tableName)) (\(names.joined(separator: ", "))) VALUES \(tuples.joined(separator: ", ")) ON CONFLICT DO NOTHING",
                                    arguments)
            case .toMany(let tableName, let foreignKey, let orderColumn):
                let table = q(tableName)
                let fk = q(foreignKey)
                if relationship.inverseRelationship == nil {
                    try session.execute("UPDATE \(table) SET \(fk) = NULL WHERE \(fk) = ?", [pk.databaseValue])
                }
                for (position, id) in ids.enumerated() {
                    guard let destination = id.primaryKey else { continue }
                    if let orderColumn {
                        try session.execute("UPDATE \(table) SET \(fk) = ?, \(q(orderColumn)) = ? WHERE Z_PK = ?",
                                            [pk.databaseValue, Int64((position + 1) * 1024).databaseValue, destination.databaseValue])
                    } else if relationship.inverseRelationship == nil {
                        try session.execute("UPDATE \(table) SET \(fk) = ? WHERE Z_PK = ?", [pk.databaseValue, destination.databaseValue])
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

    private func table(_ id: ManagedObjectID) throws -> String {
        guard let table = schema.table(for: id.entity) else {
            throw CoreDataError(.persistentStoreSave, "The store has no table for entity '\(id.entityName)'", entityName: id.entityName)
        }
        return SQLiteIdentifier.quoted(table)
    }

    /// A statement changed fewer than its `count` rows: some changed or went since
    /// they were read (`save` rolls back, then lists which with `checkVersions`).
    private func versionConflict(count: Int) -> CoreDataError {
        CoreDataError(.managedObjectMerge, "Optimistic locking failure: of \(count) rows, some changed in the store since they were read")
    }

    /// Throws 133020 listing every row whose stored version is not the one it was read at.
    private func checkVersions(_ changes: SaveChanges, _ session: PostgreSQLSession) throws {
        var conflicts: [CoreDataError] = []
        func check(_ id: ManagedObjectID, _ expected: Int64) throws {
            guard let pk = id.primaryKey else { return }
            let row = try session.query("SELECT Z_OPT FROM \(try table(id)) WHERE Z_PK = ?", [pk.databaseValue]).first
            let found = row.map { $0.int64(0) }
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
}
