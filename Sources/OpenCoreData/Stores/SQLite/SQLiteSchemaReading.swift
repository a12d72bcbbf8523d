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
    /// when the store lacks an entity, a table or a column the model needs, or
    /// declares a column with another type; the message and the underlying errors
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
        for entity in entities.sorted(by: { ManagedObjectModel.compareNames($0.name, $1.name) }) {
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

        let expected = try SQLiteLayout(model: model, configurationName: configurationName, storeNumbers: storeNumbers).schema
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
                renamed[table.name, default: [:]][SQLiteIdentifier.key(column.name)] = found.name
                if SQLiteIdentifier.key(found.declaredType) != SQLiteIdentifier.key(column.declaredType) {
                    let user = users[table.name]?[column.name]
                    let what = user.map { " ('\($0.entity).\($0.property)')" } ?? ""
                    problem(user?.entity ?? SQLiteSchemaReader.entity(of: table, users: users), user?.property,
                            "column \(table.name).\(found.name)\(what) is declared \(found.declaredType) in the store, the model needs \(column.declaredType)")
                }
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
