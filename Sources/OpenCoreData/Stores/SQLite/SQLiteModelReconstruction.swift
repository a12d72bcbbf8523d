import Foundation
import GRDB

/// Rebuilds a managed object model from the schema of a Core Data SQLite store, for
/// stores whose model is nowhere to be had: written before Core Data cached its
/// model in the store (frameworks up to about 519), or whose cache cannot be read.
///
/// Forensic and recovery users rarely have an app's model file; the store itself
/// says most of it:
/// * entities, their numbers and inheritance come from `Z_PRIMARYKEY`; each
///   hierarchy's table is `Z` + its root's name;
/// * every other column of a table is a property, named as the column names it
///   (`ZDATECREATED` becomes `datecreated`: the store keeps no letter case); a
///   column belongs to the deepest entity whose rows are the only ones with values
///   in it (the root when no row has one);
/// * a column's type comes from its declared type (`INTEGER`, `FLOAT`, `TIMESTAMP`,
///   `VARCHAR`, `BLOB`, `DECIMAL`), or from the values it holds when it declares
///   none Core Data writes;
/// * a to-one relationship is an integer column with an entity column
///   (`Z<entity#>_<NAME>`), or an indexed or ordered (`Z_FOK_<NAME>`) one whose
///   keys name rows of one entity (by the column's name when an entity has it,
///   else by the rows its keys point at); its to-many inverse is named
///   `<source>_<name>` (ordered when the `Z_FOK_` column exists);
/// * a to-many relationship without inverse is a hidden key `Z<entity#><NAME>`;
/// * a many-to-many pair is a join table `Z_<entity#><NAME>` with its two columns
///   (`Z_<entity#><INVERSE>`, `Z_<entity#><NAME>`, their `Z_FOK_` twins when ordered).
///
/// What a store does not keep stays unknown: Booleans read as integers, binary
/// values as data (a transformable's archive is not decoded), defaults, validation
/// and delete rules are absent. The model's ``ManagedObjectModel/isReconstructed``
/// is true, and a store opened with it is read-only: its version hashes are not
/// the store's, so nothing may be written through it.
///
/// ```swift
/// let model = try SQLiteStore.reconstructedModel(at: storeURL)
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .sqlite, at: storeURL, options: [SQLiteStore.Option.readOnly: "1"])
/// ```
enum SQLiteModelReconstruction {
    /// The model the schema of `db` implies; throws 134020 when the database has no
    /// `Z_PRIMARYKEY` (not a Core Data store).
    static func model(_ db: Database) throws -> ManagedObjectModel {
        guard try SQLiteSchemaReader.tableExists(db, "Z_PRIMARYKEY") else {
            throw CoreDataError(.persistentStoreIncompatibleSchema,
                                "The database is not a Core Data store: it has no Z_PRIMARYKEY table")
        }
        // Entities: every Z_PRIMARYKEY row below the history entities (16000 and up).
        var rows: [(number: Int, name: String, superNumber: Int)] = []
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER FROM Z_PRIMARYKEY ORDER BY Z_ENT") {
            guard let number = SQLiteStoreErrors.int(row[0]), number > 0, number < 16000,
                  let name = SQLiteStoreErrors.string(row[1]), SQLiteIdentifier.isValid(name),
                  !rows.contains(where: { $0.name == name || $0.number == number }) else { continue }
            rows.append((number, name, SQLiteStoreErrors.int(row[2]) ?? 0))
        }
        var entities: [Int: EntityDescription] = [:]
        for row in rows { entities[row.number] = EntityDescription(name: row.name) }
        var superNumber: [Int: Int] = [:]
        for row in rows {
            // A superentity the store does not list, or a cycle, makes a root.
            var seen: Set<Int> = [row.number]
            var up = row.superNumber
            var valid = up != 0 && entities[up] != nil
            while valid, up != 0 {
                guard seen.insert(up).inserted, let next = rows.first(where: { $0.number == up }) else { valid = false; break }
                up = next.superNumber
            }
            if valid { superNumber[row.number] = row.superNumber }
        }
        for row in rows {
            guard let parent = superNumber[row.number], let entity = entities[row.number], let superentity = entities[parent] else { continue }
            superentity.subentities.append(entity)
        }
        func root(_ number: Int) -> Int {
            var current = number
            while let up = superNumber[current] { current = up }
            return current
        }
        func chain(_ number: Int) -> [Int] {
            var result = [number]
            while let up = superNumber[result[result.count - 1]] { result.append(up) }
            return result.reversed()
        }
        /// The deepest entity that is an ancestor of (or is) every entity in `numbers`.
        func commonAncestor(_ numbers: [Int]) -> Int? {
            guard var common = numbers.first.map(chain) else { return nil }
            for number in numbers.dropFirst() {
                let other = chain(number)
                common = Array(zip(common, other).prefix { $0 == $1 }.map(\.0))
            }
            return common.last
        }
        let parents = Set(superNumber.values)
        func hasSubentities(_ number: Int) -> Bool { parents.contains(number) }

        // Each hierarchy's table, as the store spells it.
        var tableOfRoot: [Int: String] = [:]
        let allTables = try Row.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            .compactMap { SQLiteStoreErrors.string($0[0]) }
        for row in rows where superNumber[row.number] == nil {
            let wanted = SQLiteIdentifier.key("Z" + row.name.uppercased())
            if let table = allTables.first(where: { SQLiteIdentifier.key($0) == wanted }) {
                tableOfRoot[row.number] = table
            } else {
                ModelLoadingLog.warning("Entity '\(row.name)' has no table Z\(row.name.uppercased()) in the store; its hierarchy is left out",
                                        entity: row.name, property: nil)
            }
        }
        let rootOfTable = Dictionary(tableOfRoot.map { (SQLiteIdentifier.key($0.value), $0.key) }, uniquingKeysWith: { first, _ in first })
        let numberOfName = Dictionary(rows.map { (SQLiteIdentifier.key($0.name), $0.number) }, uniquingKeysWith: { first, _ in first })
        let indexNames = Set(try Row.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'")
            .compactMap { SQLiteStoreErrors.string($0[0]).map(SQLiteIdentifier.key) })

        var usedNames: [Int: Set<String>] = [:]   // root -> property names in its hierarchy
        func claim(_ name: String, root: Int) -> String {
            var candidate = name
            var suffix = 1
            while usedNames[root, default: []].contains(candidate) {
                candidate = name + "_" + String(suffix)
                suffix += 1
            }
            usedNames[root, default: []].insert(candidate)
            return candidate
        }
        struct PendingInverse { var source: Int; var name: String; var destination: Int; var ordered: Bool }
        var inverses: [PendingInverse] = []

        for (rootNumber, table) in tableOfRoot.sorted(by: { $0.key < $1.key }) {
            let columns = try SQLiteSchemaReader.columns(db, table)
            let keys = Set(columns.map { SQLiteIdentifier.key($0.name) })
            var plain: [SQLiteSchema.Column] = []
            var hiddenKeys: [(column: SQLiteSchema.Column, source: Int, name: String)] = []
            for column in columns {
                let key = SQLiteIdentifier.key(column.name)
                if ["Z_PK", "Z_ENT", "Z_OPT"].contains(key) || key.hasPrefix("Z_FOK_") { continue }
                guard key.hasPrefix("Z"), key.count > 1 else { plain.append(column); continue }
                let rest = key.dropFirst()
                let digits = rest.prefix { $0.isNumber }
                if digits.isEmpty { plain.append(column); continue }
                let afterDigits = rest.dropFirst(digits.count)
                if afterDigits.hasPrefix("_") { continue }   // an entity column, Z<n>_<NAME>
                if let source = Int(digits), entities[source] != nil, !afterDigits.isEmpty {
                    hiddenKeys.append((column, source, afterDigits.lowercased()))
                } else {
                    plain.append(column)
                }
            }
            // Which entities have values in each column, in one pass over the table.
            let members = rows.map(\.number).filter { root($0) == rootNumber }
            var owners: [String: Int] = [:]
            if !plain.isEmpty {
                let counts = plain.map { "COUNT(\(SQLiteIdentifier.quoted($0.name)))" }.joined(separator: ", ")
                var valuesBy: [String: [Int]] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, \(counts) FROM \(SQLiteIdentifier.quoted(table)) GROUP BY Z_ENT") {
                    guard let entity = SQLiteStoreErrors.int(row[0]), members.contains(entity) else { continue }
                    for (offset, column) in plain.enumerated() where (SQLiteStoreErrors.int(row[offset + 1]) ?? 0) > 0 {
                        valuesBy[column.name, default: []].append(entity)
                    }
                }
                for column in plain { owners[column.name] = commonAncestor(valuesBy[column.name] ?? []) ?? rootNumber }
            }
            for column in plain {
                let key = SQLiteIdentifier.key(column.name)
                let name = String(key.dropFirst()).lowercased()
                guard let ownerNumber = owners[column.name], let owner = entities[ownerNumber], !name.isEmpty else { continue }
                if let destination = try toOneDestination(db, table: table, column: column.name, name: String(key.dropFirst()),
                                                          keys: keys, indexNames: indexNames, entities: entities,
                                                          numberOfName: numberOfName, rootOfTable: rootOfTable,
                                                          tableOfRoot: tableOfRoot, root: root, hasSubentities: hasSubentities,
                                                          commonAncestor: commonAncestor) {
                    let property = claim(name, root: rootNumber)
                    let relationship = RelationshipDescription(name: property, destination: entities[destination]?.name)
                    owner.properties.append(relationship)
                    let ordered = keys.contains(SQLiteIdentifier.key("Z_FOK_" + key.dropFirst()))
                    inverses.append(PendingInverse(source: ownerNumber, name: property, destination: destination, ordered: ordered))
                } else {
                    let type = try attributeType(db, table: table, column: column)
                    owner.properties.append(AttributeDescription(name: claim(name, root: rootNumber), type: type))
                }
            }
            for hidden in hiddenKeys {
                // A to-many without inverse of entity `source`, kept in its destination's rows.
                guard let source = entities[hidden.source] else { continue }
                let ordered = keys.contains(SQLiteIdentifier.key("Z_FOK_" + hidden.column.name.dropFirst()))
                let relationship = RelationshipDescription(name: claim(hidden.name, root: root(hidden.source)),
                                                           destination: entities[rootNumber]?.name, toMany: true, ordered: ordered)
                source.properties.append(relationship)
            }
        }
        // The to-many inverses of the to-one relationships.
        for inverse in inverses {
            guard let destination = entities[inverse.destination], let source = entities[inverse.source],
                  let forward = source.properties.first(where: { $0.name == inverse.name }) as? RelationshipDescription else { continue }
            let name = claim(lowercasedFirst(source.name) + "_" + inverse.name, root: root(inverse.destination))
            let back = RelationshipDescription(name: name, destination: source.name, inverse: forward.name,
                                               toMany: true, ordered: inverse.ordered)
            destination.properties.append(back)
            forward.inverseRelationshipName = name
        }
        // Many-to-many join tables: Z_<n><NAME> with two key columns.
        for table in allTables.sorted() {
            try addJoinTable(db, table: table, entities: entities, root: root, claim: claim)
        }

        let model = ManagedObjectModel()
        model.entities = rows.compactMap { row in tableOfRoot[root(row.number)] == nil ? nil : entities[row.number] }
        model.isReconstructed = true
        return model
    }

    private static func lowercasedFirst(_ name: String) -> String {
        name.prefix(1).lowercased() + name.dropFirst()
    }

    /// The entity a to-one foreign key column points at, or nil when the column is
    /// not a foreign key that can be told from the store.
    private static func toOneDestination(
        _ db: Database, table: String, column: String, name: String, keys: Set<String>, indexNames: Set<String>,
        entities: [Int: EntityDescription], numberOfName: [String: Int], rootOfTable: [String: Int],
        tableOfRoot: [Int: String], root: (Int) -> Int, hasSubentities: (Int) -> Bool, commonAncestor: ([Int]) -> Int?
    ) throws -> Int? {
        // An entity column Z<n>_<NAME> names the destination (one with subentities).
        let entityColumnSuffix = "_" + SQLiteIdentifier.key(name)
        for key in keys where key.hasPrefix("Z") && key.hasSuffix(entityColumnSuffix) {
            let middle = key.dropFirst().dropLast(entityColumnSuffix.count)
            if !middle.isEmpty, middle.allSatisfy(\.isNumber), let number = Int(middle), entities[number] != nil { return number }
        }
        let isOrdered = keys.contains(SQLiteIdentifier.key("Z_FOK_" + name))
        let isIndexed = indexNames.contains(SQLiteIdentifier.key("\(table)_\(column)_INDEX"))
        guard isOrdered || isIndexed else { return nil }
        // Only integers (keys) in the column.
        let quoted = SQLiteIdentifier.quoted(column), quotedTable = SQLiteIdentifier.quoted(table)
        let nonIntegers = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(quotedTable) WHERE \(quoted) IS NOT NULL AND typeof(\(quoted)) <> 'integer'") ?? 0
        guard nonIntegers == 0 else { return nil }
        // Without an entity column, Core Data's destination has no subentities.
        if let named = numberOfName[SQLiteIdentifier.key(name)], tableOfRoot[root(named)] != nil, !hasSubentities(named) {
            return named
        }
        let values = try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT \(quoted)) FROM \(quotedTable) WHERE \(quoted) IS NOT NULL") ?? 0
        guard values > 0 else { return nil }
        // The tables holding every key, and the entities of the rows they name.
        var found: [Int] = []
        for (rootNumber, target) in tableOfRoot.sorted(by: { $0.key < $1.key }) {
            let quotedTarget = SQLiteIdentifier.quoted(target)
            let missing = try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM (SELECT DISTINCT \(quoted) AS v FROM \(quotedTable) WHERE \(quoted) IS NOT NULL)
                WHERE v NOT IN (SELECT Z_PK FROM \(quotedTarget))
                """) ?? 1
            guard missing == 0 else { continue }
            let kinds = try Int.fetchAll(db, sql: """
                SELECT DISTINCT Z_ENT FROM \(quotedTarget) WHERE Z_PK IN (SELECT \(quoted) FROM \(quotedTable))
                """)
            if let common = commonAncestor(kinds), root(common) == rootNumber, !hasSubentities(common) { found.append(common) }
        }
        return found.count == 1 ? found[0] : nil
    }

    /// The attribute type of a column: by its declared type, or by the values it
    /// holds when the declaration is not one Core Data writes.
    private static func attributeType(_ db: Database, table: String, column: SQLiteSchema.Column) throws -> AttributeType {
        let declared = column.declaredType.uppercased()
        if declared.hasPrefix("TIMESTAMP") { return .date }
        if declared.hasPrefix("DECIMAL") || declared.hasPrefix("NUMERIC") { return .decimal }
        if declared.contains("INT") { return .integer64 }
        if declared.contains("CHAR") || declared.contains("CLOB") || declared.contains("TEXT") { return .string }
        if declared.contains("REAL") || declared.contains("FLOA") || declared.contains("DOUB") { return .double }
        if declared.contains("BLOB") { return .binaryData }
        // No declaration Core Data writes: the storage class its values share.
        let quoted = SQLiteIdentifier.quoted(column.name)
        let classes = try String.fetchAll(db, sql: """
            SELECT DISTINCT typeof(\(quoted)) FROM \(SQLiteIdentifier.quoted(table)) WHERE \(quoted) IS NOT NULL LIMIT 3
            """)
        switch Set(classes) {
        case ["integer"]: return .integer64
        case ["real"], ["integer", "real"]: return .double
        case ["text"]: return .string
        default: return .binaryData
        }
    }

    /// Adds the many-to-many pair stored in `table` when it is a join table: named
    /// `Z_<n><NAME>`, with two key columns, one of them `Z_<m><NAME>` (or `REFLEXIVE`).
    private static func addJoinTable(_ db: Database, table: String, entities: [Int: EntityDescription],
                                     root: (Int) -> Int, claim: (String, Int) -> String) throws {
        let key = SQLiteIdentifier.key(table)
        guard key.hasPrefix("Z_"), !["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"].contains(key) else { return }
        let afterPrefix = key.dropFirst(2)
        let digits = afterPrefix.prefix { $0.isNumber }
        guard let number = Int(digits), let entity = entities[number] else { return }
        let relationshipKey = String(afterPrefix.dropFirst(digits.count))
        guard !relationshipKey.isEmpty else { return }
        let columns = try SQLiteSchemaReader.columns(db, table)
        let keyColumns = columns.filter { !SQLiteIdentifier.key($0.name).hasPrefix("Z_FOK_") }
        guard keyColumns.count == 2 else { return }
        let columnKeys = Set(columns.map { SQLiteIdentifier.key($0.name) })
        /// A key column's entity number and name, without Core Data's clash suffix.
        func parse(_ column: SQLiteSchema.Column) -> (number: Int, name: String)? {
            let key = SQLiteIdentifier.key(column.name)
            guard key.hasPrefix("Z_") else { return nil }
            let rest = key.dropFirst(2)
            let digits = rest.prefix { $0.isNumber }
            guard let number = Int(digits) else { return nil }
            var name = String(rest.dropFirst(digits.count))
            while name.count > 1, name.last?.isNumber == true { name.removeLast() }
            return name.isEmpty ? nil : (number, name)
        }
        func ordered(_ column: SQLiteSchema.Column) -> Bool {
            columnKeys.contains(SQLiteIdentifier.key("Z_FOK_" + column.name.dropFirst(2)))
        }
        if let reflexive = keyColumns.firstIndex(where: { SQLiteIdentifier.key($0.name) == "REFLEXIVE" }) {
            let other = keyColumns[1 - reflexive]
            guard parse(other)?.number == number else { return }
            let name = claim(relationshipKey.lowercased(), root(number))
            entity.properties.append(RelationshipDescription(name: name, destination: entity.name, inverse: name,
                                                             toMany: true, ordered: ordered(other)))
            return
        }
        guard let first = parse(keyColumns[0]), let second = parse(keyColumns[1]) else { return }
        // The destination column is named by this relationship; the source column by its inverse.
        let (sourceIndex, destinationIndex): (Int, Int)
        if second.name == relationshipKey && (first.name != relationshipKey || first.number == number) {
            (sourceIndex, destinationIndex) = (0, 1)
        } else if first.name == relationshipKey {
            (sourceIndex, destinationIndex) = (1, 0)
        } else {
            return
        }
        let source = [first, second][sourceIndex], destinationSide = [first, second][destinationIndex]
        guard source.number == number, let destination = entities[destinationSide.number] else { return }
        let forwardName = claim(relationshipKey.lowercased(), root(number))
        let inverseName = claim(source.name.lowercased(), root(destinationSide.number))
        entity.properties.append(RelationshipDescription(name: forwardName, destination: destination.name, inverse: inverseName,
                                                         toMany: true, ordered: ordered(keyColumns[destinationIndex])))
        destination.properties.append(RelationshipDescription(name: inverseName, destination: entity.name, inverse: forwardName,
                                                              toMany: true, ordered: ordered(keyColumns[sourceIndex])))
    }
}
