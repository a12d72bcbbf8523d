import Foundation
import Logging
import Synchronization

/// Core Data's power without its ceremony: a small data access layer in the
/// spirit of Skopelos (Alberto De Bortoli's `DALService`).
///
/// A data access layer owns a whole stack — a ``PersistentContainer`` with its
/// store, a main-queue context for reading and one private-queue context for
/// writing — and exposes two verbs, following command–query separation:
///
/// - ``read(_:)`` runs a block on the **main context**, the one the interface
///   (or a server's request handlers) reads from;
/// - ``writeSync(_:completion:)`` and ``writeAsync(_:completion:)`` run a block
///   on the **writing context**, then save it to the store; the main context
///   merges the saved changes (`automaticallyMergesChangesFromParent`).
///
/// ```swift
/// let dataAccess = try DataAccessLayer(sqliteStack: "Moody")   // finds Moody.momd / .xcdatamodeld
///
/// dataAccess.writeSync { context in
///     let mood = Mood.create(in: context)
///     mood.date = Date()
/// }
/// dataAccess.read { context in
///     print(try Mood.count(in: context))
/// }
///
/// // Chained, each step after the previous one's save:
/// var mood: Mood!
/// dataAccess.write { context in
///     mood = Mood.create(in: context)
///     mood.date = Date()
/// }.write { context in
///     try mood.inContext(context)?.remove(in: context)
/// }.read { context in
///     print(try Mood.all(in: context))
/// }
///
/// // From Swift concurrency, returning values (not objects) across queues:
/// let count = try await dataAccess.reading { context in try Mood.count(in: context) }
/// ```
///
/// Subclass it to share one instance and to handle errors — blocks that throw
/// and writes whose save fails (the failed write is rolled back, so the store and
/// the contexts stay as they were) go to ``handleError(_:)`` unless a completion
/// receives them:
///
/// ```swift
/// final class SkopelosClient: DataAccessLayer, @unchecked Sendable {
///     static let shared = try! SkopelosClient(sqliteStack: "DataModel")
///     override func handleError(_ error: any Error) {
///         print(error)
///     }
/// }
/// ```
///
/// Objects belong to the context of the block that received them: use them inside
/// the block, and pass them to another block with
/// ``FetchRequestResult/inContext(_:)`` (their IDs cross queues, objects don't).
/// Each write starts from the store's latest state: the writing context is reset
/// after every write.
///
/// `@unchecked Sendable`: the stored properties are constants — the container
/// (itself `Sendable`) and two contexts used only through `perform` /
/// `performAndWait` on their own queues. Subclasses should add only constant,
/// `Sendable` state.
open class DataAccessLayer: @unchecked Sendable {
    /// The stack: model, coordinator, stores, main context.
    public let container: PersistentContainer
    /// The private-queue context every write runs on.
    let writer: ManagedObjectContext
    private let logger = Logger(label: "OpenCoreData.DataAccessLayer")

    /// The main-queue context ``read(_:)`` blocks run on (the container's
    /// `viewContext`).
    public var mainContext: ManagedObjectContext { container.viewContext }

    /// A data access layer on `container`, opening its stores if none is open yet.
    /// Throws the first store that fails to open.
    ///
    /// ```swift
    /// let container = PersistentContainer(name: "Moody", managedObjectModel: model)
    /// let dataAccess = try DataAccessLayer(container: container)
    /// ```
    ///
    /// - Parameter container: The stack; its stores are opened here, one after
    ///   the other, unless one is open already.
    /// - Throws: The ``CoreDataError`` of the first store that does not open (or
    ///   the model's error: see ``PersistentContainer/loadPersistentStores()``).
    public init(container: PersistentContainer) throws {
        self.container = container
        if container.persistentStoreCoordinator.persistentStores.isEmpty {
            container.persistentStoreDescriptions = container.persistentStoreDescriptions.map {
                var description = $0
                description.shouldAddStoreAsynchronously = false
                return description
            }
            let failure = Lock<(any Error)?>(nil)
            container.loadPersistentStores { _, error in
                if let error { failure.withLock { $0 = $0 ?? error } }
            }
            if let error = failure.withLock({ $0 }) { throw error }
        }
        writer = container.newBackgroundContext()
        writer.name = "DataAccessLayer.writer"
        writer.mergePolicy = .mergeByPropertyObjectTrump
        container.viewContext.automaticallyMergesChangesFromParent = true
    }

    /// A data access layer on an SQLite store of the model named `modelName`
    /// (`<modelName>.momd`, `.mom` or `.xcdatamodeld`, looked up as
    /// ``PersistentContainer`` does), stored at `storeURL` or, by default,
    /// `<modelName>.sqlite` in ``PersistentContainer/defaultDirectoryURL()``
    /// (Skopelos's `init(sqliteStack:)`).
    ///
    /// ```swift
    /// let dataAccess = try DataAccessLayer(sqliteStack: "Moody", bundle: .module)
    /// ```
    ///
    /// - Parameters:
    ///   - modelName: The model's name.
    ///   - bundle: A bundle to search first for the model.
    ///   - searchPaths: More folders to search for the model, last.
    ///   - storeURL: The store's file; nil for `<modelName>.sqlite` in the
    ///     default directory.
    /// - Throws: The ``CoreDataError`` of the first store that does not open (or
    ///   the model's error: see ``PersistentContainer/loadPersistentStores()``).
    public convenience init(sqliteStack modelName: String, bundle: Bundle? = nil, searchPaths: [URL] = [],
                            storeURL: URL? = nil) throws {
        let container = PersistentContainer(name: modelName, bundle: bundle, searchPaths: searchPaths)
        if let storeURL { container.persistentStoreDescriptions = [PersistentStoreDescription(url: storeURL)] }
        try self.init(container: container)
    }

    /// A data access layer on an in-memory store of the model named `modelName`
    /// (Skopelos's `init(inMemoryStack:)`), for tests and scratch work.
    ///
    /// ```swift
    /// let dataAccess = try DataAccessLayer(inMemoryStack: "Moody", bundle: .module)
    /// ```
    ///
    /// - Parameters:
    ///   - modelName: The model's name.
    ///   - bundle: A bundle to search first for the model.
    ///   - searchPaths: More folders to search for the model, last.
    /// - Throws: The ``CoreDataError`` of the first store that does not open (or
    ///   the model's error: see ``PersistentContainer/loadPersistentStores()``).
    public convenience init(inMemoryStack modelName: String, bundle: Bundle? = nil, searchPaths: [URL] = []) throws {
        let container = PersistentContainer(name: modelName, bundle: bundle, searchPaths: searchPaths)
        container.persistentStoreDescriptions = [PersistentStoreDescription(type: .inMemory)]
        try self.init(container: container)
    }

    /// A data access layer on an SQLite store at `storeURL` for a model you built
    /// or loaded.
    ///
    /// ```swift
    /// let dataAccess = try DataAccessLayer(sqliteStack: model, storeURL: url)
    /// ```
    ///
    /// - Parameters:
    ///   - model: The model.
    ///   - name: The container's name.
    ///   - storeURL: The store's file.
    /// - Throws: The ``CoreDataError`` of the first store that does not open (or
    ///   the model's error: see ``PersistentContainer/loadPersistentStores()``).
    public convenience init(sqliteStack model: ManagedObjectModel, name: String = "Model", storeURL: URL) throws {
        let container = PersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: storeURL)]
        try self.init(container: container)
    }

    /// A data access layer on an in-memory store for a model you built or loaded.
    ///
    /// ```swift
    /// let dataAccess = try DataAccessLayer(inMemoryStack: model)
    /// ```
    ///
    /// - Parameters:
    ///   - model: The model.
    ///   - name: The container's name.
    /// - Throws: The ``CoreDataError`` of the first store that does not open (or
    ///   the model's error: see ``PersistentContainer/loadPersistentStores()``).
    public convenience init(inMemoryStack model: ManagedObjectModel, name: String = "Model") throws {
        let container = PersistentContainer(name: name, managedObjectModel: model)
        container.persistentStoreDescriptions = [PersistentStoreDescription(type: .inMemory)]
        try self.init(container: container)
    }

    // MARK: Errors

    /// Called with every error no completion handler received: a read or write
    /// block that threw, a save that failed. Override it; the default logs the
    /// error (swift-log, label `OpenCoreData.DataAccessLayer`).
    ///
    /// ```swift
    /// override func handleError(_ error: any Error) {
    ///     errors.send(error)
    /// }
    /// ```
    ///
    /// - Parameter error: The error of the block or of the save.
    open func handleError(_ error: any Error) {
        logger.error("\(String(describing: error))")
    }

    // MARK: Reading

    /// Runs `block` on the main context and waits for it (Skopelos's `read`).
    /// Returns `self`, to chain. An error the block throws goes to
    /// ``handleError(_:)``.
    ///
    /// ```swift
    /// dataAccess.read { context in
    ///     for mood in try Mood.all(in: context) { print(mood.date) }
    /// }
    /// ```
    ///
    /// - Parameter block: The reading, given the main context.
    /// - Returns: This data access layer.
    @discardableResult
    public func read(_ block: (ManagedObjectContext) throws -> Void) -> Self {
        let context = mainContext
        do {
            try context.performAndWait { try block(context) }
        } catch {
            handleError(error)
        }
        return self
    }

    /// Runs `block` on the main context and returns its result, suspending the
    /// calling task meanwhile. Return values or object IDs, not objects.
    ///
    /// ```swift
    /// let names = try await dataAccess.reading { context in
    ///     try Country.all(in: context).map(\.name)
    /// }
    /// ```
    ///
    /// - Parameter block: The reading, given the main context.
    /// - Returns: The value `block` returns.
    /// - Throws: The error `block` throws.
    public func reading<T: Sendable>(_ block: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        let context = mainContext
        return try await context.perform(schedule: .enqueued) { try block(context) }
    }

    // MARK: Writing

    /// Runs `block` on the writing context, saves it to the store and waits for
    /// both (Skopelos's `writeSync`). `completion` receives nil, or the error of
    /// the block or of the save (the write is then rolled back); without a
    /// completion the error goes to ``handleError(_:)``.
    ///
    /// ```swift
    /// dataAccess.writeSync({ context in
    ///     let mood = Mood.create(in: context)
    ///     mood.date = Date()
    /// }, completion: { error in
    ///     // saved to the store (or not, with the error)
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - block: The changes, given the writing context.
    ///   - completion: Called with nil, or the error, before this returns.
    public func writeSync(_ block: (ManagedObjectContext) throws -> Void, completion: (((any Error)?) -> Void)? = nil) {
        let writer = self.writer
        let error = writer.performAndWait { DataAccessLayer.write(block, in: writer).failure }
        if let completion {
            completion(error)
        } else if let error {
            handleError(error)
        }
    }

    /// Enqueues `block` on the writing context and returns at once; the context
    /// saves after the block (Skopelos's `writeAsync`). `completion` runs on the
    /// main context's queue once the save is done and merged into the main
    /// context, with nil or the error (the write is then rolled back); without a
    /// completion the error goes to ``handleError(_:)``.
    ///
    /// ```swift
    /// dataAccess.writeAsync({ context in
    ///     Mood.create(in: context).date = Date()
    /// }, completion: { error in
    ///     // on the main queue; the main context shows the new mood
    /// })
    /// ```
    ///
    /// - Parameters:
    ///   - block: The changes, given the writing context.
    ///   - completion: Called on the main context's queue with nil, or the error.
    public func writeAsync(_ block: @escaping @Sendable (ManagedObjectContext) throws -> Void,
                           completion: (@Sendable ((any Error)?) -> Void)? = nil) {
        let writer = self.writer
        writer.perform {
            let error = DataAccessLayer.write(block, in: writer).failure
            if let completion {
                // Enqueued after the merge the save enqueued on the main queue.
                self.mainContext.perform { completion(error) }
            } else if let error {
                self.handleError(error)
            }
        }
    }

    /// ``writeSync(_:completion:)`` that returns `self`, to chain steps that run
    /// one after the other, each after the previous one's save.
    ///
    /// ```swift
    /// dataAccess.write { context in
    ///     Country.create(in: context).name = "Italy"
    /// }.read { context in
    ///     print(try Country.count(in: context))
    /// }
    /// ```
    ///
    /// - Parameter block: The changes, given the writing context.
    /// - Returns: This data access layer.
    @discardableResult
    public func write(_ block: (ManagedObjectContext) throws -> Void) -> Self {
        writeSync(block)
        return self
    }

    /// Runs `block` on the writing context, saves, waits until the main context
    /// merged the save, and returns the block's result; a failed block or save is
    /// rolled back and thrown.
    ///
    /// ```swift
    /// let id = try await dataAccess.writing { context in
    ///     let mood = Mood.create(in: context)
    ///     mood.date = Date()
    ///     return mood.objectID          // permanent after the save
    /// }
    /// ```
    ///
    /// - Parameter block: The changes, given the writing context.
    /// - Returns: The value `block` returns; a temporary object ID (alone or in
    ///   an array) comes back as the permanent ID the save gave it.
    /// - Throws: The error `block` throws, or the error of
    ///   ``ManagedObjectContext/save()``.
    public func writing<T: Sendable>(_ block: @escaping @Sendable (ManagedObjectContext) throws -> T) async throws -> T {
        let writer = self.writer
        let result = await writer.perform(schedule: .enqueued) { () -> Result<T, any Error> in
            DataAccessLayer.write(block, in: writer)
        }
        await mainContext.perform(schedule: .enqueued) {}
        return try result.get()
    }

    /// Runs a write on `writer`'s queue: the block, then a save; on failure a
    /// rollback. The writer is reset afterwards either way. An object ID the
    /// block returns (alone or in an array) that was temporary comes back as the
    /// permanent ID the save gave it.
    private static func write<T>(_ block: (ManagedObjectContext) throws -> T, in writer: ManagedObjectContext) -> Result<T, any Error> {
        defer { writer.reset() }
        do {
            var value = try block(writer)
            writer.processPendingChanges()
            let inserted = Array(writer.insertedObjects)
            let temporaryIDs = inserted.map(\.objectID)
            if writer.hasChanges { try writer.save() }
            if !inserted.isEmpty {
                var saved: [ManagedObjectID: ManagedObjectID] = [:]
                for (object, temporaryID) in zip(inserted, temporaryIDs) { saved[temporaryID] = object.objectID }
                if let id = value as? ManagedObjectID, let permanent = saved[id] as? T {
                    value = permanent
                } else if let ids = value as? [ManagedObjectID], let permanent = ids.map({ saved[$0] ?? $0 }) as? T {
                    value = permanent
                }
            }
            return .success(value)
        } catch {
            writer.rollback()
            return .failure(error)
        }
    }

    // MARK: Wiping

    /// Deletes everything: every store of the stack is removed, its files deleted,
    /// and an empty store opened in its place; both contexts are reset
    /// (Skopelos's `nuke`). Call it where no read or write is running.
    ///
    /// ```swift
    /// try dataAccess.nuke()
    /// ```
    ///
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/persistentStoreOperation``
    ///   (134070) when a store file cannot be deleted; the errors of
    ///   ``PersistentStoreCoordinator/addPersistentStore(type:configuration:at:options:)``
    ///   when the new store does not open.
    public func nuke() throws {
        let writer = self.writer
        writer.performAndWait { writer.reset() }
        let main = mainContext
        main.performAndWait { main.reset() }
        let coordinator = container.persistentStoreCoordinator
        for store in coordinator.persistentStores {
            let description = container.persistentStoreDescriptions.first { $0.url?.standardizedFileURL == store.url?.standardizedFileURL && $0.type == store.type }
            coordinator.remove(store)
            if store.type == .sqlite, let url = store.url {
                try PersistentStoreCoordinator.destroyStoreFiles(at: url)
            }
            try coordinator.addPersistentStore(type: store.type, configuration: store.configurationName, at: store.url,
                                               options: description?.options ?? [:])
        }
    }
}

extension Result {
    /// The error of a failure, nil for a success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
