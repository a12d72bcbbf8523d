/// The stand-in that weak back references point at, so that the objects they refer
/// to stay fast.
///
/// Swift gives every object that is the target of a `weak` reference a *side
/// table*, and from then on each retain and release of that object takes a slower,
/// out-of-line path. Entities are retained constantly (every ``ObjectID`` holds
/// its entity), contexts on every property change: a `weak` reference from each
/// property to its entity, or from each managed object to its context, made all
/// of that measurably slower (a quarter of an insert-and-save's time went to side
/// tables).
///
/// So the target owns a small anchor of its own and back references hold the
/// anchor instead:
///
/// - a `weak` reference to the anchor (``WeakAnchoredReference``) behaves exactly
///   like a `weak` reference to the target — the anchor lives as long as its
///   target, because only the target holds it — and puts the side table on the
///   anchor, which nobody retains on a hot path;
/// - a strong reference to the anchor is a cheap *unowned-or-nil* reference: the
///   target sets ``target`` to nil as its deinitialization begins
///   (`ManagedObject.managedObjectContext` works this way, as Core Data's
///   `unowned(unsafe)` property, but turning nil rather than dangling).
///
/// ```swift
/// final class Entity: WeakAnchored {
///     let weakAnchor = WeakAnchor<Entity>()
///     init() { weakAnchor.target = self }
/// }
/// var owner = WeakAnchoredReference<Entity>()
/// owner.target = entity          // like `weak var owner: Entity?`
/// ```
final class WeakAnchor<Target: AnyObject>: @unchecked Sendable {
    // Unretained: the target sets this right after its initialization and,
    // for targets outlived by strong holders of the anchor, clears it in deinit.
    // Weak holders can only reach the anchor while the target holds it.
    private var reference: Unmanaged<Target>?

    /// The target, while it is alive.
    var target: Target? {
        @inline(__always) get { reference?.takeUnretainedValue() }
        set { reference = newValue.map { Unmanaged.passUnretained($0) } }
    }

    /// Calls `body` with the target, if it is alive, without retaining it (a
    /// retained reference costs two atomic operations): only for a caller that
    /// knows the target lives through the call (a managed object's context,
    /// used on its own queue).
    @inline(__always)
    func withTarget<Result>(_ body: (Target) throws -> Result) rethrows -> Result? {
        guard let reference else { return nil }
        return try reference._withUnsafeGuaranteedRef(body)
    }

    init() {}
}

/// A type whose back references use a ``WeakAnchor``.
protocol WeakAnchored: AnyObject {
    var weakAnchor: WeakAnchor<Self> { get }
}

/// A `weak` reference to a ``WeakAnchored`` object that gives the object no side
/// table (see ``WeakAnchor``).
///
/// A reference to a target that lives for the rest of the process can be
/// *pinned* (``pin()``): reads then go straight to the target, without the weak
/// load of the anchor (whose side table makes each read retain and release it on
/// the slow path). A frozen model pins its descriptions' back references.
struct WeakAnchoredReference<Target: WeakAnchored>: @unchecked Sendable {
    private weak var anchor: WeakAnchor<Target>?
    // unowned(unsafe): set by `pin()` only, for a target that is never freed.
    private unowned(unsafe) var pinnedTarget: Target?

    init(_ target: Target? = nil) {
        anchor = target?.weakAnchor
    }

    /// The target while it is alive, then nil.
    var target: Target? {
        get {
            if let pinnedTarget { return pinnedTarget }
            return anchor?.target
        }
        set {
            anchor = newValue?.weakAnchor
            pinnedTarget = nil
        }
    }

    /// Reads the target directly from now on, until it is set again. Only for a
    /// target kept alive for the rest of the process (a pinned entity, see
    /// `EntityDescription.pinForObjectIDs()`), and only before the reference is
    /// shared between threads (a frozen model is read, never written).
    mutating func pin() {
        pinnedTarget = anchor?.target
    }
}
