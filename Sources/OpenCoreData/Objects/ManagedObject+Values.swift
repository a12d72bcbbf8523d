import Foundation
import OpenCoreDataPredicates

extension ManagedObject {
    // MARK: Key-value coding

    /// The value of a property (`value(forKey:)`): a Swift value for attributes
    /// (`String`, `Int`, `Double`, `Bool`, `Decimal`, `Date`, `Data`, `UUID`, `URL`,
    /// arrays and dictionaries for transformable and composite values), the
    /// destination object for a to-one relationship, a `Set<ManagedObject>` (or an
    /// array for an ordered one) for a to-many relationship, the fetched objects
    /// for a fetched property. Reading fires a fault.
    ///
    /// ```swift
    /// let rating = mood.value(forKey: "rating") as? Int
    /// let country = mood.value(forKey: "country") as? ManagedObject
    /// ```
    ///
    /// A key the entity does not have is a programmer error, as in Core Data (which
    /// raises `NSUnknownKeyException`): the program stops with a message naming the
    /// entity and the key. `objectID`, `self` and `entity` are answered too. When
    /// the key comes from data (a command line, a file), use
    /// ``checkedValue(forKey:)``, which throws instead.
    ///
    /// - Parameter key: The name of a property of the object's entity.
    /// - Returns: The value, or `nil` when the property has none.
    public func value(forKey key: String) -> Any? {
        guard let index = entity.propertyIndex(named: key) else {
            if let special = specialValue(forKey: key) { return special }
            unknownKey(key, in: "value(forKey:)")
        }
        return value(at: index)
    }

    /// The value of a property, throwing when the entity has no property `key`:
    /// ``value(forKey:)`` for keys that come from data.
    ///
    /// ```swift
    /// for key in userChosenKeys {
    ///     print(key, try object.checkedValue(forKey: key) ?? "nil")
    /// }
    /// ```
    ///
    /// Predicates evaluated in memory read objects through this method, so a
    /// predicate naming an unknown key is an evaluation error, not a trap.
    ///
    /// - Parameter key: The name of a property of the object's entity.
    /// - Returns: The value, or `nil` when the property has none.
    /// - Throws: `PredicateEvaluationError.undefinedKey` naming the entity and the
    ///   key when the entity has no such property.
    public func checkedValue(forKey key: String) throws -> Any? {
        guard let index = entity.propertyIndex(named: key) else {
            if let special = specialValue(forKey: key) { return special }
            throw PredicateEvaluationError.undefinedKey("the entity \(entity.name) has no property '\(key)'")
        }
        return value(at: index)
    }

    /// The keys every object answers besides its entity's properties.
    private func specialValue(forKey key: String) -> Any? {
        switch key {
        case "objectID": return objectID
        case "self": return self
        case "entity": return entity
        default: return nil
        }
    }

    /// Stops the program on a key the entity does not have (Core Data's
    /// `NSUnknownKeyException`): a programmer error.
    func unknownKey(_ key: String, in method: String) -> Never {
        preconditionFailure("OpenCoreData: \(method): the entity \(entity.name) has no property '\(key)' "
            + "(Core Data raises NSUnknownKeyException). For keys that come from data, use the throwing checkedValue(forKey:) or setCheckedValue(_:forKey:).")
    }

    /// The value of the property at `index` of the entity's properties.
    private func value(at index: Int) -> Any? {
        let property = entity.allProperties[index]
        if let fetched = property as? FetchedPropertyDescription {
            return managedObjectContext?.evaluate(fetched, for: self)
        }
        guard let value = slot(index) else { return nil }
        switch value {
        case .attribute(let attribute):
            return attribute.nativeValue
        case .toOne(let id):
            return id.flatMap { managedObjectContext?.object(with: $0) }
        case .toMany:
            let objects = relatedObjects(index)
            if (property as? RelationshipDescription)?.isOrdered == true { return objects }
            return Set(objects)
        }
    }

    /// Sets a property (`setValue(_:forKey:)`): tracks the change, registers its
    /// undo, and for relationships updates the inverse on the other objects.
    ///
    /// ```swift
    /// mood.setValue(4, forKey: "rating")
    /// mood.setValue(italy, forKey: "country")       // italy.moods follows
    /// ```
    ///
    /// A value of the wrong type is kept and reported by validation when saving
    /// (``CoreDataError/Code/managedObjectValidation``), never a crash. A key the
    /// entity does not have stops the program with a message, as Core Data's
    /// `NSUnknownKeyException` does; use ``setCheckedValue(_:forKey:)`` for keys
    /// that come from data.
    ///
    /// - Parameters:
    ///   - value: The new value: a Swift value for an attribute, a managed object
    ///     (or nil) for a to-one, a set or array of managed objects for a to-many.
    ///   - key: The name of a property of the object's entity.
    public func setValue(_ value: Any?, forKey key: String) {
        guard let index = entity.propertyIndex(named: key) else { unknownKey(key, in: "setValue(_:forKey:)") }
        setValue(value, at: index)
    }

    /// Sets a property, throwing when the entity has no property `key`:
    /// ``setValue(_:forKey:)`` for keys that come from data.
    ///
    /// ```swift
    /// try object.setCheckedValue(line.value, forKey: line.key)
    /// ```
    ///
    /// - Parameters:
    ///   - value: The new value, as ``setValue(_:forKey:)`` takes it.
    ///   - key: The name of a property of the object's entity.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/managedObjectValidation``
    ///   naming the entity and the key when the entity has no such property.
    public func setCheckedValue(_ value: Any?, forKey key: String) throws {
        guard let index = entity.propertyIndex(named: key) else {
            throw CoreDataError(.managedObjectValidation, "the entity \(entity.name) has no property '\(key)'",
                                entityName: entity.name, objectDescription: objectID.uriRepresentation().absoluteString,
                                key: key)
        }
        setValue(value, at: index)
    }

    private func setValue(_ value: Any?, at index: Int) {
        // An attribute of a frozen entity: its type alone, read without retaining.
        if let types = entity.frozenAttributeTypes, index < types.count, let type = types[index] {
            setSlot(index, .attribute(ManagedObject.attributeValue(from: value, as: type)))
            return
        }
        let property = entity.allProperties[index]
        switch property {
        case let attribute as AttributeDescription:
            setSlot(index, .attribute(ManagedObject.attributeValue(from: value, for: attribute)))
        case let relationship as RelationshipDescription:
            if relationship.isToMany {
                let objects: [ManagedObject]
                switch value {
                case let set as Set<ManagedObject>: objects = Array(set)
                case let array as [ManagedObject]: objects = array
                case nil: objects = []
                default:
                    if let sequence = value as? any Sequence {
                        objects = sequenceElements(sequence).compactMap { $0 as? ManagedObject }
                    } else { objects = [] }
                }
                setToMany(index, relationship, objects)
            } else {
                setToOne(index, relationship, value as? ManagedObject)
            }
        default:
            return
        }
    }

    /// The value of an attribute as an `AttributeValue` (`.null` when nil, and for
    /// a relationship).
    ///
    /// ```swift
    /// if case .int(let rating) = mood.attributeValue(forKey: "rating") { ... }
    /// ```
    ///
    /// - Parameter key: The name of a property of the object's entity; any other
    ///   key stops the program with a message, as ``value(forKey:)`` does.
    /// - Returns: The stored value.
    public func attributeValue(forKey key: String) -> AttributeValue {
        guard let index = entity.propertyIndex(named: key) else { unknownKey(key, in: "attributeValue(forKey:)") }
        guard prepareSlot(index), case .attribute(let value) = storage.unsafelyUnwrapped[index] else { return .null }
        return value
    }

    /// Sets an attribute from an `AttributeValue`, tracking the change.
    ///
    /// ```swift
    /// mood.setAttributeValue(.int(4), forKey: "rating")
    /// ```
    ///
    /// - Parameters:
    ///   - value: The new value, converted to the attribute's type when it is of
    ///     another (`.string("4")` for an integer attribute stores 4).
    ///   - key: The name of an attribute of the object's entity. A key the entity
    ///     does not have stops the program with a message, as ``setValue(_:forKey:)``
    ///     does; a relationship's name is ignored.
    public func setAttributeValue(_ value: AttributeValue, forKey key: String) {
        guard let index = entity.propertyIndex(named: key) else { unknownKey(key, in: "setAttributeValue(_:forKey:)") }
        guard let attribute = entity.allProperties[index] as? AttributeDescription else { return }
        setSlot(index, .attribute(AttributeValueCoercion.coerce(value, to: attribute.attributeType) ?? value))
    }

    /// The raw stored value of a property, with no side effects but firing a fault
    /// (`primitiveValue(forKey:)`).
    public func primitiveValue(forKey key: String) -> Any? {
        guard let index = entity.propertyIndex(named: key), let value = slot(index) else { return nil }
        switch value {
        case .attribute(let attribute): return attribute.nativeValue
        case .toOne(let id): return id
        case .toMany(let ids): return ids ?? []
        }
    }

    /// Sets the raw stored value of an attribute: the change is saved, but there is
    /// no inverse maintenance and no undo (`setPrimitiveValue(_:forKey:)`).
    public func setPrimitiveValue(_ value: Any?, forKey key: String) {
        guard let index = entity.propertyIndex(named: key), let attribute = entity.allProperties[index] as? AttributeDescription else { return }
        fireFaultInContext()
        if storage == nil { storage = ManagedObjectContext.initialValues(for: entity) }
        managedObjectContext?.willChange(self)
        // Converted before the write: an optional-chain assignment keeps its access
        // to `storage` open while the right-hand side runs (see docs/performance.md,
        // "Exclusivity checks").
        let converted = ManagedObject.attributeValue(from: value, for: attribute)
        writeValue(.attribute(converted), at: index)
    }

    /// The properties changed since the object was last saved or fetched, by name
    /// (`changedValues()`).
    public func changedValues() -> [String: Any] {
        var result: [String: Any] = [:]
        for index in changedIndexes() {
            let name = entity.allProperties[index].name
            result[name] = value(forKey: name) ?? NSNull()
        }
        return result
    }

    /// The properties changed since the last ``ManagedObjectContext/processPendingChanges()``.
    public func changedValuesForCurrentEvent() -> [String: Any] {
        guard let start = managedObjectContext?.eventStart(of: self), let storage else { return [:] }
        var result: [String: Any] = [:]
        for index in storage.indices where index < start.count && !ManagedObject.same(storage[index], start[index]) {
            let name = entity.allProperties[index].name
            result[name] = value(forKey: name) ?? NSNull()
        }
        return result
    }

    /// The last saved (or fetched) values of `keys` (nil: every property)
    /// (`committedValues(forKeys:)`). Relationships give object IDs.
    public func committedValues(forKeys keys: [String]?) -> [String: Any] {
        fireFaultInContext()
        guard let committed else { return [:] }
        let names = keys ?? entity.allProperties.map(\.name)
        var result: [String: Any] = [:]
        for name in names {
            guard let index = entity.propertyIndex(named: name), index < committed.rowValues.count else { continue }
            switch committed.rowValues[index] {
            case .attribute(let value): result[name] = value.nativeValue ?? NSNull()
            case .toOne(let id): result[name] = id ?? NSNull() as Any
            case .toMany(let ids):
                var loaded = ids ?? []
                if ids == nil, let relationship = entity.allProperties[index] as? RelationshipDescription {
                    loaded = (try? managedObjectContext?.relatedObjectIDs(of: objectID, relationship: relationship)) ?? []
                }
                result[name] = Set(loaded)
            }
        }
        return result
    }

    // MARK: To-many access

    /// The objects of a to-many relationship, in order for an ordered one.
    public func objects(forRelationship key: String) -> [ManagedObject] {
        guard let index = entity.propertyIndex(named: key) else { return [] }
        return relatedObjects(index)
    }

    /// Adds objects to a to-many relationship (at the end of an ordered one).
    public func add(_ objects: [ManagedObject], toRelationship key: String) {
        guard let index = entity.propertyIndex(named: key),
              let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany else { return }
        var current = relatedObjects(index)
        for object in objects where !current.contains(where: { $0 === object }) { current.append(object) }
        setToMany(index, relationship, current)
    }

    /// Removes objects from a to-many relationship.
    public func remove(_ objects: [ManagedObject], fromRelationship key: String) {
        guard let index = entity.propertyIndex(named: key),
              let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany else { return }
        let current = relatedObjects(index).filter { object in !objects.contains { $0 === object } }
        setToMany(index, relationship, current)
    }

    /// Inserts an object into an ordered to-many relationship at `position`.
    public func insert(_ object: ManagedObject, at position: Int, inRelationship key: String) {
        guard let index = entity.propertyIndex(named: key),
              let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany else { return }
        var current = relatedObjects(index).filter { $0 !== object }
        current.insert(object, at: max(0, min(position, current.count)))
        setToMany(index, relationship, current)
    }

    /// Removes the object at `position` from an ordered to-many relationship.
    public func removeObject(at position: Int, fromRelationship key: String) {
        guard let index = entity.propertyIndex(named: key),
              let relationship = entity.allProperties[index] as? RelationshipDescription, relationship.isToMany else { return }
        var current = relatedObjects(index)
        guard current.indices.contains(position) else { return }
        current.remove(at: position)
        setToMany(index, relationship, current)
    }

    /// A mutable view of a to-many relationship (`mutableSetValue(forKey:)`).
    public func mutableSetValue(forKey key: String) -> RelationshipMutator {
        RelationshipMutator(object: self, key: key)
    }

    /// A mutable view of an ordered to-many relationship (`mutableOrderedSetValue(forKey:)`).
    public func mutableOrderedSetValue(forKey key: String) -> RelationshipMutator {
        RelationshipMutator(object: self, key: key)
    }

    // MARK: Storage

    /// The stored value at `index`, firing the fault first.
    func slot(_ index: Int) -> SnapshotValue? {
        guard prepareSlot(index) else { return nil }
        return storage.unsafelyUnwrapped[index]
    }

    /// Fires the fault if the object is one; whether the values have a slot
    /// `index` (then `storage` is not nil). Callers read the slot in place:
    /// binding `storage` to a constant first would retain and release the array.
    @inline(__always)
    func prepareSlot(_ index: Int) -> Bool {
        if ConcurrencyDebug.isEnabled { managedObjectContext?.assertOnQueue("a managed object's value") }
        if storage == nil { fireFaultInContext() }
        return index < storage?.count ?? 0
    }

    func setSlot(_ index: Int, _ value: SnapshotValue) {
        if ConcurrencyDebug.isEnabled { managedObjectContext?.assertOnQueue("setting a managed object's value") }
        if storage == nil { fireFaultInContext() }
        if storage == nil { storage = ManagedObjectContext.initialValues(for: entity) }
        guard let old = storage?[index], old != value else { return }
        if let context = managedObjectContext {
            context.willChange(self)
            // Strong: a weak capture would give every changed object a side table.
            // (Checked first: forming the closure costs even when it is not kept.)
            if context.isRegisteringUndo { context.registerUndo { _ in self.setSlot(index, old) } }
        }
        writeValue(value, at: index)
    }

    /// The objects of the to-many relationship at `index`, loading it if needed.
    func relatedObjects(_ index: Int) -> [ManagedObject] {
        guard let context = managedObjectContext else { return [] }
        return context.relatedObjects(of: self, index: index)
    }

    func setToOne(_ index: Int, _ relationship: RelationshipDescription, _ newValue: ManagedObject?) {
        guard let context = managedObjectContext else {
            if storage == nil { storage = ManagedObjectContext.initialValues(for: entity) }
            storage?[index] = .toOne(newValue?.objectID)
            return
        }
        let oldID: ManagedObjectID?
        if case .toOne(let id)? = slot(index) { oldID = id } else { oldID = nil }
        guard oldID != newValue?.objectID else { return }
        setSlot(index, .toOne(newValue?.objectID))
        if let oldID, let old = context.registeredObject(for: oldID) ?? Optional(context.object(with: oldID)) {
            context.removeInverse(of: relationship, from: old, pointingTo: self)
        }
        if let newValue { context.addInverse(of: relationship, to: newValue, pointingTo: self) }
    }

    func setToMany(_ index: Int, _ relationship: RelationshipDescription, _ objects: [ManagedObject]) {
        guard let context = managedObjectContext else {
            if storage == nil { storage = ManagedObjectContext.initialValues(for: entity) }
            storage?[index] = .toMany(objects.map(\.objectID))
            return
        }
        let old = relatedObjects(index)
        var seen = Set<ObjectIdentifier>()
        let unique = objects.filter { seen.insert(ObjectIdentifier($0)).inserted }
        let newIDs = unique.map(\.objectID)
        setSlot(index, .toMany(newIDs))
        let newSet = Set(unique.map(ObjectIdentifier.init))
        let oldSet = Set(old.map(ObjectIdentifier.init))
        for removed in old where !newSet.contains(ObjectIdentifier(removed)) {
            context.removeInverse(of: relationship, from: removed, pointingTo: self)
        }
        for added in unique where !oldSet.contains(ObjectIdentifier(added)) {
            context.addInverse(of: relationship, to: added, pointingTo: self)
        }
    }

    // MARK: Conversions

    static func attributeValue(from value: Any?, for attribute: AttributeDescription) -> AttributeValue {
        attributeValue(from: value, as: attribute.attributeType)
    }

    /// `value` as an attribute value of `type` (see ``attributeValue(from:for:)``).
    static func attributeValue(from value: Any?, as type: AttributeType) -> AttributeValue {
        // The common exact types first, read straight out of the opened existential
        // (a dynamic cast from `Any` is a large share of a `setValue`'s cost);
        // anything else (optionals, bridged NSNumbers, collections...)
        // goes through the general conversion, which gives the same results for
        // these types.
        let raw = value.flatMap { _openExistential($0, do: exactAttributeValue) } ?? AttributeValue(anyValue: value)
        return AttributeValueCoercion.coerce(raw, to: type) ?? raw
    }
}

/// The value of a `String`, `Int`, `Double` or `Date` (nil for any other type),
/// with no dynamic cast: `T` is the opened dynamic type, compared by identity.
private func exactAttributeValue<T>(_ value: T) -> AttributeValue? {
    if T.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
    if T.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
    if T.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
    if T.self == Date.self { return .date(unsafeBitCast(value, to: Date.self)) }
    return nil
}

/// A mutable view of a to-many relationship of one object: adding and removing
/// through it maintains inverses and records undo, like Core Data's mutable set
/// proxies.
///
/// ```swift
/// country.mutableSetValue(forKey: "moods").add(mood)
/// ```
public struct RelationshipMutator {
    let object: ManagedObject
    let key: String

    /// The current members.
    public var objects: [ManagedObject] { object.objects(forRelationship: key) }
    /// The number of members.
    public var count: Int { objects.count }
    /// Adds a member.
    public func add(_ member: ManagedObject) { object.add([member], toRelationship: key) }
    /// Removes a member.
    public func remove(_ member: ManagedObject) { object.remove([member], fromRelationship: key) }
    /// Inserts a member at a position (ordered relationships).
    public func insert(_ member: ManagedObject, at index: Int) { object.insert(member, at: index, inRelationship: key) }
    /// Removes the member at a position (ordered relationships).
    public func remove(at index: Int) { object.removeObject(at: index, fromRelationship: key) }
    /// Removes every member.
    public func removeAll() { object.setValue([ManagedObject](), forKey: key) }
}

extension AttributeValue {
    /// The value as a plain Swift value: nil, `String`, `Int`, `Double`, `Bool`,
    /// `Decimal`, `Date`, `Data`, `UUID`, `URL`, `[Any]`, `[String: Any]`.
    public var nativeValue: Any? {
        switch self {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return Int(truncatingIfNeeded: i)
        case .double(let d): return d
        case .decimal(let d): return d
        case .string(let s): return s
        case .date(let d): return d
        case .data(let d): return d
        case .uuid(let u): return u
        case .uri(let u): return u
        case .array(let values): return values.map { $0.nativeValue ?? NSNull() }
        case .dictionary(let values): return values.mapValues { $0.nativeValue ?? NSNull() }
        }
    }

    /// The attribute value of a plain Swift value (the inverse of ``nativeValue``).
    public init(anyValue: Any?) {
        switch EvaluatedValue(any: anyValue) {
        case .null: self = .null
        case .value(let value): self = value
        case .collection(let values, _): self = .array(values.map { AttributeValue(evaluated: $0) })
        case .dictionary(let values): self = .dictionary(values.mapValues { AttributeValue(evaluated: $0) })
        case .object(let object):
            if let managed = object as? ManagedObject { self = .uri(managed.objectID.uriRepresentation()) } else { self = .null }
        }
    }

    init(evaluated: EvaluatedValue) {
        switch evaluated {
        case .null: self = .null
        case .value(let value): self = value
        case .collection(let values, _): self = .array(values.map { AttributeValue(evaluated: $0) })
        case .dictionary(let values): self = .dictionary(values.mapValues { AttributeValue(evaluated: $0) })
        case .object: self = .null
        }
    }
}

/// The elements of any sequence, as `Any`.
func sequenceElements(_ sequence: any Sequence) -> [Any] {
    func open<S: Sequence>(_ s: S) -> [Any] { s.map { $0 as Any } }
    return open(sequence)
}
