#if canImport(UndoDev)
@testable import UndoDev
#else
@testable import OpenCoreData
#endif
import Foundation
import Testing

@Suite("CoreUndoManager: undo and redo")
struct CoreUndoManagerBasicTests {
    @Test func newManagerHasNothingToUndoOrRedo() {
        let manager = CoreUndoManager()
        #expect(!manager.canUndo)
        #expect(!manager.canRedo)
        #expect(manager.groupsByEvent)
        #expect(manager.levelsOfUndo == 0)
        #expect(manager.groupingLevel == 0)
        #expect(manager.isUndoRegistrationEnabled)
        #expect(!manager.isUndoing)
        #expect(!manager.isRedoing)
    }

    @Test func undoAndRedoSimpleValues() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        manager.endEventGroup()
        counter.setValue(2)
        manager.endEventGroup()
        #expect(counter.value == 2)

        manager.undo()
        #expect(counter.value == 1)
        manager.undo()
        #expect(counter.value == 0)
        #expect(!manager.canUndo)

        manager.redo()
        #expect(counter.value == 1)
        manager.redo()
        #expect(counter.value == 2)
        #expect(!manager.canRedo)

        // And back again: redo registered undo actions.
        manager.undo()
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func targetFreeRegistration() {
        let manager = CoreUndoManager()
        var log: [String] = []
        manager.registerUndo { log.append("a") }
        manager.registerUndo { log.append("b") }
        manager.endEventGroup()
        manager.undo()
        #expect(log == ["b", "a"])
        #expect(!manager.canRedo)   // the handlers registered nothing
    }

    @Test func redoStackIsBuiltByHandlersRegisteringWhileUndoing() {
        let manager = CoreUndoManager()
        var value = 10
        var handlerSawUndoing = false
        var handlerSawRedoing = false

        func set(_ newValue: Int) {
            let old = value
            manager.registerUndo {
                handlerSawUndoing = handlerSawUndoing || manager.isUndoing
                handlerSawRedoing = handlerSawRedoing || manager.isRedoing
                set(old)
            }
            value = newValue
        }

        set(20)
        manager.endEventGroup()
        manager.undo()
        #expect(value == 10)
        #expect(handlerSawUndoing)
        #expect(manager.canRedo)
        #expect(!manager.canUndo)

        manager.redo()
        #expect(value == 20)
        #expect(handlerSawRedoing)
        #expect(manager.canUndo)
        #expect(!manager.canRedo)
        #expect(!manager.isUndoing && !manager.isRedoing)
        // The handlers capture the manager that keeps them: break the cycle.
        manager.removeAllActions()
    }

    @Test func actionsInAGroupUndoInReverseOrder() {
        let manager = CoreUndoManager()
        var log: [Int] = []
        manager.beginUndoGrouping()
        for i in 1...5 { manager.registerUndo { log.append(i) } }
        manager.endUndoGrouping()
        manager.undo()
        #expect(log == [5, 4, 3, 2, 1])
    }

    @Test func canUndoAndCanRedoAcrossASequence() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        #expect(!manager.canUndo && !manager.canRedo)

        counter.setValue(1)
        #expect(manager.canUndo)   // actions in the open automatic group count
        #expect(!manager.canRedo)
        manager.endEventGroup()
        #expect(manager.canUndo && !manager.canRedo)

        manager.undo()
        #expect(!manager.canUndo && manager.canRedo)

        manager.redo()
        #expect(manager.canUndo && !manager.canRedo)

        manager.undo()
        #expect(manager.canRedo)
        // A new change clears the redo stack.
        counter.setValue(7)
        #expect(!manager.canRedo)
        manager.endEventGroup()
        manager.redo()   // nothing to redo: no-op
        #expect(counter.value == 7)
        manager.undo()
        #expect(counter.value == 0)
        #expect(!manager.canUndo && manager.canRedo)
    }

    @Test func undoAndRedoWithNothingToDoAreQuietNoOps() {
        let manager = CoreUndoManager()
        let recorder = UndoNotificationRecorder(observing: manager)
        manager.undo()
        manager.redo()
        manager.undoNestedGroup()
        #expect(!manager.canUndo && !manager.canRedo)
        #expect(!recorder.events.contains("willUndo"))
        #expect(!recorder.events.contains("willRedo"))
        #expect(manager.groupingLevel == 0)
    }

    @Test func undoClosesAnOpenAutomaticGroupFirst() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        counter.setValue(2)
        #expect(manager.groupingLevel == 1)
        manager.undo()
        #expect(manager.groupingLevel == 0)
        #expect(counter.value == 0)
        manager.redo()
        #expect(counter.value == 2)
    }

    @Test func undoClosesAnExplicitTopLevelGroupLikeFoundation() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()
        counter.setValue(4)
        manager.undo()
        #expect(manager.groupingLevel == 0)
        #expect(counter.value == 0)
    }

    @Test func undoWithNestedGroupsOpenDoesNothing() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()
        manager.beginUndoGrouping()
        counter.setValue(4)
        manager.undo()   // Foundation raises; here a no-op
        #expect(counter.value == 4)
        #expect(manager.groupingLevel == 2)
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func reentrantUndoAndRedoFromHandlersAreIgnored() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        manager.endEventGroup()
        counter.setValue(2)
        manager.endEventGroup()
        manager.registerUndo {
            manager.undo()   // ignored: an undo is in progress
            manager.redo()
            manager.undoNestedGroup()
        }
        manager.endEventGroup()
        manager.undo()
        #expect(counter.value == 2)
        manager.undo()
        #expect(counter.value == 1)
    }

    @Test func weaklyHeldTargetThatWentAwayIsSkipped() {
        let manager = CoreUndoManager()
        var ran = false
        do {
            final class Box {}
            let box = Box()
            manager.registerUndo(withTarget: box) { _ in ran = true }
            manager.endEventGroup()
        }
        #expect(manager.canUndo)
        manager.undo()
        #expect(!ran)
        #expect(!manager.canUndo)
    }

    @Test func undoManagerDoesNotRetainTarget() {
        let manager = CoreUndoManager()
        weak var weakCounter: UndoCounter?
        do {
            let counter = UndoCounter(manager)
            weakCounter = counter
            counter.setValue(3)
            manager.endEventGroup()
        }
        #expect(weakCounter == nil)
    }
}
