import Foundation

/// Notifications posted by ``CoreUndoManager``.
///
/// Every notification is posted synchronously through `NotificationCenter.default`, on the
/// thread that called the manager, with the manager as the notification's `object`.
/// Observe a single manager by passing it as the `object` of the observation:
///
/// ```swift
/// let undoManager = CoreUndoManager()
/// let token = NotificationCenter.default.addObserver(
///     forName: CoreUndoManager.didUndoChangeNotification,
///     object: undoManager,
///     queue: nil
/// ) { _ in
///     print("undone")
/// }
/// defer { NotificationCenter.default.removeObserver(token) }
/// ```
///
/// The raw names are Foundation's own (`NSUndoManagerCheckpointNotification`, …), so code
/// ported from Apple platforms that observes those names keeps working.
///
/// The order of the notifications is the one Foundation documents:
///
/// - ``beginUndoGrouping()`` posts ``checkpointNotification`` (unless an undo or redo is
///   in progress), then ``didOpenUndoGroupNotification``.
/// - ``endUndoGrouping()`` posts ``checkpointNotification`` and
///   ``willCloseUndoGroupNotification`` before the group closes, then
///   ``didCloseUndoGroupNotification``.
/// - ``undoNestedGroup()`` (and so ``undo()``) posts ``checkpointNotification`` and
///   ``willUndoChangeNotification``, opens and closes the redo group around the undo
///   actions, then posts ``didUndoChangeNotification``. ``redo()`` does the same with
///   ``willRedoChangeNotification`` and ``didRedoChangeNotification``.
/// - Reading ``canRedo`` posts ``checkpointNotification``, like Foundation, so that clients
///   can register pending changes (which clear the redo stack) before the answer is computed.
extension CoreUndoManager {
    /// Posted whenever the manager opens or closes a group, before undo and redo, and when
    /// ``canRedo`` is read. The managed object context observes it to process pending changes.
    /// Foundation's `NSUndoManagerCheckpoint`.
    public static let checkpointNotification = Notification.Name("NSUndoManagerCheckpointNotification")

    /// Posted just before the manager performs an undo group.
    /// Foundation's `NSUndoManagerWillUndoChange`.
    public static let willUndoChangeNotification = Notification.Name("NSUndoManagerWillUndoChangeNotification")

    /// Posted just after the manager performs an undo group.
    /// Foundation's `NSUndoManagerDidUndoChange`.
    public static let didUndoChangeNotification = Notification.Name("NSUndoManagerDidUndoChangeNotification")

    /// Posted just before the manager performs a redo group.
    /// Foundation's `NSUndoManagerWillRedoChange`.
    public static let willRedoChangeNotification = Notification.Name("NSUndoManagerWillRedoChangeNotification")

    /// Posted just after the manager performs a redo group.
    /// Foundation's `NSUndoManagerDidRedoChange`.
    public static let didRedoChangeNotification = Notification.Name("NSUndoManagerDidRedoChangeNotification")

    /// Posted after the manager opens a group (explicitly, implicitly by event grouping, or
    /// around the actions of an undo or redo). Foundation's `NSUndoManagerDidOpenUndoGroup`.
    public static let didOpenUndoGroupNotification = Notification.Name("NSUndoManagerDidOpenUndoGroupNotification")

    /// Posted before the manager closes a group; ``groupingLevel`` still counts it.
    /// Foundation's `NSUndoManagerWillCloseUndoGroup`.
    public static let willCloseUndoGroupNotification = Notification.Name("NSUndoManagerWillCloseUndoGroupNotification")

    /// Posted after the manager closes a group. When the closed group was marked discardable
    /// (``setActionIsDiscardable(_:)``), `userInfo` holds `true` under
    /// ``groupIsDiscardableKey``. Foundation's `NSUndoManagerDidCloseUndoGroup`.
    public static let didCloseUndoGroupNotification = Notification.Name("NSUndoManagerDidCloseUndoGroupNotification")

    /// The `userInfo` key of ``didCloseUndoGroupNotification`` whose value (`true`) tells that
    /// the closed group is discardable. Foundation's `NSUndoManagerGroupIsDiscardableKey`.
    public static let groupIsDiscardableKey = "NSUndoManagerGroupIsDiscardableKey"

    /// Posts `name` with the manager as the object.
    func post(_ name: Notification.Name, userInfo: [AnyHashable: Any]? = nil) {
        NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
    }
}
