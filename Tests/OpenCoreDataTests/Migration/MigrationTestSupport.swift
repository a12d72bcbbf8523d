import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// What a migration test compares: a store's layout, read with SQL, and its
/// objects, read through a model.
enum MigrationCheck {
    /// Tables with their columns (name and declared type, in order), indexes with
    /// their columns, and Z_PRIMARYKEY's entity numbers and superentities.
    struct Layout: Equatable, CustomStringConvertible {
        var tables: [String: [String]]
        var indexes: [String: String]
        var entities: [Int: Int]

        var description: String { "tables \(tables.sorted { $0.key < $1.key }), indexes \(indexes.sorted { $0.key < $1.key }), entities \(entities.sorted { $0.key < $1.key })" }
    }

    static func layout(at url: URL) throws -> Layout {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var tables: [String: [String]] = [:]
            // Persistent history's tables are not the model's: compared apart.
            let history: Set<String> = ["ACHANGE", "ATRANSACTION", "ATRANSACTIONSTRING"]
            for name in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            where !history.contains(name.uppercased()) {
                tables[name.uppercased()] = try Row.fetchAll(db, sql: "PRAGMA table_info(\"\(name)\")").map { row in
                    "\((row["name"] as String).uppercased()) \((row["type"] as String).uppercased())"
                }
            }
            var indexes: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'")
            where !history.contains((row["tbl_name"] as String).uppercased()) {
                let name: String = row["name"]
                let columns = try Row.fetchAll(db, sql: "PRAGMA index_info(\"\(name)\")").map { ($0["name"] as String?)?.uppercased() ?? "?" }
                indexes[name.uppercased()] = "\((row["tbl_name"] as String).uppercased())(\(columns.joined(separator: ",")))"
            }
            var entities: [Int: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_SUPER FROM Z_PRIMARYKEY WHERE Z_ENT < 16000") {
                entities[row[0]] = row[1]
            }
            return Layout(tables: tables, indexes: indexes, entities: entities)
        }
    }

    /// The layout of a store created fresh from `model`.
    static func freshLayout(of model: ManagedObjectModel) throws -> Layout {
        let folder = try Fixtures.temporaryDirectory()
        let url = folder.appendingPathComponent("Fresh.sqlite")
        try SQLiteStoreFile.createStore(at: url, model: model)
        return try layout(at: url)
    }

    /// One object: its attributes (rendered) and its relationships' destination
    /// primary keys (to-many sorted unless ordered).
    struct ObjectState: Equatable {
        var entity: String
        var attributes: [String: String]
        var relationships: [String: [Int64]]
    }

    /// Every object of the store at `url` read with `model` (read-only), by
    /// entity name and primary key.
    static func objects(at url: URL, model: ManagedObjectModel) throws -> [String: [Int64: ObjectState]] {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(type: .sqlite, at: url, options: [SQLiteStore.Option.readOnly: "1"])
        defer { coordinator.remove(store) }
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return try context.performAndWait {
            var result: [String: [Int64: ObjectState]] = [:]
            for entity in model.entities where !entity.isAbstract || !entity.subentities.isEmpty {
                let request = FetchRequest<ManagedObject>(entityName: entity.name)
                request.includesSubentities = false
                for object in try context.fetch(request) {
                    guard let pk = object.objectID.primaryKey else { continue }
                    var state = ObjectState(entity: entity.name, attributes: [:], relationships: [:])
                    for (name, attribute) in entity.attributesByName where !attribute.isTransient {
                        state.attributes[name] = "\(object.attributeValue(forKey: name))"
                    }
                    for (name, relationship) in entity.relationshipsByName {
                        let value = object.value(forKey: name)
                        var keys: [Int64]
                        if let one = value as? ManagedObject {
                            keys = [one.objectID.primaryKey ?? -1]
                        } else if let many = value as? [ManagedObject] {
                            keys = many.map { $0.objectID.primaryKey ?? -1 }
                        } else if let many = value as? Set<ManagedObject> {
                            keys = many.map { $0.objectID.primaryKey ?? -1 }.sorted()
                        } else {
                            keys = []
                        }
                        if !relationship.isOrdered { keys.sort() }
                        state.relationships[name] = keys
                    }
                    result[entity.name, default: [:]][pk] = state
                }
            }
            return result
        }
    }

    /// Checks that the objects after one step are what the step's mapping says:
    /// each destination object comes from the source object with the same primary
    /// key; an attribute read from a source attribute of the same type has its
    /// value, a new one its default; a relationship read from a source relationship
    /// has the same destinations (primary keys are kept). Returns the number of
    /// values compared.
    @discardableResult
    static func expectStepResult(_ step: MigrationPlan.Step, before: [String: [Int64: ObjectState]],
                                 after: [String: [Int64: ObjectState]], sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        var compared = 0
        for mapping in step.mappingModel.entityMappings where mapping.mappingType != .remove {
            guard let destinationName = mapping.destinationEntityName,
                  let destination = step.destinationModel.entitiesByName[destinationName] else { continue }
            let objectsAfter = after[destinationName] ?? [:]
            guard let sourceName = mapping.sourceEntityName, let source = step.sourceModel.entitiesByName[sourceName] else {
                #expect(objectsAfter.isEmpty, "added entity \(destinationName) has objects", sourceLocation: sourceLocation)
                continue
            }
            let objectsBefore = before[sourceName] ?? [:]
            #expect(Set(objectsAfter.keys) == Set(objectsBefore.keys),
                    "\(step): \(destinationName) has objects \(objectsAfter.keys.sorted()), its source \(sourceName) had \(objectsBefore.keys.sorted())",
                    sourceLocation: sourceLocation)
            for (pk, old) in objectsBefore {
                guard let new = objectsAfter[pk] else { continue }
                for property in mapping.attributeMappings {
                    guard let attribute = destination.attributesByName[property.name], !attribute.isTransient else { continue }
                    let expected: String?
                    if case .member(.variable("source"), let key)? = property.valueExpression {
                        guard source.attributesByName[key]?.attributeType == attribute.attributeType else { continue }
                        let value = old.attributes[key]
                        // Optional to mandatory fills a missing value with the default.
                        if value == "\(AttributeValue.null)", !attribute.isOptional, let defaultValue = attribute.defaultValue {
                            expected = "\(defaultValue)"
                        } else {
                            expected = value
                        }
                    } else if property.valueExpression == nil {
                        expected = "\(attribute.defaultValue ?? .null)"
                    } else {
                        continue
                    }
                    #expect(new.attributes[property.name] == expected,
                            "\(step): \(destinationName) p\(pk).\(property.name) is \(new.attributes[property.name] ?? "missing"), expected \(expected ?? "missing")",
                            sourceLocation: sourceLocation)
                    compared += 1
                }
                for property in mapping.relationshipMappings {
                    guard case .customFunction(_, _, let arguments)? = property.valueExpression, arguments.count == 2,
                          case .member(.variable("source"), let key) = arguments[1],
                          let oldKeys = old.relationships[key] else { continue }
                    let newKeys = new.relationships[property.name] ?? []
                    let sourceToMany = source.relationshipsByName[key]?.isToMany ?? false
                    let destinationToMany = destination.relationshipsByName[property.name]?.isToMany ?? false
                    if sourceToMany == destinationToMany {
                        let ordered = destination.relationshipsByName[property.name]?.isOrdered == true
                            && source.relationshipsByName[key]?.isOrdered == true
                        #expect((ordered ? newKeys : newKeys.sorted()) == (ordered ? oldKeys : oldKeys.sorted()),
                                "\(step): \(destinationName) p\(pk).\(property.name) is \(newKeys), was \(oldKeys)", sourceLocation: sourceLocation)
                    } else {
                        #expect(Set(newKeys).isSubset(of: Set(oldKeys)), "\(step): \(destinationName) p\(pk).\(property.name)", sourceLocation: sourceLocation)
                    }
                    compared += 1
                }
            }
        }
        return compared
    }

    /// The bytes of a store's files (main, -wal; a missing -wal reads as empty:
    /// a read-only connection may create an empty one).
    static func bytes(of url: URL) -> [Data] {
        ["", "-wal"].map { FileManager.default.contents(atPath: url.path + $0) ?? Data() }
    }

    /// Files the migration may have left beside the store.
    static func leftovers(beside url: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).filter { $0.contains("migrationdestination") }
    }
}
