import Foundation
import GRDB
import OpenCoreDataPredicates

/// A migration through objects, driven by a mapping model: Core Data's
/// `NSMigrationManager`.
///
/// The manager reads the source store through ``sourceContext`` and writes a
/// destination store through ``destinationContext``, running the mapping model's
/// entity mappings, in order, through the three stages of
/// ``EntityMigrationPolicy`` (create objects, create relationships, validate).
/// Each entity mapping's policy is the default one, or the class its
/// `entityMigrationPolicyClassName` names (registered with
/// ``EntityMigrationPolicy/register(_:forClassName:)``).
///
/// ```swift
/// let manager = MigrationManager(sourceModel: version5, destinationModel: version6)
/// try manager.migrateStore(from: oldURL, with: mapping, to: newURL)
/// ```
///
/// Unlike Core Data, memory stays bounded on large stores: objects are read and
/// written in batches of ``batchSize``, each batch saved and the objects of both
/// contexts turned into faults (contexts hold their objects weakly, so objects
/// nothing else holds go; objects a policy keeps, say in ``userInfo``, stay
/// valid), and the associations between source and destination objects are kept
/// in a temporary database, not in memory. The destination store is written as
/// it goes: run a migration into a new file and replace the store only when it
/// succeeded (``StoreMigrator`` does).
///
/// Progress is ``migrationProgress`` (0 to 1, through ``progressHandler``);
/// ``cancelMigrationWithError(_:)`` stops the migration at the next object.
open class MigrationManager: KeyValueCoding {
    /// The model of the source store.
    public let sourceModel: ManagedObjectModel
    /// The model of the destination store.
    public let destinationModel: ManagedObjectModel
    /// The mapping model of the running (or last) migration.
    public private(set) var mappingModel = MappingModel()
    /// The entity mapping being processed.
    public private(set) var currentEntityMapping: EntityMapping?
    /// How far the migration is, from 0 to 1.
    public private(set) var migrationProgress: Float = 0
    /// Called with ``migrationProgress`` as it grows.
    public var progressHandler: ((Float) -> Void)?
    /// Scratch space shared by the migration's policies.
    public var userInfo: [String: Any] = [:]
    /// How many objects are read, made and saved at a time.
    public var batchSize = 500

    private var contexts: (source: ManagedObjectContext, destination: ManagedObjectContext)?
    private var sourceStore: (any PersistentStore)?
    private var associations: MigrationAssociations?
    private var cancellation: CoreDataError?

    /// A manager for migrations from `sourceModel` to `destinationModel`.
    ///
    /// - Parameters:
    ///   - sourceModel: The model of the stores to migrate.
    ///   - destinationModel: The model to migrate them to.
    public init(sourceModel: ManagedObjectModel, destinationModel: ManagedObjectModel) {
        self.sourceModel = sourceModel
        self.destinationModel = destinationModel
    }

    /// The context reading the source store (only during a migration).
    public var sourceContext: ManagedObjectContext {
        guard let contexts else { fatalError("MigrationManager.sourceContext is only available during a migration") }
        return contexts.source
    }

    /// The context writing the destination store (only during a migration).
    public var destinationContext: ManagedObjectContext {
        guard let contexts else { fatalError("MigrationManager.destinationContext is only available during a migration") }
        return contexts.destination
    }

    /// Asks the running migration to stop; it throws `error` (Core Data's
    /// `cancelMigrationWithError(_:)`), and the destination is not finished.
    ///
    /// - Parameter error: The error the migration ends with (usually code
    ///   ``CoreDataError/Code/migrationCancelled``, 134120).
    public func cancelMigrationWithError(_ error: CoreDataError) {
        cancellation = error
    }

    // MARK: Migrating

    /// Migrates the SQLite store at `sourceURL` into the store at `destinationURL`
    /// (created when missing, with the source's UUID and metadata keys; appended to
    /// when it exists), through `mapping`.
    ///
    /// - Parameters:
    ///   - sourceURL: The store to read (opened read-only, never changed).
    ///   - mapping: The mapping model; its entities must match the two models.
    ///   - destinationURL: The store to write.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/migration`` (134110) when
    ///   the mapping does not match the models or a value cannot be stored;
    ///   ``CoreDataError/Code/entityMigrationPolicy`` (134170) for a policy class
    ///   that is not registered, or an error a policy threw (underlying);
    ///   ``CoreDataError/Code/migrationCancelled`` (134120) when cancelled;
    ///   validation errors of the destination objects; the stores' errors.
    public func migrateStore(from sourceURL: URL, with mapping: MappingModel, to destinationURL: URL) throws {
        try sourceModel.freeze()
        try destinationModel.freeze()
        guard mapping.matches(source: sourceModel, destination: destinationModel) else {
            throw CoreDataError(.migration, "Mismatch between mapping and source/destination models", url: sourceURL)
        }
        // Every policy class first: a missing one fails before anything is written.
        var policies: [EntityMigrationPolicy] = []
        for entityMapping in mapping.entityMappings {
            if let className = entityMapping.entityMigrationPolicyClassName, !className.isEmpty {
                guard let type = EntityMigrationPolicy.registeredPolicy(forClassName: className) else {
                    throw CoreDataError(.entityMigrationPolicy,
                                        "The entity mapping '\(entityMapping.name)' needs the migration policy class '\(className)', which is not registered (EntityMigrationPolicy.register)",
                                        entityName: entityMapping.destinationEntityName ?? entityMapping.sourceEntityName)
                }
                policies.append(type.init())
            } else {
                policies.append(EntityMigrationPolicy())
            }
        }
        let sourceMetadata = try SQLiteStoreMetadata.read(at: sourceURL)
        if !FileManager.default.fileExists(atPath: destinationURL.path) {
            var kept: [String: Any] = [:]
            for (key, value) in sourceMetadata where !key.hasPrefix("NSStoreModel") && key != SQLiteStoreMetadata.frameworkVersionKey {
                kept[key] = value
            }
            try SQLiteStoreFile.createStore(at: destinationURL, model: destinationModel, metadata: kept)
        }
        let sourceCoordinator = PersistentStoreCoordinator(managedObjectModel: sourceModel)
        let sourceStore = try sourceCoordinator.addPersistentStore(type: .sqlite, at: sourceURL, options: [SQLiteStore.Option.readOnly: "1"])
        let destinationCoordinator = PersistentStoreCoordinator(managedObjectModel: destinationModel)
        let destinationStore = try destinationCoordinator.addPersistentStore(type: .sqlite, at: destinationURL)
        defer {
            sourceCoordinator.remove(sourceStore)
            destinationCoordinator.remove(destinationStore)
        }
        let source = ManagedObjectContext(concurrencyType: .privateQueue)
        source.persistentStoreCoordinator = sourceCoordinator
        source.name = "MigrationManager.source"
        let destination = ManagedObjectContext(concurrencyType: .privateQueue)
        destination.persistentStoreCoordinator = destinationCoordinator
        destination.name = "MigrationManager.destination"
        destination.validatesOnSave = false   // objects are validated in the third stage
        let associations = try MigrationAssociations(mapping: mapping, source: sourceModel, destination: destinationModel,
                                                     destinationStoreIdentifier: destinationStore.identifier,
                                                     sourceStoreIdentifier: sourceStore.identifier)
        self.mappingModel = mapping
        self.contexts = (source, destination)
        self.sourceStore = sourceStore
        self.associations = associations
        self.cancellation = nil
        self.migrationProgress = 0
        defer {
            self.contexts = nil
            self.sourceStore = nil
            self.associations = nil
            self.currentEntityMapping = nil
        }
        try source.performAndWait {
            try destination.performAndWait {
                try run(mapping, policies: policies)
            }
        }
    }

    private func run(_ mapping: MappingModel, policies: [EntityMigrationPolicy]) throws {
        let count = Float(max(mapping.entityMappings.count, 1))
        func report(stage: Int, mapping index: Int, fraction: Float) {
            let value = (Float(stage) + (Float(index) + min(fraction, 1)) / count) / 3
            if value > migrationProgress {
                migrationProgress = value
                progressHandler?(value)
            }
        }
        func failing<T>(_ policy: EntityMigrationPolicy, _ mapping: EntityMapping, _ hook: String, _ body: () throws -> T) throws -> T {
            do {
                return try body()
            } catch let error as CoreDataError {
                throw error
            } catch {
                throw CoreDataError(.entityMigrationPolicy, "The migration policy \(type(of: policy)) failed in \(hook) of entity mapping '\(mapping.name)': \(error)",
                                    entityName: mapping.destinationEntityName ?? mapping.sourceEntityName)
            }
        }
        let step = max(batchSize, 1)
        // 1. Destination objects.
        for (index, entityMapping) in mapping.entityMappings.enumerated() {
            let policy = policies[index]
            currentEntityMapping = entityMapping
            try failing(policy, entityMapping, "begin") { try policy.begin(entityMapping, with: self) }
            let total = try sourceCount(for: entityMapping)
            var done = 0
            var after: Int64 = 0
            while true {
                let ids = try sourceObjectIDs(for: entityMapping, after: after, limit: step)
                guard let last = ids.last?.primaryKey else { break }
                after = last
                for object in try objects(ids, in: sourceContext) {
                    try checkCancelled()
                    try failing(policy, entityMapping, "createDestinationInstances") {
                        try policy.createDestinationInstances(forSource: object, in: entityMapping, manager: self)
                    }
                }
                try finishBatch()
                done += ids.count
                report(stage: 0, mapping: index, fraction: Float(done) / Float(max(total, 1)))
            }
            try failing(policy, entityMapping, "endInstanceCreation") { try policy.endInstanceCreation(forMapping: entityMapping, manager: self) }
            try finishBatch()
            report(stage: 0, mapping: index, fraction: 1)
        }
        // 2. Relationships.
        for (index, entityMapping) in mapping.entityMappings.enumerated() {
            let policy = policies[index]
            currentEntityMapping = entityMapping
            // The default policy with no relationship to set has nothing to do per object.
            let idle = type(of: policy) == EntityMigrationPolicy.self
                && !entityMapping.relationshipMappings.contains { $0.valueExpression != nil }
            let total = idle ? 0 : try associations?.count(forMapping: entityMapping.name) ?? 0
            var done = 0
            var after: Int64 = 0
            while !idle, let page = try associations?.destinationIDs(forMapping: entityMapping.name, after: after, limit: step),
                  let last = page.last {
                after = last.row
                for object in try objects(page.map(\.id), in: destinationContext) {
                    try checkCancelled()
                    try failing(policy, entityMapping, "createRelationships") {
                        try policy.createRelationships(forDestination: object, in: entityMapping, manager: self)
                    }
                }
                try finishBatch()
                done += page.count
                report(stage: 1, mapping: index, fraction: Float(done) / Float(max(total, 1)))
            }
            try failing(policy, entityMapping, "endRelationshipCreation") { try policy.endRelationshipCreation(forMapping: entityMapping, manager: self) }
            try finishBatch()
            report(stage: 1, mapping: index, fraction: 1)
        }
        // 3. Validation.
        for (index, entityMapping) in mapping.entityMappings.enumerated() {
            let policy = policies[index]
            currentEntityMapping = entityMapping
            try failing(policy, entityMapping, "performCustomValidation") { try policy.performCustomValidation(forMapping: entityMapping, manager: self) }
            var after: Int64 = 0
            while let page = try associations?.destinationIDs(forMapping: entityMapping.name, after: after, limit: step), let last = page.last {
                try checkCancelled()
                after = last.row
                for object in try objects(page.map(\.id), in: destinationContext) { try object.validateForInsert() }
                destinationContext.refreshAllObjects()
            }
            try failing(policy, entityMapping, "end") { try policy.end(entityMapping, manager: self) }
            try finishBatch()
            report(stage: 2, mapping: index, fraction: 1)
        }
        migrationProgress = 1
        progressHandler?(1)
    }

    private func checkCancelled() throws {
        if let cancellation { throw cancellation }
    }

    /// Saves the destination, records the batch's associations with the objects'
    /// permanent IDs, and turns both contexts' objects into faults.
    private func finishBatch() throws {
        try checkCancelled()
        if destinationContext.hasChanges { try destinationContext.save() }
        try associations?.flush()
        // Saved objects become faults; the registries hold objects weakly, so
        // what nothing else holds goes, and what a policy kept stays valid.
        destinationContext.refreshAllObjects()
        sourceContext.refreshAllObjects()
    }

    /// How many objects the source entity has (not counting its subentities).
    private func sourceCount(for mapping: EntityMapping) throws -> Int {
        guard mapping.mappingType != .add, let name = mapping.sourceEntityName, let entity = sourceModel.entitiesByName[name] else { return 0 }
        let request = FetchRequest<ManagedObject>(entity: entity)
        request.includesSubentities = false
        return try sourceContext.count(for: request)
    }

    /// The next source objects of an entity mapping, by primary key after `after`:
    /// objects of its source entity (not of its subentities). On an SQLite store,
    /// one indexed query per page, so that no list of every object is ever held.
    private func sourceObjectIDs(for mapping: EntityMapping, after: Int64, limit: Int) throws -> [ManagedObjectID] {
        guard mapping.mappingType != .add, let name = mapping.sourceEntityName, let entity = sourceModel.entitiesByName[name] else { return [] }
        if let store = sourceStore as? SQLiteStore, let table = store.schema.table(for: entity), let number = store.schema.entityNumber(entity) {
            let keys = try store.queue.read { db in
                try Int64.fetchAll(db, sql: "SELECT Z_PK FROM \(SQLiteIdentifier.quoted(table)) WHERE Z_ENT = ? AND Z_PK > ? ORDER BY Z_PK LIMIT ?",
                                   arguments: [number, after, limit])
            }
            return keys.map { ManagedObjectID(entity: entity, storeIdentifier: store.identifier, primaryKey: $0) }
        }
        let request = FetchRequest<ManagedObjectID>(entity: entity)
        request.resultType = .managedObjectID
        request.includesSubentities = false
        return Array(try sourceContext.fetch(request).filter { ($0.primaryKey ?? 0) > after }
            .sorted { ($0.primaryKey ?? 0) < ($1.primaryKey ?? 0) }.prefix(limit))
    }

    private func objects(_ ids: [ManagedObjectID], in context: ManagedObjectContext) throws -> [ManagedObject] {
        guard let entity = ids.first?.entity else { return [] }
        let request = FetchRequest<ManagedObject>(entity: entity.rootEntity)
        request.predicate = try CorePredicate(format: "self IN %@", ids)
        request.returnsObjectsAsFaults = false
        return try context.fetch(request).sorted { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }
    }

    // MARK: Associations

    /// Records that `destination` was made from `source` by `mapping`.
    ///
    /// - Parameters:
    ///   - source: An object of the source context.
    ///   - destination: An object of the destination context.
    ///   - mapping: The entity mapping that made it.
    public func associate(sourceInstance source: ManagedObject, withDestinationInstance destination: ManagedObject, for mapping: EntityMapping) {
        associations?.add(source: source, destination: destination, mapping: mapping.name)
    }

    /// The destination objects made from `sources` by the entity mapping named
    /// `name` (all it made when `sources` is nil), in the order of the sources.
    ///
    /// - Parameters:
    ///   - name: An entity mapping's name.
    ///   - sources: Objects of the source context, or nil.
    /// - Returns: Objects of the destination context.
    public func destinationInstances(forEntityMappingName name: String, sourceInstances sources: [ManagedObject]?) -> [ManagedObject] {
        guard let associations, let contexts else { return [] }
        return associations.destinations(of: sources, mapping: name).map { contexts.destination.object(with: $0) }
    }

    /// The source objects the entity mapping named `name` made `destinations`
    /// from (all its sources when `destinations` is nil).
    ///
    /// - Parameters:
    ///   - name: An entity mapping's name.
    ///   - destinations: Objects of the destination context, or nil.
    /// - Returns: Objects of the source context.
    public func sourceInstances(forEntityMappingName name: String, destinationInstances destinations: [ManagedObject]?) -> [ManagedObject] {
        guard let associations, let contexts else { return [] }
        return associations.sources(of: destinations, mapping: name).map { contexts.source.object(with: $0) }
    }

    /// The source entity of an entity mapping.
    ///
    /// - Parameter mapping: An entity mapping of the mapping model.
    /// - Returns: The entity, or nil for an added entity.
    public func sourceEntity(for mapping: EntityMapping) -> EntityDescription? {
        mapping.sourceEntityName.flatMap { sourceModel.entitiesByName[$0] }
    }

    /// The destination entity of an entity mapping.
    ///
    /// - Parameter mapping: An entity mapping of the mapping model.
    /// - Returns: The entity, or nil for a removed entity.
    public func destinationEntity(for mapping: EntityMapping) -> EntityDescription? {
        mapping.destinationEntityName.flatMap { destinationModel.entitiesByName[$0] }
    }

    // MARK: Expressions

    /// Evaluates a property mapping's value expression, with `$source`,
    /// `$destination`, `$manager`, `$entityMapping` (its name) and
    /// `$propertyMapping` (its name).
    ///
    /// - Parameters:
    ///   - expression: The value expression.
    ///   - source: The source object.
    ///   - destination: The destination object, if made.
    ///   - mapping: The entity mapping.
    ///   - property: The property mapping.
    /// - Returns: The value.
    /// - Throws: ``CoreDataError/Code/migration`` (134110) naming the mapping and
    ///   property when the expression cannot be evaluated.
    public func evaluate(_ expression: CoreExpression, source: ManagedObject, destination: ManagedObject?,
                         mapping: EntityMapping, property: PropertyMapping) throws -> EvaluatedValue {
        // `$source.<key>`, the expression of most properties: read directly.
        if case .member(.variable("source"), let key) = expression, !key.contains("."), !key.hasPrefix("@") {
            do {
                return EvaluatedValue(any: try source.checkedValue(forKey: key))
            } catch {
                throw CoreDataError(.migration, "The value of '\(property.name)' in entity mapping '\(mapping.name)' (\(expression)) cannot be evaluated for \(source.objectID): \(error)",
                                    entityName: mapping.destinationEntityName, key: property.name)
            }
        }
        var variables: [String: EvaluatedValue] = ["source": .object(source), "manager": .object(self),
                                                   "entityMapping": .value(.string(mapping.name)),
                                                   "propertyMapping": .value(.string(property.name))]
        if let destination { variables["destination"] = .object(destination) }
        do {
            return try expression.value(of: .object(source), variables: variables)
        } catch {
            throw CoreDataError(.migration, "The value of '\(property.name)' in entity mapping '\(mapping.name)' (\(expression)) cannot be evaluated for \(source.objectID): \(error)",
                                entityName: mapping.destinationEntityName, key: property.name)
        }
    }

    /// Sets a destination property to an evaluated value: an attribute to the
    /// value, a to-one relationship to the first object of a collection, a
    /// to-many relationship to the objects.
    func set(_ value: EvaluatedValue, forKey key: String, of object: ManagedObject, mapping: EntityMapping) throws {
        guard let property = object.entity.propertiesByName[key] else {
            throw CoreDataError(.migration, "The entity mapping '\(mapping.name)' sets '\(key)', which entity '\(object.entity.name)' does not have",
                                entityName: object.entity.name, key: key)
        }
        if let relationship = property as? RelationshipDescription {
            var objects: [ManagedObject] = []
            func collect(_ value: EvaluatedValue) {
                switch value {
                case .object(let found as ManagedObject): objects.append(found)
                case .collection(let members, _): members.forEach(collect)
                default: break
                }
            }
            collect(value)
            if relationship.isToMany {
                try object.setCheckedValue(relationship.isOrdered ? objects as Any : Set(objects) as Any, forKey: key)
            } else {
                try object.setCheckedValue(objects.first, forKey: key)
            }
            return
        }
        switch value {
        case .null:
            // A mandatory attribute with a default keeps it (as in-place migration
            // fills missing values of an attribute made mandatory).
            if let attribute = property as? AttributeDescription, !attribute.isOptional, attribute.defaultValue != nil { return }
            try object.setCheckedValue(nil, forKey: key)
        case .value(let attribute): try object.setCheckedValue(attribute, forKey: key)
        default:
            throw CoreDataError(.migration, "The value of '\(key)' in entity mapping '\(mapping.name)' is not an attribute value (\(value))",
                                entityName: object.entity.name, key: key)
        }
    }

    // MARK: KeyValueCoding ($manager in expressions)

    public func value(forKey key: String) -> Any? {
        switch key {
        case "sourceContext": return contexts?.source
        case "destinationContext": return contexts?.destination
        case "userInfo": return userInfo
        default: return nil
        }
    }

    public func performPredicateFunction(_ selector: String, arguments: [EvaluatedValue]) throws -> EvaluatedValue {
        func objects(_ value: EvaluatedValue) -> [ManagedObject] {
            switch value {
            case .object(let object as ManagedObject): return [object]
            case .collection(let members, _): return members.flatMap(objects)
            default: return []
            }
        }
        switch selector {
        case "destinationInstancesForEntityMappingNamed:sourceInstances:":
            guard arguments.count == 2, case .value(.string(let name)) = arguments[0] else { break }
            let found = destinationInstances(forEntityMappingName: name, sourceInstances: objects(arguments[1]))
            return .collection(found.map { .object($0) }, isOrdered: true)
        case "destinationInstancesForSourceRelationshipNamed:sourceInstances:":
            guard arguments.count == 2, case .value(.string(let name)) = arguments[0] else { break }
            return .collection(destinationInstances(forSourceRelationshipNamed: name, sourceInstances: objects(arguments[1])).map { .object($0) },
                               isOrdered: true)
        default:
            break
        }
        throw PredicateEvaluationError.unsupported("FUNCTION($manager, '\(selector)') with \(arguments.count) argument(s)")
    }

    /// Core Data's `destinationInstancesForSourceRelationshipNamed:sourceInstances:`:
    /// each source object's destination peer, made by any entity mapping from a
    /// kind of the source relationship's destination to a kind of the destination
    /// relationship's destination.
    func destinationInstances(forSourceRelationshipNamed name: String, sourceInstances sources: [ManagedObject]) -> [ManagedObject] {
        guard let current = currentEntityMapping, let sourceEntity = sourceEntity(for: current),
              let destinationEntity = destinationEntity(for: current),
              let sourceTarget = sourceEntity.relationshipsByName[name]?.destinationEntity else { return [] }
        let destinationTarget = current.relationshipMappings.first { property in
            guard case .customFunction(_, "destinationInstancesForSourceRelationshipNamed:sourceInstances:", let arguments)? = property.valueExpression,
                  case .constant(.string(name))? = arguments.first else { return false }
            return true
        }.flatMap { destinationEntity.relationshipsByName[$0.name]?.destinationEntity }
        let candidates = mappingModel.entityMappings.filter { mapping in
            guard let from = self.sourceEntity(for: mapping), let to = self.destinationEntity(for: mapping) else { return false }
            return from.isKindOf(entity: sourceTarget) && (destinationTarget.map { to.isKindOf(entity: $0) } ?? true)
        }
        var result: [ManagedObject] = []
        for source in sources {
            for mapping in candidates {
                if let found = destinationInstances(forEntityMappingName: mapping.name, sourceInstances: [source]).first {
                    result.append(found)
                    break
                }
            }
        }
        return result
    }
}

/// Which destination object each source object became, per entity mapping: kept
/// in a temporary SQLite database so that memory does not grow with the store.
/// Objects of the running batch are kept in memory until the batch is saved and
/// their permanent IDs are known.
final class MigrationAssociations {
    private let queue: DatabaseQueue
    private let folder: URL
    private let mappingNumbers: [String: Int]
    private let sourceEntities: [EntityDescription]
    private let destinationEntities: [EntityDescription]
    private let sourceNumbers: [String: Int]
    private let destinationNumbers: [String: Int]
    private let sourceStore: String
    private let destinationStore: String
    /// The running batch: mapping number, source ID, destination object.
    private var pending: [(mapping: Int, source: ManagedObjectID, destination: ManagedObject)] = []

    init(mapping: MappingModel, source: ManagedObjectModel, destination: ManagedObjectModel,
         destinationStoreIdentifier: String, sourceStoreIdentifier: String) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        queue = try DatabaseQueue(path: folder.appendingPathComponent("associations.sqlite").path)
        try queue.write { db in
            try db.execute(sql: "PRAGMA journal_mode = OFF")
            try db.execute(sql: "CREATE TABLE assoc (m INTEGER, se INTEGER, sp INTEGER, de INTEGER, dp INTEGER)")
            try db.execute(sql: "CREATE INDEX assoc_source ON assoc (m, se, sp)")
            try db.execute(sql: "CREATE INDEX assoc_destination ON assoc (m, de, dp)")
        }
        mappingNumbers = Dictionary(mapping.entityMappings.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        sourceEntities = source.entities
        destinationEntities = destination.entities
        sourceNumbers = Dictionary(source.entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        destinationNumbers = Dictionary(destination.entities.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        sourceStore = sourceStoreIdentifier
        destinationStore = destinationStoreIdentifier
    }

    deinit {
        try? queue.close()
        try? FileManager.default.removeItem(at: folder)
    }

    func add(source: ManagedObject, destination: ManagedObject, mapping: String) {
        guard let number = mappingNumbers[mapping] else { return }
        pending.append((number, source.objectID, destination))
    }

    /// Writes the running batch's associations (the destination objects were
    /// saved: their IDs are permanent).
    func flush() throws {
        guard !pending.isEmpty else { return }
        let rows = pending.compactMap { entry -> [Int64]? in
            guard let se = sourceNumbers[entry.source.entity.name], let sp = entry.source.primaryKey,
                  let de = destinationNumbers[entry.destination.entity.name], let dp = entry.destination.objectID.primaryKey else { return nil }
            return [Int64(entry.mapping), Int64(se), sp, Int64(de), dp]
        }
        guard rows.count == pending.count else {
            throw CoreDataError(.migration, "A migrated object has no permanent ID after its batch was saved")
        }
        pending.removeAll(keepingCapacity: true)
        try queue.write { db in
            let statement = try db.makeStatement(sql: "INSERT INTO assoc (m, se, sp, de, dp) VALUES (?, ?, ?, ?, ?)")
            for row in rows { try statement.execute(arguments: StatementArguments(row)) }
        }
    }

    /// How many objects the mapping made.
    func count(forMapping mapping: String) throws -> Int {
        guard let number = mappingNumbers[mapping] else { return 0 }
        return try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM assoc WHERE m = ?", arguments: [number]) ?? 0 }
    }

    /// The next objects the mapping made, in the order they were made, after row
    /// `after`: a range of the table's rowids (`+m` keeps SQLite from scanning
    /// the mapping's index from its start for every page).
    func destinationIDs(forMapping mapping: String, after: Int64, limit: Int) throws -> [(row: Int64, id: ManagedObjectID)] {
        guard let number = mappingNumbers[mapping] else { return [] }
        return try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT rowid, de, dp FROM assoc WHERE +m = ? AND rowid > ? ORDER BY rowid LIMIT ?",
                             arguments: [number, after, limit]).compactMap { row in
                let entity: Int = row[1]
                guard destinationEntities.indices.contains(entity) else { return nil }
                return (row[0], ManagedObjectID(entity: destinationEntities[entity], storeIdentifier: destinationStore, primaryKey: row[2]))
            }
        }
    }

    func destinationIDs(forMapping mapping: String) throws -> [ManagedObjectID] {
        guard let number = mappingNumbers[mapping] else { return [] }
        return try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT de, dp FROM assoc WHERE m = ? ORDER BY rowid", arguments: [number]).compactMap { row in
                let entity: Int = row[0]
                guard destinationEntities.indices.contains(entity) else { return nil }
                return ManagedObjectID(entity: destinationEntities[entity], storeIdentifier: destinationStore, primaryKey: row[1])
            }
        }
    }

    func destinations(of sources: [ManagedObject]?, mapping: String) -> [ManagedObjectID] {
        guard let number = mappingNumbers[mapping] else { return [] }
        guard let sources else { return (try? destinationIDs(forMapping: mapping)) ?? [] }
        var result: [ManagedObjectID] = []
        for source in sources {
            let id = source.objectID
            let inBatch = pending.filter { $0.mapping == number && $0.source == id }
            if !inBatch.isEmpty {
                result += inBatch.map { $0.destination.objectID }
                continue
            }
            guard let se = sourceNumbers[id.entity.name], let sp = id.primaryKey else { continue }
            let rows = (try? queue.read { db in
                try Row.fetchAll(db, sql: "SELECT de, dp FROM assoc WHERE m = ? AND se = ? AND sp = ?", arguments: [number, se, sp])
            }) ?? []
            for row in rows {
                let entity: Int = row[0]
                guard destinationEntities.indices.contains(entity) else { continue }
                result.append(ManagedObjectID(entity: destinationEntities[entity], storeIdentifier: destinationStore, primaryKey: row[1]))
            }
        }
        return result
    }

    func sources(of destinations: [ManagedObject]?, mapping: String) -> [ManagedObjectID] {
        guard let number = mappingNumbers[mapping] else { return [] }
        let all = destinations == nil
        var result: [ManagedObjectID] = []
        for destination in destinations ?? [] {
            if let entry = pending.first(where: { $0.mapping == number && $0.destination === destination }) {
                result.append(entry.source)
                continue
            }
            let id = destination.objectID
            guard let de = destinationNumbers[id.entity.name], let dp = id.primaryKey else { continue }
            let rows = (try? queue.read { db in
                try Row.fetchAll(db, sql: "SELECT se, sp FROM assoc WHERE m = ? AND de = ? AND dp = ?", arguments: [number, de, dp])
            }) ?? []
            for row in rows {
                let entity: Int = row[0]
                guard sourceEntities.indices.contains(entity) else { continue }
                result.append(ManagedObjectID(entity: sourceEntities[entity], storeIdentifier: sourceStore, primaryKey: row[1]))
            }
        }
        if all {
            let rows = (try? queue.read { db in try Row.fetchAll(db, sql: "SELECT se, sp FROM assoc WHERE m = ? ORDER BY rowid", arguments: [number]) }) ?? []
            for row in rows {
                let entity: Int = row[0]
                guard sourceEntities.indices.contains(entity) else { continue }
                result.append(ManagedObjectID(entity: sourceEntities[entity], storeIdentifier: sourceStore, primaryKey: row[1]))
            }
        }
        return result
    }
}
