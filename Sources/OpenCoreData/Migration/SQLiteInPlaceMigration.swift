import Foundation
import GRDB
import OpenCoreDataPredicates

/// A lightweight migration of an SQLite store with set-based SQL, as Core Data's
/// `NSSQLiteInPlaceMigrationManager` does it: no object is made.
///
/// Each table of the destination layout (``SQLiteSchema/init(model:configurationName:)``,
/// entity numbers included) is compared with the store's. A table whose columns
/// and rows would come out unchanged is left alone; any other is built under a
/// temporary name with one `INSERT ... SELECT` from its source table (entity
/// numbers renumbered with `CASE`, renamed columns read from their old names,
/// new columns from their defaults, relationships read from wherever the source
/// kept them: a foreign key, the inverse's foreign key or a join table), then the
/// replaced tables are dropped and the new ones renamed. Indexes end as the
/// destination layout creates them; `Z_PRIMARYKEY` is rewritten (a renamed
/// entity keeps its old `Z_NAME`, as Core Data leaves it, and every `Z_MAX` its
/// value), `Z_METADATA` gets the destination's hashes with the store's UUID and
/// app keys kept, `Z_MODELCACHE` the destination model; persistent history
/// follows the entities' new numbers.
///
/// Every statement runs inside the caller's transaction: an error leaves the
/// database as it was.
struct SQLiteInPlaceMigration {
    let sourceModel: ManagedObjectModel
    let destinationModel: ManagedObjectModel
    let mapping: MappingModel
    let configurationName: String?

    /// A piece of SQL with its bound values, in order.
    struct Fragment: Equatable {
        var sql: String
        var arguments: [DatabaseValue] = []
        init(_ sql: String, _ arguments: [DatabaseValue] = []) {
            self.sql = sql
            self.arguments = arguments
        }
        static let null = Fragment("NULL")
        static func + (a: Fragment, b: Fragment) -> Fragment { Fragment(a.sql + b.sql, a.arguments + b.arguments) }
    }

    /// What the migration did, for logs and tests.
    struct Report: Sendable {
        /// Destination tables built anew.
        var rebuiltTables: [String] = []
        /// Destination tables left as they were.
        var keptTables: [String] = []
        /// Source tables dropped.
        var droppedTables: [String] = []
        /// Every statement run, in order.
        var statements: [String] = []
    }

    private static let q = SQLiteIdentifier.quoted

    func run(_ db: Database) throws -> Report {
        var report = Report()
        func execute(_ fragment: Fragment) throws {
            report.statements.append(fragment.sql)
            if SQLDebug.level > 0 || MigrationDebug.level > 1 { MigrationDebug.log(fragment.sql) }
            try db.execute(sql: fragment.sql, arguments: StatementArguments(fragment.arguments))
        }
        try sourceModel.freeze()
        try destinationModel.freeze()
        let source = try SQLiteSchema(reading: db, model: sourceModel, configurationName: configurationName)
        let destination = try SQLiteSchema(model: destinationModel, configurationName: configurationName)
        guard let sourceEntities = sourceModel.entities(forConfigurationName: configurationName),
              let destinationEntities = destinationModel.entities(forConfigurationName: configurationName) else {
            throw CoreDataError(.migration, "The model has no configuration named '\(configurationName ?? "")'")
        }
        let sourceByName = Dictionary(sourceEntities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        let destinationByName = Dictionary(destinationEntities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })

        // Destination entity -> its mapping and source entity.
        var mappingOf: [String: EntityMapping] = [:]
        var sourceOf: [String: EntityDescription] = [:]
        for entityMapping in mapping.entityMappings where entityMapping.mappingType != .remove {
            guard let name = entityMapping.destinationEntityName, destinationByName[name] != nil, mappingOf[name] == nil else { continue }
            mappingOf[name] = entityMapping
            if let sourceName = entityMapping.sourceEntityName {
                guard let entity = sourceByName[sourceName] else {
                    throw CoreDataError(.migration, "Cannot migrate store in-place: the mapping '\(entityMapping.name)' names source entity '\(sourceName)', which the source model lacks",
                                        entityName: sourceName)
                }
                sourceOf[name] = entity
            }
        }
        // Entity numbers: source -> destination.
        var renumber: [Int: Int] = [:]
        for (name, entity) in sourceOf {
            guard let from = source.entityNumber(forEntityNamed: entity.name),
                  let to = destination.entityNumber(forEntityNamed: name) else { continue }
            renumber[from] = to
        }
        let removedNumbers = source.entities.map(\.entityNumber).filter { renumber[$0] == nil }

        func caseRenumber(_ column: String) -> Fragment {
            let pairs = renumber.sorted { $0.key < $1.key }
            if pairs.allSatisfy({ $0.key == $0.value }) { return Fragment(column) }
            return Fragment("CASE \(column)" + pairs.map { " WHEN \($0.key) THEN \($0.value)" }.joined() + " END")
        }
        func list(_ numbers: [Int]) -> String { numbers.sorted().map(String.init).joined(separator: ", ") }

        // Where the destination needs to read a source relationship from.
        func sourceRelationship(of destinationEntity: String, _ relationship: String) throws -> (EntityDescription, RelationshipDescription)? {
            guard let entityMapping = mappingOf[destinationEntity], let from = sourceOf[destinationEntity] else { return nil }
            guard let propertyMapping = entityMapping.relationshipMappings.first(where: { $0.name == relationship }),
                  propertyMapping.valueExpression != nil else { return nil }
            guard let call = propertyMapping.destinationInstancesCall, !call.sourceKeyPath.contains(".") else {
                throw notInPlace(entityMapping, relationship, propertyMapping.valueExpression)
            }
            guard let old = from.relationshipsByName[call.sourceKeyPath] else {
                throw CoreDataError(.migration, "Cannot migrate store in-place: the mapping '\(entityMapping.name)' reads relationship '\(call.sourceKeyPath)', which source entity '\(from.name)' lacks",
                                    entityName: destinationEntity, key: relationship)
            }
            // The source's destination objects must survive.
            guard let oldTarget = old.destinationEntity,
                  oldTarget.selfAndDescendants.contains(where: { source.entityNumber(forEntityNamed: $0.name).map { renumber[$0] != nil } ?? false })
            else { return nil }
            return (from, old)
        }

        // MARK: Entity tables
        var built: [(temporary: String, final: String)] = []
        var keptTables: Set<String> = []
        var mandatoryChecks: [(table: String, column: String, entityNumbers: [Int], entity: String, attribute: String)] = []
        var temporaryIndex = 0
        func temporaryName() -> String {
            temporaryIndex += 1
            return "_OCD_MIGRATION_\(temporaryIndex)"
        }

        for table in destination.tables {
            guard case .entity = table.kind else { continue }
            let members = destination.entities.filter { SQLiteIdentifier.key($0.tableName) == SQLiteIdentifier.key(table.name) }
            let sourceTables = Set(members.compactMap { member in sourceOf[member.entityName].flatMap { source.table(forEntityNamed: $0.name) } })
            guard sourceTables.count <= 1 else {
                throw CoreDataError(.migration, "Cannot migrate store in-place: table \(table.name) would take rows from \(sourceTables.sorted().joined(separator: " and ")) (merging hierarchies)",
                                    entityName: members.first?.entityName)
            }
            let temporary = temporaryName()
            var createTable = table
            createTable.name = temporary
            guard let sourceTable = sourceTables.first, let sourceTableInfo = source.tableDescription(named: sourceTable) else {
                try execute(Fragment(SQLiteLayout.createTableSQL(createTable)))
                built.append((temporary, table.name))
                report.rebuiltTables.append(table.name)
                continue
            }
            // The source entity numbers of this table's rows.
            var sourceNumbers: [Int] = []
            for member in members {
                if let from = sourceOf[member.entityName], let number = source.entityNumber(forEntityNamed: from.name) { sourceNumbers.append(number) }
            }
            // Each destination column: per source entity number, the expression reading it.
            var perColumn: [String: [(sourceNumber: Int, value: Fragment)]] = [:]
            func add(_ column: String, _ sourceNumber: Int, _ value: Fragment) {
                let key = SQLiteIdentifier.key(column)
                guard !(perColumn[key]?.contains { $0.sourceNumber == sourceNumber } ?? false) else { return }
                perColumn[key, default: []].append((sourceNumber, value))
            }
            for member in members {
                guard let entity = destinationByName[member.entityName], let from = sourceOf[member.entityName],
                      let sourceNumber = source.entityNumber(forEntityNamed: from.name),
                      let entityMapping = mappingOf[member.entityName] else { continue }
                for (propertyName, storage) in destination.propertyStorage[member.entityName] ?? [:] {
                    guard let property = entity.propertiesByName[propertyName] else { continue }
                    switch storage {
                    case .column(let column):
                        guard let attribute = property as? AttributeDescription else { continue }
                        let value = try attributeValue(attribute, of: entity, mapping: entityMapping, from: from, source: source)
                        add(column, sourceNumber, value)
                        if !attribute.isOptional, !(attribute is DerivedAttributeDescription) {
                            let oldOptional = sourceAttribute(attribute, mapping: entityMapping, from: from)?.isOptional ?? true
                            if oldOptional {
                                mandatoryChecks.append((table.name, column, [member.entityNumber], entity.name, attribute.name))
                            }
                        }
                    case .composite(let columns):
                        guard let attribute = property as? AttributeDescription else { continue }
                        let old = sourceAttribute(attribute, mapping: entityMapping, from: from)
                        let oldColumns: [String: String]? = old.flatMap {
                            if case .composite(let c)? = source.storage(forProperty: $0.name, ofEntityNamed: from.name) { return c }
                            return nil
                        }
                        for (path, column) in columns {
                            add(column, sourceNumber, oldColumns?[path].map { Fragment("s.\(Self.q($0))") } ?? .null)
                        }
                    case .toOne(let column, let entityColumn, let orderColumn):
                        guard let relationship = property as? RelationshipDescription,
                              let (oldEntity, old) = try sourceRelationship(of: member.entityName, propertyName) else {
                            add(column, sourceNumber, .null)
                            if let entityColumn { add(entityColumn, sourceNumber, .null) }
                            if let orderColumn { add(orderColumn, sourceNumber, .null) }
                            continue
                        }
                        let key = partnerKey(of: old, in: oldEntity, rowIsOwner: true, source: source)
                        add(column, sourceNumber, key.value)
                        if let entityColumn {
                            add(entityColumn, sourceNumber, partnerEntityNumber(of: old, key: key, source: source, renumber: caseRenumber))
                        }
                        if let orderColumn {
                            _ = relationship
                            let order = key.order ?? Fragment("ROW_NUMBER() OVER (PARTITION BY ") + key.value + Fragment(" ORDER BY s.Z_PK)")
                            add(orderColumn, sourceNumber, order)
                        }
                    case .toMany, .joinTable, .notStored:
                        continue
                    }
                }
            }
            // Hidden foreign keys of to-many relationships without inverse that point into this table.
            for owner in destination.entities {
                for (propertyName, storage) in destination.propertyStorage[owner.entityName] ?? [:] {
                    guard case .toMany(let tableName, let foreignKey, let orderColumn) = storage,
                          SQLiteIdentifier.key(tableName) == SQLiteIdentifier.key(table.name),
                          let ownerEntity = destinationByName[owner.entityName],
                          let relationship = ownerEntity.relationshipsByName[propertyName],
                          relationship.inverseRelationship == nil,
                          ownerEntity.relationshipsByName[propertyName].map({ $0.entity === ownerEntity }) ?? true
                    else { continue }
                    let targets = members.filter { m in
                        relationship.destinationEntity.map { target in destinationByName[m.entityName]?.isKindOf(entity: target) ?? false } ?? false
                    }
                    for member in targets {
                        guard let from = sourceOf[member.entityName], let sourceNumber = source.entityNumber(forEntityNamed: from.name) else { continue }
                        guard let (oldOwner, old) = try sourceRelationship(of: owner.entityName, propertyName) else {
                            add(foreignKey, sourceNumber, .null)
                            if let orderColumn { add(orderColumn, sourceNumber, .null) }
                            continue
                        }
                        let key = partnerKey(of: old, in: oldOwner, rowIsOwner: false, source: source)
                        add(foreignKey, sourceNumber, key.value)
                        if let orderColumn {
                            add(orderColumn, sourceNumber, key.order ?? Fragment("ROW_NUMBER() OVER (PARTITION BY ") + key.value + Fragment(" ORDER BY s.Z_PK)"))
                        }
                    }
                }
            }
            // The SELECT list.
            var selects: [Fragment] = []
            var identity = SQLiteIdentifier.key(sourceTable) == SQLiteIdentifier.key(table.name)
                && sourceTableInfo.columns.count == table.columns.count
                && Set(source.entities.filter { SQLiteIdentifier.key($0.tableName) == SQLiteIdentifier.key(sourceTable) }.map(\.entityNumber))
                    .isSubset(of: Set(sourceNumbers))
                && sourceNumbers.allSatisfy { renumber[$0] == $0 }
            for (index, column) in table.columns.enumerated() {
                let value: Fragment
                switch SQLiteIdentifier.key(column.name) {
                case "Z_PK": value = Fragment("s.Z_PK")
                case "Z_ENT": value = caseRenumber("s.Z_ENT")
                case "Z_OPT": value = Fragment("s.Z_OPT")
                default:
                    let cases = perColumn[SQLiteIdentifier.key(column.name)] ?? []
                    if cases.isEmpty {
                        value = .null
                    } else if Set(cases.map(\.sourceNumber)) == Set(sourceNumbers), cases.dropFirst().allSatisfy({ $0.value == cases[0].value }) {
                        value = cases[0].value
                    } else {
                        value = cases.reduce(Fragment("CASE s.Z_ENT")) { $0 + Fragment(" WHEN \($1.sourceNumber) THEN ") + $1.value } + Fragment(" END")
                    }
                }
                selects.append(value)
                if identity {
                    let old = sourceTableInfo.columns[index]
                    identity = SQLiteIdentifier.key(old.name) == SQLiteIdentifier.key(column.name)
                        && old.declaredType.uppercased() == column.declaredType.uppercased()
                        && (value.sql == "s.\(Self.q(old.name))" || value.sql == "s.\(old.name)")
                }
            }
            if identity && sourceTableInfo.uniqueConstraints.map({ $0.map(SQLiteIdentifier.key) }) == table.uniqueConstraints.map({ $0.map(SQLiteIdentifier.key) }) {
                keptTables.insert(SQLiteIdentifier.key(table.name))
                report.keptTables.append(table.name)
                temporaryIndex -= 1
                continue
            }
            try execute(Fragment(SQLiteLayout.createTableSQL(createTable)))
            let allNumbers = Set(source.entities.filter { SQLiteIdentifier.key($0.tableName) == SQLiteIdentifier.key(sourceTable) }.map(\.entityNumber))
            let filter = allNumbers.isSubset(of: Set(sourceNumbers)) ? "" : " WHERE s.Z_ENT IN (\(list(sourceNumbers)))"
            let selectList = selects.dropFirst().reduce(selects[0]) { $0 + Fragment(", ") + $1 }
            try execute(Fragment("INSERT INTO \(Self.q(temporary)) (\(table.columns.map { Self.q($0.name) }.joined(separator: ", "))) SELECT ")
                        + selectList + Fragment(" FROM \(Self.q(sourceTable)) s\(filter)"))
            built.append((temporary, table.name))
            report.rebuiltTables.append(table.name)
        }

        // MARK: Join tables
        // Both sides of each join table (a relationship and its inverse, each with
        // its own view of the columns).
        var sides: [String: [(owner: String, property: String, join: SQLiteSchema.JoinTable)]] = [:]
        var joinOrder: [String] = []
        for owner in destination.entities {
            guard let entity = destinationByName[owner.entityName] else { continue }
            for (propertyName, storage) in (destination.propertyStorage[owner.entityName] ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard case .joinTable(let join) = storage, let relationship = entity.relationshipsByName[propertyName],
                      relationship.entity === entity else { continue }
                let key = SQLiteIdentifier.key(join.tableName)
                if sides[key] == nil { joinOrder.append(key) }
                sides[key, default: []].append((owner.entityName, propertyName, join))
            }
        }
        for key in joinOrder {
            let candidates = sides[key] ?? []
            var found: (side: (owner: String, property: String, join: SQLiteSchema.JoinTable), source: (EntityDescription, RelationshipDescription))?
            for side in candidates.sorted(by: { ($0.join.orderColumn != nil ? 0 : 1) < ($1.join.orderColumn != nil ? 0 : 1) }) {
                if let source = try sourceRelationship(of: side.owner, side.property) { found = (side, source); break }
            }
            guard let first = candidates.first, let table = destination.tableDescription(named: first.join.tableName) else { continue }
            let join = found?.side.join ?? first.join
            // Unchanged: the same join table, same columns, same entity numbers on both sides.
            if let (oldOwner, old) = found?.source, case .joinTable(let oldJoin)? = source.storage(forProperty: old.name, ofEntityNamed: oldOwner.name),
               SQLiteIdentifier.key(oldJoin.tableName) == SQLiteIdentifier.key(join.tableName),
               oldJoin.sourceColumn == join.sourceColumn, oldJoin.destinationColumn == join.destinationColumn,
               oldJoin.orderColumn == join.orderColumn,
               source.tableDescription(named: oldJoin.tableName)?.columns.map(\.name) == table.columns.map(\.name) {
                keptTables.insert(key)
                report.keptTables.append(join.tableName)
                continue
            }
            let temporary = temporaryName()
            var createTable = table
            createTable.name = temporary
            try execute(Fragment(SQLiteLayout.createTableSQL(createTable)))
            built.append((temporary, join.tableName))
            report.rebuiltTables.append(join.tableName)
            guard let (oldOwner, old) = found?.source, let pairs = pairsSelect(of: old, in: oldOwner, source: source, keep: renumber) else { continue }
            var columns = [join.sourceColumn, join.destinationColumn]
            var select = "SELECT p.owner, p.target"
            if let orderColumn = join.orderColumn {
                columns.append(orderColumn)
                select += pairs.hasOrder ? ", p.ord" : ", ROW_NUMBER() OVER (PARTITION BY p.owner ORDER BY p.target)"
            }
            // The inverse, when ordered too, keeps its own positions.
            if let inverseOrder = candidates.first(where: { $0.join.tableName == join.tableName && $0.property != found?.side.property })?.join.orderColumn,
               !columns.contains(inverseOrder) {
                columns.append(inverseOrder)
                select += ", ROW_NUMBER() OVER (PARTITION BY p.target ORDER BY p.owner)"
            }
            try execute(Fragment("INSERT INTO \(Self.q(temporary)) (\(columns.map(Self.q).joined(separator: ", "))) \(select) FROM (")
                        + pairs.sql + Fragment(") p"))
        }

        // MARK: Checks, then the swap of tables
        for check in mandatoryChecks {
            let target = built.first { SQLiteIdentifier.key($0.final) == SQLiteIdentifier.key(check.table) }?.temporary ?? check.table
            let nulls = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(Self.q(target)) WHERE Z_ENT IN (\(list(check.entityNumbers))) AND \(Self.q(check.column)) IS NULL") ?? 0
            if nulls > 0 {
                throw CoreDataError(.migration,
                                    "Cannot migrate store in-place: Validation error missing attribute values on mandatory destination attribute '\(check.attribute)' of entity '\(check.entity)' (\(nulls) object\(nulls == 1 ? "" : "s") without a value and no default)",
                                    entityName: check.entity, key: check.attribute)
            }
        }
        FaultPoints.reach("in-place")
        let sourceIndexes = source.indexes
        for table in source.tables {
            switch table.kind {
            case .entity, .join:
                guard !keptTables.contains(SQLiteIdentifier.key(table.name)),
                      try SQLiteSchemaReader.tableExists(db, table.name) else { continue }
                try execute(Fragment("DROP TABLE \(Self.q(table.name))"))
                report.droppedTables.append(table.name)
            case .bookkeeping:
                continue
            }
        }
        for (temporary, final) in built {
            try execute(Fragment("ALTER TABLE \(Self.q(temporary)) RENAME TO \(Self.q(final))"))
        }

        // MARK: Indexes
        let wanted = destination.indexes
        for index in sourceIndexes where keptTables.contains(SQLiteIdentifier.key(index.tableName)) {
            let same = wanted.contains { Self.sameIndex($0, index) }
            if !same, !index.name.hasPrefix("sqlite_autoindex") {
                try execute(Fragment("DROP INDEX IF EXISTS \(Self.q(index.name))"))
            }
        }
        for index in wanted {
            if keptTables.contains(SQLiteIdentifier.key(index.tableName)), sourceIndexes.contains(where: { Self.sameIndex($0, index) }) { continue }
            try execute(Fragment(SQLiteLayout.createIndexSQL(index)))
        }

        // MARK: Bookkeeping
        var oldMax: [Int: Int64] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_MAX FROM Z_PRIMARYKEY") {
            if let number = SQLiteStoreErrors.int(row[0]) { oldMax[number] = SQLiteStoreErrors.int(row[1]).map(Int64.init) ?? 0 }
        }
        try execute(Fragment("DELETE FROM Z_PRIMARYKEY WHERE Z_ENT < 16000"))
        for entity in destination.entities {
            var name = entity.entityName
            var maximum: Int64 = 0
            if let from = sourceOf[entity.entityName], let number = source.entityNumber(forEntityNamed: from.name) {
                maximum = oldMax[number] ?? 0
                // Core Data keeps a renamed entity's old name in Z_PRIMARYKEY.
                if from.name != entity.entityName, from.name == destinationByName[entity.entityName]?.renamingIdentifier { name = from.name }
            }
            if entity.superentityNumber == 0 {
                let highest = try Int64.fetchOne(db, sql: "SELECT MAX(Z_PK) FROM \(Self.q(entity.tableName))") ?? 0
                maximum = max(maximum, highest)
            }
            try execute(Fragment("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                                 [entity.entityNumber.databaseValue, name.databaseValue, entity.superentityNumber.databaseValue, maximum.databaseValue]))
        }
        let oldMetadata = try SQLiteStoreMetadata.read(from: db)
        var metadata = oldMetadata
        let fresh = SQLiteStoreMetadata.metadata(for: destinationModel, configurationName: configurationName,
                                                 storeUUID: oldMetadata[SQLiteStoreMetadata.storeUUIDKey] as? String ?? UUID().uuidString)
        for (key, value) in fresh { metadata[key] = value }
        try SQLiteStoreMetadata.write(metadata, to: db)
        let cache = try CompiledModelWriter().modelCacheData(for: destinationModel)
        if try SQLiteSchemaReader.tableExists(db, "Z_MODELCACHE") {
            try execute(Fragment("DELETE FROM Z_MODELCACHE"))
        } else {
            try execute(Fragment("CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"))
        }
        try execute(Fragment("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", [cache.databaseValue]))

        // MARK: History
        if try SQLiteSchemaReader.tableExists(db, "ACHANGE") {
            if !removedNumbers.isEmpty {
                try execute(Fragment("DELETE FROM ACHANGE WHERE ZENTITY IN (\(list(removedNumbers)))"))
            }
            let moved = caseRenumber("ZENTITY")
            if moved.sql != "ZENTITY" { try execute(Fragment("UPDATE ACHANGE SET ZENTITY = ") + moved) }
        }
        return report
    }

    // MARK: Pieces

    static func sameIndex(_ a: SQLiteSchema.Index, _ b: SQLiteSchema.Index) -> Bool {
        SQLiteIdentifier.key(a.name) == SQLiteIdentifier.key(b.name)
            && SQLiteIdentifier.key(a.tableName) == SQLiteIdentifier.key(b.tableName)
            && a.isUnique == b.isUnique
            && a.columns.map { SQLiteIdentifier.key($0.name) } == b.columns.map { SQLiteIdentifier.key($0.name) }
    }

    private func notInPlace(_ mapping: EntityMapping, _ property: String, _ expression: CoreExpression?) -> CoreDataError {
        CoreDataError(.migration,
                      "Cannot migrate store in-place: the value of '\(property)' in mapping '\(mapping.name)' (\(expression.map { "\($0)" } ?? "nil")) is not a source property; this mapping needs a MigrationManager",
                      entityName: mapping.destinationEntityName, key: property)
    }

    private func sourceAttribute(_ attribute: AttributeDescription, mapping: EntityMapping, from: EntityDescription) -> AttributeDescription? {
        guard let path = mapping.attributeMappings.first(where: { $0.name == attribute.name })?.sourceKeyPath else { return nil }
        return from.attributesByName[path]
    }

    /// The SELECT expression of one destination attribute's column, reading the
    /// source row `s`.
    private func attributeValue(_ attribute: AttributeDescription, of entity: EntityDescription, mapping: EntityMapping,
                                from: EntityDescription, source: SQLiteSchema) throws -> Fragment {
        let defaultValue: Fragment = {
            guard let value = attribute.defaultValue,
                  let encoded = SQLiteValueEncoding.databaseValue(value, as: attribute.attributeType), !encoded.isNull else { return .null }
            return Fragment("?", [encoded])
        }()
        guard let propertyMapping = mapping.attributeMappings.first(where: { $0.name == attribute.name }),
              let expression = propertyMapping.valueExpression else { return defaultValue }
        if case .constant(let value) = expression {
            guard let encoded = SQLiteValueEncoding.databaseValue(value, as: attribute.attributeType) else {
                throw CoreDataError(.migration, "Cannot migrate store in-place: the constant \(value) of mapping '\(mapping.name)' cannot be stored in attribute '\(attribute.name)' (\(attribute.attributeType))",
                                    entityName: entity.name, key: attribute.name)
            }
            return Fragment("?", [encoded])
        }
        guard let path = PropertyMapping.sourceKeyPath(of: expression), !path.contains(".") else {
            throw notInPlace(mapping, attribute.name, expression)
        }
        guard let old = from.attributesByName[path], case .column(let column)? = source.storage(forProperty: old.name, ofEntityNamed: from.name) else {
            if from.propertiesByName[path] != nil { return defaultValue }
            throw CoreDataError(.migration, "Cannot migrate store in-place: the mapping '\(mapping.name)' reads attribute '\(path)', which source entity '\(from.name)' lacks",
                                entityName: entity.name, key: attribute.name)
        }
        var value = Fragment("s.\(Self.q(column))")
        if old.attributeType != attribute.attributeType {
            switch attribute.attributeType {
            case .integer16, .integer32, .integer64: value = Fragment("CAST(") + value + Fragment(" AS INTEGER)")
            case .boolean: value = Fragment("(") + value + Fragment(" != 0)")
            case .double, .float: value = Fragment("CAST(") + value + Fragment(" AS REAL)")
            default: break
            }
        }
        // Optional to mandatory: a missing value becomes the default.
        if old.isOptional, !attribute.isOptional, defaultValue != .null {
            value = Fragment("COALESCE(") + value + Fragment(", ") + defaultValue + Fragment(")")
        }
        return value
    }

    /// The key of the object at the other end of `relationship` (of source entity
    /// `entity`), read for the source row `s`: when `rowIsOwner`, `s` is the
    /// relationship's source object and the result its (first) destination's key;
    /// otherwise `s` is a destination object and the result its owner's key.
    /// `order` is the position recorded with the pair, when the source kept one.
    private func partnerKey(of relationship: RelationshipDescription, in entity: EntityDescription, rowIsOwner: Bool,
                            source: SQLiteSchema) -> (value: Fragment, order: Fragment?, inRow: Bool) {
        let q = Self.q
        switch source.storage(forProperty: relationship.name, ofEntityNamed: entity.name) {
        case .toOne(let column, _, let orderColumn)?:
            if rowIsOwner { return (Fragment("s.\(q(column))"), orderColumn.map { Fragment("s.\(q($0))") }, true) }
            let table = source.table(forEntityNamed: entity.name) ?? ""
            return (Fragment("(SELECT o.Z_PK FROM \(q(table)) o WHERE o.\(q(column)) = s.Z_PK ORDER BY o.Z_PK LIMIT 1)"), nil, false)
        case .toMany(let table, let foreignKey, let orderColumn)?:
            if !rowIsOwner { return (Fragment("s.\(q(foreignKey))"), orderColumn.map { Fragment("s.\(q($0))") }, true) }
            let order = orderColumn.map { "o.\(q($0)), " } ?? ""
            return (Fragment("(SELECT o.Z_PK FROM \(q(table)) o WHERE o.\(q(foreignKey)) = s.Z_PK ORDER BY \(order)o.Z_PK LIMIT 1)"), nil, false)
        case .joinTable(let join)?:
            let (mine, theirs) = rowIsOwner ? (join.sourceColumn, join.destinationColumn) : (join.destinationColumn, join.sourceColumn)
            let order = join.orderColumn.map { "j.\(q($0)), " } ?? ""
            return (Fragment("(SELECT j.\(q(theirs)) FROM \(q(join.tableName)) j WHERE j.\(q(mine)) = s.Z_PK ORDER BY \(order)j.\(q(theirs)) LIMIT 1)"), nil, false)
        case .column?, .composite?, .notStored?, nil:
            return (.null, nil, false)
        }
    }

    /// The destination entity number of the object `key` points to.
    private func partnerEntityNumber(of relationship: RelationshipDescription, key: (value: Fragment, order: Fragment?, inRow: Bool),
                                     source: SQLiteSchema, renumber: (String) -> Fragment) -> Fragment {
        if key.inRow, case .toOne(_, let entityColumn?, _)? = source.storage(forProperty: relationship.name, ofEntityNamed: relationship.entity?.name ?? "") {
            return renumber("s.\(Self.q(entityColumn))")
        }
        guard let target = relationship.destinationEntity, let table = source.table(forEntityNamed: target.name) else { return .null }
        return Fragment("(SELECT ") + renumber("t.Z_ENT") + Fragment(" FROM \(Self.q(table)) t WHERE t.Z_PK = ") + key.value + Fragment(")")
    }

    /// A SELECT of `(owner, target[, ord])` pairs of a source relationship, with
    /// both ends among the objects that survive the migration.
    private func pairsSelect(of relationship: RelationshipDescription, in entity: EntityDescription, source: SQLiteSchema,
                             keep renumber: [Int: Int]) -> (sql: Fragment, hasOrder: Bool)? {
        let q = Self.q
        guard let target = relationship.destinationEntity,
              let ownerTable = source.table(forEntityNamed: entity.name),
              let targetTable = source.table(forEntityNamed: target.name) else { return nil }
        func alive(_ table: String, _ entity: EntityDescription, _ column: String) -> String {
            let numbers = entity.selfAndDescendants.compactMap { source.entityNumber(forEntityNamed: $0.name) }.filter { renumber[$0] != nil }
            return "\(column) IN (SELECT Z_PK FROM \(q(table)) WHERE Z_ENT IN (\(numbers.map(String.init).joined(separator: ", "))))"
        }
        let base: String
        var hasOrder = false
        switch source.storage(forProperty: relationship.name, ofEntityNamed: entity.name) {
        case .joinTable(let join)?:
            hasOrder = join.orderColumn != nil
            base = "SELECT j.\(q(join.sourceColumn)) AS owner, j.\(q(join.destinationColumn)) AS target" + (join.orderColumn.map { ", j.\(q($0)) AS ord" } ?? "")
                + " FROM \(q(join.tableName)) j"
        case .toMany(let table, let foreignKey, let orderColumn)?:
            hasOrder = orderColumn != nil
            base = "SELECT t.\(q(foreignKey)) AS owner, t.Z_PK AS target" + (orderColumn.map { ", t.\(q($0)) AS ord" } ?? "")
                + " FROM \(q(table)) t WHERE t.\(q(foreignKey)) IS NOT NULL"
        case .toOne(let column, _, _)?:
            base = "SELECT o.Z_PK AS owner, o.\(q(column)) AS target FROM \(q(ownerTable)) o WHERE o.\(q(column)) IS NOT NULL"
        default:
            return nil
        }
        let sql = "SELECT * FROM (\(base)) WHERE \(alive(ownerTable, entity, "owner")) AND \(alive(targetTable, target, "target"))"
        return (Fragment(sql), hasOrder)
    }
}

/// `-com.apple.CoreData.MigrationDebug`: the `OCD_MIGRATION_DEBUG` environment
/// variable (1: the plan and timing of each migration; 2: every statement too).
enum MigrationDebug {
    static let level: Int = ProcessInfo.processInfo.environment["OCD_MIGRATION_DEBUG"].flatMap(Int.init) ?? 0

    static func log(_ message: String) {
        FileHandle.standardError.write(Data("CoreData: annotation: (migration) \(message)\n".utf8))
    }
}
