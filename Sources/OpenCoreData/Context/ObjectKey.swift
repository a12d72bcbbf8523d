/// An object's identity as the key of a context's change sets (`strong`, the
/// inserted and deleted objects, the current event's sets).
///
/// The same identity as `ObjectIdentifier`, hashed with the SplitMix64 finalizer
/// rather than SipHash: every insert, change and delete goes through three or four
/// of these tables, and hashing an `ObjectIdentifier` through `Hasher` cost ~90
/// instructions each time (a tenth of an object-by-object delete's own work).
/// Sets and dictionaries call `_rawHashValue(seed:)`; `hash(into:)` serves every
/// other hasher with the same identity.
///
/// ```swift
/// strong.insert(object)
/// ```
struct ObjectKey: Hashable, Sendable {
    let identifier: ObjectIdentifier

    init(_ object: AnyObject) {
        identifier = ObjectIdentifier(object)
    }

    static func == (lhs: ObjectKey, rhs: ObjectKey) -> Bool { lhs.identifier == rhs.identifier }

    func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    func _rawHashValue(seed: Int) -> Int {
        splitMix64Hash(UInt64(UInt(bitPattern: identifier)), seed: seed)
    }
}
