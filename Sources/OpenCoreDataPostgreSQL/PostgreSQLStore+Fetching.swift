import Foundation
import GRDB
import NIOCore
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO

extension PostgreSQLStore {
    // MARK: Fetching

    public func fetchRows(_ fetch: StoreFetch) throws -> [RowSnapshot] { try fetchRows(fetch, in: nil) }

    /// The rows of a fetch, read in a query generation's snapshot (nil: now).
    func fetchRows(_ fetch: StoreFetch, in snapshot: PostgreSQLGenerationSnapshot?) throws -> [RowSnapshot] {
        if !fetch.includesPropertyValues { return try fetchObjectIDRows(fetch, in: snapshot) }
        // With no order asked for, the rows come in the order the server finds
        // them (no sort before the first row) and are put in key order here.
        let statement = try translator.selectStatement(for: fetch, keyOrderByCaller: true, selectsKnownEntity: false)
        var rows = try reading("fetching \(fetch.entity.name)", in: snapshot) { session in
            try prepareCollations(statement.collations, session)
            var reader = PostgreSQLRowReader(store: self, columns: statement.columns, entityNumber: statement.entityNumber)
            return try reader.snapshots(session, sql: PostgreSQLPlaceholders.numbered(statement.sql),
                                        bindings: PostgreSQLValues.bindings(statement.arguments))
        }
        if statement.sortsKeys { Self.sortByKey(&rows) }
        return rows
    }

    /// Puts rows of one table in key order (`ORDER BY Z_PK`), checking first
    /// whether they already are (a scan in key order, or an append-only table).
    static func sortByKey(_ rows: inout [RowSnapshot]) {
        var previous = Int64.min
        for index in rows.indices {
            let key = rows[index].objectID.primaryKey ?? .min
            if key < previous {
                rows.sort { ($0.objectID.primaryKey ?? .min) < ($1.objectID.primaryKey ?? .min) }
                return
            }
            previous = key
        }
    }

    /// The IDs of a fetch's rows, with no values (version 0).
    private func fetchObjectIDRows(_ fetch: StoreFetch, in snapshot: PostgreSQLGenerationSnapshot?) throws -> [RowSnapshot] {
        let (statement, selectsEntity, sortsKeys) = try translator.objectIDStatement(for: fetch)
        let action = "fetching \(fetch.entity.name) IDs"
        guard sortsKeys else {
            return try reading(action, in: snapshot) { session in
                try prepareCollations(statement.collations, session)
                var keys = ObjectIDKeys(store: self, entity: fetch.entity, selectsEntity: selectsEntity)
                keys.appendRows(try session.query(statement.sql, statement.arguments))
                return keys.snapshots
            }
        }
        // In no order: every key in one array (one message, not one a row).
        let columns = selectsEntity ? ["s.Z_PK", "s.Z_ENT"] : ["s.Z_PK"]
        var packed = "SELECT " + PostgreSQLPackedRows.aggregates(columns) + " FROM (" + statement.sql + ") s"
        // The server's own "array size exceeds the maximum allowed" (54000).
        if packedRowsFailForTesting.withLock({ $0 }) { packed += " WHERE cardinality(array_fill(0, ARRAY[200000000])) > 0" }
        // Rows read in batches next, in key order: the keys are read first in
        // the transaction of the rows' cursor, so that both see the same rows.
        if fetch.fetchBatchSize > 0, snapshot == nil, statement.collations.isEmpty,
           let (cursor, answer) = declareCursor(for: fetch, keys: PostgresQuery(unsafeSQL: PostgreSQLPlaceholders.numbered(packed),
                                                                                binds: PostgreSQLValues.bindings(statement.arguments))) {
            var keys = ObjectIDKeys(store: self, entity: fetch.entity, selectsEntity: selectsEntity)
            if let result = try? answer.wait(), (try? keys.appendPacked(result.rows)) != nil {
                keys.sortByKey()
                pool.setCursorKeys(cursor, keys.keys.map(\.key))
                return keys.snapshots
            }
            // Read again as any other fetch is (a refused array among causes).
            pool.endCursor(cursor)
        }
        return try reading(action, in: snapshot) { session in
            try prepareCollations(statement.collations, session)
            var keys = ObjectIDKeys(store: self, entity: fetch.entity, selectsEntity: selectsEntity)
            try packedOrPlain(session) {
                try keys.appendPacked(try session.query(packed, statement.arguments))
            } plain: {
                keys = ObjectIDKeys(store: self, entity: fetch.entity, selectsEntity: selectsEntity)
                keys.appendRows(try session.query(statement.sql, statement.arguments))
            }
            keys.sortByKey()
            return keys.snapshots
        }
    }

    public func count(_ fetch: StoreFetch) throws -> Int { try count(fetch, in: nil) }

    func count(_ fetch: StoreFetch, in snapshot: PostgreSQLGenerationSnapshot?) throws -> Int {
        let statement = try translator.countStatement(for: fetch)
        return try reading("counting \(fetch.entity.name)", in: snapshot) { session in
            Int(try session.query(statement.sql, statement.arguments).first?.int64(0) ?? 0)
        }
    }

    public func row(for objectID: ManagedObjectID) throws -> RowSnapshot? {
        try rows(for: [objectID], of: objectID.entity)?.first
    }

    public func rows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) throws -> [RowSnapshot]? {
        try rows(for: objectIDs, of: entity, in: nil)
    }

    /// Declares the cursor of a batched fetch's rows (see ``PostgreSQLRowCursor``):
    /// the fetch's full rows in key order, after `keys` (the statement of the
    /// fetch's keys) in its transaction, whose answer it returns too. Nil when
    /// the pool cannot spare a connection.
    private func declareCursor(for fetch: StoreFetch, keys: PostgresQuery) -> (Int, EventLoopFuture<PostgresQueryResult>)? {
        guard let statement = try? translator.selectStatement(for: fetch, keyOrderByCaller: true, selectsKnownEntity: false),
              statement.sortsKeys, statement.collations.isEmpty else { return nil }
        var sql = PostgreSQLPlaceholders.numbered(statement.sql)
        if let condition = cursorConditionForTesting.withLock({ $0 }) { sql = "SELECT * FROM (\(sql)) t0 WHERE \(condition)" }
        return pool.declareCursor(entity: fetch.entity, first: keys, sql: sql + " ORDER BY t0.Z_PK",
                                  bindings: PostgreSQLValues.bindings(statement.arguments), columns: statement.columns,
                                  entityNumber: statement.entityNumber,
                                  fetchSize: cursorFetchRowsForTesting.withLock { $0 } ?? batchReadAheadRows)
    }

    func rows(for objectIDs: [ManagedObjectID], of entity: EntityDescription, in snapshot: PostgreSQLGenerationSnapshot?) throws -> [RowSnapshot]? {
        if snapshot == nil, let rows = try cursorRows(for: objectIDs, of: entity) { return rows }
        return try keyedRows(for: objectIDs, of: entity, in: snapshot)
    }

    /// The rows of `objectIDs` (in key order) from the cursor of their batched
    /// fetch, those it has no row for read by key; nil when no cursor serves
    /// the read (see ``PostgreSQLRowCursor``).
    private func cursorRows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) throws -> [RowSnapshot]? {
        var keys: [Int64] = []
        keys.reserveCapacity(objectIDs.count)
        for id in objectIDs {
            guard let key = id.primaryKey, key > keys.last ?? .min else { return nil }
            keys.append(key)
        }
        let taken = pool.withCursor(of: entity, keys: keys) { cursor -> [RowSnapshot?] in
            var reader = PostgreSQLRowReader(store: self, columns: cursor.columns, entityNumber: cursor.entityNumber)
            return try cursor.take(keys) { row in try reader.snapshot(row) }
        }
        guard let taken else { return nil }
        var rows: [RowSnapshot] = []
        rows.reserveCapacity(taken.count)
        var missing: [ManagedObjectID] = []
        for (index, row) in taken.enumerated() {
            if let row { rows.append(row) } else { missing.append(objectIDs[index]) }
        }
        if !missing.isEmpty, let more = try keyedRows(for: missing, of: entity, in: nil) { rows += more }
        return rows
    }

    /// The rows of `objectIDs` read by key: one statement read ahead, when
    /// there is one, else a statement now.
    private func keyedRows(for objectIDs: [ManagedObjectID], of entity: EntityDescription, in snapshot: PostgreSQLGenerationSnapshot?) throws -> [RowSnapshot]? {
        guard let read = try rowsStatement(for: objectIDs, of: entity) else { return [] }
        let action = "reading \(read.keys.count) \(entity.name) rows"
        if snapshot == nil {
            do {
                let ahead = try pool.withReadAhead(numbered: read.sql, keys: read.keys) { session, handoff in
                    var reader = PostgreSQLRowReader(store: self, columns: read.columns, entityNumber: read.entityNumber)
                    return try reader.snapshots(session, of: handoff)
                }
                if let ahead { return ahead }
            } catch {
                throw PostgreSQLErrors.coreDataError(error, code: .persistentStoreOperation, doing: action, url: url)
            }
        }
        return try reading(action, in: snapshot) { session in
            var reader = PostgreSQLRowReader(store: self, columns: read.columns, entityNumber: read.entityNumber)
            return try reader.snapshots(session, sql: read.sql, bindings: read.bindings())
        }
    }

    /// Runs `packed`, a statement answering with its rows packed in arrays
    /// (``PostgreSQLPackedRows``); when they are too large for one value, runs
    /// `plain` instead, the statement answering with a row each.
    func packedOrPlain<T>(_ session: PostgreSQLSession, _ packed: () throws -> T, plain: () throws -> T) throws -> T {
        do {
            return try packed()
        } catch where PostgreSQLPackedRows.isTooLarge(error) {
            // A query generation's transaction goes on from before the failed
            // statement (the savepoint `reading` set).
            if session.holdsSnapshot { try session.execute("ROLLBACK TO SAVEPOINT ocd_read") }
            return try plain()
        }
    }

    /// Starts reading the rows of `objectIDs` now, on an idle connection: the
    /// next read of the same rows (the next window of a batched fetch read in
    /// order) takes them, the server having found them meanwhile.
    public func prepareRows(for objectIDs: [ManagedObjectID], of entity: EntityDescription) {
        // The cursor of their fetch reads them ahead already.
        if pool.cursorServes(entity, keys: objectIDs.compactMap(\.primaryKey)) { return }
        guard let read = try? rowsStatement(for: objectIDs, of: entity) else { return }
        pool.startReadAhead(numbered: read.sql, keys: read.keys, bindings: read.bindings())
    }

    /// The statement reading rows by key: one text for any number of keys (the
    /// keys are one array, bound when the statement is sent); nil for no key.
    private func rowsStatement(for objectIDs: [ManagedObjectID], of entity: EntityDescription) throws
        -> (sql: String, keys: [Int64], bindings: () -> PostgresBindings, columns: [SQLFetchColumn], entityNumber: Int?)? {
        let keys = objectIDs.compactMap(\.primaryKey)
        guard !keys.isEmpty, let table = schema.table(for: entity) else { return nil }
        var fetch = StoreFetch(entity: entity)
        fetch.includesSubentities = true
        let columns = try translator.selectedColumns(for: fetch, properties: nil)
        let entityColumn = translator.entityColumn(for: fetch, restricted: false)
        var sql = entityColumn.number == nil ? "SELECT t0.Z_PK, t0.Z_ENT, t0.Z_OPT" : "SELECT t0.Z_PK, t0.Z_OPT"
        for column in columns { sql += ", t0." + SQLiteIdentifier.quoted(column.columnName) }
        sql += " FROM " + SQLiteIdentifier.quoted(table) + " t0 WHERE t0.Z_PK = ANY($1::int8[])"
        let bindings = {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(keys)
            return bindings
        }
        return (sql, keys, bindings, columns, entityColumn.number)
    }

    public func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription) throws -> [ManagedObjectID] {
        try relatedObjectIDs(of: objectID, relationship: relationship, in: nil)
    }

    func relatedObjectIDs(of objectID: ManagedObjectID, relationship: RelationshipDescription,
                          in snapshot: PostgreSQLGenerationSnapshot?) throws -> [ManagedObjectID] {
        guard let pk = objectID.primaryKey, let destination = relationship.destinationEntity,
              let storage = schema.storage(for: relationship, in: objectID.entity) else { return [] }
        let q = SQLiteIdentifier.quoted
        let sql: String
        switch storage {
        case .toMany(let table, let foreignKey, let order):
            let orderBy = order.map { q($0) + " NULLS FIRST, " } ?? ""
            sql = "SELECT Z_PK, Z_ENT FROM \(q(table)) WHERE \(q(foreignKey)) = ? ORDER BY \(orderBy)Z_PK"
        case .joinTable(let join):
            guard let destinationTable = schema.table(for: destination) else { return [] }
            let orderBy = join.orderColumn.map { "j." + q($0) + " NULLS FIRST, " } ?? ""
            sql = "SELECT d.Z_PK, d.Z_ENT FROM \(q(join.tableName)) j JOIN \(q(destinationTable)) d ON d.Z_PK = j.\(q(join.destinationColumn)) WHERE j.\(q(join.sourceColumn)) = ? ORDER BY \(orderBy)d.Z_PK"
        default:
            return []
        }
        return try reading("reading \(objectID).\(relationship.name)", in: snapshot) { session in
            try session.query(sql, [pk.databaseValue]).map { row in
                let cells = row.makeRandomAccess()
                let entity = self.entity(forNumber: Int(PostgreSQLValues.int64(cells[1]))) ?? destination
                return ManagedObjectID(entity: entity, in: idScopes, primaryKey: PostgreSQLValues.int64(cells[0]))
            }
        }
    }

    /// The destination rows of a to-many relationship for every source in one
    /// statement (per 5,000 sources): what firing a to-many fault and prefetching
    /// read, instead of one statement per source and per destination row.
    public func relatedRows(of objectIDs: [ManagedObjectID], relationship: RelationshipDescription) throws -> [[RowSnapshot]]? {
        guard let destination = relationship.destinationEntity, let destinationTable = schema.table(for: destination) else { return nil }
        var result = Array(repeating: [RowSnapshot](), count: objectIDs.count)
        // The sources by entity (the relationship's storage is the source entity's),
        // each key with every position it has in `objectIDs`.
        var groups: [(entity: EntityDescription, keys: [Int64], positions: [Int64: [Int]])] = []
        for (position, id) in objectIDs.enumerated() {
            guard let pk = id.primaryKey else { continue }
            let group: Int
            if let found = groups.firstIndex(where: { $0.entity === id.entity }) {
                group = found
            } else {
                groups.append((id.entity, [], [:]))
                group = groups.count - 1
            }
            if groups[group].positions[pk] == nil { groups[group].keys.append(pk) }
            groups[group].positions[pk, default: []].append(position)
        }
        var fetch = StoreFetch(entity: destination)
        fetch.includesSubentities = true
        let columns = try translator.selectedColumns(for: fetch, properties: nil)
        let entityColumn = translator.entityColumn(for: fetch, restricted: false)
        let q = SQLiteIdentifier.quoted
        var select = entityColumn.number == nil ? "SELECT t0.Z_PK, t0.Z_ENT, t0.Z_OPT" : "SELECT t0.Z_PK, t0.Z_OPT"
        for column in columns { select += ", t0." + q(column.columnName) }
        let keyColumn = 3 + columns.count
        for group in groups {
            guard let storage = schema.storage(for: relationship, in: group.entity) else { return nil }
            let source: String, from: String, order: String
            switch storage {
            case .toMany(let table, let foreignKey, let orderColumn):
                source = "t0." + q(foreignKey)
                from = q(table) + " t0"
                order = orderColumn.map { "t0." + q($0) + " NULLS FIRST, " } ?? ""
            case .joinTable(let join):
                source = "j." + q(join.sourceColumn)
                from = "\(q(join.tableName)) j JOIN \(q(destinationTable)) t0 ON t0.Z_PK = j.\(q(join.destinationColumn))"
                order = join.orderColumn.map { "j." + q($0) + " NULLS FIRST, " } ?? ""
            default:
                return nil
            }
            // Every source's key in one array: one statement for any number of
            // sources. Only an ordered relationship's rows need sorting (each
            // source's rows keep their order as they are distributed).
            let sorted = order.isEmpty ? "" : " ORDER BY \(source), \(order)t0.Z_PK"
            let sql = select + ", \(source) FROM \(from) WHERE \(source) = ANY($1::int8[])" + sorted
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(group.keys)
            try withSession("reading \(relationship.name) of \(objectIDs.count) objects") { session in
                var reader = PostgreSQLRowReader(store: self, columns: columns, entityNumber: entityColumn.number, ownerColumn: keyColumn)
                let rows = try reader.ownedSnapshots(session, sql: sql, bindings: bindings)
                for (owner, snapshot) in rows {
                    for position in group.positions[owner] ?? [] { result[position].append(snapshot) }
                }
            }
        }
        return result
    }

    // MARK: Primary keys

    public func newObjectIDs(for entity: EntityDescription, count: Int) throws -> [ManagedObjectID] {
        guard count > 0 else { return [] }
        if isReadOnly { throw CoreDataError(.persistentStoreSave, "The PostgreSQL store \(identifier) is read-only", url: url) }
        guard let rootNumber = schema.entityNumber(entity.rootEntity) else {
            throw CoreDataError(.persistentStoreSave, "The store has no entity '\(entity.name)'", entityName: entity.name)
        }
        // Keys come from a range this store reserved earlier when it has enough,
        // else from a new reservation: one `UPDATE ... RETURNING`, which locks the
        // entity's Z_PRIMARYKEY row until it commits, so coordinators on other
        // servers reserve disjoint ranges. Unused keys leave a gap, as
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
            let reservation = max(wanted, PostgreSQLStore.primaryKeyReservation)
            let max = try withSession("reserving primary keys for \(entity.name)", code: .persistentStoreSave) { session in
                try session.query("UPDATE Z_PRIMARYKEY SET Z_MAX = Z_MAX + ? WHERE Z_ENT = ? RETURNING Z_MAX",
                                  [reservation.databaseValue, Int64(rootNumber).databaseValue]).first?.int64(0)
            }
            guard let max else {
                throw CoreDataError(.persistentStoreSave, "The store has no Z_PRIMARYKEY row for '\(entity.rootEntity.name)'",
                                    entityName: entity.name)
            }
            first = max - reservation + 1
            if reservation > wanted {
                reservedPrimaryKeys.withLock { $0[rootNumber] = (first + wanted)..<(first + reservation) }
            }
        }
        return (0..<count).map { ManagedObjectID(entity: entity, in: idScopes, primaryKey: first + Int64($0)) }
    }

    public func reserveObjectIDs(_ objectIDs: [ManagedObjectID]) throws {
        if isReadOnly { throw CoreDataError(.persistentStoreSave, "The PostgreSQL store \(identifier) is read-only", url: url) }
        var highest: [Int: Int64] = [:]
        for id in objectIDs {
            guard id.storeIdentifier == identifier, let key = id.primaryKey, let root = schema.entityNumber(id.entity.rootEntity) else {
                throw CoreDataError(.persistentStoreSave, "\(id) is not a permanent ID of this store", entityName: id.entity.name)
            }
            highest[root] = max(highest[root] ?? 0, key)
        }
        guard !highest.isEmpty else { return }
        try withSession("reserving chosen primary keys", code: .persistentStoreSave) { session in
            try session.transaction {
                for (root, key) in highest {
                    try session.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = GREATEST(Z_MAX, ?) WHERE Z_ENT = ?",
                                        [key.databaseValue, Int64(root).databaseValue])
                }
            }
        }
        reservedPrimaryKeys.withLock { reserved in
            for (root, key) in highest where (reserved[root]?.lowerBound ?? .max) <= key { reserved[root] = nil }
        }
    }

    // MARK: Values

    func decode(_ value: DatabaseValue, for attribute: AttributeDescription) throws -> AttributeValue {
        if value.isNull { return .null }
        if attribute.attributeType == .transformable {
            guard case .blob(let data) = value.storage else { return .null }
            // A transformer this process has not registered: the stored bytes.
            guard isRegistered(attribute.valueTransformerName) else { return .data(data) }
            return try transformers.reverseTransformedValue(data, for: attribute)
        }
        return SQLiteValueEncoding.attributeValue(value, as: attribute.attributeType)
    }

    func encode(_ value: AttributeValue, for attribute: AttributeDescription) throws -> DatabaseValue {
        if value.isNull { return .null }
        if attribute.attributeType == .transformable {
            if !isRegistered(attribute.valueTransformerName), case .data(let raw) = value { return raw.databaseValue }
            guard let data = try transformers.transformedValue(value, for: attribute) else { return .null }
            return data.databaseValue
        }
        guard let encoded = SQLiteValueEncoding.databaseValue(value, as: attribute.attributeType) else {
            throw CoreDataError(.managedObjectValidation,
                                "\(attribute.entity?.name ?? "?").\(attribute.name): \(value) is not a \(attribute.attributeType.xcodeName)",
                                entityName: attribute.entity?.name, key: attribute.name)
        }
        return encoded
    }

    func isRegistered(_ transformerName: String?) -> Bool {
        guard let name = transformerName, !name.isEmpty else { return true }
        return transformers.transformer(named: name) != nil
    }
}

/// Turns result rows (`Z_PK, Z_ENT, Z_OPT`, then `columns`) into snapshots of each
/// row's concrete entity, to-many relationships left as faults. What each column
/// feeds is worked out once per entity; a row's cells are then read once, in
/// order, each decoded straight into its property's slot.
///
/// When every row is of one entity (`entityNumber`), the statements leave
/// `Z_ENT` out (`Z_PK, Z_OPT`, then `columns`: the server sends every cell of
/// every row, a constant one included); column indexes stay those of the full
/// layout.
struct PostgreSQLRowReader {
    let store: PostgreSQLStore
    let columns: [SQLFetchColumn]
    /// The entity number of every row, when they are of one entity (the rows
    /// then have no `Z_ENT` cell).
    let entityNumber: Int?
    /// The cell holding each row's owner (see ``ownedSnapshots(_:sql:bindings:)``).
    private let ownerColumn: Int?
    private var plans: [Int: Plan] = [:]
    /// The plan of the row read last, and its entity number.
    private var lastPlan: (number: Int, plan: Plan)?
    /// The pages the rows' values are written into, many rows a page.
    private var pages = RowPageWriter()
    /// The owner key of the row read last.
    private var owner: Int64 = 0
    /// The to-one slots whose destination entity the row names: (slot, entity number).
    private var destinationEntities: [(slot: Int, number: Int)] = []

    /// Where each column's value goes, for rows of one entity (a class: a row
    /// takes it with one reference).
    private final class Plan {
        /// The scope of the rows' IDs.
        let scope: ManagedObjectID.Scope
        /// The values of a row before its cells are read: the empty value of
        /// every property (a to-many fault, no to-one, NULL).
        let empty: [SnapshotValue]
        /// What each cell feeds, by cell index (the first three: key, entity,
        /// version, are read apart).
        let actions: [Action]
        /// The attributes and to-one destination scopes the actions name.
        let attributes: [AttributeDescription]
        let destinations: [ManagedObjectID.Scope]

        init(scope: ManagedObjectID.Scope, empty: [SnapshotValue], actions: [Action],
             attributes: [AttributeDescription], destinations: [ManagedObjectID.Scope]) {
            self.scope = scope
            self.empty = empty
            self.actions = actions
            self.attributes = attributes
            self.destinations = destinations
        }
    }

    /// What one cell feeds: plain numbers (indexes into the plan), so reading an
    /// action retains nothing.
    private enum Action {
        case skip
        case attribute(slot: Int, type: AttributeType)
        case transformable(slot: Int, attribute: Int)
        case toOneKey(slot: Int, destination: Int)
        case toOneEntity(slot: Int)
        case owner
    }

    init(store: PostgreSQLStore, columns: [SQLFetchColumn], entityNumber: Int?, ownerColumn: Int? = nil) {
        self.store = store
        self.columns = columns
        self.entityNumber = entityNumber
        self.ownerColumn = ownerColumn
    }

    /// The snapshots of a statement's rows, converted as they arrive (while the
    /// event loop decodes the next ones).
    mutating func snapshots(_ session: PostgreSQLSession, sql: String, bindings: PostgresBindings) throws -> [RowSnapshot] {
        try collect(session, session.start(numbered: sql, bindings: bindings)) { reader, row in try reader.snapshot(row) }
    }

    /// The snapshots of a statement the session sent earlier (one read ahead).
    mutating func snapshots(_ session: PostgreSQLSession, of handoff: PostgreSQLRowHandoff) throws -> [RowSnapshot] {
        try collect(session, handoff) { reader, row in try reader.snapshot(row) }
    }

    /// ``snapshots(_:sql:bindings:)`` with each row's key in the reader's owner
    /// column (the source of a to-many relationship's destination row).
    mutating func ownedSnapshots(_ session: PostgreSQLSession, sql: String,
                                  bindings: PostgresBindings) throws -> [(owner: Int64, snapshot: RowSnapshot)] {
        try collect(session, session.start(numbered: sql, bindings: bindings)) { reader, row in
            guard let snapshot = try reader.snapshot(row) else { return nil }
            return (reader.owner, snapshot)
        }
    }

    /// Converts the rows of a statement the session sent, a run at a time.
    private mutating func collect<Element>(
        _ session: PostgreSQLSession, _ handoff: PostgreSQLRowHandoff,
        _ convert: (inout PostgreSQLRowReader, PostgresRow) throws -> Element?
    ) throws -> [Element] {
        var elements: [Element] = []
        try session.forEachRow(of: handoff) { rows in
            for row in rows {
                if let element = try convert(&self, row) { elements.append(element) }
            }
        }
        return elements
    }

    mutating func snapshot(_ row: PostgresRow) throws -> RowSnapshot? {
        var cells = row.makeIterator()
        guard let keyCell = cells.next() else { return nil }
        var number: Int
        if let entityNumber {
            number = entityNumber
        } else {
            guard let entityCell = cells.next() else { return nil }
            number = Int(PostgreSQLValues.int64(entityCell))
        }
        guard let versionCell = cells.next() else { return nil }
        let plan: Plan
        if let last = lastPlan, last.number == number {
            plan = last.plan
        } else if let known = plans[number] {
            plan = known
            lastPlan = (number, known)
        } else {
            guard let made = makePlan(number) else { return nil }
            plans[number] = made
            lastPlan = (number, made)
            plan = made
        }
        // The row's values go into the read's current page: first every
        // property's empty value, then each cell's value in its slot. A value
        // that fails to decode leaves the row's values in the page (destroyed
        // with it).
        let width = plan.empty.count
        let (page, start) = pages.beginRow(width: width)
        for value in plan.empty { page.append(value) }
        let values = page.base + start
        var index = 3
        destinationEntities.removeAll(keepingCapacity: true)
        try withExtendedLifetime(page) {
            while let cell = cells.next(), index < plan.actions.count {
                switch plan.actions[index] {
                case .skip:
                    break
                case .attribute(let slot, let type):
                    if let value = PostgreSQLValues.attributeValue(cell, as: type) {
                        values[slot] = .attribute(value)
                    } else {
                        values[slot] = .attribute(SQLiteValueEncoding.attributeValue(PostgreSQLValues.databaseValue(cell), as: type))
                    }
                case .transformable(let slot, let attribute):
                    values[slot] = .attribute(try store.decode(PostgreSQLValues.databaseValue(cell), for: plan.attributes[attribute]))
                case .toOneKey(let slot, let destination):
                    if case .int64(let pk) = PostgreSQLValues.databaseValue(cell).storage {
                        values[slot] = .toOne(ManagedObjectID(scope: plan.destinations[destination], primaryKey: pk))
                    }
                case .toOneEntity(let slot):
                    destinationEntities.append((slot, Int(PostgreSQLValues.int64(cell))))
                case .owner:
                    owner = PostgreSQLValues.int64(cell)
                }
                index += 1
            }
            // A to-one whose destination has subentities: the row names the entity.
            for (slot, number) in destinationEntities {
                guard case .toOne(let id?) = values[slot], let pk = id.primaryKey,
                      let found = store.entity(forNumber: number), found !== id.entity else { continue }
                values[slot] = .toOne(ManagedObjectID(scope: store.idScopes.scope(for: found), primaryKey: pk))
            }
        }
        let id = ManagedObjectID(scope: plan.scope, primaryKey: PostgreSQLValues.int64(keyCell))
        return RowSnapshot(objectID: id, version: PostgreSQLValues.int64(versionCell), page: page, start: start, count: width)
    }

    private func makePlan(_ number: Int) -> Plan? {
        guard let entity = store.entity(forNumber: number) else { return nil }
        var empty: [SnapshotValue] = []
        var attributes: [AttributeDescription] = []
        var destinations: [ManagedObjectID.Scope] = []
        let lastColumn = Swift.max(columns.map(\.index).max() ?? 2, ownerColumn ?? 2)
        var actions = Array(repeating: Action.skip, count: lastColumn + 1)
        if let ownerColumn { actions[ownerColumn] = .owner }
        for property in entity.allProperties {
            let slot = empty.count
            if let relationship = property as? RelationshipDescription {
                guard !relationship.isToMany else { empty.append(.toMany(nil)); continue }
                empty.append(.toOne(nil))
                let key = columns.first { $0.kind == .toOneKey && $0.property.name == property.name && entity.isKindOf(entity: $0.entity) }
                guard let key, let destination = relationship.destinationEntity else { continue }
                actions[key.index] = .toOneKey(slot: slot, destination: destinations.count)
                destinations.append(store.idScopes.scope(for: destination))
                if let entityColumn = columns.first(where: { $0.kind == .toOneEntity && $0.property.name == property.name && entity.isKindOf(entity: $0.entity) }) {
                    actions[entityColumn.index] = .toOneEntity(slot: slot)
                }
            } else {
                empty.append(.attribute(.null))
                if let attribute = property as? AttributeDescription,
                   let column = columns.first(where: { $0.kind == .attribute && $0.property.name == property.name && entity.isKindOf(entity: $0.entity) }) {
                    if attribute.attributeType == .transformable {
                        actions[column.index] = .transformable(slot: slot, attribute: attributes.count)
                        attributes.append(attribute)
                    } else {
                        actions[column.index] = .attribute(slot: slot, type: attribute.attributeType)
                    }
                }
            }
        }
        return Plan(scope: store.idScopes.scope(for: entity), empty: empty, actions: actions,
                    attributes: attributes, destinations: destinations)
    }
}

/// The keys of an object ID statement's rows (`Z_PK`, then `Z_ENT` when the
/// rows may be of several entities), each with its ID's scope.
private struct ObjectIDKeys {
    let store: PostgreSQLStore
    let selectsEntity: Bool
    private(set) var keys: [(key: Int64, scope: ManagedObjectID.Scope)] = []
    /// The scope, looked up once per run of rows of one entity.
    private var last: (entity: EntityDescription, scope: ManagedObjectID.Scope)

    init(store: PostgreSQLStore, entity: EntityDescription, selectsEntity: Bool) {
        self.store = store
        self.selectsEntity = selectsEntity
        last = (entity, store.idScopes.scope(for: entity))
    }

    private mutating func append<Cells: IteratorProtocol<PostgresCell>>(_ cells: inout Cells) {
        guard let key = cells.next() else { return }
        if selectsEntity {
            guard let number = cells.next(), let found = store.entity(forNumber: Int(PostgreSQLValues.int64(number))) else { return }
            if found !== last.entity { last = (found, store.idScopes.scope(for: found)) }
        }
        keys.append((PostgreSQLValues.int64(key), last.scope))
    }

    /// Adds the keys of plain rows, one a row.
    mutating func appendRows(_ rows: [PostgresRow]) {
        keys.reserveCapacity(keys.count + rows.count)
        for row in rows {
            var cells = row.makeIterator()
            append(&cells)
        }
    }

    /// Adds the keys of a packed statement's row (see ``PostgreSQLPackedRows``).
    mutating func appendPacked(_ rows: [PostgresRow]) throws {
        for row in rows {
            var packed = try PostgreSQLPackedRows(row)
            keys.reserveCapacity(keys.count + packed.count)
            // Keys alone (one entity): read straight from the array.
            if !selectsEntity, let column = packed.int64Column() {
                for key in column { keys.append((key, last.scope)) }
                continue
            }
            while var cells = packed.next() {
                append(&cells)
                // Every column read, so the next row starts at its own cells.
                cells.finish()
                if cells.isMalformed { throw PostgreSQLPackedRows.malformed("row") }
            }
        }
    }

    /// Puts the keys in key order (`ORDER BY Z_PK`), when they are not already.
    mutating func sortByKey() {
        if zip(keys, keys.dropFirst()).contains(where: { $0.key > $1.key }) { keys.sort { $0.key < $1.key } }
    }

    /// A row with no values (version 0) for each key.
    var snapshots: [RowSnapshot] {
        keys.map { RowSnapshot(objectID: ManagedObjectID(scope: $0.scope, primaryKey: $0.key), version: 0, values: []) }
    }
}
