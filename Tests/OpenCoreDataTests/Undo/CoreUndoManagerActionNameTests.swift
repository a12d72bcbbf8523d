#if canImport(UndoDev)
@testable import UndoDev
#else
@testable import OpenCoreData
#endif
import Foundation
import Testing

@Suite("CoreUndoManager: action names, menu titles, discardability")
struct CoreUndoManagerActionNameTests {
    @Test func menuTitlesForNames() {
        let manager = CoreUndoManager()
        #expect(manager.undoMenuTitle(forUndoActionName: "Typing") == "Undo Typing")
        #expect(manager.undoMenuTitle(forUndoActionName: "") == "Undo")
        #expect(manager.redoMenuTitle(forUndoActionName: "Typing") == "Redo Typing")
        #expect(manager.redoMenuTitle(forUndoActionName: "") == "Redo")
        #expect(manager.undoMenuItemTitle == "Undo")
        #expect(manager.redoMenuItemTitle == "Redo")
        #expect(manager.undoActionName == "")
        #expect(manager.redoActionName == "")
    }

    @Test func actionNamesFollowUndoAndRedo() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1, actionName: "Increment")
        #expect(manager.undoActionName == "Increment")   // the open group is named
        manager.endEventGroup()
        counter.setValue(5, actionName: "Jump")
        manager.endEventGroup()

        #expect(manager.undoActionName == "Jump")
        #expect(manager.undoMenuItemTitle == "Undo Jump")
        #expect(manager.redoMenuItemTitle == "Redo")

        manager.undo()
        // The redo group takes over the undone group's name.
        #expect(manager.redoActionName == "Jump")
        #expect(manager.redoMenuItemTitle == "Redo Jump")
        #expect(manager.undoMenuItemTitle == "Undo Increment")

        manager.undo()
        #expect(manager.undoMenuItemTitle == "Undo")
        #expect(manager.redoMenuItemTitle == "Redo Increment")

        manager.redo()
        #expect(manager.undoMenuItemTitle == "Undo Increment")
        #expect(manager.redoMenuItemTitle == "Redo Jump")
    }

    @Test func setActionNameWithNoOpenGroupRenamesTheLastUndoGroup() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.setActionName("Ignored")                 // nothing to name yet
        #expect(manager.undoActionName == "")
        counter.setValue(1)
        manager.endEventGroup()
        manager.setActionName("Late Name")
        #expect(manager.undoActionName == "Late Name")
    }

    @Test func handlersMayRenameTheRedoGroup() {
        let manager = CoreUndoManager()
        var value = 0
        func set(_ newValue: Int) {
            let old = value
            manager.registerUndo {
                set(old)
                manager.setActionName(manager.isUndoing ? "Reapply" : "Revert")
            }
            value = newValue
        }
        set(1)
        manager.setActionName("Set")
        manager.endEventGroup()
        manager.undo()
        #expect(manager.redoActionName == "Reapply")
        manager.redo()
        #expect(manager.undoActionName == "Revert")
        // The handlers capture the manager that keeps them: break the cycle.
        manager.removeAllActions()
    }

    @Test func nestedGroupsShareTheTopLevelName() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()
        counter.setValue(1)
        manager.beginUndoGrouping()
        counter.setValue(2)
        manager.setActionName("Batch")
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        #expect(manager.undoMenuItemTitle == "Undo Batch")
    }

    @Test func discardableActions() {
        let manager = CoreUndoManager()
        let recorder = UndoNotificationRecorder(observing: manager)
        let counter = UndoCounter(manager)
        counter.setValue(1)
        manager.endEventGroup()
        #expect(!manager.undoActionIsDiscardable)

        counter.setValue(2)
        manager.setActionIsDiscardable(true)
        #expect(manager.undoActionIsDiscardable)
        manager.endEventGroup()
        #expect(manager.undoActionIsDiscardable)

        let closes = recorder.notifications.filter { $0.name == CoreUndoManager.didCloseUndoGroupNotification }
        #expect(closes.count == 2)
        #expect(closes.first?.userInfo?[CoreUndoManager.groupIsDiscardableKey] == nil)
        #expect(closes.last?.userInfo?[CoreUndoManager.groupIsDiscardableKey] as? Bool == true)

        manager.undo()
        #expect(manager.redoActionIsDiscardable)
        #expect(!manager.undoActionIsDiscardable)
        manager.undo()
        #expect(!manager.redoActionIsDiscardable)
    }
}
