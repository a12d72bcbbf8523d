import Foundation

/// An object told synchronously, on the context's queue, what each event of a
/// context changed: the fetched results controller's way of following its context.
///
/// Unlike `objectsDidChangeNotification` it is called in a known order (before the
/// notification), allocates no `userInfo`, and also hears of saves, `reset()` and
/// `rollback()`. Merges, undo and refreshes end in ``ManagedObjectContext/processPendingChanges()``
/// and arrive as ordinary events.
protocol ContextChangeObserver: AnyObject {
    func context(_ context: ManagedObjectContext, didChange change: ObservedContextChange)
}

/// What a ``ContextChangeObserver`` is told.
struct ObservedContextChange {
    enum Kind {
        /// The end of an event: the objects inserted, updated, deleted and refreshed.
        case objectsDidChange
        /// A save succeeded: new objects have permanent IDs now.
        case didSave
        /// Every object may have changed (`reset()`, `rollback()`): observers refetch.
        case reloaded
    }

    var kind: Kind
    var inserted: [ManagedObject] = []
    /// Objects whose values changed during the event (including objects inserted in
    /// an earlier event), and refreshed objects.
    var updated: [ManagedObject] = []
    var deleted: [ManagedObject] = []
    /// The values the updated objects had when the event began, when known (not for
    /// refreshed or merged objects), by `ObjectIdentifier` of the object.
    var valuesBefore: [ObjectIdentifier: RowValues] = [:]
}

final class WeakChangeObserver {
    weak var observer: (any ContextChangeObserver)?
    init(_ observer: any ContextChangeObserver) { self.observer = observer }
}

extension ManagedObjectContext {
    /// Starts calling `observer` (held weakly) at the end of each event.
    func addChangeObserver(_ observer: any ContextChangeObserver) {
        synchronousObservers[ObjectIdentifier(observer)] = WeakChangeObserver(observer)
    }

    /// Stops calling `observer`.
    func removeChangeObserver(_ observer: any ContextChangeObserver) {
        synchronousObservers[ObjectIdentifier(observer)] = nil
    }

    /// The current event as observers see it; called before the event's state is
    /// cleared.
    func observedChange(inserted: Set<ManagedObject>, deleted: Set<ManagedObject>, refreshed: Set<ManagedObject>) -> ObservedContextChange {
        var change = ObservedContextChange(kind: .objectsDidChange)
        change.inserted = Array(inserted)
        change.deleted = Array(deleted)
        var seen = Set<ObjectIdentifier>()
        for object in eventUpdated where !object.deletedFlag && !inserted.contains(object) {
            guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
            change.updated.append(object)
            if let start = eventStart(of: object) { change.valuesBefore[ObjectIdentifier(object)] = start }
        }
        for object in refreshed where !inserted.contains(object) && !deleted.contains(object) {
            guard seen.insert(ObjectIdentifier(object)).inserted else { continue }
            change.updated.append(object)
        }
        return change
    }

    func notifySynchronousObservers(_ change: ObservedContextChange) {
        guard !synchronousObservers.isEmpty else { return }
        if change.kind == .objectsDidChange, change.inserted.isEmpty, change.updated.isEmpty, change.deleted.isEmpty { return }
        for (key, box) in synchronousObservers {
            guard let observer = box.observer else {
                synchronousObservers[key] = nil
                continue
            }
            observer.context(self, didChange: change)
        }
    }
}
