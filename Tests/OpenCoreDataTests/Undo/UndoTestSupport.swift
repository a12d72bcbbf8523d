#if canImport(UndoDev)
@testable import UndoDev
#else
@testable import OpenCoreData
#endif
import Foundation

/// A model object whose setter registers its own undo, the way a managed object does.
final class UndoCounter {
    let undoManager: CoreUndoManager
    private(set) var value: Int
    private(set) var setCount = 0

    init(_ undoManager: CoreUndoManager, value: Int = 0) {
        self.undoManager = undoManager
        self.value = value
    }

    func setValue(_ newValue: Int, actionName: String? = nil) {
        let oldValue = value
        undoManager.registerUndo(withTarget: self) { counter in
            counter.setValue(oldValue)
        }
        if let actionName { undoManager.setActionName(actionName) }
        value = newValue
        setCount += 1
    }
}

/// An array-backed document whose edits register their inverse edits.
final class UndoArrayDocument {
    let undoManager: CoreUndoManager
    private(set) var items: [Int]

    init(_ undoManager: CoreUndoManager, items: [Int] = []) {
        self.undoManager = undoManager
        self.items = items
    }

    func insert(_ item: Int, at index: Int) {
        items.insert(item, at: index)
        undoManager.registerUndo(withTarget: self) { document in
            document.remove(at: index)
        }
    }

    func remove(at index: Int) {
        let removed = items.remove(at: index)
        undoManager.registerUndo(withTarget: self) { document in
            document.insert(removed, at: index)
        }
    }

    func replace(at index: Int, with item: Int) {
        let previous = items[index]
        items[index] = item
        undoManager.registerUndo(withTarget: self) { document in
            document.replace(at: index, with: previous)
        }
    }
}

/// Records the names of the undo notifications one manager posts, in order.
final class UndoNotificationRecorder: @unchecked Sendable {
    static let names: [Notification.Name] = [
        CoreUndoManager.checkpointNotification,
        CoreUndoManager.willUndoChangeNotification,
        CoreUndoManager.didUndoChangeNotification,
        CoreUndoManager.willRedoChangeNotification,
        CoreUndoManager.didRedoChangeNotification,
        CoreUndoManager.didOpenUndoGroupNotification,
        CoreUndoManager.willCloseUndoGroupNotification,
        CoreUndoManager.didCloseUndoGroupNotification,
    ]

    private let lock = NSLock()
    private var recorded: [Notification] = []
    private var tokens: [NSObjectProtocol] = []

    init(observing undoManager: CoreUndoManager) {
        for name in Self.names {
            let token = NotificationCenter.default.addObserver(forName: name, object: undoManager, queue: nil) { [weak self] notification in
                self?.append(notification)
            }
            tokens.append(token)
        }
    }

    deinit {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }

    private func append(_ notification: Notification) {
        lock.lock(); defer { lock.unlock() }
        recorded.append(notification)
    }

    var notifications: [Notification] {
        lock.lock(); defer { lock.unlock() }
        return recorded
    }

    /// Short names: "checkpoint", "willUndo", "didOpen", ...
    var events: [String] {
        notifications.map { Self.shortName($0.name) }
    }

    func reset() {
        lock.lock(); defer { lock.unlock() }
        recorded.removeAll()
    }

    static func shortName(_ name: Notification.Name) -> String {
        switch name {
        case CoreUndoManager.checkpointNotification: "checkpoint"
        case CoreUndoManager.willUndoChangeNotification: "willUndo"
        case CoreUndoManager.didUndoChangeNotification: "didUndo"
        case CoreUndoManager.willRedoChangeNotification: "willRedo"
        case CoreUndoManager.didRedoChangeNotification: "didRedo"
        case CoreUndoManager.didOpenUndoGroupNotification: "didOpen"
        case CoreUndoManager.willCloseUndoGroupNotification: "willClose"
        case CoreUndoManager.didCloseUndoGroupNotification: "didClose"
        default: name.rawValue
        }
    }
}

