import Foundation
import OpenCoreDataPredicates

// Typed queries: Foundation's `#Predicate` and key-path `SortDescriptor`s, and key
// paths wherever Core Data takes key strings. Each is translated once, when the
// request is made, into the predicate, descriptor or key the request keeps; a
// key path that names no modeled property, or an expression with no Core Data
// equivalent, is an error then, never an in-memory fallback.

extension FetchRequest where Result: ManagedObject {
    /// A request for the objects of `Result`'s entity that match a typed
    /// predicate, in the order of typed sort descriptors.
    ///
    /// ```swift
    /// let request = try FetchRequest<Mood>(
    ///     predicate: #Predicate { $0.rating > 3 && $0.name.contains("sun") },
    ///     sortBy: [SortDescriptor(\.date, order: .reverse)])
    /// let moods = try context.fetch(request)
    /// request.predicate?.predicateFormat   // rating > 3 AND name CONTAINS "sun"
    /// ```
    ///
    /// - Parameters:
    ///   - predicate: What the objects must match; nil for all.
    ///   - sortBy: The order of the results.
    /// - Throws: `TypedPredicateError` when the predicate or a descriptor has
    ///   no Core Data equivalent.
    public convenience init(predicate: Predicate<Result>? = nil, sortBy: [SortDescriptor<Result>] = []) throws {
        self.init(entityName: ManagedObjectClasses.entityName(of: Result.self))
        if let predicate { self.predicate = try CorePredicate(predicate) }
        sortDescriptors = try sortBy.map { try CoreSortDescriptor($0) }
    }

    /// Sets ``predicate`` from a typed predicate.
    ///
    /// - Throws: `TypedPredicateError` when it has no Core Data equivalent.
    public func setPredicate(_ predicate: Predicate<Result>) throws {
        self.predicate = try CorePredicate(predicate)
    }

    /// Sets ``sortDescriptors`` from typed sort descriptors.
    ///
    /// - Throws: `TypedPredicateError` for a descriptor without an equivalent.
    public func setSortDescriptors(_ sortBy: [SortDescriptor<Result>]) throws {
        sortDescriptors = try sortBy.map { try CoreSortDescriptor($0) }
    }

    /// Sets ``relationshipKeyPathsForPrefetching`` from key paths of relationships.
    ///
    /// ```swift
    /// try request.setRelationshipKeyPathsForPrefetching([\.country])
    /// ```
    ///
    /// - Throws: `TypedPredicateError.unknownKeyPath`.
    public func setRelationshipKeyPathsForPrefetching(_ keyPaths: [PartialKeyPath<Result>]) throws {
        relationshipKeyPathsForPrefetching = try Result.keys(for: keyPaths)
    }
}

extension FetchRequest {
    /// Sets ``propertiesToFetch`` from key paths of the entity's class (for
    /// dictionary results, whose request is not typed by the class).
    ///
    /// ```swift
    /// let request = FetchRequest<[String: Any]>(entityName: "Mood")
    /// try request.setPropertiesToFetch([\Mood.name, \Mood.rating])
    /// ```
    ///
    /// - Throws: `TypedPredicateError.unknownKeyPath`.
    public func setPropertiesToFetch<Root: ManagedObject>(_ keyPaths: [PartialKeyPath<Root>]) throws {
        propertiesToFetch = try Root.keys(for: keyPaths).map { .keyPath($0) }
    }

    /// Sets ``propertiesToGroupBy`` from key paths of the entity's class.
    ///
    /// - Throws: `TypedPredicateError.unknownKeyPath`.
    public func setPropertiesToGroupBy<Root: ManagedObject>(_ keyPaths: [PartialKeyPath<Root>]) throws {
        propertiesToGroupBy = try Root.keys(for: keyPaths).map { .keyPath($0) }
    }

    /// Sets ``havingPredicate`` from a typed predicate over the entity's class.
    ///
    /// - Throws: `TypedPredicateError` when it has no Core Data equivalent.
    public func setHavingPredicate<Root: ManagedObject>(_ predicate: Predicate<Root>) throws {
        havingPredicate = try CorePredicate(predicate)
    }
}

extension FetchedResultsController {
    /// A controller whose sections are the values of a typed property.
    ///
    /// ```swift
    /// let controller = try FetchedResultsController(
    ///     fetchRequest: try FetchRequest<Mood>(sortBy: [SortDescriptor(\.rating), SortDescriptor(\.date)]),
    ///     managedObjectContext: context, sectionNameKeyPath: \.rating, cacheName: nil)
    /// ```
    ///
    /// - Throws: `TypedPredicateError.unknownKeyPath`.
    public convenience init(fetchRequest: FetchRequest<Result>, managedObjectContext context: ManagedObjectContext,
                            sectionNameKeyPath: PartialKeyPath<Result>, cacheName: String?) throws {
        self.init(fetchRequest: fetchRequest, managedObjectContext: context,
                  sectionNameKeyPath: try Result.key(for: sectionNameKeyPath), cacheName: cacheName)
    }
}

extension BatchUpdateRequest {
    /// A request updating the objects of `Root`'s entity that match a typed
    /// predicate, with new values by key path.
    ///
    /// ```swift
    /// let request = try BatchUpdateRequest(
    ///     predicate: #Predicate<Mood> { $0.rating < 2 },
    ///     propertiesToUpdate: [\Mood.rating: 2])
    /// ```
    ///
    /// - Parameters:
    ///   - predicate: Which objects are updated; nil for all.
    ///   - propertiesToUpdate: The new values (constants or `CoreExpression`s).
    /// - Throws: `TypedPredicateError`.
    public convenience init<Root: ManagedObject>(
        predicate: Predicate<Root>? = nil, propertiesToUpdate: [PartialKeyPath<Root>: Any]
    ) throws {
        self.init(entityName: ManagedObjectClasses.entityName(of: Root.self))
        if let predicate { self.predicate = try CorePredicate(predicate) }
        var values: [String: Any] = [:]
        for (keyPath, value) in propertiesToUpdate { values[try Root.key(for: keyPath)] = value }
        self.propertiesToUpdate = values
    }
}

extension BatchDeleteRequest {
    /// A request deleting the objects of `Root`'s entity that match a typed
    /// predicate.
    ///
    /// ```swift
    /// let request = try BatchDeleteRequest(predicate: #Predicate<Mood> { $0.date < cutoff })
    /// ```
    ///
    /// - Throws: `TypedPredicateError`.
    public convenience init<Root: ManagedObject>(predicate: Predicate<Root>) throws {
        self.init(entityName: ManagedObjectClasses.entityName(of: Root.self), predicate: try CorePredicate(predicate))
    }
}

extension FetchRequestResult where Self: ManagedObject {
    /// The objects of this class's entity that match a typed predicate, counting
    /// the context's unsaved changes.
    ///
    /// ```swift
    /// let happy = try Mood.all(in: context, where: #Predicate { $0.rating > 3 },
    ///                          sortedBy: [SortDescriptor(\.date)])
    /// ```
    ///
    /// - Throws: `TypedPredicateError`, and the errors of
    ///   ``ManagedObjectContext/fetch(_:)``.
    public static func all(in context: ManagedObjectContext, where predicate: Predicate<Self>,
                           sortedBy sortDescriptors: [SortDescriptor<Self>] = []) throws -> [Self] {
        try context.fetch(try FetchRequest<Self>(predicate: predicate, sortBy: sortDescriptors))
    }

    /// The first object of this class's entity that matches a typed predicate,
    /// in a typed order.
    ///
    /// ```swift
    /// let best = try Mood.first(in: context, where: #Predicate { $0.rating > 3 },
    ///                           sortedBy: [SortDescriptor(\.date, order: .reverse)])
    /// ```
    ///
    /// - Throws: `TypedPredicateError`, and the errors of
    ///   ``ManagedObjectContext/fetch(_:)``.
    public static func first(in context: ManagedObjectContext, where predicate: Predicate<Self>,
                             sortedBy sortDescriptors: [SortDescriptor<Self>] = []) throws -> Self? {
        let request = try FetchRequest<Self>(predicate: predicate, sortBy: sortDescriptors)
        request.fetchLimit = 1
        return try context.fetch(request).first
    }

    /// The first object of this class's entity in a typed order.
    ///
    /// ```swift
    /// let latest = try Mood.first(in: context, sortedBy: [SortDescriptor(\.date, order: .reverse)])
    /// ```
    ///
    /// - Throws: `TypedPredicateError`, and the errors of
    ///   ``ManagedObjectContext/fetch(_:)``.
    public static func first(in context: ManagedObjectContext, sortedBy sortDescriptors: [SortDescriptor<Self>]) throws -> Self? {
        let request = try FetchRequest<Self>(sortBy: sortDescriptors)
        request.fetchLimit = 1
        return try context.fetch(request).first
    }

    /// The number of objects of this class's entity that match a typed predicate.
    ///
    /// - Throws: `TypedPredicateError`, and the errors of
    ///   ``count(predicate:in:)``.
    public static func count(in context: ManagedObjectContext, where predicate: Predicate<Self>) throws -> Int {
        try count(predicate: try CorePredicate(predicate), in: context)
    }

    /// Deletes the objects of this class's entity that match a typed predicate;
    /// returns how many.
    ///
    /// - Throws: `TypedPredicateError`, and the errors of
    ///   ``removeAll(predicate:in:)``.
    @discardableResult
    public static func removeAll(in context: ManagedObjectContext, where predicate: Predicate<Self>) throws -> Int {
        try removeAll(predicate: try CorePredicate(predicate), in: context)
    }
}
