import Foundation
import GRDB
import GRDBSQLite
import OpenCoreDataPredicates

/// Turns the result rows of one fetch (`Z_PK, Z_ENT, Z_OPT`, then the fetch's
/// columns) into snapshots of each row's concrete entity. A statement whose rows
/// are all of one entity selects that entity's number in place of `Z_ENT`, and
/// its reader, given the number, does not read the column.
///
/// Everything that depends only on the entity — which column feeds which property,
/// the values of properties not selected, the destination entities of to-one
/// relationships — is worked out once per entity number and reused for every row,
/// so a row costs its column reads and value decoding only.
///
/// ```swift
/// let reader = SQLiteRowReader(store: store, columns: statement.columns)
/// var pages = RowPageWriter()
/// while let row = try rows.next() {
///     if let snapshot = try reader.snapshot(row, into: &pages) { result.append(snapshot) }
/// }
/// ```
///
/// The values of the rows of one read go into shared pages (``RowPage``): one
/// allocation for many rows.
///
/// ```swift
/// ```
final class SQLiteRowReader {
    // unowned(unsafe): a store keeps readers of its own statements
    // (SQLiteStore.RowQuery) and no reader outlives its store; a checked `unowned`
    // reference costs an atomic operation on every value decoded.
    private unowned(unsafe) let store: SQLiteStore
    /// The store's ID scopes, for the object IDs of the rows.
    private let idScopes: ManagedObjectID.Scopes
    private let columns: [SQLFetchColumn]
    /// The entity number of every row, when the statement selects it as a
    /// constant (the rows' `Z_ENT` column is then not read).
    private let entityNumber: Int?
    private var plans: [Int: Plan?] = [:]
    /// The ID scope of each entity number (nil: no entity of the model).
    private var scopes: [Int: ManagedObjectID.Scope?] = [:]
    /// The plan of the last row's entity number, read field by field from the
    /// reader itself: plain values, so a row takes no reference to its plan, its
    /// slots or its entity (each was an atomic retain and release per row).
    @exclusivity(unchecked) private var lastNumber: Int?  // unchecked: one reader per statement, used under its lock
    @exclusivity(unchecked) private var lastSlots = UnsafeBufferPointer<Slot>(start: nil, count: 0)  // unchecked: one reader per statement, used under its lock
    @exclusivity(unchecked) private var lastEntity: Unmanaged<EntityDescription>?  // unchecked: one reader per statement, used under its lock
    /// The ID scope of the last row's entity (the row's ID holds it).
    @exclusivity(unchecked) private var lastScope: ManagedObjectID.Scope?  // unchecked: one reader per statement, used under its lock

    /// Where the value of one property comes from, for rows of one entity. Plain
    /// data (its plan keeps the descriptions it names alive), so reading a slot
    /// touches no reference count.
    private enum Slot {
        /// No column: a to-many fault, a nil to-one or a null attribute.
        case constant(Constant)
        /// An attribute whose stored value is its value (no transformer, no external file).
        case plainAttribute(column: Int, type: AttributeType)
        case attribute(column: Int, attribute: Unmanaged<AttributeDescription>)
        /// A to-one relationship: its destination's key, and the column of the
        /// destination's entity number when the destination has subentities.
        case toOne(keyColumn: Int, entityColumn: Int?, declared: Unmanaged<ManagedObjectID.Scope>)  // Unmanaged: the plan keeps the scope alive (`described`); a slot read per row takes no reference
    }

    /// The value of a property no column feeds.
    private enum Constant {
        case toManyFault, nilToOne, nullAttribute

        var value: SnapshotValue {
            switch self {
            case .toManyFault: return .toMany(nil)
            case .nilToOne: return .toOne(nil)
            case .nullAttribute: return .attribute(.null)
            }
        }
    }

    /// The reading plan of one entity: one slot per property, in the entity's
    /// property order, so that a row's values are built in one pass into an array
    /// of the right size (no copy of a template array to overwrite). It owns its
    /// slots and keeps alive the descriptions they name.
    private final class Plan {
        let entity: EntityDescription
        /// The ID scope of the entity's rows.
        let scope: ManagedObjectID.Scope
        let slots: UnsafeMutableBufferPointer<Slot>
        private let described: [AnyObject]

        init(entity: EntityDescription, scope: ManagedObjectID.Scope, slots: [Slot], described: [AnyObject]) {
            self.entity = entity
            self.scope = scope
            self.slots = .allocate(capacity: slots.count)
            _ = self.slots.initialize(from: slots)
            self.described = described
        }

        deinit {
            slots.deinitialize()
            slots.deallocate()
        }
    }

    /// A reader of rows whose columns after `Z_PK, Z_ENT, Z_OPT` are `columns`;
    /// `entityNumber` when the statement selects that constant for every row's
    /// `Z_ENT` (``SQLFetchTranslator/entityColumn(for:restricted:)``).
    init(store: SQLiteStore, columns: [SQLFetchColumn], entityNumber: Int? = nil) {
        self.store = store
        self.idScopes = store.idScopes
        self.columns = columns
        self.entityNumber = entityNumber
    }

    private func entity(forNumber number: Int) -> EntityDescription? {
        scope(forNumber: number)?.entity
    }

    /// The ID scope of the rows of entity `number`.
    private func scope(forNumber number: Int) -> ManagedObjectID.Scope? {
        if let known = scopes[number] { return known }
        let scope = store.entity(forNumber: number).map(idScopes.scope(for:))
        scopes[number] = scope
        return scope
    }

    /// Makes the plan of entity `number` the reader's current one; false when
    /// the number names no entity of the model.
    @inline(__always)
    private func selectPlan(forNumber number: Int) -> Bool {
        if number == lastNumber { return lastEntity != nil }
        return selectPlanSlowly(forNumber: number)
    }

    @inline(never)
    private func selectPlanSlowly(forNumber number: Int) -> Bool {
        let plan: Plan?
        if let known = plans[number] {
            plan = known
        } else {
            plan = entity(forNumber: number).map(makePlan)
            plans[number] = plan
        }
        lastNumber = number
        lastSlots = plan.map { UnsafeBufferPointer($0.slots) } ?? UnsafeBufferPointer(start: nil, count: 0)
        lastEntity = plan.map { Unmanaged.passUnretained($0.entity) }
        lastScope = plan.map(\.scope)
        return plan != nil
    }

    private func makePlan(_ entity: EntityDescription) -> Plan {
        let properties = entity.allProperties
        var slots = properties.map { property -> Slot in
            switch property {
            case let relationship as RelationshipDescription: return .constant(relationship.isToMany ? .toManyFault : .nilToOne)
            default: return .constant(.nullAttribute)
            }
        }
        // To-one columns by property index (the last column for an index wins).
        var described: [AnyObject] = []
        var keyColumns: [Int: Int] = [:]
        var entityColumns: [Int: Int] = [:]
        for column in columns {
            guard let index = entity.propertyIndex(named: column.property.name),
                  properties[index] === column.property || column.entity.isKindOf(entity: entity) || entity.isKindOf(entity: column.entity)
            else { continue }
            switch column.kind {
            case .attribute:
                guard let attribute = column.property as? AttributeDescription else { continue }
                let type = attribute.attributeType
                if type == .transformable || (type == .binaryData && attribute.allowsExternalBinaryDataStorage) {
                    described.append(attribute)
                    slots[index] = .attribute(column: column.index, attribute: .passUnretained(attribute))
                } else {
                    slots[index] = .plainAttribute(column: column.index, type: type)
                }
            case .toOneKey:
                keyColumns[index] = column.index
            case .toOneEntity:
                entityColumns[index] = column.index
            }
        }
        for (index, keyColumn) in keyColumns {
            guard let relationship = properties[index] as? RelationshipDescription,
                  let declared = relationship.destinationEntity else { continue }
            let scope = idScopes.scope(for: declared)
            described.append(scope)
            slots[index] = .toOne(keyColumn: keyColumn, entityColumn: entityColumns[index], declared: .passUnretained(scope))
        }
        return Plan(entity: entity, scope: idScopes.scope(for: entity), slots: slots, described: described)
    }

    /// The snapshot of one result row, its values appended to `pages`; nil when its
    /// `Z_ENT` names no entity of the model.
    func snapshot(_ row: Row, into pages: inout RowPageWriter) throws -> RowSnapshot? {
        try snapshot(RowColumns(row: row), into: &pages)
    }

    /// The snapshot of the row `statement` stands on (its last step returned a row),
    /// read straight from the C API: no `Row`, no `DatabaseValue` per value.
    func snapshot(_ statement: SQLiteStatement, into pages: inout RowPageWriter) throws -> RowSnapshot? {
        try snapshot(StatementColumns(statement: statement), into: &pages)
    }

    @inline(__always)
    private func snapshot<Columns: ColumnSource>(_ columns: Columns, into pages: inout RowPageWriter) throws -> RowSnapshot? {
        guard let pk = columns.key(0) else { return nil }
        guard let number = entityNumber ?? columns.key(1).map({ Int(truncatingIfNeeded: $0) }),
              selectPlan(forNumber: number), let entity = lastEntity, let scope = lastScope else { return nil }
        let version = columns.key(2) ?? 1
        let slots = lastSlots
        // The values go straight into the read's current page. A value that fails
        // to decode leaves the row's earlier values in the page (destroyed with it).
        let (page, start) = pages.beginRow(width: slots.count)
        for slot in slots { page.append(try value(of: slot, from: columns, entity: entity)) }
        return RowSnapshot(objectID: ManagedObjectID(scope: scope, primaryKey: pk),
                           version: version, rowValues: RowValues(page: page, start: start, count: slots.count))
    }

    /// The value of one property of the row `columns` stand on.
    @inline(__always)
    private func value<Columns: ColumnSource>(of slot: Slot, from columns: Columns,
                                              entity: Unmanaged<EntityDescription>) throws -> SnapshotValue {
        switch slot {
        case .constant(let constant):
            return constant.value
        case .plainAttribute(let column, let type):
            return .attribute(columns.attributeValue(column, as: type))
        case .attribute(let column, let attribute):
            return .attribute(try store.decode(columns.databaseValue(column), for: attribute.takeUnretainedValue(),
                                               entity: entity.takeUnretainedValue()))
        case .toOne(let keyColumn, let entityColumn, let declared):
            guard let key = columns.integer(keyColumn) else { return .toOne(nil) }
            if let entityColumn, let number = columns.integer(entityColumn),
               let destination = scope(forNumber: Int(truncatingIfNeeded: number)) {
                return .toOne(ManagedObjectID(scope: destination, primaryKey: key))
            }
            return .toOne(ManagedObjectID(scope: declared.takeUnretainedValue(), primaryKey: key))
        }
    }
}

/// Where a row reader reads a result row's columns: a GRDB `Row`, or a SQLite
/// statement standing on a row (through the C API).
private protocol ColumnSource {
    func databaseValue(_ index: Int) -> DatabaseValue
    /// The column as an integer (nil for NULL or a value that is not one).
    func integer(_ index: Int) -> Int64?
    /// A column that is an integer in every well-formed row (`Z_PK`, `Z_ENT`,
    /// `Z_OPT`), as `integer(_:)` reads it.
    func key(_ index: Int) -> Int64?
    /// The column as the value of a plain attribute of `type`.
    func attributeValue(_ index: Int, as type: AttributeType) -> AttributeValue
}

extension ColumnSource {
    func integer(_ index: Int) -> Int64? { Int64.fromDatabaseValue(databaseValue(index)) }
    func key(_ index: Int) -> Int64? { integer(index) }
    func attributeValue(_ index: Int, as type: AttributeType) -> AttributeValue {
        SQLiteValueEncoding.attributeValue(databaseValue(index), as: type)
    }
}

private struct RowColumns: ColumnSource {
    let row: Row
    func databaseValue(_ index: Int) -> DatabaseValue { row[index] }
}

/// Columns read with SQLite's C API by storage class: the common pairs of storage
/// class and attribute type are decoded here, exactly as
/// `SQLiteValueEncoding.attributeValue(_:as:)` decodes them; every other pair goes
/// through a `DatabaseValue` (whose construction costs a protocol conformance lookup).
///
/// A column is read through its `sqlite3_value` (`sqlite3_column_value`): one call
/// into the statement per column, where each `sqlite3_column_*` call enters the
/// connection, checks it for a failed allocation and leaves it again (two or
/// three times a column); `sqlite3_value_*` only read the value. SQLite calls
/// such a value unprotected: it may be read this way while nothing else uses
/// the connection, which GRDB's serialized access guarantees.
private struct StatementColumns: ColumnSource {
    let statement: SQLiteStatement

    func databaseValue(_ index: Int) -> DatabaseValue {
        DatabaseValue(sqliteStatement: statement, index: CInt(index))
    }

    /// Reads the integer first and asks for the column's type only when it is 0
    /// (what SQLite gives for NULL and for text that is not a number): two C calls
    /// less per row. A real number in such a column (a damaged store) reads
    /// truncated, as SQLite converts it.
    func key(_ index: Int) -> Int64? {
        let value = sqlite3_column_int64(statement, CInt(index))
        return value != 0 || sqlite3_column_type(statement, CInt(index)) == SQLITE_INTEGER ? value : integer(index)
    }

    func integer(_ index: Int) -> Int64? {
        let value = sqlite3_column_value(statement, CInt(index))
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return sqlite3_value_int64(value)
        case SQLITE_NULL: return nil
        default: return Int64.fromDatabaseValue(databaseValue(index))
        }
    }

    func attributeValue(_ index: Int, as type: AttributeType) -> AttributeValue {
        let value = sqlite3_column_value(statement, CInt(index))
        switch (sqlite3_value_type(value), type) {
        case (SQLITE_NULL, _):
            return .null
        case (SQLITE_INTEGER, .integer16), (SQLITE_INTEGER, .integer32), (SQLITE_INTEGER, .integer64):
            return .int(sqlite3_value_int64(value))
        case (SQLITE_INTEGER, .boolean):
            return .bool(sqlite3_value_int64(value) != 0)
        case (SQLITE_INTEGER, .double), (SQLITE_INTEGER, .float):
            return .double(Double(sqlite3_value_int64(value)))
        case (SQLITE_FLOAT, .double), (SQLITE_FLOAT, .float):
            return .double(sqlite3_value_double(value))
        case (SQLITE_FLOAT, .date):
            let seconds = sqlite3_value_double(value)
            return seconds.isFinite ? .date(Date(timeIntervalSinceReferenceDate: seconds)) : .null
        case (SQLITE_INTEGER, .date):
            return .date(Date(timeIntervalSinceReferenceDate: TimeInterval(sqlite3_value_int64(value))))
        case (SQLITE_TEXT, .string):
            // The text's length from SQLite (no strlen); decoded as UTF-8 as
            // `String(cString:)` would (invalid bytes repaired).
            guard let text = sqlite3_value_text(value) else { return .null }
            let bytes = UnsafeBufferPointer(start: text, count: Int(sqlite3_value_bytes(value)))
            return .string(String(decoding: bytes, as: UTF8.self))
        default:
            return SQLiteValueEncoding.attributeValue(databaseValue(index), as: type)
        }
    }
}
