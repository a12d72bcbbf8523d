import Foundation

/// A recorder of operations that enables undo and redo, with the semantics of
/// Foundation's `UndoManager`.
///
/// ## Overview
///
/// Foundation on Linux has no usable `UndoManager`, and a managed object context needs one.
/// `CoreUndoManager` reimplements it: you register closures that revert a change, the
/// manager collects them into *undo groups*, and ``undo()`` reverts the most recent group
/// as a whole. While a group is undone, the closures it runs register their own inverse
/// operations, which the manager records as a *redo group*; ``redo()`` replays it.
///
/// A model object typically registers the inverse of each change in its setter:
///
/// ```swift
/// final class Document {
///     let undoManager: CoreUndoManager
///     init(undoManager: CoreUndoManager) { self.undoManager = undoManager }
///
///     var title = "" {
///         didSet {
///             let previous = oldValue
///             // Undoing assigns the previous title, which registers the
///             // inverse again: that is how redo is built.
///             undoManager.registerUndo(withTarget: self) { document in
///                 document.title = previous
///             }
///             undoManager.setActionName("Rename")
///         }
///     }
/// }
///
/// let undoManager = CoreUndoManager()
/// let document = Document(undoManager: undoManager)
/// document.title = "Draft"
/// undoManager.endEventGroup()    // what the context does in processPendingChanges
/// undoManager.undoMenuItemTitle  // "Undo Rename"
/// undoManager.undo()             // document.title == ""
/// undoManager.redo()             // document.title == "Draft"
/// ```
///
/// ### Groups and events
///
/// Everything registered between ``beginUndoGrouping()`` and ``endUndoGrouping()`` is
/// undone as one. Groups nest; only top-level groups are stored on the undo and redo
/// stacks, and nested groups are undone with their parent (or one by one with
/// ``undoNestedGroup()`` while the parent is open).
///
/// On Apple platforms, when ``groupsByEvent`` is true, the manager opens a group on the
/// first registration of a run-loop pass and closes it at the end of the pass. There is no
/// run loop here, so the end of the "event" is explicit: the first registration made with
/// no open group opens an *automatic* group, and its owner calls ``endEventGroup()`` to
/// close it — the managed object context does so in `processPendingChanges()`.
/// ``undo()`` closes a group left open, like Foundation does.
///
/// ### Observation
///
/// The manager posts Foundation's undo notifications through `NotificationCenter.default`,
/// with the manager as the object: ``checkpointNotification``,
/// ``willUndoChangeNotification``, ``didUndoChangeNotification``,
/// ``willRedoChangeNotification``, ``didRedoChangeNotification``,
/// ``didOpenUndoGroupNotification``, ``willCloseUndoGroupNotification`` and
/// ``didCloseUndoGroupNotification``.
///
/// ### Concurrency
///
/// A manager belongs to one context and is used from that context's queue, exactly like the
/// context itself: it is deliberately not `Sendable`, and it performs no locking. Handlers run
/// synchronously, on the caller's thread, from within ``undo()`` and ``redo()``.
///
/// ### Differences from Foundation
///
/// Foundation raises `NSInternalInconsistencyException` on programming errors. This type never
/// traps; each such misuse is a documented no-op instead:
///
/// - ``endUndoGrouping()`` with no open group, ``enableUndoRegistration()`` without a
///   matching ``disableUndoRegistration()``, and ``undo()`` while nested groups are open do
///   nothing.
/// - Registering while ``groupsByEvent`` is false and no group is open drops the action.
/// - ``undo()``, ``redo()`` and ``undoNestedGroup()`` called from a handler while an undo
///   or redo is in progress do nothing.
/// - Targets are held weakly rather than unowned: an action whose target was deallocated
///   is skipped instead of crashing.
/// - ``endEventGroup()`` replaces the run-loop observer that closes automatic groups.
public final class CoreUndoManager {
    // MARK: - State

    /// Closed top-level undo groups, oldest first.
    var undoStack: [UndoGroup] = []

    /// Closed top-level redo groups, oldest first.
    var redoStack: [UndoGroup] = []

    /// The open groups, outermost first. During an undo or redo, the outermost one is the
    /// group collecting the inverse actions.
    var openGroups: [UndoGroup] = []

    /// Where the outermost open group goes when it closes.
    var openGroupsDestination: StackKind = .undo

    /// Open groups set aside while an undo or redo is performed (the groups the caller of
    /// ``undoNestedGroup()`` had open), innermost undo last.
    var suspendedGroups: [(groups: [UndoGroup], destination: StackKind)] = []

    /// The groups whose actions are running (an undo or redo in progress), so that
    /// `removeAllActions(withTarget:)` can cancel their pending actions.
    var performingGroups: [UndoGroup] = []

    /// The nesting counter of ``disableUndoRegistration()``.
    private var disableCount = 0

    // MARK: - Creating a manager

    /// Creates an empty undo manager, with ``groupsByEvent`` true and no
    /// ``levelsOfUndo`` limit.
    ///
    /// ```swift
    /// let undoManager = CoreUndoManager()
    /// undoManager.levelsOfUndo = 100
    /// ```
    public init() {}

    // MARK: - Configuration

    /// Whether the first registration made with no open group implicitly opens a top-level
    /// group. The default is `true`.
    ///
    /// On Apple platforms the automatic group spans one pass of the run loop. Here its end is
    /// explicit: the owner of the manager calls ``endEventGroup()`` (the managed object
    /// context does so in `processPendingChanges()`), and ``undo()`` closes it too.
    ///
    /// When `false`, registrations must happen inside explicit groups:
    ///
    /// ```swift
    /// undoManager.groupsByEvent = false
    /// undoManager.beginUndoGrouping()
    /// undoManager.registerUndo { print("undo") }
    /// undoManager.endUndoGrouping()
    /// ```
    ///
    /// Foundation raises an exception when something is registered with no open group while
    /// this is false; `CoreUndoManager` ignores the registration instead (see
    /// ``registerUndo(withTarget:handler:)``).
    public var groupsByEvent = true

    /// The maximum number of top-level groups each of the undo and redo stacks holds;
    /// `0`, the default, means no limit.
    ///
    /// When closing a group makes a stack exceed the limit, the oldest groups are dropped.
    /// Lowering the limit drops the oldest groups immediately. Negative values count as `0`.
    ///
    /// ```swift
    /// undoManager.levelsOfUndo = 20   // keep the 20 most recent undo groups
    /// ```
    public var levelsOfUndo = 0 {
        didSet {
            if levelsOfUndo < 0 { levelsOfUndo = 0 }
            trim(&undoStack)
            trim(&redoStack)
        }
    }

    // MARK: - Registering undo operations

    /// Registers a closure that reverts a change made to `target`.
    ///
    /// The action goes into the innermost open group. With no open group, it opens an
    /// automatic top-level group when ``groupsByEvent`` is true (closed by
    /// ``endEventGroup()`` or ``undo()``), and is ignored when it is false.
    /// Registrations are also ignored while registration is disabled
    /// (``isUndoRegistrationEnabled``).
    ///
    /// Registration made while undoing is recorded as redo, registration made while redoing
    /// is recorded as undo, and any other registration clears the redo stack. So a handler
    /// that changes state through the same code path that registers undo gets redo for free:
    ///
    /// ```swift
    /// final class Counter {
    ///     let undoManager: CoreUndoManager
    ///     private(set) var value = 0
    ///     init(undoManager: CoreUndoManager) { self.undoManager = undoManager }
    ///
    ///     func setValue(_ newValue: Int) {
    ///         let oldValue = value
    ///         undoManager.registerUndo(withTarget: self) { counter in
    ///             counter.setValue(oldValue)   // registers the redo
    ///         }
    ///         value = newValue
    ///     }
    /// }
    /// ```
    ///
    /// - Important: The manager holds `target` **weakly** (Foundation holds it unowned).
    ///   Passing the changed object as the target, and receiving it as the closure's
    ///   argument instead of capturing it, avoids retain cycles between the object, its
    ///   context and the undo manager. If the target has been deallocated when the action is
    ///   performed, the action is skipped. The closure itself, and everything it captures,
    ///   is held strongly until the action is performed or removed. Core Data registers its
    ///   actions with the managed object context as the target, which keeps the context's
    ///   undo history from retaining the context.
    ///
    /// - Parameters:
    ///   - target: The object the action applies to; ``removeAllActions(withTarget:)``
    ///     removes actions by target.
    ///   - handler: The closure to run on undo (or redo); it receives `target`.
    public func registerUndo<Target: AnyObject>(
        withTarget target: Target,
        handler: @escaping (Target) -> Void
    ) {
        let action = UndoAction(target: target) { [weak target] in
            guard let target else { return }
            handler(target)
        }
        register(action)
    }

    /// Registers a closure that reverts a change, with no target.
    ///
    /// It behaves like ``registerUndo(withTarget:handler:)``, except that the action can only
    /// be removed by ``removeAllActions()``. The closure, and everything it captures, is held
    /// strongly: capture objects weakly to avoid retain cycles.
    ///
    /// ```swift
    /// var names = ["Ada"]
    /// func append(_ name: String) {
    ///     names.append(name)
    ///     undoManager.registerUndo { names.removeLast() }
    /// }
    /// ```
    ///
    /// - Parameter handler: The closure to run on undo (or redo).
    public func registerUndo(_ handler: @escaping () -> Void) {
        register(UndoAction(target: nil, body: handler))
    }

    /// Adds `action` to the innermost open group, following the rules documented on
    /// `registerUndo(withTarget:handler:)`.
    private func register(_ action: UndoAction) {
        guard disableCount == 0 else { return }
        if openGroups.isEmpty {
            guard groupsByEvent, !isUndoing, !isRedoing else { return }
            openGroup(automatic: true)
            // An observer of the checkpoint may have registered (and so opened a group)
            // or closed the group already; fall through to whatever is open now.
            guard !openGroups.isEmpty else { return }
        }
        if !isUndoing && !isRedoing {
            redoStack.removeAll()
        }
        guard let group = openGroups.last else { return }
        group.items.append(.action(action))
    }

    // MARK: - Enabling and disabling registration

    /// Whether registrations are recorded; false between ``disableUndoRegistration()`` and
    /// the matching ``enableUndoRegistration()``.
    ///
    /// ```swift
    /// undoManager.disableUndoRegistration()
    /// loadInitialContent()            // not undoable
    /// undoManager.enableUndoRegistration()
    /// ```
    public var isUndoRegistrationEnabled: Bool { disableCount == 0 }

    /// Stops recording registrations until the matching ``enableUndoRegistration()``.
    ///
    /// Calls nest: registration is enabled again only after as many
    /// ``enableUndoRegistration()`` calls as there were `disableUndoRegistration()` calls.
    ///
    /// ```swift
    /// undoManager.disableUndoRegistration()
    /// defer { undoManager.enableUndoRegistration() }
    /// applyChangesFromServer()
    /// ```
    public func disableUndoRegistration() {
        disableCount += 1
    }

    /// Balances one ``disableUndoRegistration()`` call.
    ///
    /// Foundation raises an exception when registration is already enabled; this method
    /// does nothing in that case.
    ///
    /// ```swift
    /// undoManager.disableUndoRegistration()
    /// undoManager.disableUndoRegistration()
    /// undoManager.enableUndoRegistration()
    /// undoManager.isUndoRegistrationEnabled   // false: one disable is still in effect
    /// undoManager.enableUndoRegistration()
    /// undoManager.isUndoRegistrationEnabled   // true
    /// ```
    public func enableUndoRegistration() {
        if disableCount > 0 { disableCount -= 1 }
    }

    // MARK: - Grouping

    /// The number of open groups: `0` when no group is open.
    ///
    /// While an undo or redo is performed, this counts the group collecting the inverse
    /// actions (and any groups the handlers open), not the groups the caller had open.
    ///
    /// ```swift
    /// undoManager.beginUndoGrouping()
    /// undoManager.groupingLevel   // 1
    /// undoManager.endUndoGrouping()
    /// ```
    public var groupingLevel: Int { openGroups.count }

    /// Opens a group, nested in the current open group if there is one.
    ///
    /// Everything registered until the matching ``endUndoGrouping()`` is undone as one.
    /// Posts ``checkpointNotification`` (unless an undo or redo is in progress), then
    /// ``didOpenUndoGroupNotification``.
    ///
    /// ```swift
    /// undoManager.beginUndoGrouping()
    /// document.title = "Report"
    /// document.author = "Ada"
    /// undoManager.setActionName("Edit Properties")
    /// undoManager.endUndoGrouping()
    /// undoManager.undo()   // reverts both changes
    /// ```
    public func beginUndoGrouping() {
        openGroup(automatic: false)
    }

    private func openGroup(automatic: Bool) {
        if !isUndoing && !isRedoing {
            post(Self.checkpointNotification)
            // A checkpoint observer that registered changes has opened the automatic group
            // already: the registration that asked for one joins it.
            if automatic && !openGroups.isEmpty { return }
        }
        let group = UndoGroup(isAutomatic: automatic)
        if openGroups.isEmpty {
            openGroupsDestination = isUndoing ? .redo : .undo
        }
        openGroups.append(group)
        post(Self.didOpenUndoGroupNotification)
    }

    /// Closes the innermost open group.
    ///
    /// A closed nested group joins its parent; a closed top-level group is pushed onto the
    /// undo stack (or onto the redo stack when it collected the inverse actions of an undo),
    /// dropping the oldest groups beyond ``levelsOfUndo``. Empty groups are discarded.
    ///
    /// Posts ``checkpointNotification`` and ``willCloseUndoGroupNotification`` before the
    /// group closes, then ``didCloseUndoGroupNotification``.
    ///
    /// Foundation raises an exception when no group is open; this method does nothing then.
    /// A call made by an observer of the notifications that precede the closing of a group,
    /// asking to close that same group, is ignored as well (the group is already closing).
    ///
    /// ```swift
    /// undoManager.beginUndoGrouping()
    /// shape.move(by: offset)
    /// undoManager.endUndoGrouping()
    /// ```
    public func endUndoGrouping() {
        guard let group = openGroups.last, !group.isClosing else { return }
        group.isClosing = true
        defer { group.isClosing = false }

        post(Self.checkpointNotification)
        guard openGroups.last === group else { return }
        post(Self.willCloseUndoGroupNotification)
        guard openGroups.last === group else { return }
        openGroups.removeLast()

        if let parent = openGroups.last {
            if !group.items.isEmpty {
                parent.items.append(.group(group))
            }
        } else if !group.items.isEmpty {
            switch openGroupsDestination {
            case .undo:
                undoStack.append(group)
                trim(&undoStack)
            case .redo:
                redoStack.append(group)
                trim(&redoStack)
            }
        }

        let userInfo: [AnyHashable: Any]? = group.isDiscardable ? [Self.groupIsDiscardableKey: true] : nil
        post(Self.didCloseUndoGroupNotification, userInfo: userInfo)
    }

    /// Closes the automatic top-level group opened by the first registration of the current
    /// "event", if it is the only open group.
    ///
    /// This stands in for the run-loop observer with which Foundation closes automatic groups
    /// when ``groupsByEvent`` is true. The manager's owner calls it when a unit of user work is
    /// complete; the managed object context calls it at the end of `processPendingChanges()`,
    /// so that all the changes of one event are undone together.
    ///
    /// It does nothing (and returns `false`) when no group is open, when the open top-level
    /// group was opened explicitly with ``beginUndoGrouping()``, or when explicit groups are
    /// still open inside the automatic group.
    ///
    /// ```swift
    /// document.title = "Draft"      // opens the automatic group
    /// document.author = "Ada"       // same group
    /// undoManager.endEventGroup()   // closes it: one undo reverts both
    /// ```
    ///
    /// - Returns: Whether a group was closed.
    @discardableResult
    public func endEventGroup() -> Bool {
        guard openGroups.count == 1, let group = openGroups.first, group.isAutomatic, !group.isClosing else {
            return false
        }
        endUndoGrouping()
        return true
    }

    // MARK: - Undo and redo

    /// Whether an undo is in progress: true while the handlers of an undo group run.
    ///
    /// ```swift
    /// undoManager.registerUndo(withTarget: self) { model in
    ///     assert(model.undoManager.isUndoing || model.undoManager.isRedoing)
    ///     model.restore()
    /// }
    /// ```
    public private(set) var isUndoing = false

    /// Whether a redo is in progress: true while the handlers of a redo group run.
    ///
    /// ```swift
    /// if undoManager.isRedoing { print("replaying") }
    /// ```
    public private(set) var isRedoing = false

    /// Whether there is something to undo: a group on the undo stack, or actions in a group
    /// that is still open (which ``undo()`` closes first).
    ///
    /// ```swift
    /// if undoManager.canUndo { undoManager.undo() }
    /// ```
    public var canUndo: Bool {
        !undoStack.isEmpty || openUndoGroupHasActions
    }

    /// Whether there is a group on the redo stack.
    ///
    /// Like Foundation, reading this property first posts ``checkpointNotification``, so that
    /// observers can register pending changes (which would clear the redo stack).
    ///
    /// ```swift
    /// if undoManager.canRedo { undoManager.redo() }
    /// ```
    public var canRedo: Bool {
        post(Self.checkpointNotification)
        return !redoStack.isEmpty
    }

    /// True when the open groups collect undo actions and hold at least one.
    var openUndoGroupHasActions: Bool {
        openGroupsDestination == .undo && openGroups.contains { !$0.items.isEmpty }
    }

    /// Closes the open top-level group if there is one, then undoes the most recent group.
    ///
    /// The group's actions run in reverse order of registration; what they register is
    /// recorded as one redo group, which takes over the undone group's action name.
    /// See ``undoNestedGroup()`` for the notifications.
    ///
    /// Does nothing when there is nothing to undo, while an undo or redo is in progress (a
    /// handler calling `undo()`), or when more than one group is open (Foundation raises an
    /// exception in those last two cases).
    ///
    /// ```swift
    /// counter.setValue(1)
    /// counter.setValue(2)       // same automatic group
    /// undoManager.undo()        // closes the group, then reverts both: value == 0
    /// undoManager.redo()        // value == 2
    /// ```
    public func undo() {
        guard !isUndoing, !isRedoing else { return }
        if openGroups.count == 1 {
            endUndoGrouping()
        }
        guard openGroups.isEmpty else { return }
        undoNestedGroup()
    }

    /// Undoes the most recent group at the current nesting level: the last top-level group
    /// when no group is open, or else the last nested group closed inside the innermost open
    /// group.
    ///
    /// What the actions register is recorded as one group on the redo stack. Posts
    /// ``checkpointNotification`` and ``willUndoChangeNotification``, opens and closes the redo
    /// group around the actions (``didOpenUndoGroupNotification``,
    /// ``checkpointNotification``, ``willCloseUndoGroupNotification``,
    /// ``didCloseUndoGroupNotification``), then posts ``didUndoChangeNotification``.
    ///
    /// Does nothing when there is no such group (for instance when the innermost open group
    /// ends with a plain action rather than a closed nested group — Foundation raises an
    /// exception there), or while an undo or redo is in progress.
    ///
    /// ```swift
    /// undoManager.beginUndoGrouping()      // outer
    /// undoManager.beginUndoGrouping()      // inner
    /// counter.setValue(5)
    /// undoManager.endUndoGrouping()        // inner closes inside outer
    /// undoManager.undoNestedGroup()        // reverts the inner group only
    /// undoManager.endUndoGrouping()        // outer
    /// ```
    public func undoNestedGroup() {
        guard !isUndoing, !isRedoing else { return }
        post(Self.checkpointNotification)
        guard !isUndoing, !isRedoing else { return }

        let group: UndoGroup
        if let innermost = openGroups.last {
            guard case .group(let nested)? = innermost.items.last else { return }
            post(Self.willUndoChangeNotification)
            // Observers may have changed the open groups: undo only what is still there.
            guard let current = openGroups.last, case .group(let stillLast)? = current.items.last,
                  stillLast === nested else { return }
            current.items.removeLast()
            group = nested
        } else {
            guard let last = undoStack.last else { return }
            post(Self.willUndoChangeNotification)
            guard openGroups.isEmpty, undoStack.last === last else { return }
            undoStack.removeLast()
            group = last
        }

        perform(group, asUndo: true)
        post(Self.didUndoChangeNotification)
    }

    /// Replays the most recent redo group, recording what its actions register as one undo
    /// group.
    ///
    /// Posts ``checkpointNotification`` and ``willRedoChangeNotification``, opens and closes
    /// the undo group around the actions, then posts ``didRedoChangeNotification``.
    ///
    /// Does nothing when there is nothing to redo, while a group is open, or while an undo or
    /// redo is in progress.
    ///
    /// ```swift
    /// undoManager.undo()
    /// undoManager.redoMenuItemTitle   // "Redo Rename"
    /// undoManager.redo()
    /// ```
    public func redo() {
        guard !isUndoing, !isRedoing else { return }
        post(Self.checkpointNotification)
        guard !isUndoing, !isRedoing, openGroups.isEmpty, let group = redoStack.last else { return }
        post(Self.willRedoChangeNotification)
        guard openGroups.isEmpty, redoStack.last === group else { return }
        redoStack.removeLast()
        perform(group, asUndo: false)
        post(Self.didRedoChangeNotification)
    }

    /// Runs `group`'s actions inside a fresh top-level group that collects their inverses,
    /// setting the caller's open groups aside meanwhile.
    private func perform(_ group: UndoGroup, asUndo: Bool) {
        suspendedGroups.append((openGroups, openGroupsDestination))
        openGroups = []
        if asUndo { isUndoing = true } else { isRedoing = true }

        openGroup(automatic: false)
        if let inverse = openGroups.first {
            inverse.actionName = group.actionName
            inverse.isDiscardable = group.isDiscardable
        }

        performingGroups.append(group)
        group.perform()
        performingGroups.removeLast()

        // Close the inverse group, and any group a handler left open.
        while let innermost = openGroups.last {
            endUndoGrouping()
            if openGroups.last === innermost {
                // Could not close it normally (re-entrant close): drop it.
                openGroups.removeLast()
            }
        }

        if asUndo { isUndoing = false } else { isRedoing = false }
        if let suspended = suspendedGroups.popLast() {
            openGroups = suspended.groups
            openGroupsDestination = suspended.destination
        }
    }

    // MARK: - Removing actions

    /// Clears the undo and redo stacks and re-enables registration.
    ///
    /// Open groups stay open (so that pending ``endUndoGrouping()`` calls remain balanced)
    /// but lose their actions. Foundation documents only the clearing and the re-enabling.
    /// Called from a handler, it does not stop the remaining actions of the group being
    /// undone or redone (``removeAllActions(withTarget:)`` does).
    ///
    /// ```swift
    /// try context.save()
    /// undoManager.removeAllActions()   // the saved state is the new baseline
    /// ```
    public func removeAllActions() {
        undoStack.removeAll()
        redoStack.removeAll()
        for group in openGroups { group.items.removeAll() }
        for suspended in suspendedGroups {
            for group in suspended.groups { group.items.removeAll() }
        }
        disableCount = 0
    }

    /// Removes every action registered with `target` from the undo and redo stacks and from
    /// the open groups, leaving registration disabled if it was.
    ///
    /// Groups left empty are dropped from the stacks. Actions removed while their group is
    /// being undone or redone do not run. Target-free actions
    /// (``registerUndo(_:)``) are never removed by this method.
    ///
    /// ```swift
    /// // The object is going away: forget its history.
    /// undoManager.removeAllActions(withTarget: shape)
    /// ```
    ///
    /// - Parameter target: The object whose actions are removed (compared by identity).
    public func removeAllActions(withTarget target: AnyObject) {
        func prune(_ stack: inout [UndoGroup]) {
            for group in stack { group.removeActions(withTarget: target) }
            stack.removeAll { $0.items.isEmpty }
        }
        prune(&undoStack)
        prune(&redoStack)
        for group in openGroups { group.removeActions(withTarget: target) }
        for suspended in suspendedGroups {
            for group in suspended.groups { group.removeActions(withTarget: target) }
        }
        for group in performingGroups { group.removeActions(withTarget: target) }
    }

    /// Drops the oldest groups of `stack` beyond ``levelsOfUndo``.
    private func trim(_ stack: inout [UndoGroup]) {
        guard levelsOfUndo > 0, stack.count > levelsOfUndo else { return }
        stack.removeFirst(stack.count - levelsOfUndo)
    }
}

/// `CoreUndoManager` is confined to the queue of its owner (a managed object context).
@available(*, unavailable, message: "CoreUndoManager belongs to a single context and queue")
extension CoreUndoManager: Sendable {}
