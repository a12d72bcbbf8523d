import Foundation
import Synchronization

/// Temporary IDs: one random UUID per process, its last 8 bytes XORed with a
/// counter. `UUID()` reads /dev/urandom (open, read, close) on Linux: three
/// system calls per new object.
private let temporaryIDBase = UUID().uuid
private let temporaryIDCounter = Atomic<UInt64>(0)

/// The identity of a managed object, valid across contexts and threads
/// (`NSManagedObjectID`).
///
/// An object inserted into a context has a *temporary* ID until it is saved (or
/// until ``ManagedObjectContext/obtainPermanentIDs(for:)``), and a *permanent* one
/// afterwards: the store's primary key for the object's entity. IDs are `Sendable`:
/// pass them between contexts, never the objects themselves.
///
/// ```swift
/// let id = mood.objectID                       // Sendable
/// let uri = id.uriRepresentation()             // x-coredata://<store UUID>/Mood/p42
/// let same = coordinator.managedObjectID(forURIRepresentation: uri)
/// let moodOnAnotherContext = try backgroundContext.existingObject(with: id)
/// ```
public struct ManagedObjectID: Sendable, Hashable, CustomStringConvertible {
    /// The entity of the object. The ID keeps it alive: an ID is `Sendable` and may
    /// outlive the model, the contexts and the coordinator it came from.
    public var entity: EntityDescription {
        // Read in place (`_read`): no retain of the entity (see `Scope`).
        @inline(__always) _read { yield scope.entity }
    }
    /// Whether the ID's entity is `entity` (identity, not name).
    @inline(__always)
    package func hasEntity(_ entity: EntityDescription) -> Bool { scope.entity === entity }
    /// Calls `body` with the entity.
    @inline(__always)
    func withEntity<Result>(_ body: (EntityDescription) -> Result) -> Result {
        body(scope.entity)
    }

    /// The entity and store of IDs, shared by the IDs a store makes for one
    /// entity's rows (see ``Scopes``) and by a frozen model's temporary IDs of one
    /// entity: an ID holds one reference, to an object nothing refers to weakly.
    /// (Entities and store names are referred to weakly, by their properties and
    /// by the interning table: every retain of them goes through a side table,
    /// and IDs are copied on every hot path.)
    package final class Scope: Sendable {
        package let entity: EntityDescription
        let storeName: StoreName

        init(entity: EntityDescription, storeName: StoreName) {
            self.entity = entity
            self.storeName = storeName
        }
    }

    /// A store's ID scopes, one per entity, made on first use.
    package final class Scopes: Sendable {
        let storeName: StoreName
        private let scopes = Lock([ObjectIdentifier: Scope]())

        package init(storeName: StoreName) {
            self.storeName = storeName
        }

        /// The scope of the IDs of `entity`'s rows. (Keyed by the entity's
        /// identity, which the scope keeps alive.)
        package func scope(for entity: EntityDescription) -> Scope {
            scopes.withLock { scopes in
                if let scope = scopes[ObjectIdentifier(entity)] { return scope }
                let scope = Scope(entity: entity, storeName: storeName)
                scopes[ObjectIdentifier(entity)] = scope
                return scope
            }
        }
    }

    private let scope: Scope
    /// The identifier (UUID) of the store holding the object; nil while temporary.
    public var storeIdentifier: String? {
        if case .temporary = key { return nil }
        return storeName.identifier
    }
    /// The store identifier, interned ("" while temporary): one object per
    /// identifier, compared by identity, where a `String` would be compared by its
    /// 36 characters (a UUID).
    private var storeName: StoreName { scope.storeName }
    /// The interned store name's identity (nil while temporary): two permanent IDs
    /// are of the same store exactly when these are equal, compared without
    /// touching the identifier string.
    var storeIdentity: ObjectIdentifier? {
        if case .temporary = key { return nil }
        return ObjectIdentifier(storeName)
    }
    let key: Key

    /// A store identifier, interned: one object per distinct identifier while any
    /// ID or store holds it (stores make one each; so does the public initializer,
    /// for the identifiers it is given). The table holds names weakly and drops
    /// the dead ones as it grows, so a process that opens many stores one after
    /// another does not keep their names.
    package final class StoreName: Sendable {
        let identifier: String
        private init(_ identifier: String) { self.identifier = identifier }

        private struct Entry {
            weak var name: StoreName?
        }

        private struct Table {
            var entries: [String: Entry] = [:]
            /// The size past which dead entries are dropped.
            var limit = 64
        }

        private static let table = Lock(Table())

        /// How many names the table holds, dead ones not yet dropped included.
        static var tableCount: Int { table.withLock { $0.entries.count } }

        /// The interned name of `identifier`.
        package static func named(_ identifier: String) -> StoreName {
            table.withLock { table in
                if let name = table.entries[identifier]?.name { return name }
                let name = StoreName(identifier)
                table.entries[identifier] = Entry(name: name)
                if table.entries.count > table.limit {
                    table.entries = table.entries.filter { $0.value.name != nil }
                    table.limit = Swift.max(64, 2 * table.entries.count)
                }
                return name
            }
        }

        /// The name of temporary IDs (no store).
        static let none = named("")
    }

    /// A temporary ID is a number from a process-wide counter (shown as a UUID:
    /// the process's base UUID with the number mixed into its last 8 bytes), a
    /// permanent one the row's primary key: both compare and hash as one integer.
    enum Key: Hashable, Sendable {
        case temporary(UInt64)
        case permanent(Int64)
    }

    /// The UUID a temporary ID shows in its URI.
    private static func temporaryUUID(_ number: UInt64) -> UUID {
        var u = temporaryIDBase
        u.8 ^= UInt8(truncatingIfNeeded: number >> 56); u.9 ^= UInt8(truncatingIfNeeded: number >> 48)
        u.10 ^= UInt8(truncatingIfNeeded: number >> 40); u.11 ^= UInt8(truncatingIfNeeded: number >> 32)
        u.12 ^= UInt8(truncatingIfNeeded: number >> 24); u.13 ^= UInt8(truncatingIfNeeded: number >> 16)
        u.14 ^= UInt8(truncatingIfNeeded: number >> 8); u.15 ^= UInt8(truncatingIfNeeded: number)
        return UUID(uuid: u)
    }

    /// The number of a temporary ID shown as `uuid`, if this process made it.
    private static func temporaryNumber(_ uuid: UUID) -> UInt64? {
        let u = uuid.uuid, b = temporaryIDBase
        guard u.0 == b.0, u.1 == b.1, u.2 == b.2, u.3 == b.3, u.4 == b.4, u.5 == b.5, u.6 == b.6, u.7 == b.7 else { return nil }
        let bytes = [u.8 ^ b.8, u.9 ^ b.9, u.10 ^ b.10, u.11 ^ b.11, u.12 ^ b.12, u.13 ^ b.13, u.14 ^ b.14, u.15 ^ b.15]
        return bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// A new temporary ID for an inserted object.
    init(temporaryFor entity: EntityDescription) {
        self.scope = entity.temporaryIDScope
        self.key = .temporary(temporaryIDCounter.add(1, ordering: .relaxed).newValue)
    }

    /// The permanent ID of the row `primaryKey` of `entity` in the store `storeIdentifier`.
    public init(entity: EntityDescription, storeIdentifier: String, primaryKey: Int64) {
        self.init(scope: Scope(entity: entity, storeName: StoreName.named(storeIdentifier)), primaryKey: primaryKey)
    }

    /// The permanent ID of the row `primaryKey` of `entity` in the store whose
    /// scopes are `scopes`.
    package init(entity: EntityDescription, in scopes: Scopes, primaryKey: Int64) {
        self.init(scope: scopes.scope(for: entity), primaryKey: primaryKey)
    }

    /// The permanent ID of the row `primaryKey` of the scope's entity and store.
    package init(scope: Scope, primaryKey: Int64) {
        self.scope = scope
        self.key = .permanent(primaryKey)
    }

    /// Whether the ID is temporary (the object has never been saved).
    public var isTemporaryID: Bool {
        if case .temporary = key { return true }
        return false
    }

    /// The store's primary key of the object (`Z_PK`), once permanent.
    public var primaryKey: Int64? {
        if case .permanent(let pk) = key { return pk }
        return nil
    }

    /// The entity's name.
    public var entityName: String { entity.name }

    /// The ID as a URI: `x-coredata://<store UUID>/<Entity>/p<primary key>` when
    /// permanent, `x-coredata:///<Entity>/t<UUID>` while temporary: Core Data's forms.
    public func uriRepresentation() -> URL {
        URL(string: uriString) ?? URL(fileURLWithPath: "/invalid-object-id")
    }

    /// The text of ``uriRepresentation()``, made without a `URL` (for callers that
    /// write many, such as `ocd store dump`).
    package var uriString: String {
        // Entity names are identifiers: percent-encoding (slow) only for others.
        let plain = entity.name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x5F
        }
        let name = plain ? entity.name : entity.name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? entity.name
        switch key {
        case .permanent(let pk): return "x-coredata://\(storeName.identifier)/\(name)/p\(pk)"
        case .temporary(let number): return "x-coredata:///\(name)/t\(ManagedObjectID.temporaryUUID(number).uuidString)"
        }
    }

    public var description: String { "<\(uriRepresentation().absoluteString)>" }

    // IDs are dictionary keys on every hot path (the context's registry, change
    // sets, the row cache): equality tries the entity's identity before its name,
    // and hashing uses the key and the entity name's hash computed once per model,
    // never the name's characters.

    public static func == (lhs: ManagedObjectID, rhs: ManagedObjectID) -> Bool {
        lhs.key == rhs.key
            && (lhs.scope === rhs.scope
                || lhs.storeName === rhs.storeName && (lhs.entity === rhs.entity || lhs.entity.name == rhs.entity.name))
    }

    public func hash(into hasher: inout Hasher) {
        switch key {
        case .permanent(let pk): hasher.combine(pk)
        case .temporary(let number): hasher.combine(number)
        }
        hasher.combine(scope.entity.nameHash)
    }

    /// The hash sets and dictionaries use: the key and the entity name's hash
    /// (itself seeded per process), mixed with the table's seed by the SplitMix64
    /// finalizer. IDs are the keys of a context's uniquing table and of every
    /// change set, rehashed whenever those tables grow or shed entries: SipHash
    /// through `Hasher` costs far more than one finalizer for keys hashed that often.
    /// (`_rawHashValue(seed:)` is `Hashable`'s hook for exactly this; only sets
    /// and dictionaries call it, `hash(into:)` serves every other hasher.)
    public func _rawHashValue(seed: Int) -> Int {
        var x: UInt64
        switch key {
        case .permanent(let pk): x = UInt64(bitPattern: pk)
        case .temporary(let number): x = number ^ 0xA5A5_A5A5_A5A5_A5A5
        }
        x = x &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(bitPattern: Int64(scope.entity.nameHash))
        return splitMix64Hash(x, seed: seed)
    }

    /// Parses a Core Data object URI into its parts: store identifier, entity name,
    /// and primary key or temporary UUID.
    static func parse(uri: URL) -> (store: String, entity: String, key: Key)? {
        let text = uri.absoluteString
        guard text.hasPrefix("x-coredata://") else { return nil }
        let rest = text.dropFirst("x-coredata://".count)
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, let last = parts.last, let first = last.first else { return nil }
        let entity = parts[1].contains("%") ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : String(parts[1])
        let body = last.dropFirst()
        switch first {
        case "p":
            guard let pk = Int64(body), pk > 0 else { return nil }
            return (String(parts[0]), entity, .permanent(pk))
        case "t":
            // Only this process's temporary IDs can name an object.
            guard let uuid = UUID(uuidString: String(body)), let number = temporaryNumber(uuid) else { return nil }
            return (String(parts[0]), entity, .temporary(number))
        default:
            return nil
        }
    }
}

/// The SplitMix64 finalizer of `x` mixed with a table's `seed`: the hash the hot
/// keys (``ManagedObjectID``, managed objects) give sets and dictionaries
/// through `_rawHashValue(seed:)`, instead of SipHash. Every bit of `x` reaches
/// the low bits a table uses for its buckets.
func splitMix64Hash(_ x: UInt64, seed: Int) -> Int {
    var x = x ^ UInt64(bitPattern: Int64(seed))
    x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
    x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
    return Int(truncatingIfNeeded: x ^ (x >> 31))
}

/// The name this type had before it took Core Data's (`NSManagedObjectID`).
@available(*, deprecated, renamed: "ManagedObjectID")
public typealias ObjectID = ManagedObjectID

extension CodingUserInfoKey {
    /// The coordinator that decodes object IDs (``ManagedObjectID/init(from:)``).
    public static let persistentStoreCoordinator = CodingUserInfoKey(rawValue: "OpenCoreData.persistentStoreCoordinator")!
}

extension ManagedObjectID: Codable {
    /// Encodes the ID as its URI (``uriRepresentation()``), as SwiftData encodes
    /// a persistent identifier: what lets a captured ID appear in Foundation's
    /// `#Predicate`, which needs `Codable` values.
    ///
    /// ```swift
    /// let id = mood.objectID
    /// let request = try FetchRequest<Mood>(predicate: #Predicate { $0.objectID == id })
    /// ```
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(uriRepresentation())
    }

    /// Decodes an ID from its URI, through the coordinator in the decoder's
    /// `userInfo[.persistentStoreCoordinator]`.
    ///
    /// - Throws: `DecodingError.dataCorrupted` without a coordinator, or when
    ///   the URI names no store of it.
    public init(from decoder: any Decoder) throws {
        let uri = try decoder.singleValueContainer().decode(URL.self)
        guard let coordinator = decoder.userInfo[.persistentStoreCoordinator] as? PersistentStoreCoordinator else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath,
                debugDescription: "Decoding the object ID \(uri) needs a coordinator in userInfo[.persistentStoreCoordinator]"))
        }
        guard let id = coordinator.managedObjectID(forURIRepresentation: uri) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: "The URI \(uri) names no object of the coordinator's stores"))
        }
        self = id
    }
}
