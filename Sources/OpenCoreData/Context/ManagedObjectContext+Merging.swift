import Foundation
import Synchronization

extension ManagedObjectContext {
    /// Merges the changes another context saved (`mergeChanges(fromContextDidSave:)`),
    /// following Core Data's rules:
    ///
    /// - inserted objects are registered here as faults (and reported as inserted
    ///   in the ``objectsDidChangeNotification`` this posts);
    /// - registered updated objects are refreshed: they get the saved values, with
    ///   this context's own unsaved changes kept on top (`refresh(_:mergeChanges: true)`);
    ///   objects not registered here are left alone: their faults fire with the new values;
    /// - deleted objects are removed from the context, and from the relationships of
    ///   the objects registered here.
    ///
    /// Call it on the context's queue with the notification of another context's
    /// save:
    ///
    /// ```swift
    /// NotificationCenter.default.addObserver(forName: ManagedObjectContext.didSaveNotification,
    ///                                        object: backgroundContext, queue: nil) { notification in
    ///     guard let save = ContextSaveSummary(didSaveNotification: notification) else { return }
    ///     viewContext.perform { viewContext.mergeChanges(from: save) }
    /// }
    /// ```
    ///
    /// Or let ``automaticallyMergesChangesFromParent`` do it.
    ///
    /// - Parameter notification: A ``didSaveNotification`` or
    ///   ``didSaveObjectIDsNotification``; any other notification is ignored.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        guard let save = ContextSaveSummary(didSaveNotification: notification) else { return }
        mergeChanges(from: save)
    }

    /// Merges the changes of one save of another context, given by object IDs
    /// (``ContextSaveSummary`` is `Sendable`: it crosses queues). See
    /// ``mergeChanges(fromContextDidSave:)`` for the rules.
    ///
    /// ```swift
    /// for await save in backgroundContext.saves {
    ///     await viewContext.perform { viewContext.mergeChanges(from: save) }
    /// }
    /// ```
    ///
    /// - Parameter save: The object IDs the other context inserted, updated and
    ///   deleted.
    public func mergeChanges(from save: ContextSaveSummary) {
        assertOnQueue()
        processPendingChanges()
        // A context pinned to a query generation moves to the newest one (Core Data).
        advanceQueryGeneration()
        var merged: [ManagedObject] = []
        for id in save.insertedObjectIDs where registry[id] == nil {
            let object = makeFault(id, row: nil)
            eventInserted.insert(object)
            merged.append(object)
        }
        for id in save.updatedObjectIDs {
            // Registered faults are reported too (they load the new values when
            // they fire): observers such as a fetched results controller hold them.
            guard let object = registry[id] else { continue }
            if !object.isFault { refresh(object, mergeChanges: true) } else { object.faultRow = nil }
            eventRefreshed.insert(object)
        }
        if !save.deletedObjectIDs.isEmpty {
            var gone: [ManagedObject] = []
            for id in save.deletedObjectIDs {
                guard let object = registry[id] else { continue }
                gone.append(object)
                eventDeleted.insert(object)
                eventUpdated.remove(object)
                eventRefreshed.remove(object)
                pendingDeletes.removeAll { $0 === object }
                unregister(object)
                object.deletedFlag = false
            }
            forget(save.deletedObjectIDs)
            merged += gone
        }
        postObjectsDidChange()
        withExtendedLifetime(merged) {}
    }

    /// Removes `ids` from the relationships of every registered object, in its
    /// current and its committed values (the store no longer has them: that is
    /// not a change of this context).
    private func forget(_ ids: Set<ManagedObjectID>) {
        func scrub(_ values: inout RowValues) {
            for index in values.indices {
                switch values[index] {
                case .toOne(let id?) where ids.contains(id): values[index] = .toOne(nil)
                case .toMany(let list?) where list.contains(where: ids.contains):
                    values[index] = .toMany(list.filter { !ids.contains($0) })
                default: continue
                }
            }
        }
        for object in registry.objects {
            if var storage = object.storage { scrub(&storage); object.storage = storage }
            if var committed = object.committed { scrub(&committed.rowValues); object.committed = committed }
            if var start = eventStart(of: object) { scrub(&start); object.eventStart = start }
        }
    }

    /// Registers or unregisters the context with the merge targets of its
    /// coordinator, or of its parent for a child context.
    func updateMergeRegistration(previous: PersistentStoreCoordinator?) {
        previous?.stopMerging(into: self)
        let key = ObjectIdentifier(self)
        if let parent {
            let child = WeakContext(context: self)
            let merges = automaticallyMergesChangesFromParent
            parent.mergingChildren.withLock { children in
                children = children.filter { $0.value.context != nil }
                children[key] = merges ? child : nil
            }
        } else if automaticallyMergesChangesFromParent {
            persistentStoreCoordinator?.startMerging(into: self)
        }
    }

    /// Hands a save to the contexts that merge it: the coordinator's other
    /// contexts for a save to the store; for a child's save into its parent, the
    /// parent's other merging children. A context's own merging children get its
    /// saves either way.
    func broadcast(_ save: ContextSaveSummary) {
        if let parent {
            parent.handToMergingChildren(save, except: self)
        } else {
            persistentStoreCoordinator?.contextDidSave(save, by: self)
        }
        handToMergingChildren(save, except: nil)
    }

    func handToMergingChildren(_ save: ContextSaveSummary, except saver: ManagedObjectContext?) {
        let children = mergingChildren.withLock { $0.values.compactMap(\.context) }
        for child in children where child !== saver {
            child.perform { child.mergeChanges(from: save) }
        }
    }
}

/// A context held weakly by its coordinator.
struct WeakContext: Sendable {
    weak var context: ManagedObjectContext?
}

extension PersistentStoreCoordinator {
    func startMerging(into context: ManagedObjectContext) {
        mergeTargets.withLock { targets in
            targets = targets.filter { $0.value.context != nil }
            targets[ObjectIdentifier(context)] = WeakContext(context: context)
        }
    }

    func stopMerging(into context: ManagedObjectContext) {
        _ = mergeTargets.withLock { $0.removeValue(forKey: ObjectIdentifier(context)) }
    }

    /// Hands a save to every context that merges automatically, on its own queue.
    func contextDidSave(_ save: ContextSaveSummary, by saver: ManagedObjectContext) {
        let targets = mergeTargets.withLock { $0.values.compactMap(\.context) }
        for target in targets where target !== saver {
            target.perform { target.mergeChanges(from: save) }
        }
    }
}

extension ContextSaveSummary {
    /// The summary of a ``ManagedObjectContext/didSaveNotification`` or a
    /// ``ManagedObjectContext/didSaveObjectIDsNotification``: its object ID sets (nil
    /// when the notification is neither). Call it where the notification is
    /// delivered: on the saving context's queue.
    ///
    /// ```swift
    /// let save = ContextSaveSummary(didSaveNotification: notification)
    /// ```
    ///
    /// - Parameter notification: The notification a context (or a history
    ///   transaction) posted.
    public init?(didSaveNotification notification: Notification) {
        // A did-save notification, or an object-ID one (a context's, or a history
        // transaction's).
        guard notification.name == ManagedObjectContext.didSaveNotification
                || notification.name == ManagedObjectContext.didSaveObjectIDsNotification else { return nil }
        let info = notification.userInfo ?? [:]
        typealias Key = ManagedObjectContext.NotificationKey
        self.init(insertedObjectIDs: info[Key.insertedObjectIDs] as? Set<ManagedObjectID> ?? [],
                  updatedObjectIDs: info[Key.updatedObjectIDs] as? Set<ManagedObjectID> ?? [],
                  deletedObjectIDs: info[Key.deletedObjectIDs] as? Set<ManagedObjectID> ?? [],
                  contextName: (notification.object as? ManagedObjectContext)?.name,
                  transactionAuthor: (notification.object as? ManagedObjectContext)?.transactionAuthor)
    }
}
