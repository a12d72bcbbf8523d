import Synchronization

/// The class an entity's objects were last resolved to, with the registration
/// generation it was resolved in (see ``ManagedObjectClasses``), read without a
/// lock.
///
/// Every object a fetch, a fault or a prefetch makes asks for its entity's class.
/// Behind a mutex, the answer cost two atomic compare-and-swaps per object (and on
/// Linux, a `gettid` system call the first time on each thread). Here a reader
/// loads one word: the address of the latest entry, an immutable pair written
/// before the address is published. Entries are never changed or freed while the
/// entity lives (a new generation gets a new entry), so a reader never sees a torn
/// or freed one; there is one per generation the entity was asked in at most
/// (generations change only when a new subclass is registered).
///
/// ```swift
/// let current = generation.load(ordering: .acquiring)
/// if let type = entity.resolvedClass.type(in: current) { return type }
/// let type = resolve(entity)
/// entity.resolvedClass.store(type, in: current)
/// ```
struct ResolvedClassCache: ~Copyable, Sendable {
    /// One resolution: immutable once published.
    struct Entry {
        let generation: Int
        let type: ManagedObject.Type
    }

    /// The address of the latest entry (0 for none).
    private let latest = Atomic<UInt>(0)
    /// Every entry made, owned here: freed with the cache.
    private let entries = Lock<[UnsafeMutablePointer<Entry>]>([])

    init() {}

    /// The class resolved in `generation`, if that is the latest resolution.
    @inline(__always)
    func type(in generation: Int) -> ManagedObject.Type? {
        guard let entry = UnsafePointer<Entry>(bitPattern: latest.load(ordering: .acquiring)),
              entry.pointee.generation == generation else { return nil }
        return entry.pointee.type
    }

    /// Records `type` as resolved in `generation`.
    func store(_ type: ManagedObject.Type, in generation: Int) {
        entries.withLock { entries in
            if let last = entries.last, last.pointee.generation == generation, last.pointee.type == type { return }
            let entry = UnsafeMutablePointer<Entry>.allocate(capacity: 1)
            entry.initialize(to: Entry(generation: generation, type: type))
            entries.append(entry)
            latest.store(UInt(bitPattern: entry), ordering: .releasing)
        }
    }

    deinit {
        entries.withLock { entries in
            for entry in entries { entry.deinitialize(count: 1).deallocate() }
        }
    }
}
