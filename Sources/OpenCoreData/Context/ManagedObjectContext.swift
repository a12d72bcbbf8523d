import Foundation
import OpenCoreDataPredicates
import Synchronization

/// A scratch pad of managed objects (`NSManagedObjectContext`): it fetches them,
/// keeps exactly one object per record, tracks every change, maintains inverse
/// relationships and delete rules, validates, and commits everything at once with
/// ``save()``.
///
/// ```swift
/// let context = ManagedObjectContext(concurrencyType: .mainQueue)
/// context.persistentStoreCoordinator = coordinator
///
/// let mood = Mood(context: context)
/// mood.date = Date()
/// try context.save()
///
/// let request = FetchRequest<Mood>(entityName: "Mood")
/// request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
/// let moods = try context.fetch(request)
/// ```
///
/// A context and its objects belong to one queue (see ``perform(_:)`` and
/// <doc:ContextsAndConcurrency>); objects are not `Sendable`, other contexts
/// receive object IDs. Objects nobody holds and that have no unsaved changes are
/// no longer registered (registration is weak), unless ``retainsRegisteredObjects``
/// is set; the context frees them when it next looks at them (a lookup, a listing,
/// the end of a save, ``reset()``), on its queue.
///
/// `@unchecked Sendable`, as Core Data's `NSManagedObjectContext` is: the context
/// may be handed to any task or thread, but its state is only touched on its own
/// queue (``perform(_:)``, ``performAndWait(_:)``, or the main queue for a
/// main-queue context). The concurrency debug mode checks that at every entry
/// point.
public final class ManagedObjectContext: @unchecked Sendable {
    /// How a context is confined.
    public enum ConcurrencyType: Sendable {
        /// The main queue.
        case mainQueue
        /// A private queue of the context's own.
        case privateQueue
    }

    /// Whether saves validate the objects they write (true). Tools that copy a
    /// store as it is (`ocd store load`) turn it off: a store may hold values its
    /// model's rules refuse, and a copy made in batches is incomplete until its
    /// last batch (a required relationship is set in a later one).
    package var validatesOnSave = true

    /// The context's concurrency type.
    public let concurrencyType: ConcurrencyType
    /// The coordinator the context reads from and saves to.
    public var persistentStoreCoordinator: PersistentStoreCoordinator? {
        get { coordinator }
        set {
            let previous = coordinator
            coordinator = newValue
            updateMergeRegistration(previous: previous)
        }
    }
    /// Every fault fired reads it: a checked read of a class's stored property costs
    /// a call into the runtime.
    @exclusivity(unchecked) private(set) var coordinator: PersistentStoreCoordinator?  // unchecked: context queue only, never held across a call
    /// The queue the context and its objects belong to.
    let contextQueue: ContextQueue
    /// The context this one reads from and saves to instead of the coordinator
    /// (`parent`): a child context's save pushes its changes into the parent
    /// only, its fetches and faults see the parent's unsaved state. Setting it
    /// sets ``persistentStoreCoordinator`` to the parent's. Set it before use.
    ///
    /// ```swift
    /// let editing = ManagedObjectContext(concurrencyType: .mainQueue)
    /// editing.parent = container.viewContext
    /// // edit, then: try editing.save() (into viewContext), or just drop it
    /// ```
    public var parent: ManagedObjectContext? {
        didSet {
            let key = ObjectIdentifier(self)
            _ = oldValue?.mergingChildren.withLock { $0.removeValue(forKey: key) }
            parent?.hasChildren.store(true, ordering: .relaxed)
            persistentStoreCoordinator = parent?.persistentStoreCoordinator
        }
    }
    /// Whether a child context was ever attached: saves then remember which
    /// temporary IDs became which permanent ones, for the children.
    let hasChildren = Atomic(false)
    /// Temporary IDs of objects saved to the store, and their permanent IDs.
    @exclusivity(unchecked) var savedTemporaryIDs: [ManagedObjectID: ManagedObjectID] = [:]  // unchecked: context queue only, never held across a call
    /// The child contexts that merge this context's saves and their siblings'.
    let mergingChildren = Lock<[ObjectIdentifier: WeakContext]>([:])
    /// A name for the context, recorded in persistent history and logs.
    public var name: String?
    /// The author recorded with this context's saves in persistent history.
    public var transactionAuthor: String?
    /// Your own values kept with the context (`userInfo`), such as caches of
    /// objects fetched once (``Managed/fetchSingleObject(in:cacheKey:configure:)``).
    /// Like the context, use it on the context's queue.
    public var userInfo: [String: Any] = [:]
    /// Whether the context merges, on its queue, the saves of the other contexts
    /// of its coordinator — for a child context, the saves of its parent and of
    /// its sibling children into the parent (`automaticallyMergesChangesFromParent`);
    /// see ``mergeChanges(from:)``.
    public var automaticallyMergesChangesFromParent = false {
        didSet { updateMergeRegistration(previous: persistentStoreCoordinator) }
    }
    /// How a save resolves conflicts with changes saved meanwhile by others
    /// (``MergePolicy/error`` by default: the save fails).
    public var mergePolicy: MergePolicy = .error
    /// The context's undo manager (nil: changes are not undoable).
    public var undoManager: CoreUndoManager?
    /// Whether the context keeps strong references to every registered object.
    public var retainsRegisteredObjects = false {
        didSet {
            if retainsRegisteredObjects {
                for object in registry.objects { strong.insert(object) }
            } else {
                strong = strong.filter { $0.hasChanges }
            }
        }
    }

    // Exclusivity: the context's bookkeeping below is `@exclusivity(unchecked)`:
    // it is touched on the context's queue only, never across a call that could
    // reach it again within one access (see ManagedObject, docs/performance.md).

    /// Every registered object, weakly (see ObjectRegistry.swift).
    let registry = ObjectRegistry()
    /// Objects held strongly: changed ones, or all with `retainsRegisteredObjects`.
    ///
    /// The change sets are sets of objects, hashed by identity (see
    /// ``ManagedObject/_rawHashValue(seed:)``): the notifications' sets of objects
    /// are these sets themselves, not copies built object by object (a pass over
    /// every changed object, each one retained and later released).
    @exclusivity(unchecked) var strong: Set<ManagedObject> = [] { didSet { changeSetVersion &+= 1 } }  // unchecked: context queue only, never held across a call
    /// New objects (inserted and not saved), and deleted ones.
    @exclusivity(unchecked) var insertedObjectsByID: Set<ManagedObject> = [] { didSet { changeSetVersion &+= 1 } }  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var deletedObjectsByID: Set<ManagedObject> = [] { didSet { changeSetVersion &+= 1 } }  // unchecked: context queue only, never held across a call
    /// Counts the accesses that may have changed `strong`, `insertedObjectsByID` or
    /// `deletedObjectsByID` (a save knows from it that user code it called left
    /// them alone). The observers do not read the old value, so the sets are still
    /// changed in place.
    @exclusivity(unchecked) var changeSetVersion = 0  // unchecked: context queue only, never held across a call
    /// Deleted since the last `processPendingChanges`: their delete rules are pending.
    @exclusivity(unchecked) var pendingDeletes: [ManagedObject] = []  // unchecked: context queue only, never held across a call
    /// Changes since the last objects-did-change notification.
    @exclusivity(unchecked) var eventInserted: Set<ManagedObject> = []  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var eventUpdated: Set<ManagedObject> = []  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var eventDeleted: Set<ManagedObject> = []  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var eventRefreshed: Set<ManagedObject> = []  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var isProcessingChanges = false  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var isUndoingOrRedoing = false  // unchecked: context queue only, never held across a call
    /// The number of the current event (since the last `processPendingChanges`).
    /// An object's `eventStart` is the current event's when the object carries
    /// this number: the event ends by taking a new number, without a pass over
    /// the objects it changed (each one a cache miss in a large import) to clear
    /// them. Numbers come from one process-wide counter, so an object that moves
    /// to another context cannot carry that context's number by chance.
    @exclusivity(unchecked) var eventNumber = ManagedObjectContext.newEventNumber()  // unchecked: context queue only, never held across a call

    private static let eventNumbers = Atomic<Int>(0)

    static func newEventNumber() -> Int {
        eventNumbers.add(1, ordering: .relaxed).newValue
    }

    /// Ends the current event: every object's `eventStart` becomes stale.
    func endEvent() {
        eventNumber = ManagedObjectContext.newEventNumber()
    }

    /// The values `object` had when the current event first changed it; nil if
    /// the event has not changed it.
    func eventStart(of object: ManagedObject) -> RowValues? {
        object.eventNumber == eventNumber ? object.eventStart : nil
    }
    /// The coordinator's row generation when the last fetch began (see `makeFault`).
    @exclusivity(unchecked) var rowGenerationAtFetch = -1  // unchecked: context queue only, never held across a call
    var saveObservers: [UUID: AsyncStream<ContextSaveSummary>.Continuation] = [:]
    var changeObservers: [UUID: AsyncStream<ContextChangeSummary>.Continuation] = [:]
    /// Called synchronously at the end of each event, save, reset and rollback
    /// (ManagedObjectContext+Observers.swift).
    var synchronousObservers: [ObjectIdentifier: WeakChangeObserver] = [:]
    /// Query generations (QueryGenerationToken.swift).
    var queryGenerationState = QueryGenerationState.unpinned

    /// A context of the given concurrency type.
    ///
    /// - Parameter concurrencyType: The queue the context runs on: the main
    ///   queue, or a private queue of its own.
    public init(concurrencyType: ConcurrencyType) {
        self.concurrencyType = concurrencyType
        self.contextQueue = ContextQueue(main: concurrencyType == .mainQueue, label: "OpenCoreData.ManagedObjectContext")
    }

    deinit {
        for continuation in saveObservers.values { continuation.finish() }
        for continuation in changeObservers.values { continuation.finish() }
    }

    // MARK: Registered objects

    /// The objects registered with the context that something still holds: you,
    /// another object, or the context itself (changed objects, or all of them with
    /// ``retainsRegisteredObjects``).
    public var registeredObjects: Set<ManagedObject> {
        Set(registry.objects)
    }

    /// The registered object with `id`, or nil (never a new fault, never a fetch).
    ///
    /// - Parameter id: The ID of the object.
    /// - Returns: The object registered under `id`, or nil.
    public func registeredObject(for id: ManagedObjectID) -> ManagedObject? {
        registry[id]
    }

    /// The object with `id`: the registered one, else a fault for it (Core Data's
    /// `object(with:)`). The fault fires when a value is read; if the store has no
    /// such object, the values read are nil.
    ///
    /// - Parameter id: The ID of the object.
    /// - Returns: The registered object, or a new fault registered under `id`.
    public func object(with id: ManagedObjectID) -> ManagedObject {
        assertOnQueue()
        if let object = registry[id] { return object }
        return makeFault(id, row: nil)
    }

    /// The object with `id`, loaded from the store, or an error when it does not
    /// exist (Core Data's `existingObject(with:)`).
    ///
    /// - Parameter id: The ID of the object.
    /// - Returns: The object, registered in this context, its values loaded.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/managedObjectReferentialIntegrity`` (133000) when
    ///   the store has no such object, or `id` is a temporary ID not registered
    ///   here; any error the store reports while reading.
    public func existingObject(with id: ManagedObjectID) throws -> ManagedObject {
        assertOnQueue()
        if let object = registry[id] {
            if object.isFault { try fulfill(object) }
            if object.isDeleted || object.storage != nil { return object }
        }
        guard !id.isTemporaryID || parent != nil else {
            throw CoreDataError(.managedObjectReferentialIntegrity, "No object with temporary ID \(id) is registered in this context",
                                objectDescription: id.description)
        }
        guard persistentStoreCoordinator != nil, let row = try sourceRow(for: id) else {
            throw CoreDataError(.managedObjectReferentialIntegrity, "The object \(id) does not exist in the store",
                                entityName: id.entityName, objectDescription: id.description)
        }
        let object = makeFault(id, row: row)
        if object.isFault { try fulfill(object) }
        return object
    }

    /// The entity of a managed object subclass in this context's model.
    func entity(for type: ManagedObject.Type) -> EntityDescription? {
        ManagedObjectClasses.register(type)
        let name = String(describing: type)
        return persistentStoreCoordinator?.managedObjectModel.entity(forClassNamed: name) ?? type.entity()
    }

    func register(_ object: ManagedObject, unregistered: Bool = false) {
        if unregistered { registry.registerFetched(object) } else { registry.register(object) }
        object.managedObjectContext = self
        if retainsRegisteredObjects { strong.insert(object) }
    }

    func unregister(_ object: ManagedObject) {
        registry.unregister(object)
        strong.remove(object)
        // The change sets hold exactly the objects with the flag set.
        if object.insertedFlag { insertedObjectsByID.remove(object) }
        if object.deletedFlag { deletedObjectsByID.remove(object) }
        if object.managedObjectContext === self { object.managedObjectContext = nil }
    }

    /// Creates (and registers) a fault for `id`. A fault made from a fetched `row`
    /// keeps it and fires from it — no query, no shared cache — as long as no save
    /// through the coordinator has changed rows since the fetch began
    /// (`PersistentStoreCoordinator.rowGeneration`); after one, it fires from the
    /// coordinator's row cache or the store, and sees the save.
    @discardableResult
    func makeFault(_ id: ManagedObjectID, row: RowSnapshot?, generation: Int? = nil, type knownType: ManagedObject.Type? = nil,
                   unregistered: Bool = false) -> ManagedObject {
        makeFault(id, rowValues: row?.rowValues, version: row?.version ?? 0, generation: generation, type: knownType,
                  unregistered: unregistered)
    }

    /// ``makeFault(_:row:generation:type:unregistered:)`` with the row's values
    /// taken (the caller's last reference to them moves into the fault).
    ///
    /// `unregistered`: the caller knows no object with `id` is registered (a fetch
    /// into a registry that was empty, see `ObjectRegistry.registerFetched`).
    func makeFault(_ id: ManagedObjectID, rowValues: consuming RowValues?, version: Int64, generation: Int? = nil,
                   type knownType: ManagedObject.Type? = nil, unregistered: Bool = false) -> ManagedObject {
        let type = knownType ?? id.withEntity { ManagedObjectClasses.type(for: $0) }
        let object = type.init(entity: id.entity, insertInto: nil)
        object.objectID = id
        object.storage = nil
        register(object, unregistered: unregistered)
        guard persistentStoreCoordinator != nil, sharesRowCache else { return object }
        switch consume rowValues {
        case .some(let values):
            object.faultRow = ManagedObject.KeptRow(values: values, version: version)
            object.faultRowGeneration = generation ?? rowGenerationAtFetch
        case .none:
            break
        }
        return object
    }

    /// Loads a fault's values from the row cache or the store.
    func fulfill(_ object: ManagedObject) throws {
        guard object.storage == nil else { return }
        guard persistentStoreCoordinator != nil else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator to fulfill \(object.objectID)")
        }
        if case .some(var row) = object.faultRow.take() {
            // (The coordinator read in place, not bound: binding it would retain it.)
            if object.faultRowGeneration == persistentStoreCoordinator.unsafelyUnwrapped.rowGeneration.load(ordering: .acquiring) {
                // The fault's reference to the row's values moves into the object.
                load(taking: row.takeValues(), version: row.version, into: object)
                object.awakeFromFetch()
                return
            }
        }
        guard let row = try sourceRow(for: object.objectID) else {
            throw CoreDataError(.managedObjectReferentialIntegrity, "CoreData could not fulfill a fault for \(object.objectID): the object no longer exists in the store",
                                entityName: object.entity.name, objectDescription: object.objectID.description)
        }
        load(row, into: object)
        object.awakeFromFetch()
    }

    /// Gives a fault the values of `row`; to-many relationships stay faults.
    func load(_ row: RowSnapshot, into object: ManagedObject) {
        load(row.rowValues, version: row.version, into: object)
    }

    /// Gives a fault the values and version of its row.
    func load(_ rowValues: RowValues, version: Int64, into object: ManagedObject) {
        load(taking: rowValues, version: version, into: object)
    }

    /// Gives a fault the values and version of its row, taking the values (the
    /// caller's last reference to them moves into the object: no retain for it).
    func load(taking rowValues: consuming RowValues, version: Int64, into object: ManagedObject) {
        var values = consume rowValues
        // (Written only when needed: a write copies the row out of its page.)
        if object.entity.frozenHasToMany ?? true {
            for index in values.indices {
                if case .toMany(let ids) = values[index], ids != nil { values[index] = .toMany(nil) }
            }
        }
        object.loadRow(consume values, version: version)
        // The object now holds its row (`committed`): the coordinator's row cache is
        // for faults, which have nothing else to fire from.
    }

    /// Fires `object`'s fault, if it is one. A fault whose row is gone is loaded with
    /// nil values (Core Data raises an exception there).
    func fireFault(_ object: ManagedObject) {
        guard object.storage == nil else { return }
        do {
            try fulfill(object)
        } catch {
            object.storage = RowValues(object.entity.allProperties.map { property in
                (property as? RelationshipDescription)?.isToMany == true ? .toMany([]) : (property is RelationshipDescription ? .toOne(nil) : .attribute(.null))
            })
        }
    }

    // MARK: Inserting and deleting

    /// Inserts a new object (one created with `insertInto: nil`), or re-inserts a
    /// deleted one. Calls `awakeFromInsert()` on first insertion.
    ///
    /// - Parameter object: An object in no context, or one deleted in this
    ///   context; an object of another context is left alone.
    public func insert(_ object: ManagedObject) {
        assertOnQueue()
        if object.deletedFlag, object.managedObjectContext === self {
            undelete(object)
            return
        }
        guard object.managedObjectContext == nil else { return }
        // The event's starting values: a new object's changes in the event of its
        // insertion are part of the insertion (and need no recording as updates).
        if object.storage == nil {
            // The entity's shared initial values start the event; the object gets
            // a copy of its own, made now (its first write would make it anyway).
            let initial = ManagedObjectContext.initialValues(for: object.entity)
            object.storage = initial.copied()
            object.eventStart = initial
        } else {
            object.eventStart = object.storage
        }
        object.eventNumber = eventNumber
        object.insertedFlag = true
        register(object)
        strong.insert(object)
        insertedObjectsByID.insert(object)
        eventInserted.insert(object)
        if isRegisteringUndo { registerUndo { context in context.uninsert(object) } }
        object.awakeFromInsert()
    }

    static func initialValues(for entity: EntityDescription) -> RowValues {
        entity.frozenInitialValues ?? computeInitialValues(for: entity)
    }

    static func computeInitialValues(for entity: EntityDescription) -> RowValues {
        RowValues(entity.allProperties.map { property -> SnapshotValue in
            switch property {
            case let attribute as AttributeDescription: return .attribute(attribute.defaultValue ?? .null)
            case let relationship as RelationshipDescription: return relationship.isToMany ? .toMany([]) : .toOne(nil)
            default: return .attribute(.null)
            }
        })
    }

    /// Undoes an insertion (undo of insert).
    func uninsert(_ object: ManagedObject) {
        guard object.insertedFlag else { return }
        // Detach relationships so that the other side forgets the object too.
        for (index, property) in object.entity.allProperties.enumerated() {
            guard let relationship = property as? RelationshipDescription else { continue }
            for related in relatedObjects(of: object, index: index) {
                removeInverse(of: relationship, from: related, pointingTo: object)
            }
        }
        object.insertedFlag = false
        insertedObjectsByID.remove(object)
        // Inserted in an earlier event: observers saw it arrive, now it leaves.
        if eventInserted.remove(object) == nil { eventDeleted.insert(object) }
        unregister(object)
        registerUndo { context in
            object.managedObjectContext = nil
            context.insert(object)
        }
    }

    /// Marks an object for deletion at the next save. Delete rules apply at the end
    /// of the event (``processPendingChanges()``). Deleting a new, unsaved object
    /// simply forgets it.
    ///
    /// - Parameter object: An object of this context; objects of other contexts,
    ///   and objects already deleted, are left alone.
    public func delete(_ object: ManagedObject) {
        assertOnQueue()
        guard object.managedObjectContext === self, !object.deletedFlag else { return }
        fireFault(object)
        object.deletedFlag = true
        strong.insert(object)
        deletedObjectsByID.insert(object)
        eventDeleted.insert(object)
        pendingDeletes.append(object)
        if isRegisteringUndo { registerUndo { context in context.undelete(object) } }
    }

    func undelete(_ object: ManagedObject) {
        guard object.deletedFlag else { return }
        object.deletedFlag = false
        deletedObjectsByID.remove(object)
        // Deleted in an earlier event: observers saw it leave, now it is back.
        if eventDeleted.remove(object) == nil {
            eventInserted.insert(object)
        } else if eventStart(of: object) != nil {
            // Deleted and changed in this event (changes to a deleted object are not
            // recorded as updates then): back, it is an updated object.
            eventUpdated.insert(object)
        }
        pendingDeletes.removeAll { $0 === object }
        if !object.hasChanges && !retainsRegisteredObjects { strong.remove(object) }
        registerUndo { context in context.delete(object) }
    }

    // MARK: Change sets

    /// Objects inserted and not yet saved.
    public var insertedObjects: Set<ManagedObject> {
        insertedObjectsByID.filter { !$0.deletedFlag }
    }
    /// Objects with unsaved changes to their properties.
    public var updatedObjects: Set<ManagedObject> { strong.filter { $0.isUpdated } }
    /// Objects that will be deleted at the next save.
    public var deletedObjects: Set<ManagedObject> {
        deletedObjectsByID.filter { !$0.insertedFlag }
    }
    /// Whether the context has unsaved changes.
    public var hasChanges: Bool {
        insertedObjectsByID.contains { !$0.deletedFlag } || deletedObjectsByID.contains { !$0.insertedFlag }
            || strong.contains { $0.isUpdated }
    }

    /// Called before a property of `object` changes: tracks it as updated.
    func willChange(_ object: ManagedObject) {
        // The event's first change to the object records it in the event (see
        // `eventNumber`).
        let firstInEvent = object.eventNumber != eventNumber
        if firstInEvent {
            object.eventStart = object.storage
            object.eventNumber = eventNumber
        }
        // Inserted and deleted objects are held in `strong` from `insert` / `delete`
        // until they are saved, rolled back or reset (which clear the flags): no
        // dictionary write for each of their changes.
        if !object.insertedFlag && !object.deletedFlag { strong.insert(object) }
        if firstInEvent && !object.deletedFlag { eventUpdated.insert(object) }
    }

    // MARK: Undo

    /// Whether changes are being recorded for undo now. Call sites check it before
    /// forming their undo closure, which allocates.
    var isRegisteringUndo: Bool { undoManager?.isUndoRegistrationEnabled == true }

    func registerUndo(_ action: @escaping (ManagedObjectContext) -> Void) {
        guard let undoManager, undoManager.isUndoRegistrationEnabled else { return }
        undoManager.registerUndo(withTarget: self) { context in
            context.isUndoingOrRedoing = true
            action(context)
            context.isUndoingOrRedoing = false
        }
    }

    /// Undoes the last group of changes (the context's undo manager's `undo()`).
    public func undo() {
        processPendingChanges()
        undoManager?.undo()
        processPendingChanges()
    }

    /// Redoes the last undone group of changes.
    public func redo() {
        processPendingChanges()
        undoManager?.redo()
        processPendingChanges()
    }
}
