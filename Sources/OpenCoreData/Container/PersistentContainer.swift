import Foundation
import Synchronization

/// The whole Core Data stack in one object (`NSPersistentContainer`): a model, a
/// coordinator, its stores, a main-queue ``viewContext`` for the interface and
/// background contexts for the work.
///
/// ```swift
/// let container = PersistentContainer(name: "Moody")     // finds Moody.momd / .xcdatamodeld
/// try await container.loadPersistentStores()
/// container.viewContext.automaticallyMergesChangesFromParent = true
///
/// try await container.performBackgroundTask { context in
///     let mood = ManagedObject(entity: moodEntity, insertInto: context)
///     mood.setValue(Date(), forKey: "date")
///     try context.save()
/// }
/// ```
///
/// The model named `name` is looked up as `<name>.momd`, `<name>.mom` or
/// `<name>.xcdatamodeld` in the given bundle (pass `Bundle.module` for a package's
/// resources), the main bundle, the executable's folder and the given search paths;
/// ``init(name:managedObjectModel:)`` takes a model you built or loaded. A model
/// that is not found or not valid does not stop the program: ``loadPersistentStores(completionHandler:)``
/// reports the error for every store.
///
/// `@unchecked Sendable`, as Core Data's container is: its constant parts are
/// `Sendable` (the coordinator, the model, frozen, and the view context, confined
/// to the main queue), and the one mutable property, ``persistentStoreDescriptions``,
/// is guarded by a lock.
open class PersistentContainer: @unchecked Sendable {
    /// The container's name: the model's name and the default store's file name.
    public let name: String
    /// The model, frozen.
    public let managedObjectModel: ManagedObjectModel
    /// The coordinator of every context the container makes.
    public let persistentStoreCoordinator: PersistentStoreCoordinator
    /// The main-queue context, for the interface: use it on the main queue (or
    /// the main actor) only.
    public let viewContext: ManagedObjectContext

    private let descriptions: Lock<[PersistentStoreDescription]>
    private let modelError: Lock<CoreDataError?>

    /// The stores to open; one SQLite store `<name>.sqlite` in
    /// ``defaultDirectoryURL()`` unless changed before loading.
    public var persistentStoreDescriptions: [PersistentStoreDescription] {
        get { descriptions.withLock { $0 } }
        set { descriptions.withLock { $0 = newValue } }
    }

    /// A container for the model named `name` (see the lookup above), with the
    /// default store description.
    ///
    /// ```swift
    /// let container = PersistentContainer(name: "Moody", bundle: .module)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The model's name, also the default store's file name.
    ///   - bundle: A bundle to search first (`Bundle.module` for a package's
    ///     resources); the main bundle is searched after it.
    ///   - searchPaths: More folders to search, last.
    public convenience init(name: String, bundle: Bundle? = nil, searchPaths: [URL] = []) {
        var model = ManagedObjectModel()
        var problem: CoreDataError?
        do {
            let url = try PersistentContainer.modelURL(named: name, bundle: bundle, searchPaths: searchPaths)
            model = try ManagedObjectModel(contentsOf: url)
        } catch let error as CoreDataError {
            problem = error
        } catch {
            problem = CoreDataError(.persistentStoreOpen, "Could not load the model '\(name)': \(error)")
        }
        self.init(name: name, managedObjectModel: model)
        if let problem { modelError.withLock { $0 = $0 ?? problem } }
    }

    /// A container for `model` (`init(name:managedObjectModel:)`), with the default
    /// store description.
    ///
    /// ```swift
    /// let container = PersistentContainer(name: "Moody", managedObjectModel: model)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The container's name, the default store's file name.
    ///   - model: The model; it is validated and becomes immutable. An invalid
    ///     model is reported by ``loadPersistentStores(completionHandler:)``, with
    ///     code ``CoreDataError/Code/persistentStoreOpen`` (134080).
    public init(name: String, managedObjectModel model: ManagedObjectModel) {
        self.name = name
        var problem: CoreDataError?
        var usable = model
        do {
            try model.freeze()
        } catch {
            problem = CoreDataError(.persistentStoreOpen, "The model '\(name)' is invalid: \(error)")
            usable = ManagedObjectModel()
        }
        managedObjectModel = usable
        modelError = Lock(problem)
        persistentStoreCoordinator = PersistentStoreCoordinator(managedObjectModel: usable)
        viewContext = ManagedObjectContext(concurrencyType: .mainQueue)
        viewContext.persistentStoreCoordinator = persistentStoreCoordinator
        viewContext.name = "viewContext"
        descriptions = Lock([PersistentStoreDescription(url: Self.defaultDirectoryURL().appendingPathComponent("\(name).sqlite"))])
    }

    /// Where stores go by default: `$XDG_DATA_HOME` (else `~/.local/share`) on
    /// Linux and other Unix systems, Application Support on Apple platforms, the
    /// local application data folder on Windows. Override it in a subclass to
    /// move them.
    ///
    /// - Returns: The folder of the default store description's file.
    open class func defaultDirectoryURL() -> URL {
        #if canImport(Darwin)
        return FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        #elseif os(Windows)
        if let local = ProcessInfo.processInfo.environment["LOCALAPPDATA"] { return URL(fileURLWithPath: local, isDirectory: true) }
        return FileManager.default.temporaryDirectory
        #else
        let environment = ProcessInfo.processInfo.environment
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return URL(fileURLWithPath: data, isDirectory: true)
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share", isDirectory: true)
        #endif
    }

    /// The model file for `name`: the first `<name>.momd`, `.mom` or `.xcdatamodeld`
    /// found in the places described in the overview.
    static func modelURL(named name: String, bundle: Bundle?, searchPaths: [URL]) throws -> URL {
        var folders: [URL] = []
        for candidate in [bundle, Bundle.main].compactMap({ $0 }) {
            if let resources = candidate.resourceURL { folders.append(resources) }
            folders.append(candidate.bundleURL)
        }
        if let executable = Bundle.main.executableURL { folders.append(executable.deletingLastPathComponent()) }
        folders += searchPaths
        var seen = Set<String>()
        folders = folders.filter { seen.insert($0.standardizedFileURL.path).inserted }
        for folder in folders {
            for ext in ["momd", "mom", "xcdatamodeld"] {
                let url = folder.appendingPathComponent("\(name).\(ext)")
                if FileManager.default.fileExists(atPath: url.path) { return url }
            }
        }
        throw CoreDataError(.fileReadNoSuchFile, "No model named '\(name)' (.momd, .mom or .xcdatamodeld) in \(folders.map(\.path).joined(separator: ", "))")
    }

    // MARK: Loading stores

    /// Opens the store of every description, calling `completionHandler` once per
    /// description with nil or the error (`loadPersistentStores(completionHandler:)`).
    /// Stores whose description says ``PersistentStoreDescription/shouldAddStoreAsynchronously``
    /// open on a background queue (the handler runs there); the others open before
    /// this returns. Missing folders of store files are created.
    ///
    /// ```swift
    /// container.loadPersistentStores { description, error in
    ///     if let error { print("Could not open \(description): \(error)") }
    /// }
    /// ```
    ///
    /// - Parameter completionHandler: Called once per description, with the
    ///   description and nil, or the ``CoreDataError`` that kept the store from
    ///   opening (the model's error when the model could not be loaded; see
    ///   ``PersistentStoreCoordinator/addPersistentStore(type:configuration:at:options:)``
    ///   for the others).
    public func loadPersistentStores(completionHandler: @escaping @Sendable (PersistentStoreDescription, (any Error)?) -> Void) {
        for description in persistentStoreDescriptions {
            if description.shouldAddStoreAsynchronously {
                DispatchQueue.global().async {
                    completionHandler(description, self.load(description))
                }
            } else {
                completionHandler(description, load(description))
            }
        }
    }

    /// Opens the store of every description, throwing the first error.
    ///
    /// ```swift
    /// try await container.loadPersistentStores()
    /// ```
    ///
    /// - Throws: The first ``CoreDataError`` met: the model's error when the model
    ///   could not be found (``CoreDataError/Code/fileReadNoSuchFile``, 260), read or
    ///   validated, else the error of the first store that did not open (see
    ///   ``PersistentStoreCoordinator/addPersistentStore(type:configuration:at:options:)``).
    public func loadPersistentStores() async throws {
        for description in persistentStoreDescriptions {
            let error: CoreDataError? = await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume(returning: self.load(description)) }
            }
            if let error { throw error }
        }
    }

    private func load(_ description: PersistentStoreDescription) -> CoreDataError? {
        if let error = modelError.withLock({ $0 }) { return error }
        do {
            if let url = description.url, description.type == .sqlite {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            }
            try persistentStoreCoordinator.addPersistentStore(with: description)
            return nil
        } catch let error as CoreDataError {
            return error
        } catch {
            return CoreDataError(.persistentStoreOpen, "Could not open the store \(description.url?.path ?? description.type.rawValue): \(error)",
                                 url: description.url)
        }
    }

    // MARK: Contexts

    /// A new private-queue context on the container's coordinator
    /// (`newBackgroundContext()`). Use it inside its ``ManagedObjectContext/perform(_:)``.
    ///
    /// ```swift
    /// let context = container.newBackgroundContext()
    /// try await context.perform { try context.save() }
    /// ```
    ///
    /// - Returns: A new private-queue context, with no parent.
    public func newBackgroundContext() -> ManagedObjectContext {
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = persistentStoreCoordinator
        return context
    }

    /// Runs `block` on a new background context's queue, without waiting
    /// (`performBackgroundTask(_:)`).
    ///
    /// ```swift
    /// container.performBackgroundTask { context in
    ///     // import, then
    ///     try? context.save()
    /// }
    /// ```
    ///
    /// - Parameter block: The work, given the new context.
    public func performBackgroundTask(_ block: @escaping @Sendable (ManagedObjectContext) -> Void) {
        let context = newBackgroundContext()
        context.perform { block(context) }
    }

    /// Runs `block` on a new background context's queue and returns its result.
    ///
    /// ```swift
    /// let count = try await container.performBackgroundTask { context in
    ///     try context.count(for: FetchRequest<ManagedObject>(entityName: "Mood"))
    /// }
    /// ```
    ///
    /// - Parameter block: The work, given the new context.
    /// - Returns: The value `block` returns.
    /// - Throws: The error `block` throws.
    public func performBackgroundTask<T, E: Error>(_ block: @escaping @Sendable (ManagedObjectContext) throws(E) -> T) async throws(E) -> T {
        let context = newBackgroundContext()
        return try await context.perform(schedule: .enqueued) { () throws(E) -> T in try block(context) }
    }
}
