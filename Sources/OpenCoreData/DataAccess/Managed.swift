import Foundation
import OpenCoreDataPredicates

/// The protocol *Core Data* (objc.io) gives every model class: the entity name,
/// a default sort order, and helpers to fetch, find or create objects of the class.
///
/// Adopt it in your managed object subclasses, and override
/// ``defaultSortDescriptors`` where the class has a natural order:
///
/// ```swift
/// @ManagedEntity
/// final class Mood: ManagedObject {
///     @Managed fileprivate(set) var date: Date
///     @Managed fileprivate(set) var colors: [Color]
///
///     static func insert(into context: ManagedObjectContext, colors: [Color]) -> Mood {
///         let mood: Mood = context.insertObject()
///         mood.colors = colors
///         mood.date = Date()
///         return mood
///     }
/// }
///
/// extension Mood: Managed {
///     static var defaultSortDescriptors: [CoreSortDescriptor] {
///         [CoreSortDescriptor(key: "date", ascending: false)]
///     }
/// }
///
/// let request = Mood.sortedFetchRequest
/// request.fetchBatchSize = 20
/// ```
public protocol Managed: FetchRequestResult {
    /// The name of the entity of the class.
    static var entityName: String { get }
    /// The order of objects in ``sortedFetchRequest``: none by default.
    static var defaultSortDescriptors: [CoreSortDescriptor] { get }
}

extension Managed {
    /// No particular order.
    public static var defaultSortDescriptors: [CoreSortDescriptor] { [] }

    /// A request for every object of the entity, in ``defaultSortDescriptors`` order.
    ///
    /// ```swift
    /// let moods = try context.fetch(Mood.sortedFetchRequest)
    /// ```
    public static var sortedFetchRequest: FetchRequest<Self> {
        let request = FetchRequest<Self>(entityName: entityName)
        request.sortDescriptors = defaultSortDescriptors
        return request
    }

    /// A request for the objects matching `predicate`, in ``defaultSortDescriptors``
    /// order.
    ///
    /// ```swift
    /// let request = Mood.sortedFetchRequest(with: try CorePredicate(format: "country == %@", country))
    /// ```
    ///
    /// - Parameter predicate: Which objects the request returns.
    /// - Returns: A new request for the class's entity.
    public static func sortedFetchRequest(with predicate: CorePredicate) -> FetchRequest<Self> {
        let request = sortedFetchRequest
        request.predicate = predicate
        return request
    }
}

extension Managed where Self: ManagedObject {
    /// The entity name of the class: its `@ManagedEntity` name, else the name of
    /// the entity whose class this is in the models loaded so far, else the class
    /// name (the book's `entity().name!`, without the trap).
    public static var entityName: String { ManagedObjectClasses.entityName(of: self) }

    /// The object matching `predicate`: one already in memory, else one fetched
    /// from the store, else a new one inserted into `context` and configured.
    ///
    /// ```swift
    /// let country = try Country.findOrCreate(in: context, matching: try CorePredicate(format: "numericISO3166Code == %d", 250)) {
    ///     $0.numericISO3166Code = 250
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - context: The context to search and insert into.
    ///   - predicate: What the object must match.
    ///   - configure: Sets up a new object; not called for an object found.
    /// - Returns: The object found, or the new one.
    /// - Throws: The errors of ``ManagedObjectContext/fetch(_:)``.
    public static func findOrCreate(in context: ManagedObjectContext, matching predicate: CorePredicate,
                                    configure: (Self) -> Void) throws -> Self {
        guard let object = try findOrFetch(in: context, matching: predicate) else {
            let newObject: Self = context.insertObject()
            configure(newObject)
            return newObject
        }
        return object
    }

    /// The object matching `predicate`: one already in memory
    /// (``materializedObject(in:matching:)``), else the first one fetched from
    /// the store, else nil.
    ///
    /// ```swift
    /// let mood = try Mood.findOrFetch(in: context, matching: try CorePredicate(format: "date == %@", date))
    /// ```
    ///
    /// - Parameters:
    ///   - context: The context to search and fetch in.
    ///   - predicate: What the object must match.
    /// - Returns: The object, or nil when none matches.
    /// - Throws: The errors of ``ManagedObjectContext/fetch(_:)``.
    public static func findOrFetch(in context: ManagedObjectContext, matching predicate: CorePredicate) throws -> Self? {
        guard let object = materializedObject(in: context, matching: predicate) else {
            return try fetch(in: context) { request in
                request.predicate = predicate
                request.returnsObjectsAsFaults = false
                request.fetchLimit = 1
            }.first
        }
        return object
    }

    /// The objects a request for the entity returns, after `configurationBlock`
    /// configured it.
    ///
    /// ```swift
    /// let recent = try Mood.fetch(in: context) { request in
    ///     request.fetchLimit = 10
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - context: The context to fetch in.
    ///   - configurationBlock: Sets up the request (predicate, sort, limits).
    /// - Returns: The objects fetched.
    /// - Throws: The errors of ``ManagedObjectContext/fetch(_:)``.
    public static func fetch(in context: ManagedObjectContext,
                             configurationBlock: (FetchRequest<Self>) -> Void = { _ in }) throws -> [Self] {
        let request = FetchRequest<Self>(entityName: Self.entityName)
        configurationBlock(request)
        return try context.fetch(request)
    }

    /// An object of the class registered with `context`, loaded (not a fault), that
    /// matches `predicate`, or nil: a search in memory, without a fetch.
    ///
    /// ```swift
    /// let cached = Mood.materializedObject(in: context, matching: try CorePredicate(format: "rating == 5"))
    /// ```
    ///
    /// - Parameters:
    ///   - context: The context whose registered objects are searched.
    ///   - predicate: What the object must match.
    /// - Returns: A matching object, or nil.
    public static func materializedObject(in context: ManagedObjectContext, matching predicate: CorePredicate) -> Self? {
        for object in context.registeredObjects where !object.isFault {
            guard let result = object as? Self, (try? predicate.evaluate(with: result)) == true else { continue }
            return result
        }
        return nil
    }
}

extension ManagedObjectContext {
    /// Inserts a new object of class `A` (the book's `insertObject()`).
    ///
    /// ```swift
    /// let mood: Mood = context.insertObject()
    /// ```
    ///
    /// The entity is the one named ``Managed/entityName`` in the context's model,
    /// else the one whose class is `A`. Inserting an object of a class the model
    /// doesn't know is a programming error that stops the program, as
    /// ``ManagedObject/init(context:)`` does.
    ///
    /// - Returns: A new object of class `A`, inserted into this context.
    public func insertObject<A: ManagedObject>() -> A where A: Managed {
        guard let entity = persistentStoreCoordinator?.managedObjectModel.entitiesByName[A.entityName] ?? entity(for: A.self) else {
            preconditionFailure("OpenCoreData: the context's model has no entity '\(A.entityName)' for class '\(String(describing: A.self))'.")
        }
        return A(entity: entity, insertInto: self)
    }

    /// Saves, or rolls every change back when the save fails (the book's
    /// `saveOrRollback()`). Returns whether the save succeeded.
    ///
    /// ```swift
    /// _ = Mood.insert(into: context, colors: colors)
    /// context.saveOrRollback()
    /// ```
    ///
    /// - Returns: True when the save succeeded, false when it failed and the
    ///   changes were rolled back.
    @discardableResult
    public func saveOrRollback() -> Bool {
        do {
            try save()
            return true
        } catch {
            rollback()
            return false
        }
    }
}

extension Managed where Self: ManagedObject {
    /// The single object a request for the entity returns after `configure`
    /// configured it, remembered in the context under `cacheKey` so that later
    /// calls do not fetch again (the book's `fetchSingleObject(in:cacheKey:configure:)`).
    /// Nil when nothing matches.
    ///
    /// ```swift
    /// let germany = try Country.fetchSingleObject(in: context, cacheKey: "country-276") { request in
    ///     request.predicate = try? CorePredicate(format: "numericISO3166Code == 276")
    /// }
    /// ```
    ///
    /// More than one match is an error; the book stops the program there.
    ///
    /// - Parameters:
    ///   - context: The context to fetch in, which keeps the cache.
    ///   - cacheKey: The key the object is remembered under.
    ///   - configure: Sets up the request (its predicate, most often).
    /// - Returns: The object, or nil when nothing matches.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060), naming the entity, when more than one object matches; the
    ///   errors of ``ManagedObjectContext/fetch(_:)``.
    public static func fetchSingleObject(in context: ManagedObjectContext, cacheKey: String,
                                         configure: (FetchRequest<Self>) -> Void) throws -> Self? {
        if let cached = context.object(forSingleObjectCacheKey: cacheKey) as? Self, !cached.isDeleted,
           cached.managedObjectContext === context {
            return cached
        }
        let result = try fetchSingleObject(in: context, configure: configure)
        context.set(result, forSingleObjectCacheKey: cacheKey)
        return result
    }

    private static func fetchSingleObject(in context: ManagedObjectContext,
                                          configure: (FetchRequest<Self>) -> Void) throws -> Self? {
        let result = try fetch(in: context) { request in
            configure(request)
            request.fetchLimit = 2
        }
        switch result.count {
        case 0: return nil
        case 1: return result[0]
        default:
            throw CoreDataError(.coreData, "fetchSingleObject: more than one \(entityName) matches the request",
                                entityName: entityName)
        }
    }
}

extension ManagedObjectContext {
    private static let singleObjectCacheKey = "SingleObjectCache"

    /// Remembers `object` (or forgets the entry, for nil) under `key` in the
    /// context's ``userInfo`` (the book's `set(_:forSingleObjectCacheKey:)`).
    ///
    /// ```swift
    /// context.set(germany, forSingleObjectCacheKey: "country-276")
    /// ```
    ///
    /// - Parameters:
    ///   - object: The object to remember, or nil to forget the entry.
    ///   - key: The key.
    public func set(_ object: ManagedObject?, forSingleObjectCacheKey key: String) {
        var cache = userInfo[Self.singleObjectCacheKey] as? [String: ManagedObject] ?? [:]
        cache[key] = object
        userInfo[Self.singleObjectCacheKey] = cache
    }

    /// The object remembered under `key` (the book's `object(forSingleObjectCacheKey:)`).
    ///
    /// ```swift
    /// let germany = context.object(forSingleObjectCacheKey: "country-276") as? Country
    /// ```
    ///
    /// - Parameter key: The key.
    /// - Returns: The object, or nil when none is remembered under `key`.
    public func object(forSingleObjectCacheKey key: String) -> ManagedObject? {
        (userInfo[Self.singleObjectCacheKey] as? [String: ManagedObject])?[key]
    }
}
