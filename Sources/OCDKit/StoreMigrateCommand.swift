import ArgumentParser
import Foundation
import OpenCoreData

extension StoreCommand {
    /// `ocd store migrate`: migrates a store in place to a version of its model.
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Migrate a store in place to a version of its model.",
            discussion: """
            Finds the version of the bundle that wrote the store (by its entity version hashes), \
            then takes one step per version up to the bundle's current version (or --to): with a \
            mapping model found under the --mappings folders when one matches the step, else an \
            inferred one. Inferred steps run in place with SQL; mapping models run through objects. \
            The plan is printed first. On failure the store is left exactly as it was.
            """)

        @Argument(help: "The store file.") var path: String
        @Option(help: "The model bundle (.xcdatamodeld or .momd) with every version.") var model: String
        @Option(help: "The version to migrate to (a version name without its extension); default: the bundle's current version.")
        var to: String?
        @Option(help: "A folder searched for .xcmappingmodel mapping models (repeatable).") var mappings: [String] = []
        @Flag(help: "Print the plan without migrating.") var dryRun = false

        func run() throws {
            do {
                let url = URL(fileURLWithPath: path)
                let versions = try ModelVersionBundle(contentsOf: URL(fileURLWithPath: model))
                var mappingModels: [(name: String, model: MappingModel)] = []
                for folder in mappings {
                    mappingModels += try MappingModel.mappingModels(in: URL(fileURLWithPath: folder), versions: versions)
                }
                let plan = try MigrationPlan.progressive(storeAt: url, versions: versions, to: to, mappingModels: mappingModels)
                if plan.isEmpty {
                    emit("\(path) is already at version '\(to ?? versions.currentVersionName)': nothing to migrate")
                    return
                }
                emit("Plan for \(path) (\(plan.steps.count) step\(plan.steps.count == 1 ? "" : "s")):")
                for (index, step) in plan.steps.enumerated() {
                    emit("  \(index + 1). \(step)")
                }
                // A policy class this tool does not have fails the plan before anything is written.
                let missing = plan.steps.flatMap { step in
                    step.mappingModel.entityMappings.compactMap { mapping -> String? in
                        guard let name = mapping.entityMigrationPolicyClassName, !name.isEmpty,
                              EntityMigrationPolicy.registeredPolicy(forClassName: name) == nil else { return nil }
                        return "step \(step.sourceVersion) -> \(step.destinationVersion) needs the migration policy class '\(name)' (entity mapping \(mapping.name))"
                    }
                }
                if !missing.isEmpty {
                    throw CommandFailure("Cannot migrate: " + missing.joined(separator: "; ")
                                         + ". Custom policy classes are app code: migrate with MigrationManager in a program that registers them. The store is unchanged.")
                }
                if dryRun { return }
                let progress = DumpProgress(total: plan.steps.count * 100, label: "percent of steps")
                var reported = 0
                try StoreMigrator.migrateStore(at: url, plan: plan) { step, fraction in
                    let now = step * 100 + Int(fraction * 100)
                    if now > reported {
                        progress.advance(now - reported)
                        reported = now
                    }
                }
                progress.finish()
                emit("Migrated \(path) to version '\(plan.steps.last?.destinationVersion ?? "?")'")
            } catch let error as CoreDataError {
                throw CommandFailure(error.description + "\nThe store is unchanged.")
            }
        }
    }
}
