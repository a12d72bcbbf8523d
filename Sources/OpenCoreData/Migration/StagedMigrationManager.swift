import Foundation

/// A model version a staged migration refers to: Core Data's
/// `NSManagedObjectModelReference`, a model and the checksum it must have.
///
/// ```swift
/// let v1 = try ManagedObjectModelReference(model: versions.model(forVersion: "v1"), versionChecksum: checksumV1)
/// ```
public struct ManagedObjectModelReference: Sendable {
    /// The model.
    public let resolvedModel: ManagedObjectModel
    /// Its checksum (``ManagedObjectModel/versionChecksum``).
    public let versionChecksum: String

    /// A reference to `model`, which must have `versionChecksum`.
    ///
    /// - Parameters:
    ///   - model: The model.
    ///   - versionChecksum: The checksum it is expected to have.
    /// - Throws: ``CoreDataError/Code/managedObjectModelReferenceNotFound`` (134504)
    ///   when the model's checksum is another.
    public init(model: ManagedObjectModel, versionChecksum: String) throws {
        guard model.versionChecksum == versionChecksum else {
            throw CoreDataError(.managedObjectModelReferenceNotFound,
                                "The model's version checksum is \(model.versionChecksum), not \(versionChecksum)")
        }
        self.resolvedModel = model
        self.versionChecksum = versionChecksum
    }

    /// A reference to the version `name` of a model bundle.
    ///
    /// - Parameters:
    ///   - name: A version name of `versions`.
    ///   - versions: The bundle.
    ///   - versionChecksum: The checksum the version must have.
    /// - Throws: 134504 when the bundle has no such version or its checksum is another.
    public init(name: String, in versions: ModelVersionBundle, versionChecksum: String) throws {
        guard versions.versionNames.contains(name) else {
            throw CoreDataError(.managedObjectModelReferenceNotFound, "\(versions.url.lastPathComponent) has no version named '\(name)'")
        }
        try self.init(model: try versions.model(forVersion: name), versionChecksum: versionChecksum)
    }
}

/// One stage of a staged migration: Core Data's `NSMigrationStage`, adopted by
/// ``LightweightMigrationStage`` and ``CustomMigrationStage``.
public protocol MigrationStage: AnyObject, Sendable {
    /// A label for logs.
    var label: String? { get set }
}

/// Versions Core Data migrates between by itself: Core Data's
/// `NSLightweightMigrationStage`. A run of lightweight stages is one inferred
/// step, from the store's version to the run's last checksum (Core Data does not
/// chain them).
public final class LightweightMigrationStage: MigrationStage {
    /// The checksums of the stage's model versions.
    public let versionChecksums: [String]
    private let labelBox = Lock<String?>(nil)

    /// A label for logs.
    public var label: String? {
        get { labelBox.withLock { $0 } }
        set { labelBox.withLock { $0 = newValue } }
    }

    /// A stage over the versions with `versionChecksums`.
    ///
    /// - Parameter versionChecksums: Model version checksums, oldest first.
    public init(_ versionChecksums: [String]) {
        self.versionChecksums = versionChecksums
    }
}

/// A migration between two versions with code of yours before and after it:
/// Core Data's `NSCustomMigrationStage`. The step itself is inferred.
///
/// ```swift
/// let stage = CustomMigrationStage(migratingFrom: v1, to: v2)
/// stage.willMigrateHandler = { manager, stage in
///     // The store at version 1, through manager.container: fill the values
///     // version 2 makes mandatory.
/// }
/// ```
public final class CustomMigrationStage: MigrationStage {
    /// A handler: the manager (its ``StagedMigrationManager/container`` has the
    /// store open) and the stage.
    public typealias Handler = @Sendable (StagedMigrationManager, CustomMigrationStage) throws -> Void

    /// The version the stage migrates from.
    public let currentModel: ManagedObjectModelReference
    /// The version it migrates to.
    public let nextModel: ManagedObjectModelReference
    private let state = Lock<(label: String?, will: Handler?, did: Handler?)>((nil, nil, nil))

    /// A label for logs.
    public var label: String? {
        get { state.withLock { $0.label } }
        set { state.withLock { $0.label = newValue } }
    }
    /// Called before the step, the store open at ``currentModel`` in `manager.container`.
    public var willMigrateHandler: Handler? {
        get { state.withLock { $0.will } }
        set { state.withLock { $0.will = newValue } }
    }
    /// Called after the step, the store open at ``nextModel`` in `manager.container`.
    public var didMigrateHandler: Handler? {
        get { state.withLock { $0.did } }
        set { state.withLock { $0.did = newValue } }
    }

    /// A stage from `currentModel` to `nextModel`.
    ///
    /// - Parameters:
    ///   - currentModel: The version before.
    ///   - nextModel: The version after.
    public init(migratingFrom currentModel: ManagedObjectModelReference, to nextModel: ManagedObjectModelReference) {
        self.currentModel = currentModel
        self.nextModel = nextModel
    }
}

/// Migrates a store through stages given in order: Core Data's
/// `NSStagedMigrationManager` (iOS 17). Set it on a store description; the store
/// is migrated when it is added.
///
/// ```swift
/// let manager = try StagedMigrationManager([
///     LightweightMigrationStage([v1Checksum]),
///     custom,                                   // v1 -> v2 with handlers
///     LightweightMigrationStage([v3Checksum]),
/// ])
/// var description = PersistentStoreDescription(url: storeURL)
/// description.stagedMigrationManager = manager
/// ```
///
/// Models are found by checksum among the custom stages' references, the
/// versions of the container model's bundle, the container's model and the
/// store's model cache. The store's version is found by its checksum
/// (`NSStoreModelVersionChecksumKey`, or the checksum of the known model whose
/// hashes match the store). Stages
/// before it are skipped; from there each run of lightweight stages is one
/// inferred step to its last checksum, and each custom stage an inferred step
/// between its two models with its handlers around it. A store whose version no
/// stage names, or that a stage would take backwards, is refused.
public final class StagedMigrationManager: Sendable, Hashable {
    /// The stages, in order.
    public let stages: [any MigrationStage]
    private let containerBox = Lock<PersistentContainer?>(nil)
    /// During a custom stage's handlers: a container with the store open at the
    /// stage's current (in `willMigrateHandler`) or next (in `didMigrateHandler`) model.
    public var container: PersistentContainer? { containerBox.withLock { $0 } }

    /// A manager running `stages` in order.
    ///
    /// - Parameter stages: The stages.
    /// - Throws: ``CoreDataError/Code/migration`` (134110) "Duplicate version
    ///   checksums across stages detected." when two stages name one version.
    public init(_ stages: [any MigrationStage]) throws {
        var seen: Set<String> = []
        for stage in stages {
            let checksums: [String]
            if let light = stage as? LightweightMigrationStage { checksums = light.versionChecksums }
            else if let custom = stage as? CustomMigrationStage { checksums = [custom.currentModel.versionChecksum] }
            else { checksums = [] }
            for checksum in checksums {
                guard seen.insert(checksum).inserted else {
                    throw CoreDataError(.migration, "Duplicate version checksums across stages detected. (\(checksum))")
                }
            }
        }
        self.stages = stages
    }

    public static func == (a: StagedMigrationManager, b: StagedMigrationManager) -> Bool { a === b }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    /// One position on the stages' line of versions.
    private enum Point {
        case checksum(String)
        case custom(CustomMigrationStage)
    }

    /// Migrates the store at `url` through the stages, then (inferred) to `model`
    /// when the last stage does not end at it.
    func migrate(storeAt url: URL, to model: ManagedObjectModel, configurationName: String?) throws {
        let metadata = try SQLiteStoreMetadata.read(at: url)
        if model.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) { return }
        // Every model the stages know, by checksum.
        var models: [String: ManagedObjectModel] = [:]
        for stage in stages {
            if let custom = stage as? CustomMigrationStage {
                models[custom.currentModel.versionChecksum] = custom.currentModel.resolvedModel
                models[custom.nextModel.versionChecksum] = custom.nextModel.resolvedModel
            }
        }
        models[model.versionChecksum] = model
        if let bundleURL = model.versionBundleURL, let versions = try? ModelVersionBundle(contentsOf: bundleURL) {
            for name in versions.versionNames {
                if let version = try? versions.model(forVersion: name) { models[version.versionChecksum] = models[version.versionChecksum] ?? version }
            }
        }
        // The store's own model (its model cache), as Core Data falls back to it.
        if let cached = try? SQLiteStore.storedModel(at: url),
           cached.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) {
            models[cached.versionChecksum] = models[cached.versionChecksum] ?? cached
        }
        func resolve(_ checksum: String) throws -> ManagedObjectModel {
            guard let found = models[checksum] else {
                throw CoreDataError(.managedObjectModelReferenceNotFound,
                                    "No model with version checksum \(checksum): give it through a CustomMigrationStage, or load the container's model from its bundle", url: url)
            }
            return found
        }
        // The store's version.
        var storeChecksum = metadata[SQLiteStoreMetadata.versionChecksumKey] as? String
        if storeChecksum == nil || models[storeChecksum!] == nil {
            storeChecksum = models.first { $0.value.isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) }?.key
        }
        guard let current = storeChecksum else {
            throw CoreDataError(.migration, "Cannot use staged migration with an unknown model version.", url: url)
        }
        // The line of versions, and where the store is on it.
        var line: [(stage: Int, point: Point)] = []
        for (index, stage) in stages.enumerated() {
            if let light = stage as? LightweightMigrationStage {
                for checksum in light.versionChecksums { line.append((index, .checksum(checksum))) }
            } else if let custom = stage as? CustomMigrationStage {
                line.append((index, .custom(custom)))
            }
        }
        func checksum(at point: Point) -> String {
            switch point {
            case .checksum(let value): return value
            case .custom(let stage): return stage.currentModel.versionChecksum
            }
        }
        let positions = line.indices.filter { checksum(at: line[$0].point) == current }
        var position: Int
        if let found = positions.first {
            position = found
        } else if let after = line.firstIndex(where: { if case .custom(let stage) = $0.point { return stage.nextModel.versionChecksum == current }; return false }) {
            position = after + 1
        } else if current == model.versionChecksum {
            return
        } else {
            throw CoreDataError(.migration, "Cannot use staged migration with an unknown model version.", url: url)
        }
        if model.versionChecksum != current, line.contains(where: { checksum(at: $0.point) == model.versionChecksum }),
           let target = line.firstIndex(where: { checksum(at: $0.point) == model.versionChecksum }), target < position {
            throw CoreDataError(.stagedMigrationBackwardMigration, "A store file cannot be migrated backwards with staged migration.", url: url)
        }
        var currentChecksum = current
        func inferredStep(to checksum: String) throws {
            guard checksum != currentChecksum else { return }
            let source = try resolve(currentChecksum), destination = try resolve(checksum)
            let plan = try MigrationPlan.direct(storeMetadata: try SQLiteStoreMetadata.read(at: url), sourceModel: (currentChecksum, source),
                                                destinationModel: (checksum, destination), configurationName: configurationName)
            try StoreMigrator.migrateStore(at: url, plan: plan, configurationName: configurationName)
            currentChecksum = checksum
        }
        while position < line.count {
            switch line[position].point {
            case .checksum:
                // A run of lightweight checksums: one step to its last.
                var last = position
                while last + 1 < line.count, case .checksum = line[last + 1].point { last += 1 }
                try inferredStep(to: checksum(at: line[last].point))
                position = last + 1
            case .custom(let stage):
                if currentChecksum != stage.currentModel.versionChecksum { try inferredStep(to: stage.currentModel.versionChecksum) }
                try withContainer(at: url, model: stage.currentModel.resolvedModel, configurationName: configurationName) {
                    try stage.willMigrateHandler?(self, stage)
                }
                try inferredStep(to: stage.nextModel.versionChecksum)
                try withContainer(at: url, model: stage.nextModel.resolvedModel, configurationName: configurationName) {
                    try stage.didMigrateHandler?(self, stage)
                }
                position += 1
            }
        }
        if currentChecksum != model.versionChecksum {
            let plan = try MigrationPlan.direct(storeMetadata: try SQLiteStoreMetadata.read(at: url), sourceModel: (currentChecksum, try resolve(currentChecksum)),
                                                destinationModel: ("the current model", model), configurationName: configurationName)
            try StoreMigrator.migrateStore(at: url, plan: plan, configurationName: configurationName)
        }
    }

    private func withContainer(at url: URL, model: ManagedObjectModel, configurationName: String?, _ body: () throws -> Void) throws {
        let container = PersistentContainer(name: url.deletingPathExtension().lastPathComponent, managedObjectModel: model)
        let coordinator = container.persistentStoreCoordinator
        let store = try coordinator.addPersistentStore(type: .sqlite, configuration: configurationName, at: url)
        containerBox.withLock { $0 = container }
        defer {
            containerBox.withLock { $0 = nil }
            coordinator.remove(store)
        }
        try body()
    }
}
