import Foundation
import Synchronization

/// The registry of managed object subclasses, by class name: how a context knows
/// to create a `Mood` for a row of the entity whose class is `Mood`.
///
/// Subclasses register themselves when first instantiated, and when fetched through
/// a typed request (`FetchRequest<Mood>`). Register them up front when a context may
/// meet their objects first through a relationship:
///
/// ```swift
/// ManagedObjectClasses.register(Mood.self, Country.self, Continent.self)
/// ```
public enum ManagedObjectClasses {
    private static let classes = Lock<[String: ManagedObject.Type]>([:])
    /// Bumped by every registration that adds a class: an entity's resolved class
    /// (cached on the entity) is valid while the generation is unchanged.
    private static let generation = Atomic<Int>(0)
    private static let models = Lock<[WeakModel]>([])
    /// The classes registered already: every new object registers its class, and
    /// naming a class (reflection) costs far more than this lookup.
    private static let registered = Lock<Set<ObjectIdentifier>>([])
    /// The class registered last, by identity (0 for none): stored once the class
    /// is in `classes`.
    private static let lastRegistered = Atomic<UInt>(0)

    // @unchecked Sendable: only kept in `models`, under its lock; the model is frozen.
    private struct WeakModel: @unchecked Sendable {
        // Models are frozen (immutable) before they are registered; see PropertyDescription.
        weak var model: ManagedObjectModel?
    }

    /// Registers subclasses under their class names.
    public static func register(_ types: ManagedObject.Type...) {
        for type in types { register(type) }
    }

    static func register(_ type: ManagedObject.Type) {
        guard type != ManagedObject.self else { return }
        // Every new object registers its class: the class registered last is
        // known without taking the lock (a fetch makes objects of one class).
        let identity = UInt(bitPattern: ObjectIdentifier(type))
        guard lastRegistered.load(ordering: .acquiring) != identity else { return }
        defer { lastRegistered.store(identity, ordering: .releasing) }
        // Marked registered only once its names are in `classes` (another thread
        // seeing the mark must find them).
        guard !registered.withLock({ $0.contains(ObjectIdentifier(type)) }) else { return }
        defer { registered.withLock { _ = $0.insert(ObjectIdentifier(type)) } }
        let name = String(describing: type)
        let qualified = String(reflecting: type)
        let added = classes.withLock { classes -> Bool in
            var added = false
            if classes[qualified] == nil { classes[qualified] = type; added = true }
            if classes[name] == nil { classes[name] = type; added = true }
            return added
        }
        if added { generation.add(1, ordering: .releasing) }
    }

    /// The class for an entity: the registered class named by the entity's class
    /// name (a module prefix such as `Moody.Mood` or `.Mood` is ignored), or
    /// `ManagedObject`.
    @inline(__always)
    static func type(for entity: EntityDescription) -> ManagedObject.Type {
        // Resolved once per entity and registration generation: every fault
        // asks, and reads the answer without a lock (see `ResolvedClassCache`).
        let current = generation.load(ordering: .acquiring)
        if let type = entity.resolvedClass.type(in: current) { return type }
        return resolveAndCache(entity, in: current)
    }

    @inline(never)
    private static func resolveAndCache(_ entity: EntityDescription, in generation: Int) -> ManagedObject.Type {
        let type = resolve(entity)
        entity.resolvedClass.store(type, in: generation)
        return type
    }

    private static func resolve(_ entity: EntityDescription) -> ManagedObject.Type {
        if entity.managedObjectClassName == "ManagedObject" || entity.managedObjectClassName == "NSManagedObject" {
            return ManagedObject.self
        }
        let name = shortName(entity.managedObjectClassName)
        if name == "NSManagedObject" || name == "ManagedObject" { return ManagedObject.self }
        return classes.withLock { $0[entity.managedObjectClassName] ?? $0[name] } ?? ManagedObject.self
    }

    static func shortName(_ className: String) -> String {
        className.split(separator: ".").last.map(String.init) ?? className
    }

    /// Remembers a model (frozen) so that `entity()` can find a class's entity.
    static func remember(_ model: ManagedObjectModel) {
        models.withLock { list in
            list.removeAll { $0.model == nil }
            if !list.contains(where: { $0.model === model }) { list.append(WeakModel(model: model)) }
        }
    }

    static func entity(for type: ManagedObject.Type) -> EntityDescription? {
        let name = String(describing: type)
        let candidates = models.withLock { $0.compactMap(\.model) }
        for model in candidates.reversed() {
            if let entity = model.entity(forClassNamed: name) { return entity }
        }
        return nil
    }
}

extension ManagedObjectModel {
    /// The entity whose class name is `name` (ignoring a module prefix); when none
    /// is, the entity named `name`.
    func entity(forClassNamed name: String) -> EntityDescription? {
        entities.first { ManagedObjectClasses.shortName($0.managedObjectClassName) == name }
            ?? entitiesByName[name]
    }
}
