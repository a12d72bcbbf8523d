import Foundation

/// Action names, menu titles and discardability.
///
/// Each top-level group carries an action name ("Rename", "Delete Shapes") that user
/// interfaces show as "Undo Rename" / "Redo Rename". Name the group after registering its
/// actions; when a group is undone, the redo group it produces takes over its name (the
/// handlers may rename it with ``CoreUndoManager/setActionName(_:)``):
///
/// ```swift
/// shape.color = .red                      // registers the undo
/// undoManager.setActionName("Color")
/// undoManager.endEventGroup()
/// undoManager.undoMenuItemTitle           // "Undo Color"
/// undoManager.undo()
/// undoManager.redoMenuItemTitle           // "Redo Color"
/// ```
extension CoreUndoManager {
    /// The group that ``setActionName(_:)`` and ``setActionIsDiscardable(_:)`` describe:
    /// the open top-level group (the group collecting inverse actions during an undo or
    /// redo), or else the most recent undo group.
    private var groupBeingDescribed: UndoGroup? {
        openGroups.first ?? undoStack.last
    }

    /// The group ``undo()`` would revert: the open top-level group when it holds undo
    /// actions, or else the most recent closed undo group.
    private var nextUndoGroup: UndoGroup? {
        if openUndoGroupHasActions, let open = openGroups.first { return open }
        return undoStack.last
    }

    /// Names the current group: the open top-level group, or the most recent undo group when
    /// no group is open. During an undo or redo, names the group collecting the inverse
    /// actions.
    ///
    /// Call it after registering the group's first action (before that, with no group open,
    /// it would rename the previous group). An empty name means "no name".
    ///
    /// ```swift
    /// undoManager.beginUndoGrouping()
    /// shapes.forEach { $0.delete() }
    /// undoManager.setActionName("Delete Shapes")
    /// undoManager.endUndoGrouping()
    /// undoManager.undoActionName   // "Delete Shapes"
    /// ```
    ///
    /// - Parameter actionName: The name of the action, shown in menu titles.
    public func setActionName(_ actionName: String) {
        groupBeingDescribed?.actionName = actionName
    }

    /// The name of the group ``undo()`` would revert, or an empty string.
    ///
    /// ```swift
    /// if undoManager.canUndo { print("Next undo: \(undoManager.undoActionName)") }
    /// ```
    public var undoActionName: String {
        nextUndoGroup?.actionName ?? ""
    }

    /// The name of the group ``redo()`` would replay, or an empty string.
    ///
    /// ```swift
    /// undoManager.undo()
    /// undoManager.redoActionName   // the name of the group just undone
    /// ```
    public var redoActionName: String {
        redoStack.last?.actionName ?? ""
    }

    /// The title of an Undo menu item: "Undo <name>", or "Undo" when the next undo group
    /// has no name or there is nothing to undo.
    ///
    /// ```swift
    /// menuItem.title = undoManager.undoMenuItemTitle
    /// menuItem.isEnabled = undoManager.canUndo
    /// ```
    public var undoMenuItemTitle: String {
        undoMenuTitle(forUndoActionName: undoActionName)
    }

    /// The title of a Redo menu item: "Redo <name>", or "Redo" when the next redo group
    /// has no name or there is nothing to redo.
    ///
    /// ```swift
    /// menuItem.title = undoManager.redoMenuItemTitle
    /// ```
    public var redoMenuItemTitle: String {
        redoMenuTitle(forUndoActionName: redoActionName)
    }

    /// The Undo menu title for an action name: "Undo <name>", or "Undo" for an empty name.
    ///
    /// Titles are English; Foundation localizes them.
    ///
    /// ```swift
    /// undoManager.undoMenuTitle(forUndoActionName: "Typing")   // "Undo Typing"
    /// undoManager.undoMenuTitle(forUndoActionName: "")         // "Undo"
    /// ```
    ///
    /// - Parameter actionName: The action name.
    public func undoMenuTitle(forUndoActionName actionName: String) -> String {
        actionName.isEmpty ? "Undo" : "Undo \(actionName)"
    }

    /// The Redo menu title for an action name: "Redo <name>", or "Redo" for an empty name.
    ///
    /// Titles are English; Foundation localizes them.
    ///
    /// ```swift
    /// undoManager.redoMenuTitle(forUndoActionName: "Typing")   // "Redo Typing"
    /// ```
    ///
    /// - Parameter actionName: The action name.
    public func redoMenuTitle(forUndoActionName actionName: String) -> String {
        actionName.isEmpty ? "Redo" : "Redo \(actionName)"
    }

    /// Marks the current group (the one ``setActionName(_:)`` names) as discardable or not.
    ///
    /// A discardable group only affects transient state — a selection, a scroll position —
    /// so a client may drop it instead of, say, marking a document as edited. When a
    /// discardable group closes, ``didCloseUndoGroupNotification`` carries `true` under
    /// ``groupIsDiscardableKey``; undoing it produces a discardable redo group.
    ///
    /// ```swift
    /// selection.select(shape)                 // registers the undo
    /// undoManager.setActionIsDiscardable(true)
    /// undoManager.endEventGroup()
    /// undoManager.undoActionIsDiscardable     // true
    /// ```
    ///
    /// - Parameter discardable: Whether the group is discardable.
    public func setActionIsDiscardable(_ discardable: Bool) {
        groupBeingDescribed?.isDiscardable = discardable
    }

    /// Whether the group ``undo()`` would revert is discardable; false when there is none.
    ///
    /// ```swift
    /// let documentIsEdited = undoManager.canUndo && !undoManager.undoActionIsDiscardable
    /// ```
    public var undoActionIsDiscardable: Bool {
        nextUndoGroup?.isDiscardable ?? false
    }

    /// Whether the group ``redo()`` would replay is discardable; false when there is none.
    ///
    /// ```swift
    /// undoManager.undo()
    /// undoManager.redoActionIsDiscardable   // same as the undone group
    /// ```
    public var redoActionIsDiscardable: Bool {
        redoStack.last?.isDiscardable ?? false
    }
}
