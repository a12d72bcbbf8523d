import Foundation

extension CoreUndoManager {
    /// Which stack a top-level group goes onto when it closes.
    enum StackKind {
        /// The group records undo actions (normal registration, or registration while redoing).
        case undo
        /// The group records redo actions (registration while undoing).
        case redo
    }

    /// One registered undo (or redo) operation.
    ///
    /// The target, when there is one, is held weakly: see
    /// ``CoreUndoManager/registerUndo(withTarget:handler:)``.
    final class UndoAction {
        /// The object the action was registered with, or nil for target-free actions
        /// (and for actions whose target has since been deallocated).
        private(set) weak var target: AnyObject?

        /// Set by `removeAllActions(withTarget:)`, so that an action removed while its
        /// group is being performed (a handler removing actions mid-undo) does not run.
        var isCancelled = false

        private let body: () -> Void

        init(target: AnyObject?, body: @escaping () -> Void) {
            self.target = target
            self.body = body
        }

        func perform() {
            guard !isCancelled else { return }
            body()
        }
    }

    /// An undo group: the unit that `undo()` and `redo()` reverse as a whole.
    ///
    /// A group holds actions and closed nested groups, in registration order.
    /// Empty nested groups are never stored, so a group with no items holds no actions.
    final class UndoGroup {
        enum Item {
            case action(UndoAction)
            case group(UndoGroup)
        }

        /// Actions and closed nested groups, oldest first.
        var items: [Item] = []

        /// The action name shown in menu titles ("Undo <name>"); empty when unnamed.
        var actionName = ""

        /// Whether the group only affects transient state (see `setActionIsDiscardable`).
        var isDiscardable = false

        /// True for the top-level group opened implicitly by a registration while
        /// `groupsByEvent` is true; `endEventGroup()` closes only such a group.
        let isAutomatic: Bool

        /// Set while `endUndoGrouping()` posts the notifications that precede closing,
        /// so that an observer asking to close the same group again is ignored.
        var isClosing = false

        init(isAutomatic: Bool) {
            self.isAutomatic = isAutomatic
        }

        /// Performs every action, nested groups included, in reverse order of registration.
        func perform() {
            for item in items.reversed() {
                switch item {
                case .action(let action): action.perform()
                case .group(let group): group.perform()
                }
            }
        }

        /// Removes (and cancels) every action registered with `target`, dropping nested
        /// groups that become empty.
        func removeActions(withTarget target: AnyObject) {
            items.removeAll { item in
                switch item {
                case .action(let action):
                    guard let actionTarget = action.target, actionTarget === target else { return false }
                    action.isCancelled = true
                    return true
                case .group(let group):
                    group.removeActions(withTarget: target)
                    return group.items.isEmpty
                }
            }
        }
    }
}
