/// What happens to the destination of a relationship when its source is deleted:
/// `NSDeleteRule`, with Core Data's raw values.
///
/// ```swift
/// let moods = RelationshipDescription(name: "moods", destination: "Mood", toMany: true)
/// moods.deleteRule = .cascade   // deleting a country deletes its moods
/// ```
public enum DeleteRule: Int, Sendable, Hashable, CaseIterable {
    /// Do nothing to the destination: the store may keep references to a deleted
    /// object, so you must maintain the inverse yourself.
    case noAction = 0
    /// Remove the deleted object from the destination's inverse relationship.
    case nullify = 1
    /// Delete the destination objects too.
    case cascade = 2
    /// Refuse to delete the source while the relationship has destination objects.
    case deny = 3

    /// The name Xcode writes in the `deletionRule` XML attribute.
    public var xcodeName: String {
        switch self {
        case .noAction: return "No Action"
        case .nullify: return "Nullify"
        case .cascade: return "Cascade"
        case .deny: return "Deny"
        }
    }

    /// The rule Xcode names `xcodeName`, or nil.
    ///
    /// - Parameter xcodeName: The `deletionRule` of Xcode's model file ("Nullify",
    ///   "Cascade", ...).
    public init?(xcodeName: String) {
        guard let rule = DeleteRule.allCases.first(where: { $0.xcodeName == xcodeName }) else { return nil }
        self = rule
    }
}
