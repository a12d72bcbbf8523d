import Foundation
import OpenCoreDataPredicates

extension FetchRequest {
    /// A request made from a model's fetch request template, with its `$variables`
    /// replaced by `substitutionVariables`.
    ///
    /// ```swift
    /// // The model has a template "GoodMoods": Mood, "rating >= $MIN"
    /// let request = try FetchRequest<Mood>(template: template, substitutionVariables: ["MIN": 4])
    /// ```
    ///
    /// Throws when a variable of the predicate has no value, or the predicate
    /// does not parse.
    ///
    /// - Parameters:
    ///   - template: The template: entity, predicate format and fetch settings.
    ///   - substitutionVariables: The values of the predicate's `$variables`, by
    ///     name without the `$`.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the predicate does not parse or a variable has no value.
    public convenience init(template: FetchRequestTemplate, substitutionVariables: [String: any FormatArgument] = [:]) throws {
        self.init(entityName: template.entityName)
        if let format = template.predicateFormat {
            let predicate: CorePredicate
            do {
                predicate = try CorePredicate(format: format)
            } catch {
                throw CoreDataError(.coreData, "The template predicate '\(format)' does not parse: \(error)",
                                    entityName: template.entityName)
            }
            let missing = predicate.variableNames.subtracting(substitutionVariables.keys).sorted()
            if !missing.isEmpty {
                throw CoreDataError(.coreData, "The template predicate '\(format)' needs a value for $\(missing.joined(separator: ", $"))",
                                    entityName: template.entityName)
            }
            self.predicate = predicate.withSubstitutionVariables(substitutionVariables)
        }
        fetchLimit = template.fetchLimit
        fetchOffset = template.fetchOffset
        fetchBatchSize = template.fetchBatchSize
        includesSubentities = template.includesSubentities
        includesPropertyValues = template.includesPropertyValues
        returnsDistinctResults = template.returnsDistinctResults
        returnsObjectsAsFaults = template.returnsObjectsAsFaults
        includesPendingChanges = template.includesPendingChanges
        if Self.defaultResultType == .managedObject, let type = ResultType(rawValue: template.resultType) {
            resultType = type
        }
    }
}

extension ManagedObjectModel {
    /// A request made from the template named `name`, with its `$variables`
    /// replaced (`fetchRequestFromTemplate(withName:substitutionVariables:)`), or
    /// nil when the model has no such template.
    ///
    /// ```swift
    /// let request = try model.fetchRequestFromTemplate(withName: "GoodMoods", substitutionVariables: ["MIN": 4])
    /// let moods = try context.fetch(request!)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The template's name.
    ///   - substitutionVariables: The values of the predicate's `$variables`, by
    ///     name without the `$`.
    /// - Returns: A new request, or nil when the model has no template `name`.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the predicate does not parse or a variable has no value.
    public func fetchRequestFromTemplate(withName name: String, substitutionVariables: [String: any FormatArgument])
        throws -> FetchRequest<ManagedObject>? {
        guard let template = fetchRequestTemplate(forName: name) else { return nil }
        return try FetchRequest<ManagedObject>(template: template, substitutionVariables: substitutionVariables)
    }
}
