import Foundation
import OpenCoreDataPredicates

extension ManagedObject: PredicateKeyPathNaming {
    /// The model key `keyPath` reads, or nil (`PredicateKeyPathNaming`).
    ///
    /// The table of each class is built once (from ``managedPropertyKeyPaths``).
    ///
    /// ```swift
    /// Mood.predicateKey(for: \Mood.date)   // "date"
    /// ```
    public class func predicateKey(for keyPath: AnyKeyPath) -> String? {
        let id = ObjectIdentifier(self)
        if let table = managedKeyPathTables.withLock({ $0[id] }) { return table.keys[keyPath] }
        let table = ManagedKeyPathTable(keys: managedPropertyKeyPaths)
        managedKeyPathTables.withLock { $0[id] = table }
        return table.keys[keyPath]
    }
}

extension FetchRequestResult where Self: ManagedObject {
    /// The model key of a typed property, for APIs that take key strings.
    ///
    /// ```swift
    /// try Mood.key(for: \.date)   // "date"
    /// ```
    ///
    /// - Throws: `TypedPredicateError.unknownKeyPath` when the key path names
    ///   no modeled property (a computed property, a property of a class without
    ///   `@ManagedEntity`).
    public static func key(for keyPath: PartialKeyPath<Self>) throws -> String {
        guard let key = predicateKey(for: keyPath) else {
            throw TypedPredicateError.unknownKeyPath(String(describing: keyPath))
        }
        return key
    }

    /// The model keys of typed properties.
    ///
    /// - Throws: `TypedPredicateError.unknownKeyPath` for the first key path
    ///   that names no modeled property.
    public static func keys(for keyPaths: [PartialKeyPath<Self>]) throws -> [String] {
        try keyPaths.map { try key(for: $0) }
    }
}

/// The key-path table of one class, built once.
private final class ManagedKeyPathTable: @unchecked Sendable {
    // @unchecked Sendable: key paths are immutable objects (Swift does not mark
    // them Sendable) and the table is never changed after init.
    let keys: [AnyKeyPath: String]
    init(keys: [AnyKeyPath: String]) { self.keys = keys }
}

/// The key-path tables of the classes asked so far. Building one twice (two
/// threads at once) gives equal tables.
private let managedKeyPathTables = Lock<[ObjectIdentifier: ManagedKeyPathTable]>([:])
