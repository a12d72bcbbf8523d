import Foundation
import GRDB
import GRDBSQLite
import OpenCoreDataPredicates
import Synchronization

/// Core Data's SQLite store (`NSSQLiteStoreType`), in Core Data's own file format:
/// a store made here opens with Core Data on Apple platforms, and the other way round.
///
/// ```swift
/// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
/// try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: "Moody.sqlite"))
/// ```
///
/// Opening an existing store reads its `Z_PRIMARYKEY` and real columns, checks that
/// the model's version hashes match the store's metadata (error 134100 naming the
/// entities that differ otherwise), and never changes the file. A missing file is
/// created in Core Data's layout. Each fetch is one statement with bound arguments;
/// each save is one transaction, with optimistic locking on `Z_OPT`.
///
/// Transformable values go through ``ValueTransformerRegistry``; a value whose
/// transformer is not registered in this process (an app's own, such as a colour
/// transformer) reads as its stored bytes (`.data`) and is written back unchanged.
public final class SQLiteStore: PersistentStore {
    public let identifier: String
    /// The scopes of the store's object IDs, with its identifier interned (see `ManagedObjectID`).
    let idScopes: ManagedObjectID.Scopes
    public var type: PersistentStoreType { .sqlite }
    public let url: URL?
    public let configurationName: String?
    public let isReadOnly: Bool
    public let metadata: [String: AttributeValue]
    /// The store's layout: tables, columns, entity numbers.
    public let schema: SQLiteSchema

    let model: ManagedObjectModel
    let queue: DatabaseQueue
    /// The identity of `queue`'s connection (GRDB's `Database`), which lives as
    /// long as the queue: statements kept by ``RowQuery`` are for it alone.
    let connection: ObjectIdentifier
    /// The read transaction `queue`'s connection keeps open between single-statement
    /// reads (see ``SQLiteHeldRead``).
    let heldRead = SQLiteHeldRead()
    let translator: SQLFetchTranslator
    let externalStorage: ExternalBinaryStorage
    /// The rows Core Data's triggers (derived attributes, Apple's counters) changed
    /// in the save being written.
    let triggerAffectedRows: TriggerAffectedRows
    let transformers: ValueTransformerRegistry
    /// Persistent history (nil: not tracked); see SQLiteStore+History.swift.
    let history: SQLiteHistory?
    /// Remote-change notifications (nil: not requested); see RemoteChangeObserver.swift.
    let remoteChanges: RemoteChangeObserver?
    /// The statements reading to-many destination rows, by source entity, relationship
    /// and number of source keys.
    let relatedRowsQueries = Lock<[RowQueryKey: RowQuery]>([:])

    /// What a cached row statement is for: an entity (and a relationship of it, for
    /// related rows) by identity, and how many keys it binds. Hashing it hashes
    /// three integers, not the names.
    struct RowQueryKey: Hashable {
        let entity: ObjectIdentifier
        let relationship: ObjectIdentifier?
        let keys: Int
    }
    /// Primary keys reserved in `Z_PRIMARYKEY` and not handed out yet, by root
    /// entity number (see ``newObjectIDs(for:count:)``).
    let reservedPrimaryKeys = Lock<[Int: Range<Int64>]>([:])
    /// The statements of saves, kept from one save to the next (SQLiteStore+Saving.swift).
    let savePlans = SQLiteSavePlans()
    /// How many primary keys a reservation takes at least: small saves then do not
    /// each pay a transaction of their own to move `Z_MAX`.
    static let primaryKeyReservation: Int64 = 64

    /// A statement reading rows of one shape, with the reader that keeps its
    /// per-entity reading plans from one use to the next.
    final class RowQuery: Sendable {
        let sql: String
        let columns: [SQLFetchColumn]
        /// The result column holding the key of the row a related row belongs to,
        /// in a query reading the rows of several sources; nil otherwise.
        let keyColumn: CInt?
        /// The store's connection (see ``SQLiteStore/connection``).
        private let connection: ObjectIdentifier
        /// Held while the statement and reader are used.
        private let lock = Lock(State())
        // The reader (a class with mutable plan caches) is only used while `lock` is
        // held, in rows(_:keys:_:): that is what makes sharing it safe.
        private nonisolated(unsafe) let reader: SQLiteRowReader

        struct State {
            /// The number of rows the last read returned, up to 256: the capacity
            /// the next one starts with (to-many faults read runs of similar sizes:
            /// the array is not regrown row by row each time, nor is a small read
            /// given a large read's room).
            var lastCount = 0
            /// The statement on the store's connection, prepared once. GRDB's
            /// statement cache finds a statement by hashing its SQL text, a cost
            /// every fault would pay. Statements on other connections (query
            /// generations') come from their own caches, which
            /// those connections finalize before they close.
            nonisolated(unsafe) var statement: Statement?  // unsafe: used under `lock` only
        }

        /// A query whose rows are `Z_PK, Z_ENT` (or the constant `entityNumber`),
        /// `Z_OPT`, then `columns`, with the related rows' source key in `keyColumn`.
        init(sql: String, columns: [SQLFetchColumn], entityNumber: Int?, keyColumn: Int? = nil, store: SQLiteStore) {
            self.sql = sql
            self.columns = columns
            self.keyColumn = keyColumn.map { CInt($0) }
            self.connection = store.connection
            self.reader = SQLiteRowReader(store: store, columns: columns, entityNumber: entityNumber)
        }

        /// Finalizes the kept statement. Called on the connection's queue before the
        /// connection closes: a statement outliving its connection would leave it a
        /// zombie, closed (and its write-ahead log checkpointed) by whichever thread
        /// releases the last such statement, outside the connection's queue.
        func finalizeStatement() {
            lock.withLock { $0.statement = nil }
        }

        /// The snapshots of the rows of `sql` for `keys`, read with the cached
        /// statement (room made for `capacity` of them).
        func rows(_ db: Database, keys: [Int64], capacity: Int = 0) throws -> [RowSnapshot] {
            var result: [RowSnapshot] = []
            try rows(db, keys: keys, reserving: { result.reserveCapacity(Swift.max(capacity, $0)) }) { snapshot, _ in
                result.append(snapshot)
            }
            return result
        }

        /// Hands each row's snapshot to `body`, with the key of the row a related
        /// row belongs to (`keyColumn`; 0 for a query without one).
        func rows(_ db: Database, keys: [Int64], _ body: (RowSnapshot, Int64) -> Void) throws {
            try rows(db, keys: keys, reserving: { _ in }, body)
        }

        /// The keys are bound and the rows stepped through with the C API: GRDB's
        /// generic argument conversion costs more than the lookup of a row by key.
        /// The statement is used by this query only, and left reset. `reserving` is
        /// given the previous read's row count first; this read's count is kept.
        @inline(__always)
        private func rows(_ db: Database, keys: [Int64], reserving: (Int) -> Void,
                          _ body: (RowSnapshot, Int64) -> Void) throws {
            try lock.withLock { state in
                let statement: Statement
                if ObjectIdentifier(db) != connection {
                    statement = try db.cachedStatement(sql: sql)
                } else if let kept = state.statement {
                    statement = kept
                } else {
                    statement = try db.makeStatement(sql: sql)
                    state.statement = statement
                }
                let sqliteStatement = statement.sqliteStatement
                sqlite3_reset(sqliteStatement)
                defer { sqlite3_reset(sqliteStatement) }
                for (index, key) in keys.enumerated() { sqlite3_bind_int64(sqliteStatement, CInt(index + 1), key) }
                reserving(state.lastCount)
                var pages = RowPageWriter()
                var count = 0
                while true {
                    let code = sqlite3_step(sqliteStatement)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else {
                        throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                            message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
                    }
                    guard let snapshot = try reader.snapshot(sqliteStatement, into: &pages) else { continue }
                    count += 1
                    body(snapshot, keyColumn.map { sqlite3_column_int64(sqliteStatement, $0) } ?? 0)
                }
                state.lastCount = Swift.min(count, 256)
            }
        }
    }
    /// The statements reading rows of an entity by primary key, by entity and number
    /// of keys (the entities are the store's model's, alive as long as the store).
    let rowQueries = Lock<[RowQueryKey: RowQuery]>([:])

    /// Store options, as Core Data names them.
    public enum Option {
        /// `NSReadOnlyPersistentStoreOption`: "1" opens the store read-only.
        public static let readOnly = "NSReadOnlyPersistentStoreOption"
        /// `NSSQLitePragmasOption` entries are passed as `pragma.<name>` keys, e.g.
        /// `pragma.synchronous` = `FULL`.
        public static let pragmaPrefix = "pragma."
    }

    /// Opens the store at `url`, creating it when there is no file.
    ///
    /// - Parameters:
    ///   - url: The store's file.
    ///   - model: The model; the store's version hashes must match it.
    ///   - configurationName: The model configuration whose entities the store
    ///     holds; nil for all.
    ///   - options: Core Data's store options (``Option``), SQLite pragmas as
    ///     `pragma.<name>` keys.
    ///   - transformers: The value transformers of transformable attributes.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/persistentStoreOpen``
    ///   (134080) for a read-only store with no file or an invalid pragma;
    ///   ``CoreDataError/Code/persistentStoreIncompatibleVersionHash`` (134100)
    ///   when the store was made with another model;
    ///   ``CoreDataError/Code/persistentStoreIncompatibleSchema`` (134020) when
    ///   its tables do not match the model; a file error (256-260) or
    ///   ``CoreDataError/Code/sqlite`` (134180) when the file cannot be read.
    public init(url: URL, model: ManagedObjectModel, configurationName: String? = nil, options: [String: String] = [:],
                transformers: ValueTransformerRegistry = .shared) throws {
        self.url = url
        self.model = model
        self.configurationName = configurationName
        // A model rebuilt from the store's schema reads it, and never writes it.
        let isReadOnly = options[Option.readOnly] == "1" || options[Option.readOnly]?.lowercased() == "true" || model.readsWithoutVersionCheck
        self.transformers = transformers
        let exists = FileManager.default.fileExists(atPath: url.path)
        if exists {
            // Refused before any connection that could write (and checkpoint on close) opens.
            let metadata = try SQLiteStoreMetadata.read(at: url)
            if !model.readsWithoutVersionCheck {
                try SQLiteStoreMetadata.checkCompatibility(of: metadata, with: model, configurationName: configurationName)
            }
        } else {
            if isReadOnly {
                throw CoreDataError(.persistentStoreOpen, "No store at \(url.path) to open read-only", url: url)
            }
            try SQLiteStoreFile.createStore(at: url, model: model, configurationName: configurationName)
        }
        var configuration = Configuration()
        configuration.readonly = isReadOnly
        configuration.label = "OpenCoreData.SQLiteStore"
        // Another connection (another coordinator or process) may hold the write
        // lock: wait for it (`NSPersistentStoreTimeoutOption`, seconds) instead of failing.
        configuration.busyMode = .timeout(options["NSPersistentStoreTimeoutOption"].flatMap(TimeInterval.init) ?? 30)
        var pragmas: [(String, String)] = [("synchronous", "NORMAL")]
        for (key, value) in options where key.hasPrefix(Option.pragmaPrefix) {
            let name = String(key.dropFirst(Option.pragmaPrefix.count))
            guard SQLiteIdentifier.isBare(name), value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw CoreDataError(.persistentStoreOpen, "Invalid SQLite pragma option '\(name)' = '\(value)'", url: url)
            }
            pragmas.removeAll { $0.0 == name }
            pragmas.append((name, value))
        }
        let pragmaList = pragmas
        let affected = TriggerAffectedRows()
        self.triggerAffectedRows = affected
        configuration.prepareDatabase { db in
            SQLiteFunctions.registerFunctions(db)
            SQLiteFunctions.registerTriggerFunctions(db, collector: affected)
            SQLDebug.install(on: db)
            for (name, value) in pragmaList where name != "journal_mode" {
                try db.execute(sql: "PRAGMA \(name) = \(value)")
            }
        }
        do {
            queue = try DatabaseQueue(path: url.path, configuration: configuration)
            connection = queue.inDatabase { ObjectIdentifier($0) }
            heldRead.attach(queue)
            let (metadata, schema, hasHistory) = try queue.read { db -> ([String: Any], SQLiteSchema, Bool) in
                let metadata = try SQLiteStoreMetadata.read(from: db, url: url)
                if !model.readsWithoutVersionCheck {
                    try SQLiteStoreMetadata.checkCompatibility(of: metadata, with: model, configurationName: configurationName)
                }
                let schema = try SQLiteSchema(reading: db, model: model, configurationName: configurationName)
                return (metadata, schema, try SQLiteHistory.hasRecordedHistory(db))
            }
            guard let uuid = metadata[SQLiteStoreMetadata.storeUUIDKey] as? String, !uuid.isEmpty else {
                throw CoreDataError(.persistentStoreOpen, "The store at \(url.path) has no store UUID in Z_METADATA", url: url)
            }
            self.identifier = uuid
            self.idScopes = ManagedObjectID.Scopes(storeName: .named(uuid))
            self.schema = schema
            self.metadata = metadata.mapValues { AttributeValue(anyValue: $0) }
            // As Core Data: a store with history opened without tracking is read-only,
            // so that its history gets no gap.
            self.isReadOnly = isReadOnly || (hasHistory && !Option.isOn(options[Option.persistentHistoryTracking]))
        } catch let error as CoreDataError {
            throw error
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "opening the store")
        }
        self.translator = SQLFetchTranslator(layout: schema, storeIdentifier: identifier)
        self.externalStorage = ExternalBinaryStorage(storeURL: url)
        if Option.isOn(options[Option.persistentHistoryTracking]) {
            let history = SQLiteHistory(schema: schema, model: model, configurationName: configurationName)
            if !self.isReadOnly {
                do { try queue.write { db in try history.prepareTables(db) } } catch {
                    throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "creating the history tables")
                }
            }
            self.history = history
        } else {
            self.history = nil
        }
        self.remoteChanges = Option.isOn(options[Option.remoteChangeNotificationPost])
            ? RemoteChangeObserver(queue: queue, heldRead: heldRead, interval: options[Option.remoteChangePollInterval].flatMap(Double.init) ?? 0.5)
            : nil
        try performOpeningMaintenance(options: options)
    }

    deinit {
        // Before the connection closes (it closes when `queue` goes, right after),
        // on the connection's queue, as every use of the connection.
        // The kept statements are finalized there too, so that the connection closes
        // at once when the queue goes, not later on whatever thread drops them.
        queue.unsafeReentrantWrite { _ in
            heldRead.close()
            for query in rowQueries.withLock({ Array($0.values) }) { query.finalizeStatement() }
            for query in relatedRowsQueries.withLock({ Array($0.values) }) { query.finalizeStatement() }
        }
    }

    // MARK: Reading

    func fetchRows(_ fetch: StoreFetch, in snapshot: SQLiteStoreSnapshot?) throws -> [RowSnapshot] {
        if !fetch.includesPropertyValues { return try fetchObjectIDRows(fetch, in: snapshot) }
        let statement = try translator.selectStatement(for: fetch, properties: fetch.includesPropertyValues ? nil : [])
        return try read("fetching \(fetch.entity.name)", in: snapshot, singleStatement: true) { db in
            try statement.prepare(db)
            let start = SQLDebug.level > 0 ? DispatchTime.now().uptimeNanoseconds : 0
            let prepared = try db.cachedStatement(sql: statement.sql)
            let reader = SQLiteRowReader(store: self, columns: statement.columns, entityNumber: statement.entityNumber)
            var result: [RowSnapshot] = []
            var pages = RowPageWriter()
            try prepared.forEachRow(arguments: statement.statementArguments) { sqliteStatement in
                if let snapshot = try reader.snapshot(sqliteStatement, into: &pages) { result.append(snapshot) }
            }
            if SQLDebug.level > 0 {
                let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
                SQLDebug.annotateFetch(db, sql: statement.sql, arguments: statement.statementArguments, seconds: seconds, rows: result.count)
            }
            return result
        }
    }

    func count(_ fetch: StoreFetch, in snapshot: SQLiteStoreSnapshot?) throws -> Int {
        let statement = try translator.countStatement(for: fetch)
        return try read("counting \(fetch.entity.name)", in: snapshot, singleStatement: true) { db in
            try statement.prepare(db)
            return try Int.fetchOne(db, sql: statement.sql, arguments: statement.statementArguments) ?? 0
        }
    }

    func row(for objectID: ManagedObjectID, in snapshot: SQLiteStoreSnapshot?) throws -> RowSnapshot? {
        guard let pk = objectID.primaryKey, let query = try rowQuery(for: objectID.entity) else { return nil }
        return try read("reading \(objectID)", in: snapshot, singleStatement: true) { db in
            try query.rows(db, keys: [pk]).first
        }
    }

    /// The rows of several objects of `entity` (or its subentities) by primary key,
    /// with one cached statement per entity and number of keys.
    func rows(for objectIDs: [ManagedObjectID], of entity: EntityDescription, in snapshot: SQLiteStoreSnapshot?) throws -> [RowSnapshot] {
        let keys = objectIDs.compactMap(\.primaryKey)
        guard !keys.isEmpty, let query = try rowQuery(for: entity, keys: keys.count) else { return [] }
        return try read("reading \(keys.count) \(entity.name) rows", in: snapshot, singleStatement: true) { db in
            try query.rows(db, keys: keys, capacity: keys.count)
        }
    }

    /// The statement reading `keys` rows of `entity` by primary key (one: fault
    /// firing; more: a batch), made once per entity and number of keys.
    private func rowQuery(for entity: EntityDescription, keys: Int = 1) throws -> RowQuery? {
        let key = RowQueryKey(entity: ObjectIdentifier(entity), relationship: nil, keys: keys)
        if let known = rowQueries.withLock({ $0[key] }) { return known }
        guard let table = schema.table(for: entity) else { return nil }
        var fetch = StoreFetch(entity: entity)
        fetch.includesSubentities = true
        let columns = try translator.selectedColumns(for: fetch, properties: nil)
        let entityColumn = translator.entityColumn(for: fetch, restricted: false)
        var sql = "SELECT t0.Z_PK, \(entityColumn.sql), t0.Z_OPT"
        for column in columns { sql += ", t0." + SQLiteIdentifier.quoted(column.columnName) }
        if keys == 1 {
            sql += " FROM " + SQLiteIdentifier.quoted(table) + " t0 WHERE t0.Z_PK = ?"
        } else {
            // The keys as a list of constant rows joined to the table, each looked up
            // in turn (rows come back in the keys' order): `t0.Z_PK IN (?, ...)` first
            // sorts the keys into a temporary index, which makes small batches
            // slower in SQLite itself.
            sql += " FROM (VALUES " + Array(repeating: "(?)", count: keys).joined(separator: ", ") + ") k"
            sql += " CROSS JOIN " + SQLiteIdentifier.quoted(table) + " t0 ON t0.Z_PK = k.column1"
        }
        let query = RowQuery(sql: sql, columns: columns, entityNumber: entityColumn.number, store: self)
        rowQueries.withLock { $0[key] = query }
        return query
    }

    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription, in snapshot: SQLiteStoreSnapshot?) throws -> [ManagedObjectID] {
        guard let pk = objectID.primaryKey, let destination = relationship.destinationEntity,
              let storage = schema.storage(for: relationship, in: objectID.entity) else { return [] }
        let sql: String
        switch storage {
        case .toMany(let table, let foreignKey, let order):
            let orderBy = order.map { SQLiteIdentifier.quoted($0) + ", " } ?? ""
            sql = "SELECT Z_PK, Z_ENT FROM \(SQLiteIdentifier.quoted(table)) WHERE \(SQLiteIdentifier.quoted(foreignKey)) = ? ORDER BY \(orderBy)Z_PK"
        case .joinTable(let join):
            guard let destinationTable = schema.table(for: destination) else { return [] }
            let orderBy = join.orderColumn.map { "j." + SQLiteIdentifier.quoted($0) + ", " } ?? ""
            sql = "SELECT d.Z_PK, d.Z_ENT FROM \(SQLiteIdentifier.quoted(join.tableName)) j JOIN \(SQLiteIdentifier.quoted(destinationTable)) d ON d.Z_PK = j.\(SQLiteIdentifier.quoted(join.destinationColumn)) WHERE j.\(SQLiteIdentifier.quoted(join.sourceColumn)) = ? ORDER BY \(orderBy)d.Z_PK"
        default:
            return []
        }
        return try read("reading \(objectID).\(relationship.name)", in: snapshot) { db in
            try Row.fetchAll(db, sql: sql, arguments: [pk]).compactMap { row -> ManagedObjectID? in
                let key: Int64 = row[0]
                let number: Int? = row[1]
                let entity = number.flatMap { self.entity(forNumber: $0) } ?? destination
                return ManagedObjectID(entity: entity, in: self.idScopes, primaryKey: key)
            }
        }
    }

    /// The destination rows of a to-many relationship for each of `objectIDs`, with
    /// every column of the destination entity, as Core Data fires a to-many fault
    /// (`SELECT 0, t0.Z_PK, t0.Z_OPT, t0.ZNAME ... FROM ZCHILD t0 WHERE t0.ZPARENT = ?`)
    /// and prefetches one for many objects (`... WHERE t0.ZPARENT IN (...)`).
    ///
    /// The keys go by chunks of up to ``relatedKeysPerQuery``, each chunk padded to
    /// a few fixed sizes (repeating its last key), so that a handful of cached
    /// statements serve any number of sources. Each row comes with its source's key,
    /// which puts it with its source.
    func relatedRows(of objectIDs: [ManagedObjectID], relationship: RelationshipDescription, in snapshot: SQLiteStoreSnapshot?) throws -> [[RowSnapshot]] {
        if objectIDs.count == 1 {
            // Firing one fault: no grouping.
            guard let pk = objectIDs[0].primaryKey, let query = try relatedRowsQuery(relationship, in: objectIDs[0].entity, keys: 1) else { return [[]] }
            return [try read("reading \(objectIDs[0]).\(relationship.name)", in: snapshot, singleStatement: true) { db in
                try query.rows(db, keys: [pk])
            }]
        }
        var result = Array(repeating: [RowSnapshot](), count: objectIDs.count)
        // The sources by entity (the query names the source entity's storage), each
        // key once with its first position in `objectIDs`; the later positions of an
        // object listed more than once apart.
        var groups: [(entity: EntityDescription, keys: [Int64], positions: [Int64: Int])] = []
        var repeats: [Int: [Int]] = [:]
        for (position, id) in objectIDs.enumerated() {
            guard let pk = id.primaryKey else { continue }
            let group: Int
            if let last = groups.indices.last, groups[last].entity === id.entity {
                group = last
            } else if let found = groups.firstIndex(where: { $0.entity === id.entity }) {
                group = found
            } else {
                groups.append((id.entity, [], [:]))
                group = groups.count - 1
            }
            if let first = groups[group].positions[pk] {
                repeats[first, default: []].append(position)
            } else {
                groups[group].keys.append(pk)
                groups[group].positions[pk] = position
            }
        }
        var chunks: [(query: RowQuery, arguments: [Int64], positions: [Int64: Int])] = []
        for group in groups {
            var start = 0
            while start < group.keys.count {
                let count = min(SQLiteStore.relatedKeysPerQuery, group.keys.count - start)
                let size = SQLiteStore.relatedKeyBuckets.first { $0 >= count } ?? SQLiteStore.relatedKeysPerQuery
                guard let query = try relatedRowsQuery(relationship, in: group.entity, keys: size) else { break }
                var arguments = Array(group.keys[start..<(start + count)])
                if let last = arguments.last { arguments += Array(repeating: last, count: size - count) }
                chunks.append((query, arguments, group.positions))
                start += count
            }
        }
        guard !chunks.isEmpty else { return result }
        try read("reading \(relationship.name) of \(objectIDs.count) objects", in: snapshot, singleStatement: chunks.count == 1) { db in
            for chunk in chunks {
                // The query orders by source key: each source's rows come as one run,
                // gathered into an array of its own, sized like the run before.
                var key: Int64 = 0
                var gathered: [RowSnapshot] = []
                func hand(_ rows: [RowSnapshot], to key: Int64) {
                    guard let position = chunk.positions[key] else { return }
                    result[position] = rows
                    for other in repeats[position] ?? [] { result[other] = rows }
                }
                try chunk.query.rows(db, keys: chunk.arguments) { row, rowKey in
                    if rowKey != key, !gathered.isEmpty {
                        let capacity = gathered.count
                        hand(gathered, to: key)
                        gathered = []
                        gathered.reserveCapacity(capacity)
                    }
                    key = rowKey
                    gathered.append(row)
                }
                if !gathered.isEmpty { hand(gathered, to: key) }
            }
        }
        return result
    }

    /// The most source keys one related-rows query binds.
    static let relatedKeysPerQuery = 512
    /// The numbers of keys related-rows queries are made for (a chunk is padded to the next).
    static let relatedKeyBuckets = [1, 8, 64, relatedKeysPerQuery]

    /// The statement reading a to-many relationship's destination rows for `keys`
    /// sources, made once per source entity, relationship and number of keys. With
    /// more than one key, each row also gives its source's key: the inverse
    /// to-one's column among the destination's, or one selected after them.
    func relatedRowsQuery(_ relationship: RelationshipDescription, in entity: EntityDescription, keys: Int) throws -> RowQuery? {
        let key = RowQueryKey(entity: ObjectIdentifier(entity), relationship: ObjectIdentifier(relationship), keys: keys)
        if let known = relatedRowsQueries.withLock({ $0[key] }) { return known }
        guard let destination = relationship.destinationEntity, let destinationTable = schema.table(for: destination),
              let storage = schema.storage(for: relationship, in: entity) else { return nil }
        var fetch = StoreFetch(entity: destination)
        fetch.includesSubentities = true
        let columns = try translator.selectedColumns(for: fetch, properties: nil)
        let entityColumn = translator.entityColumn(for: fetch, restricted: false)
        var select = "SELECT t0.Z_PK, \(entityColumn.sql), t0.Z_OPT"
        for column in columns { select += ", t0." + SQLiteIdentifier.quoted(column.columnName) }
        let matching = keys == 1 ? " = ?" : " IN (" + Array(repeating: "?", count: keys).joined(separator: ", ") + ")"
        // With several sources each row says whose it is: the source's key, read
        // from the inverse to-one's own column when the row has it (no column
        // selected twice), else selected after the destination's columns.
        var keyColumn: Int?
        let sql: String
        switch storage {
        case .toMany(let table, let foreignKey, let order):
            let source = "t0." + SQLiteIdentifier.quoted(foreignKey)
            let orderBy = (keys == 1 ? "" : source + ", ") + (order.map { "t0." + SQLiteIdentifier.quoted($0) + ", " } ?? "")
            if keys > 1 {
                if let inverse = columns.first(where: { $0.kind == .toOneKey && $0.columnName == foreignKey }) {
                    keyColumn = inverse.index
                } else {
                    keyColumn = 3 + columns.count
                    select += ", " + source
                }
            }
            sql = select + " FROM \(SQLiteIdentifier.quoted(table)) t0 WHERE \(source)\(matching) ORDER BY \(orderBy)t0.Z_PK"
        case .joinTable(let join):
            let source = "j." + SQLiteIdentifier.quoted(join.sourceColumn)
            let orderBy = (keys == 1 ? "" : source + ", ") + (join.orderColumn.map { "j." + SQLiteIdentifier.quoted($0) + ", " } ?? "")
            if keys > 1 {
                keyColumn = 3 + columns.count
                select += ", " + source
            }
            sql = select + " FROM \(SQLiteIdentifier.quoted(join.tableName)) j JOIN \(SQLiteIdentifier.quoted(destinationTable)) t0 ON t0.Z_PK = j.\(SQLiteIdentifier.quoted(join.destinationColumn)) WHERE \(source)\(matching) ORDER BY \(orderBy)t0.Z_PK"
        default:
            return nil
        }
        let query = RowQuery(sql: sql, columns: columns, entityNumber: entityColumn.number, keyColumn: keyColumn, store: self)
        relatedRowsQueries.withLock { $0[key] = query }
        return query
    }

    public func newObjectIDs(for entity: EntityDescription, count: Int) throws -> [ManagedObjectID] {
        guard count > 0 else { return [] }
        if isReadOnly { throw CoreDataError(.persistentStoreSave, "The store \(url?.path ?? identifier) is read-only", url: url) }
        guard let rootNumber = schema.entityNumber(entity.rootEntity) else {
            throw CoreDataError(.persistentStoreSave, "The store has no entity '\(entity.name)'", entityName: entity.name)
        }
        // Keys come from a range reserved earlier by this store when it has enough,
        // else from a new reservation: `Z_MAX` moves by at least
        // `primaryKeyReservation` in one transaction, so that a save of one object
        // does not cost two transactions. Other coordinators and processes reserve
        // disjoint ranges the same way; keys left unused leave a gap, as
        // `obtainPermanentIDs` does in Core Data.
        let wanted = Int64(count)
        let taken = reservedPrimaryKeys.withLock { reserved -> Range<Int64>? in
            guard let range = reserved[rootNumber], Int64(range.count) >= wanted else { return nil }
            reserved[rootNumber] = (range.lowerBound + wanted)..<range.upperBound
            return range.lowerBound..<(range.lowerBound + wanted)
        }
        let first: Int64
        if let taken {
            first = taken.lowerBound
        } else {
            let reservation = max(wanted, SQLiteStore.primaryKeyReservation)
            let start = try write("reserving primary keys for \(entity.name)") { db -> Int64 in
                try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + ? WHERE Z_ENT = ?", arguments: [reservation, rootNumber])
                let max = try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", arguments: [rootNumber]) ?? reservation
                return max - reservation + 1
            }
            first = start
            if reservation > wanted {
                reservedPrimaryKeys.withLock { $0[rootNumber] = (start + wanted)..<(start + reservation) }
            }
        }
        let scope = idScopes.scope(for: entity)
        return (0..<count).map { ManagedObjectID(scope: scope, primaryKey: first + Int64($0)) }
    }

    public func reserveObjectIDs(_ objectIDs: [ManagedObjectID]) throws {
        if isReadOnly { throw CoreDataError(.persistentStoreSave, "The store \(url?.path ?? identifier) is read-only", url: url) }
        var highest: [Int: Int64] = [:]
        for id in objectIDs {
            guard case .permanent(let key) = id.key, let root = schema.entityNumber(id.entity.rootEntity) else {
                throw CoreDataError(.persistentStoreSave, "\(id) is not a permanent ID of this store", entityName: id.entity.name)
            }
            highest[root] = max(highest[root] ?? 0, key)
        }
        guard !highest.isEmpty else { return }
        try write("reserving chosen primary keys") { db in
            for (root, key) in highest {
                try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = MAX(Z_MAX, ?) WHERE Z_ENT = ?", arguments: [key, root])
            }
        }
        // A range reserved before may hold the chosen keys: new keys come from a
        // new reservation, above them.
        reservedPrimaryKeys.withLock { reserved in
            for (root, key) in highest where (reserved[root]?.lowerBound ?? .max) <= key { reserved[root] = nil }
        }
    }

    // MARK: Rows

    func entity(forNumber number: Int) -> EntityDescription? {
        schema.entityName(forEntityNumber: number).flatMap { model.entitiesByName[$0] }
    }

    /// Turns a result row (`Z_PK, Z_ENT, Z_OPT`, then `columns`) into a snapshot of
    /// the row's concrete entity; to-many relationships are left as faults. Reading
    /// many rows, use one ``SQLiteRowReader``.
    func snapshot(_ row: Row, columns: [SQLFetchColumn]) throws -> RowSnapshot? {
        var pages = RowPageWriter()
        return try SQLiteRowReader(store: self, columns: columns).snapshot(row, into: &pages)
    }

    func decode(_ value: DatabaseValue, for attribute: AttributeDescription, entity: EntityDescription) throws -> AttributeValue {
        if value.isNull { return .null }
        switch attribute.attributeType {
        case .transformable:
            guard var data = Data.fromDatabaseValue(value) else { return .null }
            if attribute.allowsExternalBinaryDataStorage {
                guard let external = try externalValue(data, for: attribute, entity: entity) else { return .null }
                data = external
            }
            // A transformer this process has not registered (an app's own, say): the
            // value is its stored bytes, so the store can still be read.
            guard isRegistered(attribute.valueTransformerName) else { return .data(data) }
            return try transformers.reverseTransformedValue(data, for: attribute)
        case .binaryData where attribute.allowsExternalBinaryDataStorage:
            guard let data = Data.fromDatabaseValue(value) else { return .null }
            return try externalValue(data, for: attribute, entity: entity).map(AttributeValue.data) ?? .null
        default:
            return SQLiteValueEncoding.attributeValue(value, as: attribute.attributeType)
        }
    }

    /// The bytes of an external-storage column, or nil when the file it names is
    /// missing (a store copied without its `.<name>_SUPPORT/_EXTERNAL_DATA` folder):
    /// as Core Data, the value reads as nil and the object stays readable; the
    /// missing file is logged. Other damage still throws.
    private func externalValue(_ column: Data, for attribute: AttributeDescription, entity: EntityDescription) throws -> Data? {
        do {
            return try externalStorage.decode(column, for: attribute)
        } catch let error as CoreDataError where error.code == .fileReadNoSuchFile {
            SQLDebug.logger.warning("\(entity.name).\(attribute.name): \(error.message); the value reads as nil")
            return nil
        }
    }

    func encode(_ value: AttributeValue, for attribute: AttributeDescription) throws -> DatabaseValue {
        if value.isNull { return .null }
        switch attribute.attributeType {
        case .transformable:
            if !isRegistered(attribute.valueTransformerName), case .data(let raw) = value {
                return (attribute.allowsExternalBinaryDataStorage ? try externalStorage.encode(raw, for: attribute) : raw).databaseValue
            }
            guard var data = try transformers.transformedValue(value, for: attribute) else { return .null }
            if attribute.allowsExternalBinaryDataStorage { data = try externalStorage.encode(data, for: attribute) }
            return data.databaseValue
        case .binaryData where attribute.allowsExternalBinaryDataStorage:
            guard case .data(let data) = value else { return .null }
            return try externalStorage.encode(data, for: attribute).databaseValue
        default:
            guard let encoded = SQLiteValueEncoding.databaseValue(value, as: attribute.attributeType) else {
                throw CoreDataError(.managedObjectValidation, "\(attribute.entity?.name ?? "?").\(attribute.name): \(value) is not a \(attribute.attributeType.xcodeName)",
                                    entityName: attribute.entity?.name, key: attribute.name)
            }
            return encoded
        }
    }

    func isRegistered(_ transformerName: String?) -> Bool {
        guard let name = transformerName, !name.isEmpty else { return true }
        return transformers.transformer(named: name) != nil
    }

    // MARK: Access

    /// Runs `body` on the store's connection. `singleStatement`: `body` runs one
    /// SELECT, atomic by itself, so it runs without the read transaction (`BEGIN`,
    /// `PRAGMA query_only`, `COMMIT`) that costs more than a small query.
    /// `action` names what was being done in an error's message; it is only formed
    /// when there is an error (it often formats an object ID's URI).
    func read<T>(_ action: @autoclosure () -> String, in snapshot: SQLiteStoreSnapshot? = nil, singleStatement: Bool = false,
                 _ body: (Database) throws -> T) throws -> T {
        do {
            if let snapshot { return try snapshot.read(body) }
            if singleStatement {
                return try queue.unsafeRead { db in
                    heldRead.prepareRead(db)
                    defer { heldRead.finishRead() }
                    return try body(db)
                }
            }
            return try queue.unsafeRead { db in
                // A transaction of its own: the held one's snapshot may be behind.
                heldRead.release(db)
                return try SQLiteStore.inReadTransaction(db, body)
            }
        } catch let error as CoreDataError {
            throw error
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: action())
        }
    }

    /// Gives up the read transaction the connection holds between reads (when the
    /// store leaves its coordinator: nothing should keep the log from a checkpoint).
    func releaseHeldRead() {
        queue.inDatabase { heldRead.release($0) }
    }

    func write<T>(_ action: @autoclosure () -> String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try queue.writeWithoutTransaction { db in
                heldRead.release(db)
                return try SQLiteStore.inWriteTransaction(db, body)
            }
        } catch let error as CoreDataError {
            throw error
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: action())
        }
    }
}

extension SQLiteStore {
    /// Runs `body` in an immediate transaction, committed when it returns and
    /// rolled back when it throws: GRDB's `write` without its cost. GRDB parses and
    /// prepares `BEGIN` and `COMMIT` for every transaction (more than a small
    /// save's own statements); here they are prepared once, from the connection's
    /// statement cache.
    /// Runs `body` in a deferred, read-only transaction (what GRDB's `read` does).
    static func inReadTransaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        try db.readOnly {
            var result: T?
            try db.inTransaction(.deferred) {
                result = try body(db)
                return .commit
            }
            return result!
        }
    }

    static func inWriteTransaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            let result = try body(db)
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            // The first error is the one thrown (as GRDB's `inTransaction` does); a
            // transaction SQLite already rolled back itself (after SQLITE_FULL, say)
            // leaves nothing to roll back: `rollback()` checks.
            try? db.rollback()
            throw error
        }
    }

    /// The model a store was created (or last migrated) with, decoded from its
    /// `Z_MODELCACHE`: how a store opens without its model file.
    ///
    /// ```swift
    /// let model = try SQLiteStore.storedModel(at: storeURL)
    /// let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
    /// try coordinator.addPersistentStore(type: .sqlite, at: storeURL, options: [SQLiteStore.Option.readOnly: "1"])
    /// ```
    ///
    /// The store is not changed.
    ///
    /// - Parameter url: The store's file.
    /// - Returns: A new, editable model.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) when there is no file;
    ///   ``CoreDataError/Code/migrationMissingSourceModel`` (134130) when the
    ///   store has no model cache (stores written by old framework versions);
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) when it cannot be
    ///   decoded or the file is not a SQLite database.
    public static func storedModel(at url: URL) throws -> ManagedObjectModel {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "No store at \(url.path)", url: url)
        }
        let blob: Data?
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: .readOnlyLook("OpenCoreData.SQLiteStore.modelCache"))
            defer { try? queue.close() }
            blob = try queue.read { db -> Data? in
                guard try db.tableExists("Z_MODELCACHE") else { return nil }
                return try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")
            }
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "reading the model cache")
        }
        guard let blob, !blob.isEmpty else {
            throw CoreDataError(.migrationMissingSourceModel, "The store at \(url.path) has no model cache (Z_MODELCACHE); open it with its model", url: url)
        }
        return try ManagedObjectModel(modelCacheData: blob)
    }

    /// The model rebuilt from the schema of the store at `url`, for a store whose
    /// model is nowhere to be had (see `SQLiteModelReconstruction` for what is
    /// read from where). The model is marked ``ManagedObjectModel/isReconstructed``:
    /// a store opened with it is read-only.
    ///
    /// ```swift
    /// let model = try SQLiteStore.reconstructedModel(at: storeURL)
    /// model.entitiesByName["Photo"]?.attributesByName.keys   // "title", "datetaken", ...
    /// ```
    ///
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile`` (260)
    ///   when there is no file; ``CoreDataError/Code/persistentStoreIncompatibleSchema``
    ///   (134020) when the database is not a Core Data store (no `Z_PRIMARYKEY`);
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) or ``CoreDataError/Code/sqlite``
    ///   (134180) when it cannot be read.
    public static func reconstructedModel(at url: URL) throws -> ManagedObjectModel {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "No store at \(url.path)", url: url)
        }
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: .readOnlyLook("OpenCoreData.SQLiteStore.reconstruction"))
            defer { try? queue.close() }
            return try queue.read { db in try SQLiteModelReconstruction.model(db) }
        } catch let error as CoreDataError {
            throw error
        } catch {
            throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "reading the store's schema")
        }
    }

    /// Where a model that reads a store came from (see ``readingModel(at:)``).
    public enum ModelSource: Sendable, Equatable {
        /// The model cached in the store (`Z_MODELCACHE`).
        case modelCache
        /// Rebuilt from the store's schema, with the reason the cache could not serve.
        case reconstructed(reason: String)
    }

    /// The model to read the store at `url` with when the caller has none: the
    /// store's cached model, else (no cache, or one that cannot be decoded) the
    /// model rebuilt from its schema, with a warning saying so. What `ocd` uses.
    ///
    /// ```swift
    /// let (model, source) = try SQLiteStore.readingModel(at: storeURL)
    /// if case .reconstructed(let reason) = source { print("warning: \(reason)") }
    /// ```
    ///
    /// - Throws: the errors of ``reconstructedModel(at:)``.
    public static func readingModel(at url: URL) throws -> (model: ManagedObjectModel, source: ModelSource) {
        let reason: String
        do {
            let cached = try storedModel(at: url)
            let problems = cached.incompatibilities(withName: nil, storeMetadata: try SQLiteStoreMetadata.read(at: url))
            if !problems.isEmpty {
                // The store's own model: Core Data reads the store with it. Our hash
                // differs (a rule not reproduced yet): read it, without writing.
                cached.hashesDifferFromItsStore = true
                ModelLoadingLog.warning("The store's cached model reads it read-only: its version hashes as computed here differ from the store's (\(problems.joined(separator: "; ")))",
                                        entity: nil, property: nil)
            }
            return (cached, .modelCache)
        } catch let error as CoreDataError where error.code == .migrationMissingSourceModel {
            reason = "the store has no model cache"
        } catch let error as CoreDataError where error.code == .fileReadCorruptFile {
            // A cache that cannot be decoded (or a file that is no database: the
            // reconstruction then fails with the file's own error).
            reason = "the store's model cache cannot be read (\(error.message))"
        }
        let model = try reconstructedModel(at: url)
        ModelLoadingLog.warning("The model was reconstructed from the store's schema: \(reason)", entity: nil, property: nil)
        return (model, .reconstructed(reason: reason))
    }
}
