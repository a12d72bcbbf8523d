import Foundation

/// What store a ``PersistentContainer`` opens and how (`NSPersistentStoreDescription`).
///
/// A container starts with one description: an SQLite store named after it in
/// ``PersistentContainer/defaultDirectoryURL()``. Change it, or give others, before
/// ``PersistentContainer/loadPersistentStores(completionHandler:)``:
///
/// ```swift
/// let container = PersistentContainer(name: "Moody", managedObjectModel: model)
/// var description = PersistentStoreDescription(url: URL(fileURLWithPath: "/var/lib/moody/Moody.sqlite"))
/// description.sqlitePragmas["journal_mode"] = "WAL"
/// description.isHistoryTrackingEnabled = true
/// container.persistentStoreDescriptions = [description]
/// try await container.loadPersistentStores()
/// ```
///
/// The flags are stored in ``options`` under Core Data's option keys, which is what
/// the store receives.
public struct PersistentStoreDescription: Sendable, Hashable, CustomStringConvertible {
    /// Core Data's option keys.
    public enum OptionKey {
        /// `NSReadOnlyPersistentStoreOption`.
        public static let readOnly = "NSReadOnlyPersistentStoreOption"
        /// `NSPersistentHistoryTrackingKey`.
        public static let historyTracking = "NSPersistentHistoryTrackingKey"
        /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`.
        public static let remoteChangeNotificationPost = "NSPersistentStoreRemoteChangeNotificationPostOptionKey"
        /// `NSMigratePersistentStoresAutomaticallyOption`.
        public static let migrateAutomatically = "NSMigratePersistentStoresAutomaticallyOption"
        /// `NSInferMappingModelAutomaticallyOption`.
        public static let inferMappingModelAutomatically = "NSInferMappingModelAutomaticallyOption"
        /// `NSPersistentStoreTimeoutOption` (seconds).
        public static let timeout = "NSPersistentStoreTimeoutOption"
        /// `NSSQLiteManualVacuumOption`: rebuild the SQLite store's file as it opens
        /// (see ``SQLiteStore/Option/manualVacuum``).
        public static let sqliteManualVacuum = "NSSQLiteManualVacuumOption"
        /// `NSSQLiteAnalyzeOption`: gather the SQLite store's index statistics as it
        /// opens (see ``SQLiteStore/Option/analyze``).
        public static let sqliteAnalyze = "NSSQLiteAnalyzeOption"
    }

    /// The store's file (nil for an in-memory store).
    public var url: URL?
    /// The store's type, ``PersistentStoreType/sqlite`` by default.
    public var type: PersistentStoreType = .sqlite
    /// The model configuration the store holds (nil: every entity).
    public var configuration: String?
    /// The options handed to the store, by Core Data's keys (``OptionKey``) and
    /// `pragma.<name>` for SQLite pragmas.
    public private(set) var options: [String: String] = [:]
    /// Whether ``PersistentContainer/loadPersistentStores(completionHandler:)``
    /// opens the store on a background queue and returns at once.
    public var shouldAddStoreAsynchronously = false
    /// The staged migration to run when the store is added
    /// (`NSPersistentStoreStagedMigrationManagerOptionKey`); it runs when
    /// ``shouldMigrateStoreAutomatically`` is on, before Core Data's usual search
    /// for a source model.
    public var stagedMigrationManager: StagedMigrationManager?

    /// A description of an SQLite store at `url`.
    ///
    /// - Parameter url: The store's file.
    public init(url: URL) {
        self.url = url
        shouldMigrateStoreAutomatically = true
        shouldInferMappingModelAutomatically = true
    }

    /// A description of a store of `type` (an in-memory store needs no URL).
    ///
    /// - Parameters:
    ///   - type: The store's type.
    ///   - url: The store's file; nil for an in-memory store.
    public init(type: PersistentStoreType, url: URL? = nil) {
        self.url = url
        self.type = type
        shouldMigrateStoreAutomatically = true
        shouldInferMappingModelAutomatically = true
    }

    /// Sets an option (nil removes it).
    ///
    /// - Parameters:
    ///   - value: The option's value, or nil to remove it.
    ///   - key: The option's key: one of ``OptionKey``, or `pragma.<name>`.
    public mutating func setOption(_ value: String?, forKey key: String) {
        options[key] = value
    }

    private func flag(_ key: String) -> Bool { options[key] == "1" }
    private mutating func setFlag(_ key: String, _ value: Bool) { options[key] = value ? "1" : nil }

    /// Whether the store is opened read-only.
    public var isReadOnly: Bool {
        get { flag(OptionKey.readOnly) }
        set { setFlag(OptionKey.readOnly, newValue) }
    }
    /// Whether saves are recorded in persistent history (`NSPersistentHistoryTrackingKey`).
    public var isHistoryTrackingEnabled: Bool {
        get { flag(OptionKey.historyTracking) }
        set { setFlag(OptionKey.historyTracking, newValue) }
    }
    /// Whether the store posts remote change notifications.
    public var postsRemoteChangeNotifications: Bool {
        get { flag(OptionKey.remoteChangeNotificationPost) }
        set { setFlag(OptionKey.remoteChangeNotificationPost, newValue) }
    }
    /// Whether an older store is migrated when opened (true by default).
    public var shouldMigrateStoreAutomatically: Bool {
        get { flag(OptionKey.migrateAutomatically) }
        set { setFlag(OptionKey.migrateAutomatically, newValue) }
    }
    /// Whether the mapping of a migration is inferred (true by default).
    public var shouldInferMappingModelAutomatically: Bool {
        get { flag(OptionKey.inferMappingModelAutomatically) }
        set { setFlag(OptionKey.inferMappingModelAutomatically, newValue) }
    }
    /// How long to wait for a locked store, in seconds (`timeout`).
    public var timeout: TimeInterval? {
        get { options[OptionKey.timeout].flatMap(TimeInterval.init) }
        set { options[OptionKey.timeout] = newValue.map { "\($0)" } }
    }
    /// SQLite pragmas run when the store opens (`NSSQLitePragmasOption`), e.g.
    /// `["journal_mode": "WAL", "synchronous": "FULL"]`.
    public var sqlitePragmas: [String: String] {
        get {
            var pragmas: [String: String] = [:]
            for (key, value) in options where key.hasPrefix(SQLiteStore.Option.pragmaPrefix) {
                pragmas[String(key.dropFirst(SQLiteStore.Option.pragmaPrefix.count))] = value
            }
            return pragmas
        }
        set {
            options = options.filter { !$0.key.hasPrefix(SQLiteStore.Option.pragmaPrefix) }
            for (name, value) in newValue { options[SQLiteStore.Option.pragmaPrefix + name] = value }
        }
    }

    public var description: String {
        "<PersistentStoreDescription: type \(type.rawValue), url \(url?.path ?? "nil")\(configuration.map { ", configuration \($0)" } ?? "")>"
    }
}
