#if canImport(UndoDev)
@testable import UndoDev
#else
@testable import OpenCoreData
#endif
import Foundation
import Testing

@Suite("CoreUndoManager: groups, events and limits")
struct CoreUndoManagerGroupingTests {
    @Test func nestedGroupsAreUndoneAsOne() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()
        counter.setValue(1)
        manager.beginUndoGrouping()
        #expect(manager.groupingLevel == 2)
        counter.setValue(2)
        manager.beginUndoGrouping()
        counter.setValue(3)
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        counter.setValue(4)
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 0)

        manager.undo()
        #expect(counter.value == 0)
        #expect(!manager.canUndo)
        manager.redo()
        #expect(counter.value == 4)
        #expect(!manager.canRedo)
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func undoNestedGroupUndoesTheLastNestedGroupOnly() {
        let manager = CoreUndoManager()
        manager.groupsByEvent = false
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()          // outer
        counter.setValue(1)
        manager.beginUndoGrouping()          // inner
        counter.setValue(2)
        counter.setValue(3)
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 1)

        manager.undoNestedGroup()
        #expect(counter.value == 1)
        #expect(manager.groupingLevel == 1)  // the outer group is still open
        #expect(manager.canRedo)

        // The innermost open group now ends with a plain action: nothing nested to undo.
        manager.undoNestedGroup()
        #expect(counter.value == 1)

        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 0)
        #expect(!manager.canUndo)
    }

    @Test func undoNestedGroupWithNoOpenGroupUndoesTheTopLevelGroup() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(5)
        manager.endEventGroup()
        counter.setValue(6)
        manager.endEventGroup()
        manager.undoNestedGroup()
        #expect(counter.value == 5)
        manager.redo()
        #expect(counter.value == 6)
    }

    @Test func eventGroupingCollectsRegistrationsUntilEndEventGroup() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        #expect(manager.endEventGroup() == false)   // nothing open

        counter.setValue(1)
        #expect(manager.groupingLevel == 1)
        counter.setValue(2)
        #expect(manager.groupingLevel == 1)          // same automatic group
        #expect(manager.endEventGroup())
        #expect(manager.groupingLevel == 0)

        counter.setValue(3)
        counter.setValue(4)
        #expect(manager.endEventGroup())

        manager.undo()
        #expect(counter.value == 2)
        manager.undo()
        #expect(counter.value == 0)
        manager.redo()
        #expect(counter.value == 2)
    }

    @Test func endEventGroupLeavesExplicitGroupsAlone() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)

        manager.beginUndoGrouping()
        counter.setValue(1)
        #expect(manager.endEventGroup() == false)    // explicit top-level group
        #expect(manager.groupingLevel == 1)
        manager.endUndoGrouping()

        counter.setValue(2)                          // automatic group
        manager.beginUndoGrouping()                  // explicit group nested in it
        counter.setValue(3)
        #expect(manager.endEventGroup() == false)    // a nested group is still open
        #expect(manager.groupingLevel == 2)
        manager.endUndoGrouping()
        #expect(manager.endEventGroup())
        #expect(manager.groupingLevel == 0)

        manager.undo()
        #expect(counter.value == 1)
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func registeringWithoutAGroupWhenNotGroupingByEventIsIgnored() {
        let manager = CoreUndoManager()
        manager.groupsByEvent = false
        let counter = UndoCounter(manager)
        counter.setValue(1)
        #expect(counter.value == 1)
        #expect(manager.groupingLevel == 0)
        #expect(!manager.canUndo)

        manager.beginUndoGrouping()
        counter.setValue(2)
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 1)
    }

    @Test func emptyGroupsAreDiscarded() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        manager.endEventGroup()
        manager.beginUndoGrouping()
        manager.beginUndoGrouping()
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 0)   // the empty group did not take an undo
    }

    @Test func unbalancedEndUndoGroupingIsHarmless() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 0)
        counter.setValue(1)
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        #expect(manager.groupingLevel == 0)
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func levelsOfUndoDropsTheOldestGroups() {
        let manager = CoreUndoManager()
        manager.levelsOfUndo = 3
        let counter = UndoCounter(manager)
        for value in 1...6 {
            counter.setValue(value)
            manager.endEventGroup()
        }
        manager.undo()
        manager.undo()
        manager.undo()
        #expect(counter.value == 3)
        #expect(!manager.canUndo)
        manager.undo()
        #expect(counter.value == 3)

        // Redo groups are limited as well, and all three come back.
        manager.redo(); manager.redo(); manager.redo()
        #expect(counter.value == 6)
        #expect(!manager.canRedo)
    }

    @Test func loweringLevelsOfUndoDropsImmediately() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        for value in 1...5 {
            counter.setValue(value)
            manager.endEventGroup()
        }
        manager.levelsOfUndo = 2
        manager.undo()
        manager.undo()
        #expect(counter.value == 3)
        #expect(!manager.canUndo)

        manager.levelsOfUndo = -4
        #expect(manager.levelsOfUndo == 0)
    }

    @Test func levelsOfUndoCountsTopLevelGroupsOnly() {
        let manager = CoreUndoManager()
        manager.levelsOfUndo = 1
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()
        for value in 1...4 {
            manager.beginUndoGrouping()
            counter.setValue(value)
            manager.endUndoGrouping()
        }
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func disableAndEnableRegistrationNest() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.disableUndoRegistration()
        manager.disableUndoRegistration()
        #expect(!manager.isUndoRegistrationEnabled)
        counter.setValue(1)
        manager.enableUndoRegistration()
        #expect(!manager.isUndoRegistrationEnabled)
        counter.setValue(2)
        #expect(!manager.canUndo)
        #expect(manager.groupingLevel == 0)   // ignored registrations open no group
        manager.enableUndoRegistration()
        #expect(manager.isUndoRegistrationEnabled)
        manager.enableUndoRegistration()      // unbalanced: harmless
        #expect(manager.isUndoRegistrationEnabled)

        counter.setValue(3)
        manager.endEventGroup()
        manager.undo()
        #expect(counter.value == 2)
        #expect(!manager.canUndo)

        // One extra enable must not let a later single disable be ineffective.
        manager.disableUndoRegistration()
        #expect(!manager.isUndoRegistrationEnabled)
    }

    @Test func disabledRegistrationDuringUndoBuildsNoRedo() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        manager.endEventGroup()
        manager.disableUndoRegistration()
        manager.undo()
        manager.enableUndoRegistration()
        #expect(counter.value == 0)
        #expect(!manager.canRedo)
    }

    @Test func removeAllActionsClearsAndReenables() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        manager.endEventGroup()
        counter.setValue(2)
        manager.endEventGroup()
        manager.undo()
        manager.disableUndoRegistration()
        manager.removeAllActions()
        #expect(!manager.canUndo && !manager.canRedo)
        #expect(manager.isUndoRegistrationEnabled)
        manager.undo()
        #expect(counter.value == 1)
    }

    @Test func removeAllActionsKeepsOpenGroupsBalanced() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        manager.beginUndoGrouping()
        counter.setValue(1)
        manager.removeAllActions()
        #expect(manager.groupingLevel == 1)
        #expect(!manager.canUndo)
        counter.setValue(2)
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 1)
    }

    @Test func removeAllActionsWithTargetRemovesOnlyThatTarget() {
        let manager = CoreUndoManager()
        let a = UndoCounter(manager)
        let b = UndoCounter(manager)
        var freeRuns = 0

        a.setValue(1)                 // group 1: a only
        manager.endEventGroup()
        a.setValue(2)                 // group 2: a, b, free
        b.setValue(10)
        manager.registerUndo { freeRuns += 1 }
        manager.endEventGroup()
        manager.beginUndoGrouping()   // group 3: nested a
        manager.beginUndoGrouping()
        a.setValue(3)
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        b.setValue(20)                // group 4 (open): b and a
        a.setValue(4)

        manager.removeAllActions(withTarget: a)
        #expect(manager.isUndoRegistrationEnabled)
        manager.undo()                // group 4: only b's action is left
        #expect(b.value == 10)
        #expect(a.value == 4)
        manager.undo()                // group 3 was emptied and dropped: group 2
        #expect(b.value == 0)
        #expect(freeRuns == 1)
        #expect(a.value == 4)
        #expect(!manager.canUndo)     // group 1 was emptied and dropped
    }

    @Test func removeAllActionsWithTargetFromAHandlerCancelsPendingActions() {
        let manager = CoreUndoManager()
        let a = UndoCounter(manager)
        a.setValue(1)
        manager.registerUndo { manager.removeAllActions(withTarget: a) }
        manager.endEventGroup()
        manager.undo()   // the later registration runs first and removes a's action
        #expect(a.value == 1)
    }

    @Test func removeAllActionsWithTargetClearsRedoToo() {
        let manager = CoreUndoManager()
        let a = UndoCounter(manager)
        let b = UndoCounter(manager)
        a.setValue(1)
        b.setValue(1)
        manager.endEventGroup()
        manager.undo()
        #expect(manager.canRedo)
        manager.removeAllActions(withTarget: a)
        manager.redo()
        #expect(a.value == 0)
        #expect(b.value == 1)
    }

    @Test func removeAllActionsWithTargetLeavesRegistrationDisabled() {
        let manager = CoreUndoManager()
        let a = UndoCounter(manager)
        manager.disableUndoRegistration()
        manager.removeAllActions(withTarget: a)
        #expect(!manager.isUndoRegistrationEnabled)
    }
}
