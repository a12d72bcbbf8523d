import Foundation
import OpenCoreData

/// How `ocd` opens a store it names by URL rather than by file, such as a
/// PostgreSQL store (`postgres://user@host:port/database`).
///
/// OCDKit links no server store of its own, so that `ocd` on SQLite alone never
/// builds a network stack. An executable that has one installs its opener before
/// running a command: `ocd` built with the package's `PostgreSQL` trait
/// (`swift run --traits PostgreSQL ocd …`) installs the PostgreSQL store's, from
/// the `OCDPostgreSQL` module.
///
/// ```swift
/// import OCDKit
///
/// OCD.install(StoreURLOpener(schemes: ["mystore"], storeName: "MyStore") { location, model in
///     let coordinator = try PersistentStoreCoordinator.validated(managedObjectModel: model ?? MyStore.storedModel(at: location))
///     let store = try coordinator.addPersistentStore(type: .init("MyStore"), at: URL(string: location)!, options: [:])
///     let context = ManagedObjectContext(concurrencyType: .mainQueue)
///     context.persistentStoreCoordinator = coordinator
///     return (context, store)
/// })
/// await OCD.runAsMain()
/// ```
public struct StoreURLOpener: Sendable {
    /// The URL schemes the opener reads, lowercased (`postgres`, `postgresql`).
    public let schemes: Set<String>
    /// The store's name in messages ("PostgreSQL").
    public let storeName: String
    /// Opens the store at the location read-only, with the model the user named
    /// (`--model`), or the store's own when nil.
    public let open: @Sendable (_ location: String, _ model: ManagedObjectModel?) throws -> (ManagedObjectContext, any PersistentStore)

    /// An opener of the stores named by URLs with one of `schemes`.
    public init(schemes: Set<String>, storeName: String,
                open: @escaping @Sendable (_ location: String, _ model: ManagedObjectModel?) throws -> (ManagedObjectContext, any PersistentStore)) {
        self.schemes = Set(schemes.map { $0.lowercased() })
        self.storeName = storeName
        self.open = open
    }
}

/// The openers installed in this process, the latest first.
private let installedOpeners = Lock<[StoreURLOpener]>([])

/// The schemes of the stores `ocd` knows by name, whether or not this build can
/// open them: a location with one of them is never taken for a file.
private let knownSchemes: [String: (storeName: String, trait: String)] = [
    "postgres": ("PostgreSQL", "PostgreSQL"),
    "postgresql": ("PostgreSQL", "PostgreSQL"),
]

extension OCD {
    /// Installs an opener for the stores named by URLs with its schemes; a later
    /// opener of a scheme takes precedence over an earlier one, and installing
    /// openers of the same schemes again replaces them.
    public static func install(_ opener: StoreURLOpener) {
        installedOpeners.withLock { openers in
            openers.removeAll { $0.schemes == opener.schemes }
            openers.insert(opener, at: 0)
        }
    }
}

/// The scheme of `location` when it is a URL of a store `ocd` knows or has an
/// opener for (`postgres://…`), lowercased; nil for a file path.
func storeURLScheme(_ location: String) -> String? {
    guard let end = location.range(of: "://") else { return nil }
    let scheme = location[..<end.lowerBound].lowercased()
    if knownSchemes[scheme] != nil { return scheme }
    return installedOpeners.withLock { openers in openers.contains { $0.schemes.contains(scheme) } } ? scheme : nil
}

/// Opens the store named by a URL with `scheme` through the opener installed for
/// it; a store this build has no opener for is an error saying how to get one.
func openStore(url location: String, scheme: String, modelPath: String?) throws -> (ManagedObjectContext, any PersistentStore) {
    guard let opener = installedOpeners.withLock({ openers in openers.first { $0.schemes.contains(scheme) } }) else {
        throw missingOpener(location, scheme: scheme)
    }
    return try opener.open(location, modelPath.map(loadModel))
}

/// The failure of a command given a store URL whose opener this build lacks: it
/// says which trait builds `ocd` with it.
func missingOpener(_ location: String, scheme: String) -> CommandFailure {
    guard let known = knownSchemes[scheme] else { return CommandFailure("ocd can't open \(location): no store reads \(scheme):// URLs") }
    return CommandFailure("This ocd was built without the \(known.storeName) store, so it can't open \(location). "
        + "Build it with the package's \(known.trait) trait: swift run --traits \(known.trait) ocd …")
}
