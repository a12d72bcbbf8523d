import Foundation

extension SQLiteSchema {
    /// The schema Core Data gives a new store for the entities of `model`'s
    /// configuration `configurationName` (nil: every entity).
    ///
    /// Entities are numbered from 1 over the whole model: root entities sorted by
    /// name ignoring case, each followed by its subentities (depth first, same
    /// order). Columns, join tables, indexes and uniqueness constraints follow Core
    /// Data's layout (see `SQLiteLayout` and `SQLiteNamingRule` for the rules and
    /// which of them were verified on real stores).
    ///
    /// ```swift
    /// let schema = try SQLiteSchema(model: model)
    /// for statement in schema.creationStatements { print(statement) }
    /// // CREATE TABLE ZMOOD ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZRATING INTEGER, ... )
    /// ```
    ///
    /// Throws ``CoreDataError/Code/coreData`` when the configuration does not exist
    /// or when two tables would get the same name.
    public init(model: ManagedObjectModel, configurationName: String? = nil) throws {
        let layout = try SQLiteLayout(model: model, configurationName: configurationName, storeNumbers: nil)
        self = layout.schema
    }
}

/// Computes Core Data's layout of a model in SQLite: entity numbers, tables, column
/// names and order, join tables, indexes and constraints.
///
/// Rules; "verified" means reproduced byte for byte on the fixture stores (Moody 1-5,
/// TestModel, the jeffreybergier and objc.io stores), "observed" means seen in
/// public dumps of Apple-written stores (Bear, knowledgeC, Photos), "guess" is not
/// yet checked against a real store:
/// * Entity numbers: root entities sorted by name ignoring case, each followed by
///   its subentities depth first, same order, from 1, over the whole model
///   (verified on every fixture store: `SQLiteNamingRule`).
/// * One table per root entity, `Z` + upper-cased name; `Z_PK INTEGER PRIMARY KEY,
///   Z_ENT INTEGER, Z_OPT INTEGER` first (verified).
/// * Column groups, in order: integers (Integer 16/32/64, Boolean, then to-one
///   foreign keys), reals and dates (Double, Float, Date together, sorted by name:
///   verified `ZDATE TIMESTAMP, ZLATITUDE FLOAT, ZLONGITUDE FLOAT,
///   ZMARKEDFORDELETIONDATE TIMESTAMP`; Decimal there is a guess), strings (String;
///   URI a guess), blobs (Binary, UUID, Transformable). Inside a group: entities in
///   hierarchy order, and inside an entity attributes before relationships, each
///   sorted by name (verified for Moody's `GeographicRegion` hierarchy, observed in
///   knowledgeC's `ZOBJECT`).
/// * A foreign key is followed by its entity column `Z<destination#>_<NAME>` when
///   the destination has subentities (observed in Photos); its order column
///   `Z_FOK_<NAME>`, when the inverse is an ordered to-many, comes after all the
///   table's other integer columns, in foreign-key order (verified on Bookmarks_V1).
/// * Name clashes get a numeric suffix (`ZHEIGHT1`); names are given entity by
///   entity in hierarchy order, so the later entity gets the suffix (observed in
///   Bear for sibling subentities; other clashes a guess).
/// * A to-many without inverse keeps a hidden foreign key `Z<source#><NAME>` in the
///   destination's table (documented by a third party; its position a guess).
/// * Many-to-many: join table `Z_<E1#><REL1>`, columns `Z_<E1#><INVERSE>` and
///   `Z_<E2#><REL1>`, `Z_FOK_...` for ordered sides, composite primary key and the
///   reverse index `<TABLE>_<COL2>_INDEX`. Which side names it and which clashing
///   column gets a suffix: `SQLiteNamingRule` (verified on every fixture store). An
///   existing store's own join tables win (``SQLiteSchema/init(reading:model:configurationName:)``).
/// * Indexes per table: legacy indexed attributes `<TABLE>_<COLUMN>_INDEX`, then
///   foreign keys `<TABLE>_<COLUMN>_INDEX`, then `<TABLE>_Z_ENT_INDEX` when the
///   table holds subentities, then legacy compound indexes `<TABLE>_<COL>_<COL>`
///   (no `_INDEX`) (all verified), then fetch indexes `Z_<Entity>_<name>` with
///   `COLLATE BINARY ASC|DESC` (documented by a third party).
/// * Uniqueness constraints: `CONSTRAINT <COL>_<COL> UNIQUE (<COL>, <COL>)` inside
///   `CREATE TABLE` (verified, framework 637); newer frameworks reportedly use
///   `CREATE UNIQUE INDEX Z_<Entity>_UNIQUE_<prop>` instead (not reproduced).
/// * Creation order: entity tables by root number, each followed by the join tables
///   its entities name; join-table indexes; `Z_PRIMARYKEY`, `Z_METADATA`,
///   `Z_MODELCACHE`; the entity tables' indexes (verified for framework 637).
struct SQLiteLayout {
    private(set) var schema: SQLiteSchema

    /// Which part of a column list a planned column belongs to.
    private enum Role {
        case attribute
        case foreignKey
        case entityColumn(destinationNumber: Int)
        case orderColumn
    }

    private struct PlannedColumn {
        var owner: String          // entity whose properties put it there
        var property: String       // property key (composite path, or hidden key)
        var base: String           // name before any clash suffix
        var type: String
        var group: Int
        var entityIndex: Int
        var kind: Int              // 0 attribute, 1 relationship
        var sortName: String
        var sub: Int               // 0 main column, 1 entity column, 2 order column
        var role: Role
        var finalName = ""
    }

    /// - Parameter storeNumbers: the entity numbers and superentity numbers of an
    ///   existing store (by entity name); nil to number entities as Core Data does
    ///   for a new store.
    init(model: ManagedObjectModel, configurationName: String?, storeNumbers: [String: Int]?) throws {
        guard let configEntities = model.entities(forConfigurationName: configurationName) else {
            throw CoreDataError(.coreData, "The model has no configuration named '\(configurationName ?? "")'")
        }
        var inSet: [String: EntityDescription] = [:]
        for entity in configEntities where inSet[entity.name] == nil { inSet[entity.name] = entity }
        for name in inSet.keys where !SQLiteIdentifier.isValid(name) {
            throw CoreDataError(.coreData, "The entity name '\(name)' can't be stored in SQLite", entityName: name)
        }

        func parent(_ entity: EntityDescription) -> EntityDescription? {
            guard let superentity = entity.superentity, inSet[superentity.name] === superentity else { return nil }
            return superentity
        }
        func children(_ entity: EntityDescription) -> [EntityDescription] {
            entity.subentities.filter { inSet[$0.name] === $0 }
                .sorted { SQLiteNamingRule.precedes($0.name, $1.name) }
        }
        let roots = inSet.values.filter { parent($0) == nil }
            .sorted { SQLiteNamingRule.precedes($0.name, $1.name) }
        var hierarchies: [[EntityDescription]] = []
        for root in roots {
            var members: [EntityDescription] = []
            var stack = [root]
            var seen: Set<String> = []
            while let next = stack.popLast() {
                guard seen.insert(next.name).inserted else { continue }
                members.append(next)
                stack.append(contentsOf: children(next).reversed())
            }
            hierarchies.append(members)
        }
        // Entity numbers: the store's, or Core Data's for a new store (over the
        // whole model, whatever the configuration, as Core Data numbers them).
        let rule = SQLiteNamingRule(entities: model.entities)
        let numbers = storeNumbers ?? rule.numbers
        func number(_ entity: EntityDescription) -> Int { numbers[entity.name] ?? 0 }
        // Hierarchies in the order of their roots' numbers (matters for stores whose
        // numbering differs from ours).
        hierarchies.sort { number($0[0]) < number($1[0]) }

        var ownStorage: [String: [String: SQLiteSchema.PropertyStorage]] = [:]
        var tables: [SQLiteSchema.Table] = []
        var entityIndexes: [SQLiteSchema.Index] = []
        var joinIndexes: [SQLiteSchema.Index] = []
        var statementsTables: [String] = []
        var statementsJoinIndexes: [String] = []
        var statementsIndexes: [String] = []
        var usedTableNames: Set<String> = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
        var usedIndexNames: Set<String> = []
        var mappings: [SQLiteSchema.EntityMapping] = []

        func tableName(_ root: EntityDescription) -> String { "Z" + root.name.uppercased() }
        func rootInSet(_ entity: EntityDescription) -> EntityDescription {
            var current = entity
            while let up = parent(current) { current = up }
            return current
        }
        func hasSubentities(_ entity: EntityDescription) -> Bool { !children(entity).isEmpty }
        func storedRelationship(_ property: PropertyDescription) -> RelationshipDescription? {
            guard let relationship = property as? RelationshipDescription, !relationship.isTransient else { return nil }
            return relationship
        }
        func inverse(of relationship: RelationshipDescription) -> RelationshipDescription? {
            guard let name = relationship.inverseRelationshipName,
                  let destinationName = relationship.destinationEntityName,
                  let destination = inSet[destinationName] else { return nil }
            return destination.relationshipsByName[name]
        }

        // Hidden foreign keys of to-many relationships without an inverse, by the
        // destination entity that holds them.
        var hidden: [String: [(source: EntityDescription, relationship: RelationshipDescription)]] = [:]
        for members in hierarchies {
            for entity in members {
                for case let relationship? in entity.properties.map(storedRelationship)
                where relationship.isToMany && relationship.inverseRelationshipName == nil {
                    guard let destinationName = relationship.destinationEntityName, inSet[destinationName] != nil else { continue }
                    hidden[destinationName, default: []].append((entity, relationship))
                }
            }
        }

        // Join tables, by the root of the entity that names them: which side names a
        // pair's table, and which of two clashing columns gets a suffix, as Core Data
        // decides (`SQLiteNamingRule`), with this store's entity numbers.
        struct JoinPlan { var table: SQLiteSchema.Table; var index: SQLiteSchema.Index; var ownerRoot: String }
        var joins: [JoinPlan] = []
        /// A rule name `Z_<n>…` / `Z_FOK_<n>…` with `entity`'s number in this layout.
        func renumbered(_ name: String, _ entity: EntityDescription) -> String {
            guard let ruleNumber = rule.numbers[entity.name], ruleNumber != number(entity) else { return name }
            for prefix in ["Z_FOK_", "Z_"] where name.hasPrefix(prefix + String(ruleNumber)) {
                return prefix + String(number(entity)) + name.dropFirst(prefix.count + String(ruleNumber).count)
            }
            return name
        }
        for join in rule.joinTables {
            let relationship = join.relationship, other = join.inverse
            guard let entity = relationship.entity, inSet[entity.name] === entity, !relationship.isTransient,
                  let otherEntity = other.entity, inSet[otherEntity.name] === otherEntity, !other.isTransient else { continue }
            let reflexive = other === relationship
            let table = "Z_\(number(entity))\(relationship.name.uppercased())"
            let first = renumbered(join.column, entity)
            let second = reflexive ? "REFLEXIVE" : renumbered(join.inverseColumn, otherEntity)
            // `firstOrder` orders the naming entity's keys (the inverse is ordered);
            // `secondOrder` the other side's (the naming relationship is ordered).
            let firstOrder = join.orderColumn.map { renumbered($0, entity) }
            let secondOrder = reflexive ? join.inverseOrderColumn : join.inverseOrderColumn.map { renumbered($0, otherEntity) }
            let columns = [first, second] + [firstOrder, secondOrder].compactMap { $0 }
            guard usedTableNames.insert(SQLiteIdentifier.key(table)).inserted else {
                throw CoreDataError(.coreData, "Two tables of the store would be named \(table)",
                                    entityName: entity.name, key: relationship.name)
            }
            ownStorage[entity.name, default: [:]][relationship.name] = .joinTable(.init(
                tableName: table, sourceColumn: first, destinationColumn: second, orderColumn: secondOrder))
            if !reflexive {
                ownStorage[otherEntity.name, default: [:]][other.name] = .joinTable(.init(
                    tableName: table, sourceColumn: second, destinationColumn: first, orderColumn: firstOrder))
            }
            let indexName = "\(table)_\(second)_INDEX"
            usedIndexNames.insert(SQLiteIdentifier.key(indexName))
            joins.append(JoinPlan(
                table: .init(name: table, kind: .join,
                             columns: columns.map { .init(name: $0, declaredType: "INTEGER") },
                             uniqueConstraints: [], primaryKey: [first, second]),
                index: .init(name: indexName, tableName: table,
                             columns: [.init(name: second), .init(name: first)], isUnique: false),
                ownerRoot: rootInSet(entity).name))
        }

        for members in hierarchies {
            let root = members[0]
            let table = tableName(root)
            guard usedTableNames.insert(SQLiteIdentifier.key(table)).inserted else {
                throw CoreDataError(.coreData, "Two tables of the store would be named \(table)", entityName: root.name)
            }
            // Plan the columns.
            var planned: [PlannedColumn] = []
            for (entityIndex, entity) in members.enumerated() {
                for property in entity.properties {
                    if property.isTransient || property is FetchedPropertyDescription {
                        ownStorage[entity.name, default: [:]][property.name] = .notStored
                        continue
                    }
                    if let composite = property as? CompositeAttributeDescription {
                        func add(_ elements: [AttributeDescription], path: String, base: String) {
                            for element in elements {
                                let elementPath = path.isEmpty ? element.name : path + "." + element.name
                                let elementBase = base + "_" + element.name.uppercased()
                                if let nested = element as? CompositeAttributeDescription {
                                    add(nested.elements, path: elementPath, base: elementBase)
                                } else {
                                    let (type, group) = SQLiteLayout.columnType(element.attributeType)
                                    planned.append(PlannedColumn(
                                        owner: entity.name, property: composite.name + "\u{0}" + elementPath,
                                        base: elementBase, type: type, group: group, entityIndex: entityIndex, kind: 0,
                                        sortName: composite.name + "." + elementPath, sub: 0, role: .attribute))
                                }
                            }
                        }
                        add(composite.elements, path: "", base: "Z" + composite.name.uppercased())
                    } else if let attribute = property as? AttributeDescription {
                        let (type, group) = SQLiteLayout.columnType(attribute.attributeType)
                        planned.append(PlannedColumn(
                            owner: entity.name, property: attribute.name, base: "Z" + attribute.name.uppercased(),
                            type: type, group: group, entityIndex: entityIndex, kind: 0, sortName: attribute.name,
                            sub: 0, role: .attribute))
                    } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                        planned.append(PlannedColumn(
                            owner: entity.name, property: relationship.name, base: "Z" + relationship.name.uppercased(),
                            type: "INTEGER", group: 0, entityIndex: entityIndex, kind: 1, sortName: relationship.name,
                            sub: 0, role: .foreignKey))
                        if let destinationName = relationship.destinationEntityName, let destination = inSet[destinationName],
                           hasSubentities(destination) {
                            planned.append(PlannedColumn(
                                owner: entity.name, property: relationship.name, base: "", type: "INTEGER", group: 0,
                                entityIndex: entityIndex, kind: 1, sortName: relationship.name, sub: 1,
                                role: .entityColumn(destinationNumber: number(destination))))
                        }
                        if let other = inverse(of: relationship), other.isToMany, other.isOrdered {
                            planned.append(PlannedColumn(
                                owner: entity.name, property: relationship.name, base: "", type: "INTEGER", group: 0,
                                entityIndex: entityIndex, kind: 1, sortName: relationship.name, sub: 2, role: .orderColumn))
                        }
                    }
                }
                for (source, relationship) in hidden[entity.name] ?? [] {
                    let base = "Z\(number(source))\(relationship.name.uppercased())"
                    let key = "\u{1}" + source.name + "." + relationship.name
                    planned.append(PlannedColumn(
                        owner: entity.name, property: key, base: base, type: "INTEGER", group: 0,
                        entityIndex: entityIndex, kind: 1, sortName: String(base.dropFirst()), sub: 0, role: .foreignKey))
                    if relationship.isOrdered {
                        planned.append(PlannedColumn(
                            owner: entity.name, property: key, base: "", type: "INTEGER", group: 0,
                            entityIndex: entityIndex, kind: 1, sortName: String(base.dropFirst()), sub: 2, role: .orderColumn))
                    }
                }
            }
            // Name the columns, entity by entity, suffixing clashes.
            var used: Set<String> = ["Z_PK", "Z_ENT", "Z_OPT"]
            var foreignKeyNames: [String: String] = [:]   // owner \0 property -> FK name
            let namingOrder = planned.indices.sorted { a, b in
                let x = planned[a], y = planned[b]
                if x.entityIndex != y.entityIndex { return x.entityIndex < y.entityIndex }
                if x.group != y.group { return x.group < y.group }
                if x.kind != y.kind { return x.kind < y.kind }
                if x.sortName != y.sortName { return ManagedObjectModel.compareNames(x.sortName, y.sortName) }
                return x.sub < y.sub
            }
            for index in namingOrder {
                var column = planned[index]
                let ownerKey = column.owner + "\u{0}" + column.property
                let fkName = foreignKeyNames[ownerKey] ?? column.base
                switch column.role {
                case .attribute, .foreignKey: break
                case .entityColumn(let destinationNumber): column.base = "Z\(destinationNumber)_" + fkName.dropFirst()
                case .orderColumn: column.base = "Z_FOK_" + fkName.dropFirst()
                }
                guard SQLiteIdentifier.isValid(column.base) else {
                    throw CoreDataError(.coreData, "The property name '\(column.property)' can't be stored in SQLite",
                                        entityName: column.owner, key: column.property)
                }
                var name = column.base
                var suffix = 1
                while used.contains(SQLiteIdentifier.key(name)) {
                    name = column.base + String(suffix)
                    suffix += 1
                }
                used.insert(SQLiteIdentifier.key(name))
                column.finalName = name
                if case .foreignKey = column.role { foreignKeyNames[ownerKey] = name }
                planned[index] = column
            }
            let columnOrder = planned.indices.sorted { a, b in
                let x = planned[a], y = planned[b]
                if x.group != y.group { return x.group < y.group }
                // Order columns (Z_FOK_) follow every other integer column of the
                // table, in the order of their foreign keys (Bookmarks_V1, framework 1251).
                if (x.sub == 2) != (y.sub == 2) { return y.sub == 2 }
                if x.entityIndex != y.entityIndex { return x.entityIndex < y.entityIndex }
                if x.kind != y.kind { return x.kind < y.kind }
                if x.sortName != y.sortName { return ManagedObjectModel.compareNames(x.sortName, y.sortName) }
                return x.sub < y.sub
            }
            // Record where each property lives.
            var composites: [String: [String: [String: String]]] = [:]
            var toOne: [String: (fk: String, entity: String?, order: String?)] = [:]
            var hiddenColumns: [String: (fk: String, order: String?)] = [:]
            for column in planned {
                let parts = column.property.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false)
                if column.property.hasPrefix("\u{1}") {
                    var entry = hiddenColumns[column.property] ?? (fk: "", order: nil)
                    if case .orderColumn = column.role { entry.order = column.finalName } else { entry.fk = column.finalName }
                    hiddenColumns[column.property] = entry
                } else if parts.count == 2 {
                    composites[column.owner, default: [:]][String(parts[0]), default: [:]][String(parts[1])] = column.finalName
                } else {
                    switch column.role {
                    case .attribute:
                        ownStorage[column.owner, default: [:]][column.property] = .column(column.finalName)
                    case .foreignKey:
                        toOne[column.owner + "\u{0}" + column.property, default: (fk: "", entity: nil, order: nil)].fk = column.finalName
                    case .entityColumn:
                        toOne[column.owner + "\u{0}" + column.property, default: (fk: "", entity: nil, order: nil)].entity = column.finalName
                    case .orderColumn:
                        toOne[column.owner + "\u{0}" + column.property, default: (fk: "", entity: nil, order: nil)].order = column.finalName
                    }
                }
            }
            for (owner, byName) in composites {
                for (name, elements) in byName { ownStorage[owner, default: [:]][name] = .composite(elements) }
            }
            for (key, value) in toOne {
                let parts = key.split(separator: "\u{0}", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { continue }
                ownStorage[String(parts[0]), default: [:]][String(parts[1])] =
                    .toOne(column: value.fk, entityColumn: value.entity, orderColumn: value.order)
            }
            for (key, value) in hiddenColumns {
                // "\u{1}Source.relationship": the to-many of Source, stored here.
                let path = key.dropFirst()
                guard let dot = path.lastIndex(of: ".") else { continue }
                let source = String(path[..<dot]), relationship = String(path[path.index(after: dot)...])
                ownStorage[source, default: [:]][relationship] =
                    .toMany(tableName: table, foreignKeyColumn: value.fk, orderColumn: value.order)
            }

            // Uniqueness constraints (inside CREATE TABLE, as framework 637 writes them).
            func columns(for names: [String], of entity: EntityDescription) -> [String]? {
                var result: [String] = []
                for name in names {
                    guard let declaring = entity.propertiesByName[name]?.entity?.name else { return nil }
                    switch ownStorage[declaring]?[name] {
                    case .column(let column): result.append(column)
                    case .toOne(let column, _, _): result.append(column)
                    default: return nil
                    }
                }
                return result.isEmpty ? nil : result
            }
            var constraints: [[String]] = []
            for entity in members {
                for constraint in entity.uniquenessConstraints {
                    guard let resolved = columns(for: constraint, of: entity),
                          !constraints.contains(where: { $0.map(SQLiteIdentifier.key) == resolved.map(SQLiteIdentifier.key) })
                    else { continue }
                    constraints.append(resolved)
                }
            }
            let tableColumns = [SQLiteSchema.Column(name: "Z_PK", declaredType: "INTEGER"),
                                .init(name: "Z_ENT", declaredType: "INTEGER"),
                                .init(name: "Z_OPT", declaredType: "INTEGER")]
                + columnOrder.map { SQLiteSchema.Column(name: planned[$0].finalName, declaredType: planned[$0].type) }
            let tableDescription = SQLiteSchema.Table(name: table, kind: .entity(rootEntityName: root.name),
                                                      columns: tableColumns, uniqueConstraints: constraints, primaryKey: [])
            tables.append(tableDescription)
            statementsTables.append(SQLiteLayout.createTableSQL(tableDescription))
            for join in joins where join.ownerRoot == root.name {
                tables.append(join.table)
                statementsTables.append(SQLiteLayout.createTableSQL(join.table))
                joinIndexes.append(join.index)
                statementsJoinIndexes.append(SQLiteLayout.createIndexSQL(join.index))
            }

            // Indexes of the table.
            var tableIndexes: [SQLiteSchema.Index] = []
            func addIndex(_ name: String, _ columns: [SQLiteSchema.IndexColumn]) {
                guard SQLiteIdentifier.isValid(name), usedIndexNames.insert(SQLiteIdentifier.key(name)).inserted else { return }
                tableIndexes.append(.init(name: name, tableName: table, columns: columns, isUnique: false))
            }
            for entity in members {
                let attributes = entity.properties.compactMap { $0 as? AttributeDescription }
                    .filter { $0.isIndexed && !$0.isTransient }
                    .sorted { ManagedObjectModel.compareNames($0.name, $1.name) }
                for attribute in attributes {
                    if case .column(let column) = ownStorage[entity.name]?[attribute.name] {
                        addIndex("\(table)_\(column)_INDEX", [.init(name: column)])
                    }
                }
                var keys: [(sort: String, column: String)] = []
                for relationship in entity.properties.compactMap(storedRelationship) where !relationship.isToMany {
                    if case .toOne(let column, _, _) = ownStorage[entity.name]?[relationship.name] {
                        keys.append((relationship.name, column))
                    }
                }
                for (source, relationship) in hidden[entity.name] ?? [] {
                    if case .toMany(_, let column, _) = ownStorage[source.name]?[relationship.name] {
                        keys.append((String(column.dropFirst()), column))
                    }
                }
                keys.sort { ManagedObjectModel.compareNames($0.sort, $1.sort) }
                for key in keys { addIndex("\(table)_\(key.column)_INDEX", [.init(name: key.column)]) }
            }
            if members.count > 1 { addIndex("\(table)_Z_ENT_INDEX", [.init(name: "Z_ENT")]) }
            for entity in members {
                for compound in entity.compoundIndexes {
                    guard let resolved = columns(for: compound, of: entity) else { continue }
                    addIndex(([table] + resolved).joined(separator: "_"), resolved.map { .init(name: $0) })
                }
            }
            for entity in members {
                for fetchIndex in entity.indexes {
                    // Only property elements in B-tree indexes; R-tree and expression
                    // elements need virtual tables and expression SQL (not yet).
                    var resolved: [SQLiteSchema.IndexColumn] = []
                    for element in fetchIndex.elements {
                        guard element.collationType == .binary, let property = element.propertyName,
                              let column = columns(for: [property], of: entity)?.first else { resolved = []; break }
                        resolved.append(.init(name: column, collation: "BINARY", ascending: element.isAscending))
                    }
                    guard !resolved.isEmpty else { continue }
                    addIndex("Z_\(entity.name)_\(fetchIndex.name)", resolved)
                }
            }
            entityIndexes.append(contentsOf: tableIndexes)
            statementsIndexes.append(contentsOf: tableIndexes.map(SQLiteLayout.createIndexSQL))

            // Entity mappings.
            for entity in members {
                var all: [Int] = []
                var stack = [entity]
                while let next = stack.popLast() {
                    all.append(number(next))
                    stack.append(contentsOf: children(next))
                }
                mappings.append(.init(entityName: entity.name, entityNumber: number(entity),
                                      superentityNumber: parent(entity).map(number) ?? 0,
                                      rootEntityName: root.name, tableName: table,
                                      entityNumbersIncludingSubentities: all.sorted()))
            }
        }

        // To-many relationships kept by their inverse's foreign key.
        for members in hierarchies {
            for entity in members {
                for relationship in entity.properties.compactMap(storedRelationship) where relationship.isToMany {
                    guard ownStorage[entity.name]?[relationship.name] == nil else { continue }
                    guard let other = inverse(of: relationship), let otherEntity = other.entity,
                          case .toOne(let column, _, let order)? = ownStorage[otherEntity.name]?[other.name] else {
                        ownStorage[entity.name, default: [:]][relationship.name] = .notStored
                        continue
                    }
                    ownStorage[entity.name, default: [:]][relationship.name] = .toMany(
                        tableName: tableName(rootInSet(otherEntity)), foreignKeyColumn: column,
                        orderColumn: relationship.isOrdered ? order : nil)
                }
            }
        }
        // Every entity sees its inherited properties' storage too.
        var storage: [String: [String: SQLiteSchema.PropertyStorage]] = [:]
        for members in hierarchies {
            for entity in members {
                var chain: [EntityDescription] = []
                var current: EntityDescription? = entity
                while let next = current { chain.insert(next, at: 0); current = parent(next) }
                var merged: [String: SQLiteSchema.PropertyStorage] = [:]
                for link in chain { merged.merge(ownStorage[link.name] ?? [:]) { _, new in new } }
                storage[entity.name] = merged
            }
        }

        mappings.sort { $0.entityNumber < $1.entityNumber }
        // Derived attributes that follow relationships: Core Data's triggers.
        var statementsTriggers: [String] = []
        for members in hierarchies {
            for entity in members {
                for derivation in entity.derivations where !derivation.form.isOwnRow
                && derivation.attribute.entity?.name == entity.name {
                    statementsTriggers += SQLiteLayout.derivationTriggers(derivation, of: entity, storage: storage,
                                                                          tableOf: { tableName(rootInSet($0)) }, entities: inSet)
                }
            }
        }
        let bookkeeping = SQLiteLayout.bookkeepingTables
        schema = SQLiteSchema(
            tables: tables + bookkeeping,
            indexes: joinIndexes + entityIndexes,
            entities: mappings,
            entitiesByName: Dictionary(mappings.map { ($0.entityName, $0) }, uniquingKeysWith: { first, _ in first }),
            propertyStorage: storage,
            creationStatements: statementsTables + statementsJoinIndexes + SQLiteLayout.bookkeepingStatements + statementsIndexes
                + statementsTriggers)
    }

    // MARK: Derived attributes

    /// The triggers that keep a derived attribute that follows a relationship up to
    /// date, as Core Data writes them: for `rel.attr` exactly the four of Photos'
    /// libraries (`Z_DA_<TABLE>_<Entity>_<attribute>_SOURCE_INSERT`/`_SOURCE_UPDATE`
    /// on the entity's table, `_PARAMETER_INSERT`/`_PARAMETER_UPDATE` on the
    /// destination's), each reporting the rows it changes through
    /// `NSCoreDataDATrigger…AffectedObjectValue`. For `rel.@count` and
    /// `rel.attr.@sum` the same names and shape with a `_PARAMETER_DELETE`,
    /// recounting from the destination rows (no real store with one has been seen:
    /// the names follow the `rel.attr` ones).
    static func derivationTriggers(_ derivation: EntityDescription.Derivation, of entity: EntityDescription,
                                   storage: [String: [String: SQLiteSchema.PropertyStorage]],
                                   tableOf: (EntityDescription) -> String, entities: [String: EntityDescription]) -> [String] {
        let q = SQLiteIdentifier.quoted
        guard case .column(let column)? = storage[entity.name]?[derivation.attribute.name] else { return [] }
        let table = tableOf(entity)
        let name = derivation.attribute.name
        func report(_ function: String, where condition: String) -> String {
            "SELECT \(function)('\(table)', Z_ENT, Z_PK, '\(name)', \(q(column))) FROM \(q(table)) WHERE \(condition);"
        }
        let inserted = "NSCoreDataDATriggerInsertUpdatedAffectedObjectValue", updated = "NSCoreDataDATriggerUpdatedAffectedObjectValue"
        switch derivation.form {
        case .toOne(let relationshipName, let key):
            guard let relationship = entity.relationshipsByName[relationshipName], !relationship.isToMany,
                  let destination = relationship.destinationEntityName.flatMap({ entities[$0] }),
                  case .toOne(let foreignKey, _, _)? = storage[entity.name]?[relationshipName],
                  case .column(let source)? = storage[destination.name]?[key] else { return [] }
            let other = tableOf(destination)
            let value = "(SELECT \(q(source)) FROM \(q(other)) WHERE Z_PK = NEW.\(q(foreignKey)))"
            let prefix = "Z_DA_\(table)_\(entity.name)_\(name)", parameter = "Z_DA_\(other)_\(entity.name)_\(name)"
            return [
                "CREATE TRIGGER \(q(prefix + "_SOURCE_INSERT")) AFTER INSERT ON \(q(table)) FOR EACH ROW BEGIN UPDATE \(q(table)) SET \(q(column)) = \(value) WHERE Z_PK = NEW.Z_PK; \(report(inserted, where: "Z_PK = NEW.Z_PK")) END",
                "CREATE TRIGGER \(q(prefix + "_SOURCE_UPDATE")) AFTER UPDATE OF \(q(foreignKey)) ON \(q(table)) FOR EACH ROW BEGIN UPDATE \(q(table)) SET \(q(column)) = \(value) WHERE Z_PK = NEW.Z_PK; \(report(updated, where: "Z_PK = NEW.Z_PK")) END",
                "CREATE TRIGGER \(q(parameter + "_PARAMETER_INSERT")) AFTER INSERT ON \(q(other)) FOR EACH ROW BEGIN UPDATE \(q(table)) SET \(q(column)) = NEW.\(q(source)) WHERE \(q(foreignKey)) = NEW.Z_PK; \(report(inserted, where: "\(q(foreignKey)) = NEW.Z_PK")) END",
                "CREATE TRIGGER \(q(parameter + "_PARAMETER_UPDATE")) AFTER UPDATE OF \(q(source)) ON \(q(other)) FOR EACH ROW BEGIN UPDATE \(q(table)) SET \(q(column)) = NEW.\(q(source)) WHERE \(q(foreignKey)) = NEW.Z_PK; \(report(updated, where: "\(q(foreignKey)) = NEW.Z_PK")) END",
            ]
        case .aggregate(let relationshipName, let key, let aggregate):
            guard let relationship = entity.relationshipsByName[relationshipName], relationship.isToMany else { return [] }
            // Where the destinations' keys are: a foreign key in their table, or a join table.
            let other: String, keyColumn: String, summed: String?
            switch storage[entity.name]?[relationshipName] {
            case .toMany(let destinationTable, let foreignKey, _)?:
                other = destinationTable
                keyColumn = foreignKey
                if let key {
                    guard let destination = relationship.destinationEntityName.flatMap({ entities[$0] }),
                          case .column(let source)? = storage[destination.name]?[key] else { return [] }
                    summed = source
                } else {
                    summed = nil
                }
            case .joinTable(let join)? where key == nil:
                other = join.tableName
                keyColumn = join.sourceColumn
                summed = nil
            default:
                return []
            }
            let measure = aggregate == .count ? "COUNT(*)" : "IFNULL(SUM(\(q(summed ?? "Z_PK"))), 0)"
            func value(_ row: String) -> String { "(SELECT \(measure) FROM \(q(other)) WHERE \(q(keyColumn)) = \(row))" }
            let prefix = "Z_DA_\(table)_\(entity.name)_\(name)", parameter = "Z_DA_\(other)_\(entity.name)_\(name)"
            let watched = [keyColumn] + (summed.map { [$0] } ?? [])
            func recount(_ row: String, _ function: String) -> String {
                "UPDATE \(q(table)) SET \(q(column)) = \(value(row)) WHERE Z_PK = \(row); \(report(function, where: "Z_PK = \(row)"))"
            }
            return [
                "CREATE TRIGGER \(q(prefix + "_SOURCE_INSERT")) AFTER INSERT ON \(q(table)) FOR EACH ROW BEGIN \(recount("NEW.Z_PK", inserted)) END",
                "CREATE TRIGGER \(q(parameter + "_PARAMETER_INSERT")) AFTER INSERT ON \(q(other)) FOR EACH ROW WHEN NEW.\(q(keyColumn)) IS NOT NULL BEGIN \(recount("NEW.\(q(keyColumn))", inserted)) END",
                "CREATE TRIGGER \(q(parameter + "_PARAMETER_UPDATE")) AFTER UPDATE OF \(watched.map(q).joined(separator: ", ")) ON \(q(other)) FOR EACH ROW BEGIN \(recount("OLD.\(q(keyColumn))", updated)) \(recount("NEW.\(q(keyColumn))", updated)) END",
                "CREATE TRIGGER \(q(parameter + "_PARAMETER_DELETE")) AFTER DELETE ON \(q(other)) FOR EACH ROW WHEN OLD.\(q(keyColumn)) IS NOT NULL BEGIN \(recount("OLD.\(q(keyColumn))", updated)) END",
            ]
        case .copy, .transform, .now:
            return []
        }
    }

    // MARK: Types and SQL

    /// The declared column type of an attribute type, and its column group
    /// (0 integers, 1 reals and dates, 2 strings, 3 blobs).
    static func columnType(_ type: AttributeType) -> (String, Int) {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return ("INTEGER", 0)
        case .decimal: return ("DECIMAL", 1)
        case .double, .float: return ("FLOAT", 1)
        case .date: return ("TIMESTAMP", 1)
        case .string, .uri: return ("VARCHAR", 2)
        case .binaryData, .uuid, .transformable, .undefined, .objectID, .composite: return ("BLOB", 3)
        }
    }

    static let bookkeepingStatements = [
        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
        "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
        "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)",
    ]

    static let bookkeepingTables: [SQLiteSchema.Table] = [
        .init(name: "Z_PRIMARYKEY", kind: .bookkeeping,
              columns: [.init(name: "Z_ENT", declaredType: "INTEGER"), .init(name: "Z_NAME", declaredType: "VARCHAR"),
                        .init(name: "Z_SUPER", declaredType: "INTEGER"), .init(name: "Z_MAX", declaredType: "INTEGER")],
              uniqueConstraints: [], primaryKey: []),
        .init(name: "Z_METADATA", kind: .bookkeeping,
              columns: [.init(name: "Z_VERSION", declaredType: "INTEGER"), .init(name: "Z_UUID", declaredType: "VARCHAR(255)"),
                        .init(name: "Z_PLIST", declaredType: "BLOB")],
              uniqueConstraints: [], primaryKey: []),
        .init(name: "Z_MODELCACHE", kind: .bookkeeping, columns: [.init(name: "Z_CONTENT", declaredType: "BLOB")],
              uniqueConstraints: [], primaryKey: []),
    ]

    /// `CREATE TABLE` text, spaced exactly as Core Data writes it.
    static func createTableSQL(_ table: SQLiteSchema.Table) -> String {
        let q = SQLiteIdentifier.quoted
        var parts: [String] = []
        switch table.kind {
        case .entity:
            parts.append("Z_PK INTEGER PRIMARY KEY")
            parts += table.columns.dropFirst().map { "\(q($0.name)) \($0.declaredType)" }
        case .join, .bookkeeping:
            parts += table.columns.map { "\(q($0.name)) \($0.declaredType)" }
        }
        if !table.primaryKey.isEmpty {
            parts.append("PRIMARY KEY (\(table.primaryKey.map(q).joined(separator: ", ")))")
        }
        var sql = "CREATE TABLE \(q(table.name)) ( " + parts.joined(separator: ", ")
        for constraint in table.uniqueConstraints {
            sql += ", CONSTRAINT \(q(constraint.joined(separator: "_"))) UNIQUE (\(constraint.map(q).joined(separator: ", ")))"
        }
        sql += table.uniqueConstraints.isEmpty ? " )" : ")"
        return sql
    }

    /// `CREATE INDEX` text, as Core Data writes it.
    static func createIndexSQL(_ index: SQLiteSchema.Index) -> String {
        let q = SQLiteIdentifier.quoted
        let columns = index.columns.map { column -> String in
            var text = q(column.name)
            if let collation = column.collation { text += " COLLATE \(collation)" }
            if let ascending = column.ascending { text += ascending ? " ASC" : " DESC" }
            return text
        }
        return "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX \(q(index.name)) ON \(q(index.tableName)) (\(columns.joined(separator: ", ")))"
    }
}

extension SQLiteSchema.IndexColumn {
    init(name: String) {
        self.init(name: name, collation: nil, ascending: nil)
    }
}
