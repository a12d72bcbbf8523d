import Foundation
import OpenCoreDataPredicates

/// An object of an entity, living in one managed object context (`NSManagedObject`).
///
/// A managed object holds the values of its entity's properties, tracks its
/// changes, keeps both sides of its relationships in step, and stays a *fault* —
/// an empty shell with just its ``objectID`` — until one of its values is read.
///
/// Use it dynamically with key-value coding:
///
/// ```swift
/// let mood = ManagedObject(entity: moodEntity, insertInto: context)
/// mood.setValue(Date(), forKey: "date")
/// mood.setValue(country, forKey: "country")      // also adds mood to country.moods
/// mood.value(forKey: "date") as? Date
/// ```
///
/// or subclass it with typed properties (see the `@Managed` macro), and override
/// the lifecycle hooks (``awakeFromInsert()``, ``willSave()``, ``prepareForDeletion()``
/// ...) and validation methods as in Core Data.
///
/// Objects belong to their context's queue and are not `Sendable`: pass their
/// ``objectID`` to other contexts.
open class ManagedObject: KeyValueCoding, FormatArgument, Hashable, CustomStringConvertible {
    // Exclusivity: the stored properties of managed objects are marked
    // `@exclusivity(unchecked)`. An object is used on its context's queue only, and
    // the framework never holds one of them in an `inout` access across a call that
    // could reach the same property, so the dynamic check every access would pay
    // (`swift_beginAccess`, a noticeable share of a save) finds nothing to
    // catch. See docs/performance.md, "Exclusivity checks".

    /// The object's entity.
    ///
    /// Stored, though the ID holds it too: a `let` is read without a retain
    /// (nothing can change it during a call), and entities, referred to weakly
    /// by their properties, are retained through a side table, the slower way.
    public let entity: EntityDescription
    /// The object's ID: temporary until saved, then permanent.
    public internal(set) var objectID: ManagedObjectID {
        @inline(__always) get { storedObjectID }
        @inline(__always) set { storedObjectID = newValue }
    }
    @exclusivity(unchecked) private var storedObjectID: ManagedObjectID  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var insertedFlag = false  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) var deletedFlag = false  // unchecked: context queue only, never held across a call
    @exclusivity(unchecked) private var committedIsStorage = false  // unchecked: context queue only, never held across a call
    /// The context the object is registered with, if any.
    ///
    /// As in Core Data, the object does not keep its context alive; here the
    /// reference is `weak`, so it turns nil when the context goes, whatever thread
    /// lets the context go.
    public internal(set) weak var managedObjectContext: ManagedObjectContext?

    /// Fires the fault through the object's context, if it has one.
    @inline(__always)
    func fireFaultInContext() {
        managedObjectContext?.fireFault(self)
    }

    /// The values, indexed like `entity.allProperties`; nil while a fault.
    ///
    /// A fetched object's values are in place in the page its fetch read them into
    /// (``RowValues``), until its first change copies them into a page of its own.
    /// Read in place (`_read`: no retain of the page); a write first gives the
    /// committed row values of its own if it shares these (see ``committedRow``).
    var storage: RowValues? {
        @inline(__always) _read { yield currentValues }
        @inline(__always) set {
            if let observation, currentValues != nil {
                // A merge, refresh, rollback or turning into a fault (not a fault
                // firing: nil to values) tells the observers of what changed.
                observation.replacing(self, currentValues, with: newValue) { replaceStorage(newValue) }
            } else {
                replaceStorage(newValue)
            }
        }
        @inline(__always) _modify {
            separateCommittedRow()
            yield &currentValues
        }
    }
    private func replaceStorage(_ newValue: RowValues?) {
        separateCommittedRow()
        // A fault given values has no committed row (its fault row goes), and
        // an object turned into a fault no fault row (its committed row goes).
        if currentValues == nil || newValue == nil { keptRow = nil }
        currentValues = newValue
    }
    @exclusivity(unchecked) private var currentValues: RowValues?  // unchecked: context queue only, never held across a call

    /// A row's values and version as an object keeps them: the row's ID is the
    /// object's own, so an object is smaller and a save touches less memory.
    struct KeptRow {
        var values: RowValues
        var version: Int64

        /// Moves the values out, leaving none (no retain, no release).
        mutating func takeValues() -> RowValues {
            var taken = RowValues()
            swap(&taken, &values)
            return taken
        }
    }

    /// The row as last read from or saved to the store; nil for a new object.
    ///
    /// An object loaded from a row and not changed since has one set of values for both
    /// (``loadRow(_:version:)``): `keptRow` then holds only the version, and the
    /// committed values are `storage`. Loading a fetched row thus touches the
    /// object alone — a second reference would retain the row's page, which a
    /// large fetch has long pushed out of the cache (a memory access per row).
    var committedRow: KeptRow? {
        get {
            // A fault has no committed row: what `keptRow` holds then is its fault row.
            guard let currentValues else { return nil }
            guard committedIsStorage else { return keptRow }
            return KeptRow(values: currentValues, version: keptRow?.version ?? 0)
        }
        set {
            committedIsStorage = false
            keptRow = newValue
            // Given to a fault, it replaces any fault row, which must not fire.
            if currentValues == nil { faultRowGeneration = -1 }
        }
    }
    /// The committed row; while the object is a fault, its fault row (a fault has
    /// no committed row, and an object with values no fault row: one field for
    /// both keeps every object 24 bytes smaller).
    @exclusivity(unchecked) private var keptRow: KeptRow?  // unchecked: context queue only, never held across a call

    /// Loads a row: `values` become both the current and the committed values.
    func loadRow(_ values: consuming RowValues, version: Int64) {
        currentValues = consume values
        keptRow = KeptRow(values: RowValues(), version: version)
        committedIsStorage = true
    }

    /// The committed row's version, read without forming the row.
    var committedVersion: Int64? { currentValues == nil ? nil : keptRow?.version }

    /// Makes the current values the committed row as well, at `version` (a saved
    /// object): one set of values for both until the next write, as after
    /// ``loadRow(_:version:)``. The values' page is not touched — in a large save it is long out of the
    /// cache, and a second reference would retain it.
    func commitCurrentValues(version: Int64) {
        keptRow = KeptRow(values: RowValues(), version: version)
        committedIsStorage = true
    }

    /// Writes the value at `index` (for the hot setters: `storage`'s `_modify` is a
    /// coroutine the optimizer does not inline, whose frame is allocated).
    @inline(__always)
    func writeValue(_ value: SnapshotValue, at index: Int) {
        if let observation {
            observation.changing(self, index: index) {
                separateCommittedRow()
                currentValues?[index] = value
            }
            return
        }
        separateCommittedRow()
        currentValues?[index] = value
    }

    /// Writes `value` at `index` in the current and the committed values alike (a
    /// to-many fault filled: the relationship is loaded, not changed). Values that are
    /// both current and committed stay one set: their page is copied once, not
    /// once for each. Nothing for a fault.
    func writeLoadedValue(_ value: SnapshotValue, at index: Int) {
        guard currentValues != nil else { return }
        currentValues?[index] = value
        guard !committedIsStorage, keptRow != nil, index < keptRow.unsafelyUnwrapped.values.count else { return }
        keptRow?.values[index] = value
    }

    @inline(__always)
    private func separateCommittedRow() {
        guard committedIsStorage else { return }
        separateCommittedRowSlowly()
    }

    @inline(never)
    private func separateCommittedRowSlowly() {
        committedIsStorage = false
        if let currentValues, let version = keptRow?.version {
            keptRow = KeptRow(values: currentValues, version: version)
        } else {
            keptRow = nil
        }
    }

    /// The committed row as a snapshot (with the object's ID).
    var committed: RowSnapshot? {
        get { committedRow.map { RowSnapshot(objectID: objectID, version: $0.version, rowValues: $0.values) } }
        set { committedRow = newValue.map { KeptRow(values: $0.rowValues, version: $0.version) } }
    }
    /// The values when the current event began, for `changedValuesForCurrentEvent()`;
    /// the current event's only while `eventNumber` is the context's.
    @exclusivity(unchecked) var eventStart: RowValues?  // unchecked: context queue only, never held across a call
    /// The number of the context event `eventStart` is from (see
    /// `ManagedObjectContext.eventNumber`); 0 for none.
    @exclusivity(unchecked) var eventNumber = 0  // unchecked: context queue only, never held across a call
    /// A fault's row as fetched, and the coordinator's row generation when the
    /// fetch began (see `ManagedObjectContext.makeFault`). Kept in `keptRow`, which
    /// a fault does not otherwise use; nil for an object with values.
    var faultRow: KeptRow? {
        get { currentValues == nil ? keptRow : nil }
        set {
            guard currentValues == nil else { return }
            committedIsStorage = false
            keptRow = newValue
        }
    }
    @exclusivity(unchecked) var faultRowGeneration = -1  // unchecked: context queue only, never held across a call
    /// The object's slot in its context's registry while it is registered there
    /// (see `ObjectRegistry`): read and written on the context's queue only.
    @exclusivity(unchecked) var registrySlot: ManagedObjectContext.ObjectRegistry.SlotReference?  // unchecked: context queue only, never held across a call
    /// What few objects need, out of line: every object is smaller, and its
    /// deinit has fewer references to release.
    final class Extras {
        /// Set when the object's row is retained in the coordinator's row cache.
        var rowCacheOwner: PersistentStoreCoordinator?
        /// Destinations fetched with this object by `relationshipKeyPathsForPrefetching`,
        /// kept alive while it is.
        var prefetchedObjects: [ManagedObject] = []
        /// The members each to-many relationship was filled in with by prefetching, in
        /// order, by property index: reading the relationship takes them while they are
        /// still its members and registered here (see `relatedObjects(of:index:)`).
        var prefetchedMembers: [PrefetchedMembers] = []
        /// The object's Observation registrar and change streams, made on its first
        /// `@Managed` read (see ManagedObject+Observation.swift).
        var observation: ObjectObservation?
    }

    /// The objects prefetching filled the to-many relationship at `index` with.
    ///
    /// They stand for the relationship's value while it is still `ids` (the very
    /// array: holding it here keeps it from being changed in place, so the same
    /// buffer means the same members) and nothing was unregistered from the
    /// context since (`registryGeneration`): then each is the registered object
    /// for its ID, checked in constant time rather than member by member.
    struct PrefetchedMembers {
        var index: Int
        var ids: [ManagedObjectID]
        var objects: [ManagedObject]
        var registryGeneration: Int

        /// Whether these members are the relationship's while its value is `current`
        /// and the registry is at `generation`.
        func stand(for current: [ManagedObjectID], generation: Int) -> Bool {
            guard registryGeneration == generation, ids.count == current.count, objects.count == ids.count else { return false }
            return ids.withUnsafeBufferPointer { mine in current.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress } }
        }
    }
    @exclusivity(unchecked) private var extras: Extras?  // unchecked: context queue only, never held across a call
    private var madeExtras: Extras {
        if let extras { return extras }
        let made = Extras()
        extras = made
        return made
    }

    /// The object's observation state, if anything read or observed it.
    var observation: ObjectObservation? {
        @inline(__always) get { extras?.observation }
    }
    /// The observation state, made if needed.
    var madeObservation: ObjectObservation {
        if let observation = extras?.observation { return observation }
        let made = ObjectObservation()
        madeExtras.observation = made
        return made
    }

    /// Set when the object's row is retained in the coordinator's row cache.
    var rowCacheOwner: PersistentStoreCoordinator? {
        get { extras?.rowCacheOwner }
        set { if newValue != nil || extras != nil { madeExtras.rowCacheOwner = newValue } }
    }
    /// Destinations fetched with this object by `relationshipKeyPathsForPrefetching`.
    var prefetchedObjects: [ManagedObject] {
        get { extras?.prefetchedObjects ?? [] }
        _modify { yield &madeExtras.prefetchedObjects }
    }
    /// The members prefetching filled each to-many relationship with (see `Extras`).
    var prefetchedMembers: [PrefetchedMembers] {
        get { extras?.prefetchedMembers ?? [] }
        _modify { yield &madeExtras.prefetchedMembers }
    }

    /// Lets go of the objects prefetching keeps with this one (see
    /// `ObjectRegistry.releasePrefetched()`); they are fetched again if needed.
    func releasePrefetched() {
        guard let extras else { return }
        extras.prefetchedObjects = []
        extras.prefetchedMembers = []
    }

    /// Creates an object of `entity` and inserts it into `context` (Core Data's
    /// designated initializer). With a nil context the object is not inserted.
    public required init(entity: EntityDescription, insertInto context: ManagedObjectContext?) {
        self.storedObjectID = ManagedObjectID(temporaryFor: entity)
        self.entity = entity
        ManagedObjectClasses.register(type(of: self))
        if let context {
            context.insert(self)
        }
    }

    /// Creates an object of the entity whose class is this class, in `context`.
    ///
    /// ```swift
    /// let mood = Mood(context: context)
    /// ```
    public convenience init(context: ManagedObjectContext) {
        guard let entity = context.entity(for: Self.self) else {
            preconditionFailure("OpenCoreData: no entity of the context's model has class '\(String(describing: Self.self))'. Set the entity's class name (Xcode's Class field) to it.")
        }
        self.init(entity: entity, insertInto: context)
    }

    deinit {
        // Runs on whatever thread lets the object go (its context's queue when
        // the registry drops it): it touches only the object's own fields and
        // the row cache, under the coordinator's lock.
        rowCacheOwner?.releaseRow(objectID)
    }

    /// The entity of this class in the models loaded so far (`entity()`).
    public class func entity() -> EntityDescription? {
        ManagedObjectClasses.entity(for: self)
    }

    // MARK: State

    /// Whether the object was inserted and not yet saved.
    public var isInserted: Bool { insertedFlag }
    /// Whether the object will be deleted at the next save.
    public var isDeleted: Bool { deletedFlag }
    /// Whether the object has unsaved changes to its properties.
    public var isUpdated: Bool { !insertedFlag && !deletedFlag && hasChangedValues }
    /// Whether the object's values are not loaded yet.
    public var isFault: Bool { storage == nil }
    /// Whether the object has any unsaved change: inserted, deleted or updated.
    public var hasChanges: Bool { insertedFlag || deletedFlag || hasChangedValues }
    /// Whether a persistent (non-transient) property has an unsaved change.
    public var hasPersistentChangedValues: Bool {
        changedIndexes().contains { !entity.allProperties[$0].isTransient }
    }

    var hasChangedValues: Bool { !changedIndexes().isEmpty }

    /// The indexes of properties whose value differs from the committed row.
    func changedIndexes() -> [Int] {
        guard let storage, !committedIsStorage else { return [] }
        guard let committedValues = committedRow?.values else {
            return storage.indices.filter { index in
                switch storage[index] {
                case .attribute(let v): return !v.isNull
                case .toOne(let id): return id != nil
                case .toMany(let ids): return !(ids ?? []).isEmpty
                }
            }
        }
        // Compared in place (no copy of either value): most values are unchanged,
        // and an unchanged value usually has the committed value's very bytes.
        var changed: [Int] = []
        storage.withUnsafeBufferPointer { current in
            committedValues.withUnsafeBufferPointer { committed in
                guard current.baseAddress != committed.baseAddress else { return }
                for index in 0..<Swift.min(current.count, committed.count)
                where memcmp(current.baseAddress! + index, committed.baseAddress! + index, MemoryLayout<SnapshotValue>.size) != 0
                    && !ManagedObject.same(current[index], committed[index]) {
                    changed.append(index)
                }
            }
        }
        return changed
    }

    static func same(_ a: SnapshotValue, _ b: SnapshotValue) -> Bool {
        // An unchanged value is usually the committed one itself (the same bits:
        // the same number, or the same string or array storage): compared as
        // bytes first, much cheaper than the enum's `==`. Bytes that differ
        // (a new value, or padding) go through `==`.
        let identical = withUnsafeBytes(of: a) { x in
            withUnsafeBytes(of: b) { y in memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
        if identical { return true }
        switch (a, b) {
        case (.toMany(nil), _), (_, .toMany(nil)): return true
        case (.toMany(let x?), .toMany(let y?)): return x.count == y.count && (x == y || Set(x) == Set(y))
        default: return a == b
        }
    }

    /// Whether the to-many relationship `key` is still a fault (not loaded).
    public func hasFault(forRelationshipNamed key: String) -> Bool {
        guard let storage, let index = entity.propertyIndex(named: key) else { return true }
        if case .toMany(nil) = storage[index] { return true }
        return false
    }

    // MARK: Lifecycle hooks (override them; call super)

    /// Called once, when the object is first inserted into a context. Set up
    /// initial values here.
    open func awakeFromInsert() {}
    /// Called when the object's values are loaded from the store (a fault fires).
    open func awakeFromFetch() {}
    /// Called before the object is saved.
    open func willSave() {}
    /// Called after the object was saved.
    open func didSave() {}
    /// Called when the object is about to be deleted, before delete rules apply.
    open func prepareForDeletion() {}
    /// Called before the object turns back into a fault.
    open func willTurnIntoFault() {}
    /// Called after the object turned into a fault.
    open func didTurnIntoFault() {}

    // MARK: Validation (override them; call super)

    /// Validates the object before it is inserted by a save. The default checks
    /// every property (``validateValue(_:forKey:)`` and the model's rules).
    open func validateForInsert() throws {
        try validatePropertyValues()
    }

    /// Validates the object before its changes are saved.
    open func validateForUpdate() throws {
        try validatePropertyValues()
    }

    /// Validates the object before it is deleted: deny delete rules.
    open func validateForDelete() throws {
        try validateDeleteRules()
    }

    /// Validates one value (`validate<Key>:error:`): override to add rules for a
    /// key; throw a ``CoreDataError`` naming the problem. You may replace the value.
    open func validateValue(_ value: inout Any?, forKey key: String) throws {}

    // MARK: Description

    public var description: String {
        let name = String(describing: type(of: self))
        guard let storage else { return "<\(name): \(objectID)> (fault)" }
        let pairs = entity.allProperties.enumerated().compactMap { index, property -> String? in
            guard index < storage.count else { return nil }
            switch storage[index] {
            case .attribute(let value): return "\(property.name) = \(ManagedObject.describe(value))"
            case .toOne(let id): return "\(property.name) = \(id.map(\.description) ?? "nil")"
            case .toMany(let ids): return "\(property.name) = \(ids.map { "\($0.count) objects" } ?? "<relationship fault>")"
            }
        }
        return "<\(name): \(objectID)> { \(pairs.joined(separator: "; ")) }"
    }

    static func describe(_ value: AttributeValue) -> String {
        switch value {
        case .null: return "nil"
        case .string(let s): return "\"\(s)\""
        case .int(let i): return "\(i)"
        case .double(let d): return "\(d)"
        case .bool(let b): return b ? "1" : "0"
        default: return "\(value)"
        }
    }

    // MARK: Identity

    public static func == (lhs: ManagedObject, rhs: ManagedObject) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// The hash sets and dictionaries of objects use (a context's change sets and
    /// the notifications' sets hold every changed object): the object's address
    /// mixed by the SplitMix64 finalizer rather than SipHash, far costlier for a
    /// hash taken of every changed object. (`_rawHashValue(seed:)` is
    /// `Hashable`'s hook for this; `hash(into:)` serves every other hasher with
    /// the same identity.)
    public func _rawHashValue(seed: Int) -> Int {
        splitMix64Hash(UInt64(UInt(bitPattern: ObjectIdentifier(self))), seed: seed)
    }

    // MARK: Predicates

    /// The model key of each typed property's key path, for typed predicates,
    /// sort descriptors and the key-path forms of fetch options.
    ///
    /// `@ManagedEntity` overrides it with the key paths of the class's `@Managed`
    /// properties, rooted at the class it is asked of: `Mood.managedPropertyKeyPaths`
    /// maps `\Mood.date` to `"date"`, and a subclass `HappyMood` (with or without
    /// `@ManagedEntity`) gets `\HappyMood.date` too. The base class knows
    /// `\X.objectID`.
    ///
    /// ```swift
    /// Mood.managedPropertyKeyPaths[\Mood.date]   // "date"
    /// ```
    open class var managedPropertyKeyPaths: [AnyKeyPath: String] {
        func base<Root: ManagedObject>(_: Root.Type) -> [AnyKeyPath: String] { [\Root.objectID: "objectID"] }
        return base(Self.self)
    }


    /// In predicates a managed object stands for its object ID URI.
    public var formatArgumentValue: AttributeValue { .uri(objectID.uriRepresentation()) }
    public var predicateIdentity: AttributeValue? { .uri(objectID.uriRepresentation()) }
}

extension ManagedObjectID: FormatArgument {
    /// In predicates an object ID stands for its URI, and compares equal to its object.
    public var formatArgumentValue: AttributeValue { .uri(uriRepresentation()) }
}
