import Foundation
import Observation

/// Managed objects take part in Swift's Observation, the counterpart of the
/// key-value observing Core Data users rely on on Apple platforms.
///
/// `withObservationTracking` sees the reads of `@Managed` properties (attributes
/// and relationships), and a change from any source — a setter, undo or redo, a
/// merge from another context, a refresh, a rollback — tells exactly the
/// observers of the properties that changed, on the context's queue, where the
/// change happens:
///
/// ```swift
/// withObservationTracking {
///     _ = mood.rating
/// } onChange: {
///     print("rating will change")
/// }
/// mood.rating = 5          // prints "rating will change"
/// ```
///
/// An object makes its registrar on its first `@Managed` read; objects read only
/// through key-value coding (`value(forKey:)`) or never read carry none, and
/// their changes cost nothing more. Server code without Observation's tracking
/// can follow an object with ``ManagedObject/changedKeys()``.
extension ManagedObject: Observable {}

extension ManagedObject {
    /// The keys of this object's properties as they change, one set per change
    /// (a setter: one key; a merge, refresh or rollback: the keys whose values
    /// differ; turning into a fault: every key).
    ///
    /// ```swift
    /// let changes = context.performAndWait { mood.changedKeys() }
    /// Task {
    ///     for await keys in changes { print("changed:", keys.sorted()) }
    /// }
    /// ```
    ///
    /// Call it on the context's queue. The sequence ends when the object is
    /// deallocated; an iteration that stops ends its subscription.
    ///
    /// - Returns: A sequence of the sets of keys that changed.
    public func changedKeys() -> AsyncStream<Set<String>> {
        madeObservation.stream()
    }

    /// Records a read of the property `key` for Observation's tracking: what the
    /// `@Managed` getters call.
    @inline(__always)
    func observeRead(_ key: String) {
        madeObservation.registrar.access(self, keyPath: ObservedKeyPaths.keyPath(for: key))
    }

    /// The synthetic property Observation's registrar tracks for a model key.
    subscript(observedProperty key: ObservedPropertyKey) -> Int { 0 }
}

/// The name of a property, as the index of the synthetic key path a registrar
/// tracks for it: `\ManagedObject.[observedProperty: ObservedPropertyKey("date")]`.
struct ObservedPropertyKey: Hashable, Sendable {
    let name: String
}

/// One key path per property name, made once (a key path with a subscript
/// argument is an allocation).
enum ObservedKeyPaths {
    /// A key path with a `Sendable` index is `Sendable` itself.
    typealias ObservedKeyPath = KeyPath<ManagedObject, Int> & Sendable

    private static let cache = Lock<[String: ObservedKeyPath]>([:])

    static func keyPath(for key: String) -> ObservedKeyPath {
        if let keyPath = cache.withLock({ $0[key] }) { return keyPath }
        let keyPath: ObservedKeyPath = \ManagedObject.[observedProperty: ObservedPropertyKey(name: key)]
        cache.withLock { cache in
            if cache[key] == nil { cache[key] = keyPath }
        }
        return keyPath
    }
}

/// An object's Observation registrar and its `changedKeys()` streams.
final class ObjectObservation: Sendable {
    // The continuations are reached only under `streams`' lock (a stream's
    // termination runs on any thread).
    let registrar = ObservationRegistrar()
    private let streams = Lock<Streams>(Streams())

    struct Streams {
        var next = 0
        var continuations: [Int: AsyncStream<Set<String>>.Continuation] = [:]
    }

    deinit {
        let continuations = streams.withLock { streams in
            let all = Array(streams.continuations.values)
            streams.continuations = [:]
            return all
        }
        for continuation in continuations { continuation.finish() }
    }

    func stream() -> AsyncStream<Set<String>> {
        let (stream, continuation) = AsyncStream<Set<String>>.makeStream(bufferingPolicy: .unbounded)
        let id = streams.withLock { streams in
            let id = streams.next
            streams.next += 1
            streams.continuations[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.streams.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    private func publish(_ keys: Set<String>) {
        let continuations = streams.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(keys) }
    }

    /// One property's value changes (a setter, undo, redo).
    func changing(_ object: ManagedObject, index: Int, _ write: () -> Void) {
        let properties = object.entity.allProperties
        guard index < properties.count else { return write() }
        let key = properties[index].name
        let keyPath = ObservedKeyPaths.keyPath(for: key)
        registrar.willSet(object, keyPath: keyPath)
        write()
        registrar.didSet(object, keyPath: keyPath)
        publish([key])
    }

    /// The object's values are replaced (a merge, refresh, rollback, or nil: it
    /// turns into a fault): the properties whose values differ change.
    func replacing(_ object: ManagedObject, _ old: RowValues?, with new: RowValues?, _ write: () -> Void) {
        let properties = object.entity.allProperties
        var changed: [String] = []
        if let old, let new, old.count == new.count {
            for index in 0..<min(old.count, properties.count) where old[index] != new[index] {
                changed.append(properties[index].name)
            }
        } else {
            changed = properties.map(\.name)
        }
        guard !changed.isEmpty else { return write() }
        let keyPaths = changed.map(ObservedKeyPaths.keyPath(for:))
        for keyPath in keyPaths { registrar.willSet(object, keyPath: keyPath) }
        write()
        for keyPath in keyPaths { registrar.didSet(object, keyPath: keyPath) }
        publish(Set(changed))
    }
}
