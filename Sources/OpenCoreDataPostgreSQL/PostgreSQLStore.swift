import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

extension PersistentStoreType {
    /// The PostgreSQL store (``PostgreSQLStore``), from the
    /// `OpenCoreDataPostgreSQL` product. Naming the type registers it with every
    /// coordinator.
    ///
    /// ```swift
    /// import OpenCoreDataPostgreSQL
    ///
    /// try coordinator.addPersistentStore(type: .postgreSQL,
    ///                                    at: URL(string: "postgres://app@localhost:5432/moody")!,
    ///                                    options: [PostgreSQLStore.Option.schema: "moody"])
    /// ```
    public static var postgreSQL: PersistentStoreType {
        PostgreSQLStore.registration
        return PostgreSQLStore.storeType
    }
}

/// A store keeping Core Data's layout in a PostgreSQL database, for several app
/// servers sharing one database: the same object graph code that runs on SQLite
/// on a laptop runs on a fleet.
///
/// ```swift
/// import OpenCoreData
/// import OpenCoreDataPostgreSQL
///
/// let container = PersistentContainer(name: "Moody", managedObjectModel: model)
/// var description = PersistentStoreDescription(url: URL(string: "postgres://app@db.internal/moody")!)
/// description.type = .postgreSQL
/// description.setOption("moody", forKey: PostgreSQLStore.Option.schema)
/// container.persistentStoreDescriptions = [description]
/// try container.loadPersistentStores()
/// ```
///
/// The store's schema (``Option/schema``, `public` by default) holds Core Data's
/// tables, created on first use, `Z_PRIMARYKEY` and `Z_METADATA` included (see
/// `PostgreSQLSchema`). Opening an existing store checks its metadata against the
/// model (134100 naming the entities that differ) and its entity numbers against
/// the layout (134020).
///
/// Several coordinators, in several processes on several machines, share a
/// store safely:
/// - primary keys come in ranges from one locked `UPDATE` of `Z_PRIMARYKEY`: no
///   two coordinators ever get the same key;
/// - a save is one transaction; updates and deletes carry their version
///   (`AND Z_OPT = ?`), so a row another server changed since it was read fails the
///   save with 133020 and the context's merge policy decides, as on SQLite;
///   uniqueness constraints are the database's own (133021);
/// - each save sends `NOTIFY` with the IDs it changed; every other coordinator
///   `LISTEN`s, merges them into its contexts that
///   ``ManagedObjectContext/automaticallyMergesChangesFromParent``, and posts
///   `Notification.Name.persistentStoreRemoteChange`.
///
/// Fetches are translated into one statement each by the SQLite store's
/// translator, in PostgreSQL's dialect: string comparisons with `[c]`, `[d]`,
/// `LIKE` and `MATCHES` through the `ocd_compare` function the store installs,
/// localized sorts through ICU collations it creates.
public final class PostgreSQLStore: PersistentStore {
    static let storeType = PersistentStoreType(rawValue: "PostgreSQL")
    /// Registers the store type once (see ``PersistentStoreType/postgreSQL``).
    static let registration: Void = {
        PersistentStoreCoordinator.registerStoreType(storeType) { request in
            try PostgreSQLStore(url: request.url, model: request.model, configurationName: request.configurationName,
                                options: request.options)
        }
    }()

    /// The store's options (strings, like Core Data's).
    public enum Option {
        /// The schema holding the store's tables (default `public`); several stores
        /// share a database in schemas of their own.
        public static let schema = "PostgreSQLSchema"
        /// The most connections the store opens at once (default 4).
        public static let poolSize = "PostgreSQLPoolSize"
        /// `disable` (the default), `prefer` or `require` TLS. The server's
        /// certificate is always verified, its name included: against the
        /// system's certificate authorities, or ``tlsRootCertificates``.
        public static let tls = "PostgreSQLTLS"
        /// The path of a PEM file of the certificate authorities to trust for the
        /// server's certificate instead of the system's (libpq's `sslrootcert`):
        /// a private authority, a cloud provider's bundle.
        public static let tlsRootCertificates = "PostgreSQLTLSRootCertificates"
        /// The longest a statement may run, in seconds (PostgreSQL's
        /// `statement_timeout`; 134090 when it is exceeded).
        public static let statementTimeout = "PostgreSQLStatementTimeout"
        /// "0" stops the store from listening for other coordinators' saves (it
        /// still announces its own).
        public static let remoteChanges = "PostgreSQLRemoteChanges"
        /// `NSReadOnlyPersistentStoreOption`: "1" refuses saves.
        public static let readOnly = "NSReadOnlyPersistentStoreOption"
        /// The UUID (`NSStoreUUID`) a new store gets, instead of a new one: a store
        /// moved from another keeps its object ID URIs. Ignored when the store exists.
        public static let storeUUID = "NSStoreUUID"
    }

    public let identifier: String
    public var type: PersistentStoreType { PostgreSQLStore.storeType }
    public let url: URL?
    public let configurationName: String?
    public let isReadOnly: Bool
    public let metadata: [String: AttributeValue]
    /// Batched fetches read ahead up to 2,000 rows a query when read in order:
    /// every query here is a round trip to the server.
    public var batchReadAheadRows: Int { 2_000 }
    /// The store's layout: Core Data's tables, columns and entity numbers.
    public let schema: SQLiteSchema

    let model: ManagedObjectModel
    let pool: PostgreSQLConnectionPool
    let translator: SQLFetchTranslator
    let transformers: ValueTransformerRegistry
    /// The entities by entity number.
    let entitiesByNumber: [Int: EntityDescription]
    /// Primary keys reserved in `Z_PRIMARYKEY` and not handed out yet, by root entity number.
    let reservedPrimaryKeys = Lock<[Int: Range<Int64>]>([:])
    /// The localized sort collations already created in the schema.
    let collations = Lock<Set<String>>([])
    /// A test hook: packed statements (``PostgreSQLPackedRows``) fail as rows too
    /// large for one array do, so that the plain statement runs instead.
    let packedRowsFailForTesting = Lock(false)
    /// A test hook: a condition the rows of a batched fetch's cursor must also
    /// meet (on `t0`'s columns), so that the cursor lacks rows the IDs have.
    let cursorConditionForTesting = Lock<String?>(nil)
    /// A test hook: the rows a batched fetch's cursor reads per `FETCH`
    /// (nil: ``batchReadAheadRows``).
    let cursorFetchRowsForTesting = Lock<Int?>(nil)
    /// This store's saves announced, other coordinators' heard.
    let remoteChanges: PostgreSQLRemoteChanges
    /// The persistent history the store records (nil: not tracking history).
    let history: PostgreSQLHistory?
    /// The scopes of the IDs of the store's rows, one per entity, shared by every
    /// ID the store makes.
    let idScopes: ManagedObjectID.Scopes
    /// Whether the store listens for other coordinators' saves (``Option/remoteChanges``).
    let listens: Bool
    /// How many primary keys a reservation takes at least.
    static let primaryKeyReservation: Int64 = 64

    /// Opens the store at `url` (`postgres://user:password@host:port/database`),
    /// creating its tables in the schema of ``Option/schema`` when they do not
    /// exist.
    ///
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/persistentStoreOpen``
    ///   (134080) for a bad URL or option, or a server that cannot be reached;
    ///   ``CoreDataError/Code/persistentStoreIncompatibleVersionHash`` (134100)
    ///   when the store was made with another model;
    ///   ``CoreDataError/Code/persistentStoreIncompatibleSchema`` (134020) when
    ///   its entity numbers do not match the model's layout.
    public init(url: URL?, model: ManagedObjectModel, configurationName: String? = nil, options: [String: String] = [:],
                transformers: ValueTransformerRegistry = .shared) throws {
        let location = try PostgreSQLLocation(url: url, options: options)
        self.url = url
        self.model = model
        self.configurationName = configurationName
        self.transformers = transformers
        self.isReadOnly = options[Option.readOnly] == "1" || options[Option.readOnly]?.lowercased() == "true"
        let schema: SQLiteSchema
        do {
            schema = try SQLiteSchema(model: model, configurationName: configurationName)
        } catch {
            throw CoreDataError(.persistentStoreOpen, "The model has no PostgreSQL layout: \(error)", url: url)
        }
        self.schema = schema
        var numbers: [Int: EntityDescription] = [:]
        for mapping in schema.entities {
            if let entity = model.entitiesByName[mapping.entityName] { numbers[mapping.entityNumber] = entity }
        }
        self.entitiesByNumber = numbers
        pool = PostgreSQLConnectionPool(location: location, size: location.poolSize)
        let storeMetadata = try pool.withSession { session in
            try PostgreSQLStore.prepare(session, location: location, schema: schema, model: model,
                                        configurationName: configurationName, options: options, url: url)
        }
        guard let uuid = storeMetadata[SQLiteStoreMetadata.storeUUIDKey] as? String, !uuid.isEmpty else {
            throw CoreDataError(.persistentStoreOpen, "The PostgreSQL store \(location) has no store UUID in Z_METADATA", url: url)
        }
        identifier = uuid
        metadata = storeMetadata.mapValues { AttributeValue(anyValue: $0) }
        translator = SQLFetchTranslator(schema: schema, storeIdentifier: uuid, dialect: .postgreSQL)
        remoteChanges = PostgreSQLRemoteChanges(storeIdentifier: uuid)
        idScopes = ManagedObjectID.Scopes(storeName: .named(uuid))
        listens = options[Option.remoteChanges] != "0"
        let tracksHistory = ["1", "true", "yes"].contains(options[NSPersistentHistoryTrackingKey]?.lowercased() ?? "")
        history = tracksHistory ? PostgreSQLHistory(schema: schema, model: model, configurationName: configurationName) : nil
        if let history {
            do {
                try pool.withSession { session in
                    if isReadOnly {
                        guard try PostgreSQLHistory.hasTables(session, schemaName: location.schema) else {
                            throw CoreDataError(.persistentStoreOpen, "The PostgreSQL store \(location) has no history tables to read", url: url)
                        }
                        return
                    }
                    try session.transaction {
                        try session.execute("SELECT pg_advisory_xact_lock(hashtext(?))", [("OpenCoreData.PostgreSQLStore." + location.schema).databaseValue])
                        try history.prepareTables(session)
                    }
                }
            } catch {
                throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOpen, doing: "preparing the history tables of \(location)", url: url)
            }
        }
    }

    /// Creates the schema, its tables and functions when the store is new (under an
    /// advisory lock, so that servers opening a new store at once create it once),
    /// and returns the store's metadata, checked against the model.
    private static func prepare(_ session: PostgreSQLSession, location: PostgreSQLLocation, schema: SQLiteSchema,
                                model: ManagedObjectModel, configurationName: String?, options: [String: String],
                                url: URL?) throws -> [String: Any] {
        let readOnly = options[Option.readOnly] == "1" || options[Option.readOnly]?.lowercased() == "true"
        if let uuid = options[Option.storeUUID], UUID(uuidString: uuid) == nil {
            throw CoreDataError(.persistentStoreOpen, "Invalid \(Option.storeUUID) option '\(uuid)': a UUID", url: url)
        }
        do {
            return try session.transaction {
                let lockKey = "OpenCoreData.PostgreSQLStore." + location.schema
                if !readOnly {
                    try session.execute("SELECT pg_advisory_xact_lock(hashtext(?))", [lockKey.databaseValue])
                    try session.execute("CREATE SCHEMA IF NOT EXISTS \(PostgreSQLIdentifier.quoted(location.schema))")
                }
                let exists = try session.query(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name IN ('z_metadata', 'Z_METADATA')",
                    [location.schema.databaseValue]).first?.int64(0) ?? 0
                if exists == 0 {
                    if readOnly {
                        throw CoreDataError(.persistentStoreOpen, "No store at \(location) to open read-only", url: url)
                    }
                    try create(session, schema: schema, model: model, configurationName: configurationName,
                               uuid: options[Option.storeUUID])
                } else if !readOnly {
                    // Functions of an older version of the store are replaced, when the
                    // role may: a role that may only read and write rows keeps the
                    // functions the store's creator installed.
                    try session.execute("SAVEPOINT ocd_functions")
                    do {
                        for statement in PostgreSQLSchema.functionStatements { try session.execute(statement) }
                        try session.execute("RELEASE SAVEPOINT ocd_functions")
                    } catch where PostgreSQLErrors.sqlState(error) == "42501" {
                        try session.execute("ROLLBACK TO SAVEPOINT ocd_functions")
                    }
                }
                let metadata = try readMetadata(session)
                try SQLiteStoreMetadata.checkCompatibility(of: metadata, with: model, configurationName: configurationName)
                try checkEntityNumbers(session, schema: schema, url: url)
                return metadata
            }
        } catch {
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOpen, doing: "opening \(location)", url: url)
        }
    }

    private static func create(_ session: PostgreSQLSession, schema: SQLiteSchema, model: ManagedObjectModel,
                               configurationName: String?, uuid chosen: String?) throws {
        for statement in PostgreSQLSchema.creationStatements(for: schema) { try session.execute(statement) }
        for statement in PostgreSQLSchema.functionStatements { try session.execute(statement) }
        for entity in schema.entities {
            try session.execute("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                                [Int64(entity.entityNumber).databaseValue, entity.entityName.databaseValue,
                                 Int64(entity.superentityNumber).databaseValue])
        }
        var metadata = SQLiteStoreMetadata.metadata(for: model, configurationName: configurationName)
        metadata["NSStoreType"] = storeType.rawValue
        let generated = metadata.removeValue(forKey: SQLiteStoreMetadata.storeUUIDKey) as? String
        let uuid = chosen ?? generated ?? UUID().uuidString
        let plist: Data
        do {
            plist = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        } catch {
            throw CoreDataError(.persistentStoreSave, "The metadata can't be written as a property list: \(error)")
        }
        try session.execute("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                            [uuid.databaseValue, plist.databaseValue])
        let cache = try CompiledModelWriter().modelCacheData(for: model)
        try session.execute("INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", [cache.databaseValue])
    }

    /// `Z_METADATA`'s property list, with `NSStoreUUID` from `Z_UUID`.
    static func readMetadata(_ session: PostgreSQLSession) throws -> [String: Any] {
        guard let row = try session.query("SELECT Z_UUID, Z_PLIST FROM Z_METADATA WHERE Z_VERSION = 1").first else {
            throw CoreDataError(.persistentStoreOpen, "The PostgreSQL store has no Z_METADATA row")
        }
        let cells = row.makeRandomAccess()
        var metadata: [String: Any] = [:]
        if case .blob(let data) = PostgreSQLValues.databaseValue(cells[1]).storage {
            guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
                throw CoreDataError(.persistentStoreOpen, "The PostgreSQL store's Z_METADATA property list can't be read")
            }
            metadata = plist
        }
        if case .string(let uuid) = PostgreSQLValues.databaseValue(cells[0]).storage {
            metadata[SQLiteStoreMetadata.storeUUIDKey] = uuid
        }
        return metadata
    }

    /// The model cached in the store's `Z_MODELCACHE` (written when the store was
    /// created): what opens a store without its model files, as
    /// `SQLiteStore.storedModel(at:)` does for a file.
    ///
    /// ```swift
    /// let url = URL(string: "postgres://app@db.internal/moody?schema=tenant_42")!
    /// let model = try PostgreSQLStore.storedModel(at: url)
    /// try coordinator.addPersistentStore(type: .postgreSQL, at: url)   // with that model
    /// ```
    ///
    /// - Parameters:
    ///   - url: The store's URL.
    ///   - options: The store's options (its schema, TLS, timeout).
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/persistentStoreOpen``
    ///   (134080) when the server or the store can't be reached;
    ///   ``CoreDataError/Code/migrationMissingSourceModel`` (134130) when the store
    ///   has no model cache.
    public static func storedModel(at url: URL, options: [String: String] = [:]) throws -> ManagedObjectModel {
        let location = try PostgreSQLLocation(url: url, options: options)
        let pool = PostgreSQLConnectionPool(location: location, size: 1)
        let blob: Data?
        do {
            blob = try pool.withSession { session -> Data? in
                let exists = try session.query(
                    "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name IN ('z_modelcache', 'Z_MODELCACHE')",
                    [location.schema.databaseValue]).first?.int64(0) ?? 0
                guard exists > 0, let row = try session.query("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1").first else { return nil }
                guard case .blob(let data) = PostgreSQLValues.databaseValue(row.makeRandomAccess()[0]).storage else { return nil }
                return data
            }
        } catch {
            throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOpen, doing: "reading the model cache of \(location)", url: url)
        }
        guard let blob, !blob.isEmpty else {
            throw CoreDataError(.migrationMissingSourceModel, "The PostgreSQL store \(location) has no model cache (Z_MODELCACHE); open it with its model",
                                url: url)
        }
        return try ManagedObjectModel(modelCacheData: blob)
    }

    /// The store's `Z_PRIMARYKEY` entity numbers must be the layout's: rows are
    /// read and written by them.
    private static func checkEntityNumbers(_ session: PostgreSQLSession, schema: SQLiteSchema, url: URL?) throws {
        var stored: [String: Int] = [:]
        for row in try session.query("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY") {
            let cells = row.makeRandomAccess()
            if case .string(let name) = PostgreSQLValues.databaseValue(cells[1]).storage {
                stored[name] = Int(PostgreSQLValues.int64(cells[0]))
            }
        }
        for entity in schema.entities where stored[entity.entityName] != entity.entityNumber {
            throw CoreDataError(.persistentStoreIncompatibleSchema,
                                "The store numbers entity '\(entity.entityName)' \(stored[entity.entityName].map(String.init) ?? "nowhere") in Z_PRIMARYKEY, the model's layout \(entity.entityNumber)",
                                url: url, entityName: entity.entityName)
        }
    }

    // MARK: Listening

    public func didAdd(to coordinator: PersistentStoreCoordinator) {
        if listens { remoteChanges.start(store: self, coordinator: coordinator) }
    }

    public func willRemove(from coordinator: PersistentStoreCoordinator) {
        remoteChanges.stop()
    }

    deinit {
        remoteChanges.stop()
    }

    // MARK: Access

    /// Runs `body` with a connection; errors become Core Data's, naming `action`.
    func withSession<T>(_ action: @autoclosure () -> String, code: CoreDataError.Code = .persistentStoreOperation,
                        _ body: (PostgreSQLSession) throws -> T) throws -> T {
        do {
            return try pool.withSession(body)
        } catch {
            throw PostgreSQLErrors.coreDataError(error, code: code, doing: action(), url: url)
        }
    }

    /// Creates the ICU collations a statement sorts with, once per store.
    func prepareCollations(_ needed: [SQLiteSortCollation], _ session: PostgreSQLSession) throws {
        if session.holdsSnapshot, needed.contains(where: { collation in !collations.withLock { $0.contains(collation.name) } }) {
            // Created and committed elsewhere: the snapshot's catalog lookups see it.
            try pool.withSession { try prepareCollations(needed, $0) }
            return
        }
        for collation in needed where !collations.withLock({ $0.contains(collation.name) }) {
            guard let sql = PostgreSQLSchema.collationStatement(name: collation.name, localeIdentifier: collation.localeIdentifier,
                                                                selector: collation.selector.rawValue) else {
                throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                    "The PostgreSQL store can't sort in the locale '\(collation.localeIdentifier)'")
            }
            do {
                try session.execute(sql)
            } catch where PostgreSQLErrors.sqlState(error) == "23505" || PostgreSQLErrors.sqlState(error) == "42710" {
                // Another server created it at the same moment.
            }
            _ = collations.withLock { $0.insert(collation.name) }
        }
    }

    func entity(forNumber number: Int) -> EntityDescription? { entitiesByNumber[number] }
}
