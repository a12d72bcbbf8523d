#if canImport(UndoDev)
@testable import UndoDev
#else
@testable import OpenCoreData
#endif
import Foundation
import Testing

@Suite("CoreUndoManager: notifications")
struct CoreUndoManagerNotificationTests {
    @Test func namesAreFoundationsOwn() {
        #expect(CoreUndoManager.checkpointNotification.rawValue == "NSUndoManagerCheckpointNotification")
        #expect(CoreUndoManager.willUndoChangeNotification.rawValue == "NSUndoManagerWillUndoChangeNotification")
        #expect(CoreUndoManager.didUndoChangeNotification.rawValue == "NSUndoManagerDidUndoChangeNotification")
        #expect(CoreUndoManager.willRedoChangeNotification.rawValue == "NSUndoManagerWillRedoChangeNotification")
        #expect(CoreUndoManager.didRedoChangeNotification.rawValue == "NSUndoManagerDidRedoChangeNotification")
        #expect(CoreUndoManager.didOpenUndoGroupNotification.rawValue == "NSUndoManagerDidOpenUndoGroupNotification")
        #expect(CoreUndoManager.willCloseUndoGroupNotification.rawValue == "NSUndoManagerWillCloseUndoGroupNotification")
        #expect(CoreUndoManager.didCloseUndoGroupNotification.rawValue == "NSUndoManagerDidCloseUndoGroupNotification")
        #expect(Set(UndoNotificationRecorder.names).count == 8)
    }

    @Test func notificationsArePostedInOrder() {
        let manager = CoreUndoManager()
        let recorder = UndoNotificationRecorder(observing: manager)
        let counter = UndoCounter(manager)

        counter.setValue(1)   // opens the automatic group
        counter.setValue(2)   // same group: no notification
        #expect(recorder.events == ["checkpoint", "didOpen"])

        recorder.reset()
        manager.endEventGroup()
        #expect(recorder.events == ["checkpoint", "willClose", "didClose"])

        recorder.reset()
        manager.undo()
        #expect(recorder.events == [
            "checkpoint", "willUndo",
            "didOpen", "checkpoint", "willClose", "didClose",   // the redo group
            "didUndo",
        ])

        recorder.reset()
        manager.redo()
        #expect(recorder.events == [
            "checkpoint", "willRedo",
            "didOpen", "checkpoint", "willClose", "didClose",   // the undo group
            "didRedo",
        ])

        recorder.reset()
        manager.beginUndoGrouping()
        manager.beginUndoGrouping()
        manager.endUndoGrouping()
        manager.endUndoGrouping()
        #expect(recorder.events == [
            "checkpoint", "didOpen", "checkpoint", "didOpen",
            "checkpoint", "willClose", "didClose", "checkpoint", "willClose", "didClose",
        ])

        recorder.reset()
        _ = manager.canRedo
        #expect(recorder.events == ["checkpoint"])

        #expect(recorder.notifications.allSatisfy { ($0.object as AnyObject?) === manager })
    }

    @Test func undoOfAnOpenGroupClosesItFirst() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1)
        let recorder = UndoNotificationRecorder(observing: manager)
        manager.undo()
        #expect(recorder.events == [
            "checkpoint", "willClose", "didClose",              // the automatic group
            "checkpoint", "willUndo",
            "didOpen", "checkpoint", "willClose", "didClose",
            "didUndo",
        ])
    }

    @Test func stateSeenByObservers() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        counter.setValue(1, actionName: "Set")
        manager.endEventGroup()

        final class Seen: @unchecked Sendable {
            var willUndo: (isUndoing: Bool, name: String, value: Int)?
            var didUndo: (isUndoing: Bool, canRedo: Bool, value: Int)?
            var willCloseLevel: Int?
        }
        let seen = Seen()
        nonisolated(unsafe) let unsafeManager = manager
        nonisolated(unsafe) let unsafeCounter = counter
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(forName: CoreUndoManager.willUndoChangeNotification, object: manager, queue: nil) { _ in
                seen.willUndo = (unsafeManager.isUndoing, unsafeManager.undoActionName, unsafeCounter.value)
            },
            center.addObserver(forName: CoreUndoManager.didUndoChangeNotification, object: manager, queue: nil) { _ in
                seen.didUndo = (unsafeManager.isUndoing, !unsafeManager.redoActionName.isEmpty, unsafeCounter.value)
            },
            center.addObserver(forName: CoreUndoManager.willCloseUndoGroupNotification, object: manager, queue: nil) { _ in
                seen.willCloseLevel = unsafeManager.groupingLevel
            },
        ]
        defer { tokens.forEach(center.removeObserver) }

        manager.undo()
        #expect(seen.willUndo?.isUndoing == false)
        #expect(seen.willUndo?.name == "Set")
        #expect(seen.willUndo?.value == 1)
        #expect(seen.didUndo?.isUndoing == false)
        #expect(seen.didUndo?.canRedo == true)
        #expect(seen.didUndo?.value == 0)
        #expect(seen.willCloseLevel == 1)   // the closing group is still counted
    }

    /// The managed object context closes the event group from its checkpoint observer
    /// (processPendingChanges); that must neither recurse nor lose actions.
    @Test func closingTheEventGroupFromACheckpointObserverIsSafe() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        nonisolated(unsafe) let unsafeManager = manager
        final class Calls: @unchecked Sendable { var count = 0 }
        let calls = Calls()
        let token = NotificationCenter.default.addObserver(
            forName: CoreUndoManager.checkpointNotification, object: manager, queue: nil
        ) { _ in
            calls.count += 1
            unsafeManager.endEventGroup()
        }
        defer { NotificationCenter.default.removeObserver(token) }

        counter.setValue(1)
        counter.setValue(2)
        #expect(manager.groupingLevel == 1)
        manager.undo()
        #expect(counter.value == 0)
        #expect(manager.groupingLevel == 0)
        manager.redo()
        #expect(counter.value == 2)
        #expect(calls.count < 20)
    }

    /// A checkpoint observer that registers pending changes (as processPendingChanges does)
    /// while the first registration is opening the automatic group must not nest a second
    /// automatic group inside the first.
    @Test func registeringFromACheckpointObserverJoinsOneAutomaticGroup() {
        let manager = CoreUndoManager()
        let counter = UndoCounter(manager)
        let pending = UndoCounter(manager)
        nonisolated(unsafe) let unsafePending = pending
        final class Flag: @unchecked Sendable { var done = false }
        let flag = Flag()
        let token = NotificationCenter.default.addObserver(
            forName: CoreUndoManager.checkpointNotification, object: manager, queue: nil
        ) { _ in
            guard !flag.done else { return }
            flag.done = true
            unsafePending.setValue(9)
        }
        defer { NotificationCenter.default.removeObserver(token) }

        counter.setValue(1)
        #expect(manager.groupingLevel == 1)
        #expect(manager.endEventGroup())
        #expect(manager.groupingLevel == 0)
        manager.undo()
        #expect(counter.value == 0)
        #expect(pending.value == 0)
        #expect(!manager.canUndo)
    }

    @Test func observersOfOtherManagersSeeNothing() {
        let manager = CoreUndoManager()
        let other = CoreUndoManager()
        let recorder = UndoNotificationRecorder(observing: other)
        UndoCounter(manager).setValue(1)
        manager.undo()
        #expect(recorder.events.isEmpty)
    }
}
