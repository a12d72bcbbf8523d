import Foundation
import GRDB

extension SQLiteSchema {
    /// The schema of an existing store, matched to `model` by name: entity
    /// numbers come from the store's `Z_PRIMARYKEY`, columns from its tables
    /// (`PRAGMA table_info`), indexes from `sqlite_master`. The database is only read.
    ///
    /// ```swift
    /// let queue = try DatabaseQueue(path: storeURL.path, configuration: readOnly)
    /// let schema = try queue.read { db in try SQLiteSchema(reading: db, model: model) }
    /// schema.entityNumber(forEntityNamed: "Mood")   // whatever Z_PRIMARYKEY says
    /// ```
    ///
    /// Throws ``CoreDataError/Code/persistentStoreIncompatibleSchema`` (134020)
    /// when the store lacks an entity, a table or a column the model needs; the message and the underlying errors
    /// name each entity and property that differ. Columns and entities the model
    /// doesn't know are ignored.
    public init(reading db: Database, model: ManagedObjectModel, configurationName: String? = nil) throws {
        guard try SQLiteSchemaReader.tableExists(db, "Z_PRIMARYKEY") else {
            throw CoreDataError(.persistentStoreIncompatibleSchema,
                                "The store's schema doesn't match the model: the store has no Z_PRIMARYKEY table")
        }
        guard let entities = model.entities(forConfigurationName: configurationName) else {
            throw CoreDataError(.coreData, "The model has no configuration named '\(configurationName ?? "")'")
        }
        // The store's entities.
        var storeNumbers: [String: Int] = [:]
        var storeNames: [Int: String] = [:]
        var storeSupers: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY") {
            guard let number = SQLiteStoreErrors.int(row[0]), let name = SQLiteStoreErrors.string(row[1]) else { continue }
            storeNumbers[name] = number
            storeNames[number] = name
            storeSupers[name] = SQLiteStoreErrors.int(row[2]) ?? 0
        }
        var problems: [CoreDataError] = []
        func problem(_ entity: String?, _ key: String?, _ message: String) {
            problems.append(CoreDataError(.persistentStoreIncompatibleSchema, message, entityName: entity, key: key))
        }
        let names = Set(entities.map(\.name))
        // Entities are matched to the store's numbers by name, then by renaming
        // identifier (Core Data's lightweight migration keeps the old name in
        // Z_PRIMARYKEY when it renames an entity), then through the store's own
        // model cache (an entity of the cached model with the same name, and its
        // renaming identifier). The store's names become aliases of the model's.
        var cachedModel: ManagedObjectModel??
        func cachedRenamingIdentifier(_ name: String) -> String? {
            if cachedModel == nil { cachedModel = .some(try? SQLiteSchemaReader.modelCache(db)) }
            return cachedModel??.entitiesByName[name]?.renamingIdentifier
        }
        let sortedEntities = entities.sorted(by: { ManagedObjectModel.compareNames($0.name, $1.name) })
        var oldNames: [String: String] = [:]   // model name -> the store's name
        for entity in sortedEntities where storeNumbers[entity.name] == nil {
            let claimed = Set(names)
            for candidate in [entity.renamingIdentifier, cachedRenamingIdentifier(entity.name)].compactMap({ $0 })
            where !claimed.contains(candidate) {
                guard let number = storeNumbers[candidate] else { continue }
                storeNumbers[entity.name] = number
                storeNames[number] = entity.name
                storeSupers[entity.name] = storeSupers[candidate]
                oldNames[entity.name] = candidate
                break
            }
        }
        // An entity the model added that has no Z_PRIMARYKEY row yet (Core Data adds
        // rows as it needs them): it gets the next free number, as long as its
        // hierarchy's table exists (checked below with the columns).
        var nextNumber = max(storeNames.keys.filter { $0 < 16000 }.max() ?? 0, 0) + 1
        for entity in sortedEntities where storeNumbers[entity.name] == nil {
            var root = entity
            while let up = root.superentity, names.contains(up.name) { root = up }
            guard try SQLiteSchemaReader.tableExists(db, "Z" + root.name.uppercased()) else { continue }
            storeNumbers[entity.name] = nextNumber
            storeNames[nextNumber] = entity.name
            storeSupers[entity.name] = entity.superentity.flatMap { storeNumbers[$0.name] } ?? 0
            ModelLoadingLog.warning("Entity '\(entity.name)' has no row in the store's Z_PRIMARYKEY; numbered \(nextNumber)",
                                    entity: entity.name, property: nil)
            nextNumber += 1
        }
        for entity in sortedEntities {
            guard storeNumbers[entity.name] != nil else {
                problem(entity.name, nil, "entity '\(entity.name)' is in the model but not in the store's Z_PRIMARYKEY")
                continue
            }
            let modelSuper = entity.superentity.flatMap { names.contains($0.name) ? $0.name : nil }
            let storeSuperNumber = storeSupers[entity.name] ?? 0
            let storeSuper = storeSuperNumber == 0 ? nil : storeNames[storeSuperNumber] ?? "#\(storeSuperNumber)"
            if modelSuper != storeSuper {
                problem(entity.name, nil, "entity '\(entity.name)' has superentity \(modelSuper.map { "'\($0)'" } ?? "none") in the model but \(storeSuper.map { "'\($0)'" } ?? "none") in the store")
            }
        }
        if !problems.isEmpty { throw SQLiteSchemaReader.incompatible(problems) }

        var expected = try SQLiteLayout(model: model, configurationName: configurationName, storeNumbers: storeNumbers).schema
        try SQLiteSchemaReader.matchJoinTables(db, &expected, model: model)
        try SQLiteSchemaReader.matchRenamedTables(db, &expected, oldNames: oldNames)
        // Who needs each column, to name them in errors.
        var users: [String: [String: (entity: String, property: String)]] = [:]   // table -> column -> user
        for mapping in expected.entities {
            for (property, storage) in expected.propertyStorage[mapping.entityName] ?? [:] {
                let user = (mapping.entityName, property)
                switch storage {
                case .column(let column): users[mapping.tableName, default: [:]][column] = user
                case .composite(let columns): for column in columns.values { users[mapping.tableName, default: [:]][column] = user }
                case .toOne(let column, let entityColumn, let orderColumn):
                    for column in [column, entityColumn, orderColumn].compactMap({ $0 }) {
                        users[mapping.tableName, default: [:]][column] = user
                    }
                case .toMany(let table, let column, let order):
                    for column in [column, order].compactMap({ $0 }) where users[table]?[column] == nil {
                        users[table, default: [:]][column] = user
                    }
                case .joinTable(let join):
                    for column in [join.sourceColumn, join.destinationColumn, join.orderColumn].compactMap({ $0 }) {
                        users[join.tableName, default: [:]][column] = user
                    }
                case .notStored: break
                }
            }
        }

        var tables: [Table] = []
        var renamed: [String: [String: String]] = [:]   // table -> expected key -> real name
        for table in expected.tables {
            let real = try SQLiteSchemaReader.columns(db, table.name)
            if real.isEmpty {
                if table.kind == .bookkeeping {
                    if table.name != "Z_MODELCACHE" {
                        problem(nil, nil, "the store has no \(table.name) table")
                    }
                    continue
                }
                let owners: String
                switch table.kind {
                case .entity(let root): owners = "entity '\(root)'"
                default:
                    let user = users[table.name]?.values.first
                    owners = user.map { "relationship '\($0.entity).\($0.property)'" } ?? "a relationship"
                }
                problem(SQLiteSchemaReader.entity(of: table, users: users), nil,
                        "table \(table.name) of \(owners) is missing from the store")
                continue
            }
            for column in table.columns {
                guard let found = real.first(where: { SQLiteIdentifier.key($0.name) == SQLiteIdentifier.key(column.name) }) else {
                    let user = users[table.name]?[column.name]
                    let what = user.map { " for '\($0.entity).\($0.property)'" } ?? ""
                    problem(user?.entity ?? SQLiteSchemaReader.entity(of: table, users: users), user?.property,
                            "column \(column.name)\(what) is missing from table \(table.name)")
                    continue
                }
                // A column's declared type is not checked: SQLite columns hold any
                // value whatever their declaration, and Core Data reads by value.
                renamed[table.name, default: [:]][SQLiteIdentifier.key(column.name)] = found.name
            }
            var described = table
            described.columns = real
            tables.append(described)
        }
        if !problems.isEmpty { throw SQLiteSchemaReader.incompatible(problems) }

        func real(_ table: String, _ column: String) -> String {
            renamed[table]?[SQLiteIdentifier.key(column)] ?? column
        }
        var storage: [String: [String: PropertyStorage]] = [:]
        for mapping in expected.entities {
            var properties: [String: PropertyStorage] = [:]
            for (property, value) in expected.propertyStorage[mapping.entityName] ?? [:] {
                let table = mapping.tableName
                switch value {
                case .column(let column): properties[property] = .column(real(table, column))
                case .composite(let columns): properties[property] = .composite(columns.mapValues { real(table, $0) })
                case .toOne(let column, let entityColumn, let order):
                    properties[property] = .toOne(column: real(table, column), entityColumn: entityColumn.map { real(table, $0) },
                                                  orderColumn: order.map { real(table, $0) })
                case .toMany(let other, let column, let order):
                    properties[property] = .toMany(tableName: other, foreignKeyColumn: real(other, column),
                                                   orderColumn: order.map { real(other, $0) })
                case .joinTable(var join):
                    join.sourceColumn = real(join.tableName, join.sourceColumn)
                    join.destinationColumn = real(join.tableName, join.destinationColumn)
                    join.orderColumn = join.orderColumn.map { real(join.tableName, $0) }
                    properties[property] = .joinTable(join)
                case .notStored: properties[property] = .notStored
                }
            }
            storage[mapping.entityName] = properties
        }
        self.init(tables: tables, indexes: try SQLiteSchemaReader.indexes(db), entities: expected.entities,
                  entitiesByName: expected.entitiesByName, propertyStorage: storage, creationStatements: [])
    }
}

/// Reads tables, columns and indexes of an existing database.
enum SQLiteSchemaReader {
    /// The model in the store's `Z_MODELCACHE`, or nil when there is none or it
    /// cannot be read.
    static func modelCache(_ db: Database) throws -> ManagedObjectModel? {
        guard try tableExists(db, "Z_MODELCACHE"),
              let blob = try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE"), !blob.isEmpty else { return nil }
        return try? ManagedObjectModel(modelCacheData: blob)
    }

    /// For a hierarchy whose root entity was matched by its old name (renaming
    /// identifier), uses the table of the old name when the store has no table of
    /// the new one (a guess: which of the two a renaming migration leaves is not
    /// known from a real store; a warning says so).
    static func matchRenamedTables(_ db: Database, _ schema: inout SQLiteSchema, oldNames: [String: String]) throws {
        for (index, table) in schema.tables.enumerated() {
            guard case .entity(let root) = table.kind, let old = oldNames[root],
                  try !tableExists(db, table.name), try tableExists(db, "Z" + old.uppercased()) else { continue }
            let oldTable = "Z" + old.uppercased()
            ModelLoadingLog.warning("Entity '\(root)' is stored in table \(oldTable), under its old name '\(old)'",
                                    entity: root, property: nil)
            schema.tables[index].name = oldTable
            for (entityIndex, mapping) in schema.entities.enumerated() where mapping.tableName == table.name {
                schema.entities[entityIndex].tableName = oldTable
            }
            for (name, mapping) in schema.entitiesByName where mapping.tableName == table.name {
                schema.entitiesByName[name]?.tableName = oldTable
            }
            for (entity, properties) in schema.propertyStorage {
                for (property, storage) in properties {
                    if case .toMany(let other, let column, let order) = storage, other == table.name {
                        schema.propertyStorage[entity]?[property] = .toMany(tableName: oldTable, foreignKeyColumn: column, orderColumn: order)
                    }
                }
            }
        }
    }

    /// Replaces the join tables the naming rule predicts by those the store has.
    ///
    /// A store's own names win: the rule for new stores only says which names to
    /// look for. A many-to-many pair lives in a table named after either side
    /// (`Z_<entity#><RELATIONSHIP>`); its two key columns are found by the names
    /// the model implies for them (`Z_<entity#><NAME>`), as they are or with the
    /// numeric suffix Core Data gives a name that clashes with another join column
    /// (`Z_14USERS1`); which of two clashing columns got the suffix is read from
    /// the store, never predicted. Order columns are the key column's `Z_FOK_`
    /// twin. A table found nowhere is left as predicted (the column check then
    /// reports it missing).
    static func matchJoinTables(_ db: Database, _ schema: inout SQLiteSchema, model: ManagedObjectModel) throws {
        var sides: [String: [(entity: String, property: String, join: SQLiteSchema.JoinTable)]] = [:]
        for (entity, properties) in schema.propertyStorage {
            for (property, storage) in properties {
                if case .joinTable(let join) = storage { sides[SQLiteIdentifier.key(join.tableName), default: []].append((entity, property, join)) }
            }
        }
        let entities = model.entitiesByName
        func number(_ entity: EntityDescription?) -> Int { entity.flatMap { schema.entitiesByName[$0.name]?.entityNumber } ?? 0 }
        for index in schema.tables.indices where schema.tables[index].kind == .join {
            let table = schema.tables[index]
            guard let users = sides[SQLiteIdentifier.key(table.name)], !users.isEmpty else { continue }
            // The unsuffixed names of each side's columns, and the tables either side would name.
            var bases: [String: (source: String, destination: String)] = [:]   // entity \0 property -> bases
            var candidates = [table.name]
            for user in users.sorted(by: { ($0.entity, $0.property) < ($1.entity, $1.property) }) {
                guard let relationship = entities[user.entity]?.relationshipsByName[user.property] else { continue }
                let declaring = relationship.entity
                let inverse = relationship.inverseRelationship
                let reflexive = inverse === relationship
                let source = "Z_\(number(declaring))\((inverse?.name ?? relationship.name).uppercased())"
                let destination = reflexive ? "REFLEXIVE" : "Z_\(number(inverse?.entity))\(relationship.name.uppercased())"
                bases[user.entity + "\u{0}" + user.property] = (source, destination)
                candidates.append("Z_\(number(declaring))\(relationship.name.uppercased())")
            }
            var found: (name: String, columns: [SQLiteSchema.Column])?
            for candidate in candidates {
                let real = try columns(db, candidate)
                if !real.isEmpty { found = (candidate, real); break }
            }
            guard let found else { continue }
            let keyColumns = found.columns.filter { !SQLiteIdentifier.key($0.name).hasPrefix("Z_FOK_") }
            /// The store's column for `base`: the one named so, else the one named
            /// `base` plus digits, when exactly one is (nil when none).
            func realName(_ base: String, excluding taken: String?) -> String? {
                let key = SQLiteIdentifier.key(base)
                if let exact = keyColumns.first(where: { SQLiteIdentifier.key($0.name) == key && $0.name != taken }) { return exact.name }
                let suffixed = keyColumns.filter { column in
                    let realKey = SQLiteIdentifier.key(column.name)
                    return column.name != taken && realKey.hasPrefix(key) && realKey.count > key.count
                        && realKey.dropFirst(key.count).allSatisfy(\.isNumber)
                }
                return suffixed.count == 1 ? suffixed[0].name : nil
            }
            func realOrder(_ column: String?, of keyColumn: String) -> String? {
                guard column != nil else { return nil }
                let order = SQLiteIdentifier.key("Z_FOK_" + keyColumn.dropFirst(2))
                return found.columns.first { SQLiteIdentifier.key($0.name) == order }?.name ?? column
            }
            var renamedColumns: [String: String] = [:]
            for user in users {
                var join = user.join
                join.tableName = found.name
                if let base = bases[user.entity + "\u{0}" + user.property] {
                    // The exact names first, so that a suffixed column is never taken for its unsuffixed twin.
                    let exactSource = keyColumns.contains { SQLiteIdentifier.key($0.name) == SQLiteIdentifier.key(base.source) }
                    if exactSource || base.destination == "REFLEXIVE" {
                        join.sourceColumn = realName(base.source, excluding: nil) ?? join.sourceColumn
                        join.destinationColumn = realName(base.destination, excluding: join.sourceColumn) ?? join.destinationColumn
                    } else {
                        join.destinationColumn = realName(base.destination, excluding: nil) ?? join.destinationColumn
                        join.sourceColumn = realName(base.source, excluding: join.destinationColumn) ?? join.sourceColumn
                    }
                }
                join.orderColumn = realOrder(user.join.orderColumn, of: join.destinationColumn)
                renamedColumns[user.join.sourceColumn] = join.sourceColumn
                renamedColumns[user.join.destinationColumn] = join.destinationColumn
                if let old = user.join.orderColumn, let new = join.orderColumn { renamedColumns[old] = new }
                schema.propertyStorage[user.entity]?[user.property] = .joinTable(join)
            }
            schema.tables[index].name = found.name
            schema.tables[index].columns = table.columns.map { .init(name: renamedColumns[$0.name] ?? $0.name, declaredType: $0.declaredType) }
            schema.tables[index].primaryKey = table.primaryKey.map { renamedColumns[$0] ?? $0 }
        }
    }

    static func tableExists(_ db: Database, _ name: String) throws -> Bool {
        try Row.fetchOne(db, sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
                         arguments: [name]) != nil
    }

    /// The columns of a table (empty when it doesn't exist), as `PRAGMA table_info` reports them.
    static func columns(_ db: Database, _ table: String) throws -> [SQLiteSchema.Column] {
        try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_info(?)", arguments: [table]).compactMap { row in
            guard let name = SQLiteStoreErrors.string(row[0]) else { return nil }
            return SQLiteSchema.Column(name: name, declaredType: SQLiteStoreErrors.string(row[1]) ?? "")
        }
    }

    /// Every index of the database, with its columns, including those SQLite makes
    /// for `UNIQUE` constraints.
    static func indexes(_ db: Database) throws -> [SQLiteSchema.Index] {
        var result: [SQLiteSchema.Index] = []
        let tables = try Row.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
            .compactMap { SQLiteStoreErrors.string($0[0]) }
        for table in tables {
            let list = try Row.fetchAll(db, sql: "SELECT name, \"unique\" FROM pragma_index_list(?) ORDER BY seq DESC", arguments: [table])
            for entry in list {
                guard let name = SQLiteStoreErrors.string(entry[0]) else { continue }
                let columns = try Row.fetchAll(db, sql: "SELECT name, coll, \"desc\", key FROM pragma_index_xinfo(?) ORDER BY seqno",
                                               arguments: [name])
                    .filter { SQLiteStoreErrors.int($0[3]) == 1 }
                    .map { row in
                        SQLiteSchema.IndexColumn(name: SQLiteStoreErrors.string(row[0]) ?? "",
                                                 collation: SQLiteStoreErrors.string(row[1]),
                                                 ascending: SQLiteStoreErrors.int(row[2]).map { $0 == 0 })
                    }
                result.append(.init(name: name, tableName: table, columns: columns,
                                    isUnique: SQLiteStoreErrors.int(entry[1]) == 1))
            }
        }
        return result
    }

    static func entity(of table: SQLiteSchema.Table, users: [String: [String: (entity: String, property: String)]]) -> String? {
        if case .entity(let root) = table.kind { return root }
        return users[table.name]?.values.first?.entity
    }

    static func incompatible(_ problems: [CoreDataError]) -> CoreDataError {
        let first = problems.first
        return CoreDataError(.persistentStoreIncompatibleSchema,
                             "The store's schema doesn't match the model: " + problems.map(\.message).joined(separator: "; "),
                             entityName: first?.entityName, key: first?.key,
                             underlyingErrors: problems.count > 1 ? problems : [])
    }
}
