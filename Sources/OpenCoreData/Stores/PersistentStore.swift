import Foundation
import OpenCoreDataPredicates

/// A persistent store: where a coordinator keeps objects between runs
/// (`NSPersistentStore`).
///
/// OpenCoreData ships an in-memory store and (with the SQLite store) Core Data's
/// SQLite format; custom stores conform to this protocol. A store deals in rows
/// (``RowSnapshot``), never in managed objects: contexts turn rows into objects.
/// Stores are shared by every context of a coordinator and must be thread-safe.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// let store = try coordinator.addPersistentStore(type: .inMemory)
/// store.identifier   // the store UUID, part of every object ID URI
/// ```
public protocol PersistentStore: AnyObject, Sendable {
    /// The store's UUID (`NSStoreUUIDKey`), part of every object ID URI.
    var identifier: String { get }
    /// The store's type.
    var type: PersistentStoreType { get }
    /// The store's file, if it has one.
    var url: URL? { get }
    /// The model configuration whose entities the store holds (nil: all).
    var configurationName: String? { get }
    /// Whether saving to the store is refused.
    var isReadOnly: Bool { get }
    /// The store's metadata: version hashes, identifiers and your own keys.
    var metadata: [String: AttributeValue] { get }

    /// The rows matching a fetch, sorted, offset and limited as it asks.
    ///
    /// - Parameter fetch: The entity, predicate, sort, offset and limit.
    /// - Returns: The matching rows. When the fetch does not include property
    ///   values, a store may leave the values out and give version 0.
    func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot]
    /// The number of rows matching a fetch.
    ///
    /// - Parameter fetch: The entity and predicate of the rows counted.
    /// - Returns: The number of matching rows.
    func count(_ fetch: StoreFetch) throws -> Int
    /// The row of one object, or nil when the store has none (it was deleted).
    ///
    /// - Parameter objectID: The object's permanent ID.
    /// - Returns: The row, or nil.
    func row(for objectID: ManagedObjectID) throws -> RowSnapshot?
    /// The IDs of the objects a to-many relationship of `objectID` holds, in order
    /// for an ordered relationship.
    ///
    /// - Parameters:
    ///   - objectID: The source object.
    ///   - relationship: A to-many relationship of the source's entity.
    /// - Returns: The destinations' IDs.
    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID]
    /// The rows of the objects the to-many relationship `relationship` holds, for
    /// each of `objectIDs` (the result is in the same order; each source's rows in
    /// the relationship's order when it is ordered), read with one query or a few
    /// whatever the number of sources; nil when the store has no cheaper way than
    /// ``relatedObjectIDs(of:relationship:)`` and ``row(for:)``. Stores get a nil
    /// implementation for free.
    ///
    /// Firing a to-many fault (one source) or prefetching a to-many relationship
    /// (every fetched object), a context puts these rows into the coordinator's row
    /// cache, so the destination faults fire without going to the store again:
    ///
    /// ```swift
    /// request.relationshipKeyPathsForPrefetching = ["children"]
    /// for parent in try context.fetch(request) {                     // two queries
    ///     for child in parent.objects(forRelationship: "children") {
    ///         _ = child.value(forKey: "name")                        // no query
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - objectIDs: The source objects.
    ///   - relationship: A to-many relationship of the sources' entity.
    /// - Returns: The destination rows of each source, or nil.
    func relatedRows(of objectIDs: [ManagedObjectID], relationship: RelationshipDescription) throws -> [[RowSnapshot]]?
    /// The rows of `objectIDs` (distinct, all of `entity` or its subentities) with
    /// one read, in any order, leaving out those the store does not have; nil when
    /// the store has no cheaper way than a fetch with a `SELF IN` predicate. Stores
    /// get a nil implementation for free.
    ///
    /// Batched fetch results load each batch with it:
    ///
    /// ```swift
    /// request.fetchBatchSize = 20
    /// for mood in try context.fetchInBatches(request) { ... }   // one read per 20
    /// ```
    ///
    /// - Parameters:
    ///   - objectIDs: The objects, distinct.
    ///   - entity: The entity of the objects, or their common superentity.
    /// - Returns: The rows the store has, or nil.
    func rows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) throws -> [RowSnapshot]?
    /// Reserves permanent IDs for new objects of `entity`.
    ///
    /// - Parameters:
    ///   - entity: The entity of the new objects.
    ///   - count: The number of IDs wanted.
    /// - Returns: `count` IDs no object of the store has had.
    func newObjectIDs(for entity: EntityDescription, count: Int) throws -> [ManagedObjectID]
    /// Applies one save atomically: every change or none. Rows being updated or
    /// deleted carry the version they were read at; if the stored version differs,
    /// the save fails with ``CoreDataError/Code/managedObjectMerge`` (133020) and
    /// nothing is written.
    ///
    /// - Parameter changes: The rows inserted, updated and deleted.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/managedObjectMerge`` (133020) on a version
    ///   conflict; another code (such as ``CoreDataError/Code/persistentStoreSave``,
    ///   134030) when the store cannot write.
    func save(_ changes: SaveChanges) throws
    /// Dictionary results (`propertiesToFetch`, grouping, aggregates). Stores get
    /// an evaluating implementation for free; see ``StoreDictionaryFetch``.
    ///
    /// - Parameter request: The fetch, the properties and expressions fetched,
    ///   the grouping.
    /// - Returns: One dictionary per result, by property or expression name.
    func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]]
    /// Runs a batch insert, update or delete without objects and returns the IDs
    /// of the rows it changed. Stores get an implementation over ``fetchRows(_:)``
    /// and ``save(_:)`` for free; see ``StoreBatchRequest``.
    ///
    /// - Parameter request: The rows to insert, update or delete.
    /// - Returns: The IDs of the rows changed, cascaded deletes included.
    func execute(_ request: StoreBatchRequest) throws -> [ManagedObjectID]
    /// Runs a batch insert, update or delete and reports what `resultType` asks
    /// for: the IDs of the rows it changed, their number, or only success. A store
    /// that can change rows without reading their IDs first implements it (the
    /// SQLite store's batch delete is then one `DELETE`, its number of rows
    /// counted by SQLite); stores get an implementation over ``execute(_:)`` for
    /// free.
    ///
    /// ```swift
    /// let result = try store.execute(.delete(fetch), resultType: .count)
    /// result.count   // the rows deleted, cascades included
    /// ```
    ///
    /// - Parameters:
    ///   - request: The rows to insert, update or delete.
    ///   - resultType: What to report.
    /// - Returns: Success, the number of rows changed, or their IDs.
    func execute(_ request: StoreBatchRequest, resultType: BatchRequestResultType) throws -> PersistentStoreResult
    /// Reserves the primary keys of `objectIDs`, permanent IDs of this store chosen
    /// by a caller (``ManagedObjectContext/assignObjectIDs(_:to:)``): keys the store
    /// hands out afterwards (``newObjectIDs(for:count:)``) are greater.
    ///
    /// - Parameter objectIDs: Permanent IDs of this store.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   when the store cannot (the default); a store error when reserving fails.
    func reserveObjectIDs(_ objectIDs: [ManagedObjectID]) throws
    /// Called when the store has been added to `coordinator`
    /// (`NSPersistentStore.didAdd(to:)`): a store that learns of other writers'
    /// changes starts listening here. Stores get an empty implementation for free.
    ///
    /// - Parameter coordinator: The coordinator the store now belongs to.
    func didAdd(to coordinator: PersistentStoreCoordinator)
    /// Called before the store is removed from `coordinator`
    /// (`NSPersistentStore.willRemove(from:)`). Stores get an empty
    /// implementation for free.
    ///
    /// - Parameter coordinator: The coordinator the store is leaving.
    func willRemove(from coordinator: PersistentStoreCoordinator)
    /// How many rows a batched fetch (``FetchRequest/fetchBatchSize``) may load
    /// with one read when its results are read in order: 0 loads one batch at a
    /// time, as Core Data does, which suits a store in a local file. A store whose
    /// every read is a network round trip gives more: reading on from one batch to
    /// the next doubles the batches the next read loads, up to this many rows; a
    /// jump elsewhere loads one batch again. Stores get 0 for free.
    var batchReadAheadRows: Int { get }
    /// Says that ``rows(for:of:)`` will soon be asked for `objectIDs`: the next
    /// read of a batched fetch whose results are read in order. A store whose
    /// reads are network round trips can send that read now, so that the server
    /// finds the rows while the caller works through the ones it has; the later
    /// ``rows(for:of:)`` takes them if nothing changed meanwhile. A hint only:
    /// stores get a no-op for free.
    ///
    /// - Parameters:
    ///   - objectIDs: Permanent IDs of this store, of `entity` or its subentities.
    ///   - entity: The entity of the rows.
    func prepareRows(for objectIDs: [ManagedObjectID], of entity: EntityDescription)
}

extension PersistentStore {
    /// No single-query read of a relationship's rows: contexts ask for the IDs.
    public func relatedRows(of objectIDs: [ManagedObjectID], relationship: RelationshipDescription) throws -> [[RowSnapshot]]? { nil }
    /// No single read of several rows by ID: contexts fetch them with a predicate.
    public func rows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) throws -> [RowSnapshot]? { nil }
    /// Keys chosen by callers are not supported.
    public func reserveObjectIDs(_ objectIDs: [ManagedObjectID]) throws {
        throw CoreDataError(.persistentStoreUnsupportedRequestType,
                            "The store \(identifier) cannot give objects IDs chosen by the caller")
    }
    /// Nothing to do when added to a coordinator.
    public func didAdd(to coordinator: PersistentStoreCoordinator) {}
    /// Nothing to do when removed from a coordinator.
    public func willRemove(from coordinator: PersistentStoreCoordinator) {}
    /// No read-ahead: a batched fetch loads one batch a read.
    public var batchReadAheadRows: Int { 0 }
    /// Reads are not started ahead of need.
    public func prepareRows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) {}
    /// The batch request run by ``execute(_:)``, its IDs reported as `resultType` asks.
    public func execute(_ request: StoreBatchRequest, resultType: BatchRequestResultType) throws -> PersistentStoreResult {
        PersistentStoreResult(resultType, try execute(request))
    }
}

/// The kind of a persistent store (`NSPersistentStore.StoreType`).
public struct PersistentStoreType: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A store that lives in memory only.
    public static let inMemory = PersistentStoreType(rawValue: "InMemory")
    /// Core Data's SQLite store.
    public static let sqlite = PersistentStoreType(rawValue: "SQLite")
}

/// What a store is asked to fetch: one entity (with its subentities, unless told
/// otherwise), a predicate, a sort, an offset and a limit.
public struct StoreFetch: Sendable {
    /// The entity to fetch.
    public var entity: EntityDescription
    /// Whether objects of subentities are included.
    public var includesSubentities: Bool = true
    /// Which rows match (nil: all).
    public var predicate: CorePredicate?
    /// The order of the rows.
    public var sortDescriptors: [CoreSortDescriptor] = []
    /// Skip this many rows.
    public var fetchOffset: Int = 0
    /// At most this many rows (0: no limit).
    public var fetchLimit: Int = 0
    /// Whether the rows carry their values (false: only object IDs are needed; a
    /// store may leave the values out and give version 0).
    public var includesPropertyValues: Bool = true
    /// For an ID fetch (``includesPropertyValues`` false) in no order: the size
    /// of the batches in which the caller reads the rows of these IDs next, in
    /// their order (``ManagedObjectContext/fetchInBatches(_:)``); 0 when it
    /// does not. A store whose reads are network round trips may start reading
    /// those rows with the IDs. A hint only, like
    /// ``PersistentStore/prepareRows(for:of:)``.
    public var fetchBatchSize: Int = 0

    public init(entity: EntityDescription) { self.entity = entity }
}

/// One property's value in a row.
public enum SnapshotValue: Sendable, Hashable {
    /// An attribute's value.
    case attribute(AttributeValue)
    /// A to-one relationship's destination.
    case toOne(ManagedObjectID?)
    /// A to-many relationship's destinations (in order for an ordered one), or nil
    /// while not loaded (a to-many fault).
    case toMany([ManagedObjectID]?)

    var attributeValue: AttributeValue {
        if case .attribute(let value) = self { return value }
        return .null
    }
}

/// A row of a store: one object's stored values, indexed like
/// ``EntityDescription/allProperties``, and its version (`Z_OPT`).
public struct RowSnapshot: Sendable {
    /// The object the row belongs to.
    public var objectID: ManagedObjectID
    /// The optimistic-locking version: 1 on insert, +1 on each saved update.
    public var version: Int64
    /// The values, indexed like the entity's `allProperties`.
    public var values: [SnapshotValue] {
        get { rowValues.array }
        set { rowValues = RowValues(newValue) }
    }
    /// The values as the framework keeps them: in place in the page a store read
    /// them into (see ``RowPage``), with no array of their own.
    var rowValues: RowValues

    public init(objectID: ManagedObjectID, version: Int64, values: [SnapshotValue]) {
        self.objectID = objectID
        self.version = version
        self.rowValues = RowValues(values)
    }

    init(objectID: ManagedObjectID, version: Int64, rowValues: RowValues) {
        self.objectID = objectID
        self.version = version
        self.rowValues = rowValues
    }

    /// A row whose values are the `count` at `start` in `page`, written there by
    /// a store's reader (see ``RowPageWriter``).
    package init(objectID: ManagedObjectID, version: Int64, page: RowPage, start: Int, count: Int) {
        self.init(objectID: objectID, version: version, rowValues: RowValues(page: page, start: start, count: count))
    }

    /// Moves the values out, leaving none: the caller takes the row's
    /// reference (no retain now, no release when the row goes).
    mutating func takeValues() -> RowValues {
        var taken = RowValues()
        swap(&taken, &rowValues)
        return taken
    }

    /// The value of the property at `index` of the entity's `allProperties`
    /// (`values[index]` without making the array), or nil past the end.
    ///
    /// - Parameter index: A position in the entity's `allProperties`.
    /// - Returns: The value, or nil when the row has no value at `index`.
    public func value(at index: Int) -> SnapshotValue? {
        index >= 0 && index < rowValues.count ? rowValues[index] : nil
    }

    /// The value of the property named `name`.
    ///
    /// - Parameter name: A property of the row's entity.
    /// - Returns: The value, or nil when the entity has no such property.
    public func value(named name: String) -> SnapshotValue? {
        guard let index = objectID.entity.propertyIndex(named: name), index < rowValues.count else { return nil }
        return rowValues[index]
    }
}

/// The changes of one save, handed to a store to apply atomically.
public struct SaveChanges: Sendable {
    /// New rows, with permanent IDs.
    public var inserted: [RowSnapshot] = []
    /// Changed rows with their new values; `version` is the version they were read at.
    public var updated: [RowSnapshot] = []
    /// For each updated row, the indexes of the properties that changed.
    public var changedProperties: [ManagedObjectID: [Int]] = [:]
    /// Deleted objects with the version they were read at (0: not checked).
    public var deleted: [(ManagedObjectID, Int64)] = []
    /// The saving context's `transactionAuthor`, for persistent history.
    public var transactionAuthor: String?
    /// The saving context's `name`, for persistent history.
    public var contextName: String?

    public init() {}

    /// Whether every inserted, updated and deleted row is in the store `store`
    /// names (``ManagedObjectID/storeIdentity``): the rows are looked at in place, by
    /// index (iterating them would copy each, retaining its values).
    func allInStore(_ store: ObjectIdentifier) -> Bool {
        func all(_ rows: [RowSnapshot]) -> Bool {
            rows.withUnsafeBufferPointer { rows in
                for index in rows.indices where rows[index].objectID.storeIdentity != store { return false }
                return true
            }
        }
        return all(inserted) && all(updated) && deleted.allSatisfy { $0.0.storeIdentity == store }
    }
}

extension EntityDescription {
    /// The index of a property in ``allProperties``.
    ///
    /// - Parameter name: The property's name.
    /// - Returns: The index, or nil when the entity has no such property.
    public func propertyIndex(named name: String) -> Int? {
        indexOfProperty(named: name)
    }
}
