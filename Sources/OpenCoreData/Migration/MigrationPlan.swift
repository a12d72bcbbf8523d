import Foundation
import OpenCoreDataPredicates

/// The steps that take a store from the model version that wrote it to another
/// version: each step a source model, a destination model and the mapping
/// between them (a mapping model given for that pair, else an inferred one).
///
/// Core Data itself never chains versions: opening a store with automatic
/// migration makes one step, from the store's version straight to the current
/// model (``direct(storeMetadata:sourceModel:destinationModel:mappingModels:infersMappingModel:configurationName:)``).
/// A progressive plan walks every version in between, one step each, as the
/// Core Data book's progressive migration does: renames chained from version to
/// version (`elementID` naming the previous name, not the first) and mapping
/// models made for consecutive versions then work.
///
/// ```swift
/// let versions = try ModelVersionBundle(contentsOf: bundleURL)
/// let plan = try MigrationPlan.progressive(storeAt: storeURL, versions: versions)
/// for step in plan.steps { print(step) }      // v1.0.0 -> v1.1.0 (inferred, in place), ...
/// try StoreMigrator.migrateStore(at: storeURL, plan: plan)
/// ```
public struct MigrationPlan: Sendable {
    /// One migration from a source model to a destination model.
    public struct Step: Sendable, CustomStringConvertible {
        /// Where the step's mapping model comes from.
        public enum MappingSource: Sendable, Hashable {
            /// Inferred (lightweight migration).
            case inferred
            /// A mapping model given to the plan, with its name.
            case mappingModel(String)
        }
        /// The source version's name (`"the store's model cache"` when the source
        /// model came from the store itself).
        public var sourceVersion: String
        /// The destination version's name.
        public var destinationVersion: String
        /// The source model.
        public var sourceModel: ManagedObjectModel
        /// The destination model.
        public var destinationModel: ManagedObjectModel
        /// The mapping between them.
        public var mappingModel: MappingModel
        /// Where the mapping came from.
        public var mappingSource: MappingSource

        /// Whether an SQLite store takes this step in place with SQL (an inferred
        /// mapping, or a mapping model whose every value is a plain source
        /// property); otherwise the step needs a migration through objects.
        public var runsInPlace: Bool { mappingModel.isExpressibleInSQL }

        /// A step.
        ///
        /// - Parameters:
        ///   - sourceVersion: The source version's name.
        ///   - destinationVersion: The destination version's name.
        ///   - sourceModel: The model the store is at.
        ///   - destinationModel: The model to migrate to.
        ///   - mappingModel: The mapping between them.
        ///   - mappingSource: Where the mapping came from.
        public init(sourceVersion: String, destinationVersion: String, sourceModel: ManagedObjectModel,
                    destinationModel: ManagedObjectModel, mappingModel: MappingModel, mappingSource: MappingSource) {
            self.sourceVersion = sourceVersion
            self.destinationVersion = destinationVersion
            self.sourceModel = sourceModel
            self.destinationModel = destinationModel
            self.mappingModel = mappingModel
            self.mappingSource = mappingSource
        }

        public var description: String {
            let how: String
            switch mappingSource {
            case .inferred: how = "inferred"
            case .mappingModel(let name): how = "mapping model \(name)"
            }
            return "\(sourceVersion) -> \(destinationVersion) (\(how), \(runsInPlace ? "in place with SQL" : "through objects"))"
        }
    }

    /// The steps, in order.
    public var steps: [Step]

    /// A plan of `steps`.
    ///
    /// - Parameter steps: The steps, in order.
    public init(steps: [Step]) {
        self.steps = steps
    }

    /// Whether the store needs no migration.
    public var isEmpty: Bool { steps.isEmpty }

    /// The mapping of one step: a given mapping model that matches the two
    /// models (by their entities' version hashes), else an inferred one.
    static func mapping(from source: ManagedObjectModel, to destination: ManagedObjectModel,
                        mappingModels: [(name: String, model: MappingModel)], infers: Bool,
                        stepName: String) throws -> (MappingModel, Step.MappingSource) {
        if let given = mappingModels.first(where: { $0.model.matches(source: source, destination: destination) }) {
            return (given.model, .mappingModel(given.name))
        }
        guard infers else {
            throw CoreDataError(.migrationMissingMappingModel,
                                "Persistent store migration failed, missing mapping model: no mapping model for \(stepName), and inferring one is off")
        }
        do {
            return (try MappingModel.inferredMappingModel(forSourceModel: source, destinationModel: destination), .inferred)
        } catch let error as CoreDataError {
            var missing = CoreDataError(.migrationMissingMappingModel,
                                        "Persistent store migration failed, missing mapping model: \(stepName) cannot be inferred: \(error.message)",
                                        entityName: error.entityName, key: error.key)
            missing.underlyingErrors = [error]
            throw missing
        }
    }

    /// Core Data's plan when a store is opened with automatic migration: one step
    /// from the store's model to `destinationModel`.
    ///
    /// - Parameters:
    ///   - storeMetadata: The store's metadata.
    ///   - sourceModel: The model whose hashes match the store (see
    ///     ``StoreMigrator/sourceModel(forStoreAt:metadata:candidates:configurationName:)``).
    ///   - destinationModel: The model to migrate to.
    ///   - mappingModels: Mapping models to prefer to inference, by name.
    ///   - infersMappingModel: Whether a mapping may be inferred.
    ///   - configurationName: The configuration the store holds.
    /// - Returns: A plan of one step, or none when the store already matches.
    /// - Throws: ``CoreDataError/Code/migrationMissingMappingModel`` (134140)
    ///   when no mapping model matches and none can be inferred.
    public static func direct(storeMetadata: [String: Any], sourceModel: (name: String, model: ManagedObjectModel),
                              destinationModel: (name: String, model: ManagedObjectModel),
                              mappingModels: [(name: String, model: MappingModel)] = [],
                              infersMappingModel: Bool = true, configurationName: String? = nil) throws -> MigrationPlan {
        if destinationModel.model.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: storeMetadata) {
            return MigrationPlan(steps: [])
        }
        let (mapping, source) = try mapping(from: sourceModel.model, to: destinationModel.model, mappingModels: mappingModels,
                                            infers: infersMappingModel, stepName: "\(sourceModel.name) -> \(destinationModel.name)")
        return MigrationPlan(steps: [Step(sourceVersion: sourceModel.name, destinationVersion: destinationModel.name,
                                          sourceModel: sourceModel.model, destinationModel: destinationModel.model,
                                          mappingModel: mapping, mappingSource: source)])
    }

    /// A progressive plan: from the version of `versions` that wrote the store
    /// to `targetVersion` (the current version by default), one step per
    /// consecutive pair of versions.
    ///
    /// - Parameters:
    ///   - url: The store.
    ///   - versions: The model's versions.
    ///   - targetVersion: The version to end at; nil for the current one.
    ///   - mappingModels: Mapping models to prefer to inference, by name.
    ///   - configurationName: The configuration the store holds.
    /// - Returns: The plan (no step when the store is already at the target).
    ///   A store written by a version the bundle does not have is migrated from
    ///   the model cached in it, in one step to the target.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/migrationMissingSourceModel``
    ///   (134130) when no version matches the store and it caches no model that does;
    ///   ``CoreDataError/Code/migration`` (134110) for an unknown target or one
    ///   older than the store; ``CoreDataError/Code/migrationMissingMappingModel``
    ///   (134140) for a step with no mapping model that cannot be inferred.
    public static func progressive(storeAt url: URL, versions: ModelVersionBundle, to targetVersion: String? = nil,
                                   mappingModels: [(name: String, model: MappingModel)] = [],
                                   configurationName: String? = nil) throws -> MigrationPlan {
        let metadata = try SQLiteStoreMetadata.read(at: url)
        let target = targetVersion ?? versions.currentVersionName
        guard let targetIndex = versions.versionNames.firstIndex(of: target) else {
            throw CoreDataError(.migration, "The model has no version named '\(target)' (versions: \(versions.versionNames.joined(separator: ", ")))", url: url)
        }
        guard let sourceName = try versions.versionName(compatibleWithStoreMetadata: metadata, configurationName: configurationName),
              let sourceIndex = versions.versionNames.firstIndex(of: sourceName) else {
            // A store written by a version the bundle no longer has: as Core Data,
            // the model cached in the store is the source, one step to the target.
            if let cached = try? SQLiteStore.storedModel(at: url),
               cached.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) {
                let model = try versions.model(forVersion: target)
                let name = "the store's cached model"
                let (mapping, source) = try mapping(from: cached, to: model, mappingModels: mappingModels, infers: true,
                                                    stepName: "\(name) -> \(target)")
                return MigrationPlan(steps: [Step(sourceVersion: name, destinationVersion: target, sourceModel: cached,
                                                  destinationModel: model, mappingModel: mapping, mappingSource: source)])
            }
            throw CoreDataError(.migrationMissingSourceModel,
                                "Persistent store migration failed, missing source managed object model: no version of \(versions.url.lastPathComponent) matches the store's entity version hashes",
                                url: url)
        }
        guard sourceIndex <= targetIndex else {
            throw CoreDataError(.migration, "The store is at version '\(sourceName)', newer than '\(target)': a store is not migrated backwards", url: url)
        }
        var steps: [Step] = []
        var previous = (name: sourceName, model: try versions.model(forVersion: sourceName))
        for index in versions.versionNames.indices where index > sourceIndex && index <= targetIndex {
            let name = versions.versionNames[index]
            let model = try versions.model(forVersion: name)
            let (mapping, source) = try mapping(from: previous.model, to: model, mappingModels: mappingModels, infers: true,
                                                stepName: "\(previous.name) -> \(name)")
            steps.append(Step(sourceVersion: previous.name, destinationVersion: name, sourceModel: previous.model,
                              destinationModel: model, mappingModel: mapping, mappingSource: source))
            previous = (name, model)
        }
        return MigrationPlan(steps: steps)
    }
}

extension MappingModel {
    /// Whether an SQLite store can take this mapping with SQL alone: no custom
    /// policy, every entity's objects all copied (no source expression), every
    /// attribute value a constant or a plain source attribute, every relationship
    /// value the destination instances of a plain source relationship.
    public var isExpressibleInSQL: Bool {
        entityMappings.allSatisfy { mapping in
            guard mapping.entityMigrationPolicyClassName?.isEmpty ?? true, mapping.mappingType != .custom else { return false }
            if mapping.mappingType == .remove || mapping.mappingType == .add { return true }
            if let expression = mapping.sourceExpression, !Self.isPlainSourceFetch(expression, entity: mapping.sourceEntityName) { return false }
            let attributes = mapping.attributeMappings.allSatisfy { property in
                guard let expression = property.valueExpression else { return true }
                if case .constant = expression { return true }
                return PropertyMapping.sourceKeyPath(of: expression).map { !$0.contains(".") } ?? false
            }
            let relationships = mapping.relationshipMappings.allSatisfy { property in
                property.valueExpression == nil || property.destinationInstancesCall.map { !$0.sourceKeyPath.contains(".") } == true
            }
            return attributes && relationships
        }
    }

    /// Whether `expression` is Xcode's default source expression: every object
    /// of the source entity (`FETCH(FUNCTION($manager, "fetchRequestForSourceEntityNamed:predicateString:", "E", "TRUEPREDICATE"), ...)`).
    static func isPlainSourceFetch(_ expression: CoreExpression, entity: String?) -> Bool {
        let text = "\(expression)"
        return text.contains("fetchRequestForSourceEntityNamed:predicateString:") && text.contains("TRUEPREDICATE")
    }
}
