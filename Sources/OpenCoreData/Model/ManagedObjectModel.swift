import Foundation

/// The managed object model: every entity an app stores, with their properties,
/// relationships, configurations and fetch request templates
/// (`NSManagedObjectModel`).
///
/// A model comes from Xcode's model files, from a compiled `.momd`, or from code,
/// and all three give the same result:
///
/// ```swift
/// // From Xcode's model editor:
/// let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: "Moody.xcdatamodeld"))
///
/// // In code, with the builder:
/// let model = try ManagedObjectModel {
///     Entity("Mood") {
///         Attribute("date", .date, optional: false)
///         Attribute("colors", .transformable)
///         Relationship("country", to: "Country", inverse: "moods")
///     }
///     Entity("Country") {
///         Attribute("numericISO3166Code", .integer16, optional: false, defaultValue: 0)
///         Relationship("moods", to: "Mood", inverse: "country", toMany: true)
///     }
/// }
///
/// model.entitiesByName["Mood"]?.versionHash   // the hash a store records
/// ```
///
/// A model is editable until a persistent store coordinator uses it; from then on
/// it is immutable (``isEditable`` is false) and may be shared freely between
/// threads. See ``PropertyDescription`` for the thread-safety contract.
public final class ManagedObjectModel: @unchecked Sendable, CustomStringConvertible {
    /// Every entity of the model, subentities included, in model order. Setting them
    /// makes this model their owner.
    public var entities: [EntityDescription] = [] {
        willSet { checkEditable("entities") }
        didSet { for entity in entities { entity.managedObjectModel = self } }
    }

    /// Entities by configuration name (configurations partition entities between
    /// stores). The default configuration, with every entity, is not listed.
    var configurationMembers: [String: [String]] = [:]
    /// Named configurations whose flag `usedWithCloudKit` is set.
    public internal(set) var cloudKitConfigurations: Set<String> = []
    /// Fetch request templates by name.
    public internal(set) var fetchRequestTemplatesByName: [String: FetchRequestTemplate] = [:]
    /// The identifiers of this model version (Xcode's "Model Version Identifier"),
    /// stored in a store's metadata as `NSStoreModelVersionIdentifiers`.
    public var versionIdentifiers: Set<String> = [] { willSet { checkEditable("versionIdentifiers") } }
    /// Composite types declared at model level (Xcode's "Composite Attributes").
    public var composites: [String: CompositeAttributeDescription] = [:] { willSet { checkEditable("composites") } }

    /// The versioned bundle (`.xcdatamodeld` or `.momd`) the model was loaded
    /// from with ``init(contentsOf:)``, nil otherwise. When a store written by an
    /// older version is opened with automatic migration, its source model is
    /// looked up among this bundle's versions (as Core Data looks in the app's
    /// bundles), then in the store's own model cache.
    public internal(set) var versionBundleURL: URL?

    /// Whether the model was rebuilt from a store's schema rather than loaded from a
    /// model file or a store's model cache (see ``SQLiteStore/reconstructedModel(at:)``).
    /// Its version hashes are not those of the model that wrote the store, so a
    /// store opened with it is read-only.
    public internal(set) var isReconstructed = false

    /// Set on a store's own cached model whose version hashes, as computed here,
    /// differ from those the store records (a hashing rule not reproduced yet): it
    /// still is the store's model, so it reads the store, read-only.
    var hashesDifferFromItsStore = false

    /// Whether a store opened with this model skips the version-hash check and is
    /// read-only: a reconstructed model, or a cached one whose hashes differ.
    var readsWithoutVersionCheck: Bool { isReconstructed || hashesDifferFromItsStore }

    private var frozen = false
    private var frozenEntitiesByName: [String: EntityDescription]?

    /// An empty model.
    public init() {}

    public var description: String { "ManagedObjectModel(\(entities.map(\.name).joined(separator: ", ")))" }

    func checkEditable(_ what: String) {
        if frozen { modelMutationFailure("model (\(what))") }
    }

    /// Whether the model may still be changed. A persistent store coordinator makes
    /// its model immutable.
    public var isEditable: Bool { !frozen }

    /// Makes the model immutable: called by a persistent store coordinator when it
    /// starts using the model. Validates the model first.
    ///
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the model is invalid (see ``validate()``); the model then
    ///   stays editable.
    public func freeze() throws {
        if frozen { return }
        try validate()
        for entity in entities {
            entity.managedObjectModel = self
            entity.isFrozen = true
        }
        frozenEntitiesByName = Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        frozen = true
        for entity in entities { entity.resolveReferences() }
        for entity in entities { entity.buildFrozenCache() }
        temporaryIDScopes = Dictionary(entities.map { (ObjectIdentifier($0), ManagedObjectID.Scope(entity: $0, storeName: .none)) },
                                       uniquingKeysWith: { first, _ in first })
    }

    /// The scope of each entity's temporary IDs, by the entity's identity (which
    /// the scope keeps alive), once the model is frozen: shared by the IDs of the
    /// objects inserted or made for rows (see `EntityDescription.temporaryIDScope`).
    /// The model holds them, not the entities: a scope holds its entity.
    private(set) var temporaryIDScopes: [ObjectIdentifier: ManagedObjectID.Scope] = [:]

    /// The entities by name.
    public var entitiesByName: [String: EntityDescription] {
        if let frozenEntitiesByName { return frozenEntitiesByName }
        return Dictionary(entities.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: Configurations

    /// The name Core Data gives the default configuration, which holds every entity.
    public static let defaultConfigurationName = "PF_DEFAULT_CONFIGURATION_NAME"

    /// The names of the model's configurations (not including the default one).
    public var configurations: [String] { configurationMembers.keys.sorted() }

    /// The entities of a configuration; nil names the default configuration (every
    /// entity). Returns nil for an unknown configuration name.
    ///
    /// - Parameter name: The configuration's name; nil or
    ///   ``defaultConfigurationName`` for the default configuration.
    /// - Returns: The configuration's entities, or nil.
    public func entities(forConfigurationName name: String?) -> [EntityDescription]? {
        guard let name, name != ManagedObjectModel.defaultConfigurationName else { return entities }
        guard let members = configurationMembers[name] else { return nil }
        let byName = entitiesByName
        return members.compactMap { byName[$0] }
    }

    /// Sets the entities of a configuration.
    ///
    /// - Parameters:
    ///   - entities: The configuration's entities, entities of this model.
    ///   - name: The configuration's name.
    public func setEntities(_ entities: [EntityDescription], forConfigurationName name: String) {
        checkEditable("configurations")
        configurationMembers[name] = entities.map(\.name)
    }

    /// Marks a configuration as used with CloudKit (kept for fidelity).
    ///
    /// - Parameters:
    ///   - used: Whether the configuration is used with CloudKit.
    ///   - name: The configuration's name.
    public func setUsedWithCloudKit(_ used: Bool, forConfigurationName name: String) {
        checkEditable("configurations")
        if used { cloudKitConfigurations.insert(name) } else { cloudKitConfigurations.remove(name) }
    }

    // MARK: Fetch request templates

    /// The fetch request template named `name`.
    ///
    /// - Parameter name: The template's name.
    /// - Returns: The template, or nil when the model has none of that name.
    public func fetchRequestTemplate(forName name: String) -> FetchRequestTemplate? {
        fetchRequestTemplatesByName[name]
    }

    /// Stores a fetch request template under a name (nil removes it).
    ///
    /// - Parameters:
    ///   - template: The template, or nil to remove the one named `name`.
    ///   - name: The template's name.
    public func setFetchRequestTemplate(_ template: FetchRequestTemplate?, forName name: String) {
        checkEditable("fetchRequestTemplates")
        fetchRequestTemplatesByName[name] = template
    }

    // MARK: Copies and merges

    /// An editable copy of the model: same entities, properties, configurations and
    /// templates, sharing nothing with the original.
    ///
    /// - Returns: A new, editable model.
    public func copy() -> ManagedObjectModel {
        let copy = ManagedObjectModel()
        let copies = Dictionary(entities.map { ($0.name, $0.copy()) }, uniquingKeysWith: { first, _ in first })
        for entity in entities {
            guard let entityCopy = copies[entity.name] else { continue }
            entityCopy.subentities = entity.subentities.compactMap { copies[$0.name] }
        }
        copy.entities = entities.compactMap { copies[$0.name] }
        copy.configurationMembers = configurationMembers
        copy.cloudKitConfigurations = cloudKitConfigurations
        copy.fetchRequestTemplatesByName = fetchRequestTemplatesByName
        copy.versionIdentifiers = versionIdentifiers
        copy.composites = composites
        return copy
    }

    /// A model containing every entity of `models` (Core Data's
    /// `mergedModel(from:)`), or an error when two models define the same entity
    /// name.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel.mergedModel(from: [catalog, orders])
    /// ```
    ///
    /// - Parameter models: The models to merge; they are copied, not changed.
    /// - Returns: A new, editable model with the entities, configurations,
    ///   templates and version identifiers of every model.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when two models have an entity of the same name.
    public static func mergedModel(from models: [ManagedObjectModel]) throws -> ManagedObjectModel {
        let merged = ManagedObjectModel()
        var entities: [EntityDescription] = []
        var seen: Set<String> = []
        for model in models {
            let copy = model.copy()
            for entity in copy.entities {
                guard seen.insert(entity.name).inserted else {
                    throw CoreDataError(.coreData, "Can't merge models with two different entities named '\(entity.name)'",
                                        entityName: entity.name)
                }
                entities.append(entity)
            }
            for (name, members) in copy.configurationMembers {
                merged.configurationMembers[name, default: []].append(contentsOf: members)
            }
            for (name, template) in copy.fetchRequestTemplatesByName {
                merged.fetchRequestTemplatesByName[name] = template
            }
            merged.versionIdentifiers.formUnion(copy.versionIdentifiers)
            merged.composites.merge(copy.composites) { first, _ in first }
        }
        merged.entities = entities
        return merged
    }

    /// The name ``mergedModel(from:)`` had before it took Core Data's.
    @available(*, deprecated, renamed: "mergedModel(from:)")
    public static func merged(from models: [ManagedObjectModel]) throws -> ManagedObjectModel {
        try mergedModel(from: models)
    }

    // MARK: Version hashes

    /// Each entity's version hash by entity name: what a store records in its
    /// metadata as `NSStoreModelVersionHashes`, and what decides whether a model
    /// can open a store.
    public var entityVersionHashesByName: [String: Data] {
        Dictionary(entities.map { ($0.name, $0.versionHash) }, uniquingKeysWith: { first, _ in first })
    }

    /// The model's version checksum (`versionChecksum`, iOS 17): base64 of SHA-256
    /// over the entity hashes in entity-name order. Stores record it as
    /// `NSStoreModelVersionChecksumKey`; staged migrations identify models by it.
    public var versionChecksum: String {
        Data(SHA2.sha256(sortedEntityHashes.flatMap { Array($0.hash) })).base64EncodedString()
    }

    /// Base64 of SHA-512 over each entity's UTF-8 name followed by its hash, in
    /// entity-name order: what stores record as `NSStoreModelVersionHashesDigest`.
    public var versionHashesDigest: String {
        Data(SHA2.sha512(sortedEntityHashes.flatMap { Array($0.name.utf8) + Array($0.hash) })).base64EncodedString()
    }

    private var sortedEntityHashes: [(name: String, hash: Data)] {
        entities.map { (name: $0.name, hash: $0.versionHash) }
            .sorted { ManagedObjectModel.compareNames($0.name, $1.name) }
    }

    /// Core Data sorts names with `-[NSString compare:]`: UTF-16 code unit order.
    static func compareNames(_ a: String, _ b: String) -> Bool {
        a.utf16.lexicographicallyPrecedes(b.utf16)
    }

    // MARK: Store compatibility

    /// Whether a store with `metadata` can be opened with this model's configuration
    /// `name` (nil = default): Core Data's `isConfiguration(withName:compatibleWithStoreMetadata:)`.
    ///
    /// The store's `NSStoreModelVersionHashes` must list exactly the configuration's
    /// entities with the same version hashes (hash style 3; older styles only check
    /// the entity names).
    ///
    /// - Parameters:
    ///   - name: The configuration's name; nil for the default configuration.
    ///   - metadata: The store's metadata, as ``SQLiteStoreMetadata/read(at:)``
    ///     returns it.
    /// - Returns: Whether the store can be opened with the configuration.
    public func isConfiguration(withName name: String?, compatibleWithStoreMetadata metadata: [String: Any]) -> Bool {
        incompatibilities(withName: name, storeMetadata: metadata).isEmpty
    }

    /// What keeps a store with `metadata` from opening with this model's
    /// configuration `name`, one message per entity that differs (empty when they
    /// are compatible). Used for the message of error 134100.
    ///
    /// - Parameters:
    ///   - name: The configuration's name; nil for the default configuration.
    ///   - metadata: The store's metadata, as ``SQLiteStoreMetadata/read(at:)``
    ///     returns it.
    /// - Returns: One message per difference; empty when compatible.
    public func incompatibilities(withName name: String?, storeMetadata metadata: [String: Any]) -> [String] {
        guard let entities = entities(forConfigurationName: name) else {
            return ["the model has no configuration named '\(name ?? "")'"]
        }
        let style = (metadata["NSStoreModelVersionHashesVersion"] as? Int)
            ?? (metadata["NSStoreModelVersionHashesVersion"] as? NSNumber)?.intValue ?? 3
        if style > 3 { return ["the store's hash version \(style) is newer than this framework understands (3)"] }
        guard let stored = storeHashes(metadata) else {
            return ["the store's metadata has no NSStoreModelVersionHashes"]
        }
        var problems: [String] = []
        let modelNames = Set(entities.map(\.name))
        for entity in entities.sorted(by: { ManagedObjectModel.compareNames($0.name, $1.name) }) {
            guard let storedHash = stored[entity.name] else {
                problems.append("entity '\(entity.name)' is in the model but not in the store")
                continue
            }
            if style >= 3, storedHash != entity.versionHash {
                problems.append("entity '\(entity.name)' differs: the model's version hash is \(entity.versionHash.hexString), the store's is \(storedHash.hexString)")
            }
        }
        for storedName in stored.keys.sorted(by: ManagedObjectModel.compareNames) where !modelNames.contains(storedName) {
            problems.append("entity '\(storedName)' is in the store but not in the model")
        }
        return problems
    }

    private func storeHashes(_ metadata: [String: Any]) -> [String: Data]? {
        if let hashes = metadata["NSStoreModelVersionHashes"] as? [String: Data] { return hashes }
        if let hashes = metadata["NSStoreModelVersionHashes"] as? [String: Any] {
            var result: [String: Data] = [:]
            for (key, value) in hashes {
                if let data = value as? Data { result[key] = data }
                else if let data = value as? NSData { result[key] = data as Data }
            }
            return result
        }
        if let hashes = metadata["NSStoreModelVersionHashes"] as? NSDictionary {
            var result: [String: Data] = [:]
            for (key, value) in hashes {
                if let key = key as? String, let data = value as? Data { result[key] = data }
            }
            return result
        }
        return nil
    }
}

extension Data {
    /// Lowercase hexadecimal.
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 2)
        for byte in self {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
