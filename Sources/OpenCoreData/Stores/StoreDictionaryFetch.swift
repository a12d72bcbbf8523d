import Foundation
import OpenCoreDataPredicates

/// What a store is asked for by a dictionary fetch: the rows of ``fetch``, turned
/// into one dictionary per row (or per group with ``groupBy``), distinct if asked,
/// filtered by ``havingPredicate``, then offset and limited.
///
/// ```swift
/// var fetch = StoreDictionaryFetch(fetch: StoreFetch(entity: mood))
/// fetch.columns = [StoreColumn(name: "rating", expression: .keyPath("rating")),
///                  StoreColumn(name: "n", expression: .function("count:", arguments: [.keyPath("rating")]),
///                              resultType: .integer64)]
/// fetch.groupBy = [fetch.columns[0]]
/// let rows = try store.fetchDictionaries(fetch)   // [["rating": .attribute(3), "n": .attribute(7)], ...]
/// ```
///
/// Stores get an implementation by evaluation for free (over ``PersistentStore/fetchRows(_:)``);
/// the SQLite store computes everything but the having predicate in one `SELECT`.
public struct StoreDictionaryFetch: Sendable {
    /// The entity, predicate, sort, offset and limit.
    public var fetch: StoreFetch
    /// The values of each dictionary.
    public var columns: [StoreColumn] = []
    /// The columns rows are grouped by (empty: no grouping, unless a column
    /// aggregates, which makes all the rows one group).
    public var groupBy: [StoreColumn] = []
    /// Which groups are kept, evaluated against each result dictionary.
    public var havingPredicate: CorePredicate?
    /// Whether equal dictionaries are returned once (the first of them).
    public var distinct = false

    public init(fetch: StoreFetch) { self.fetch = fetch }

    /// Whether any column aggregates over rows.
    var aggregates: Bool { columns.contains { StoreColumn.containsAggregate($0.expression) } }
}

/// One value of a dictionary fetch: its key and the expression computing it.
public struct StoreColumn: Sendable {
    /// The key in the result dictionary.
    public var name: String
    /// A key path (attribute, to-one relationship, path through to-ones) or an
    /// expression, with aggregate functions over the rows of a group.
    public var expression: CoreExpression
    /// The type of the value (nil: the type of the attribute reached).
    public var resultType: AttributeType?

    public init(name: String, expression: CoreExpression, resultType: AttributeType? = nil) {
        self.name = name
        self.expression = expression
        self.resultType = resultType
    }

    /// The aggregate functions: over the rows of a group, not over one object.
    static let aggregateFunctions: Set<String> = ["sum:", "average:", "min:", "max:", "count:"]

    static func isAggregate(_ expression: CoreExpression) -> Bool {
        if case .function(let name, let arguments) = expression, aggregateFunctions.contains(name), arguments.count == 1 {
            return true
        }
        return false
    }

    static func containsAggregate(_ expression: CoreExpression) -> Bool {
        if isAggregate(expression) { return true }
        if case .function(_, let arguments) = expression { return arguments.contains(where: containsAggregate) }
        return false
    }
}

extension PersistentStore {
    /// Dictionary results by evaluation: the store's rows are fetched (filtered and
    /// sorted), grouped, and the columns computed in memory. The default for
    /// stores that do not compute them themselves.
    public func fetchDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        try evaluateDictionaries(request)
    }

    /// Dictionary results computed in memory over the store's rows (what
    /// ``fetchDictionaries(_:)`` does by default), for a store that computes
    /// them itself where it can.
    package func evaluateDictionaries(_ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        try StoreDictionaryEvaluation(reads: StoreRowReads(self), request: request).run()
    }

    /// ``evaluateDictionaries(_:)`` over the rows `reads` gives (a query
    /// generation's, say).
    package func evaluateDictionaries(_ request: StoreDictionaryFetch, reading reads: StoreRowReads) throws -> [[String: SnapshotValue]] {
        try StoreDictionaryEvaluation(reads: reads, request: request).run()
    }
}

/// Where evaluation in memory reads rows: a store as it is now, or the state a
/// query generation holds.
package struct StoreRowReads {
    let fetchRows: (StoreFetch) throws -> [RowSnapshot]
    let row: (ManagedObjectID) throws -> RowSnapshot?
    let relatedObjectIDs: (ManagedObjectID, RelationshipDescription) throws -> [ManagedObjectID]

    /// Reads of `store` as it is now.
    package init(_ store: any PersistentStore) {
        self.init(fetchRows: store.fetchRows, row: store.row(for:), relatedObjectIDs: store.relatedObjectIDs(of:relationship:))
    }

    package init(fetchRows: @escaping (StoreFetch) throws -> [RowSnapshot],
                 row: @escaping (ManagedObjectID) throws -> RowSnapshot?,
                 relatedObjectIDs: @escaping (ManagedObjectID, RelationshipDescription) throws -> [ManagedObjectID]) {
        self.fetchRows = fetchRows
        self.row = row
        self.relatedObjectIDs = relatedObjectIDs
    }
}

/// Computes dictionary results over a store's rows.
package struct StoreDictionaryEvaluation {
    let reads: StoreRowReads
    let request: StoreDictionaryFetch
    let graph: StoreRowGraph

    init(reads: StoreRowReads, request: StoreDictionaryFetch) {
        self.reads = reads
        self.request = request
        self.graph = StoreRowGraph(reads: reads)
    }

    func run() throws -> [[String: SnapshotValue]] {
        var fetch = request.fetch
        fetch.fetchOffset = 0
        fetch.fetchLimit = 0
        let rows = try reads.fetchRows(fetch)
        for row in rows { graph.remember(row) }
        // Groups, in the order of their first row.
        var groups: [[RowSnapshot]] = []
        let groupColumns = request.distinct && request.groupBy.isEmpty ? request.columns : request.groupBy
        if !groupColumns.isEmpty {
            var indexes: [[SnapshotValue]: Int] = [:]
            for row in rows {
                let key = try groupColumns.map { try rowValue($0.expression, row, $0.resultType) }
                if let index = indexes[key] {
                    groups[index].append(row)
                } else {
                    indexes[key] = groups.count
                    groups.append([row])
                }
            }
        } else if request.aggregates {
            groups = [rows]
        } else {
            groups = rows.map { [$0] }
        }
        var results: [[String: SnapshotValue]] = []
        var seen = Set<[String: SnapshotValue]>()
        for group in groups {
            var dictionary: [String: SnapshotValue] = [:]
            for column in request.columns {
                let value = try groupValue(column.expression, group)
                dictionary[column.name] = StoreDictionaryEvaluation.coerce(value, to: column.resultType)
            }
            if request.distinct, !seen.insert(dictionary).inserted { continue }
            results.append(dictionary)
        }
        if let having = request.havingPredicate {
            results = try results.filter { try having.evaluate(with: StoreDictionaryEvaluation.predicateDictionary($0)) }
        }
        return Self.offsetAndLimit(results, request.fetch)
    }

    /// `results` kept by the request's having predicate, then offset and limited:
    /// what a store that computes the groups in SQL does after the statement (the
    /// statement offsets and limits itself when there is no having predicate).
    package static func having(_ results: [[String: SnapshotValue]], _ request: StoreDictionaryFetch) throws -> [[String: SnapshotValue]] {
        guard let having = request.havingPredicate else { return results }
        return offsetAndLimit(try results.filter { try having.evaluate(with: predicateDictionary($0)) }, request.fetch)
    }

    private static func offsetAndLimit(_ results: [[String: SnapshotValue]], _ fetch: StoreFetch) -> [[String: SnapshotValue]] {
        var results = results
        if fetch.fetchOffset > 0 { results = Array(results.dropFirst(fetch.fetchOffset)) }
        if fetch.fetchLimit > 0 { results = Array(results.prefix(fetch.fetchLimit)) }
        return results
    }

    /// A result dictionary as predicates see it: object IDs as their URIs.
    package static func predicateDictionary(_ dictionary: [String: SnapshotValue]) -> [String: AttributeValue] {
        dictionary.mapValues { value in
            switch value {
            case .attribute(let v): return v
            case .toOne(let id): return id.map { .uri($0.uriRepresentation()) } ?? .null
            case .toMany: return .null
            }
        }
    }

    /// The value of a column for a group: aggregates over its rows, anything else
    /// from its first row.
    private func groupValue(_ expression: CoreExpression, _ group: [RowSnapshot]) throws -> SnapshotValue {
        if StoreColumn.isAggregate(expression), case .function(let name, let arguments) = expression {
            var values: [AttributeValue] = []
            for row in group {
                let value = try rowValue(arguments[0], row, nil)
                switch value {
                case .attribute(let v) where !v.isNull: values.append(v)
                case .toOne(let id?): values.append(.uri(id.uriRepresentation()))
                default: continue
                }
            }
            return .attribute(try StoreDictionaryEvaluation.aggregate(name, values))
        }
        if StoreColumn.containsAggregate(expression), case .function(let name, let arguments) = expression {
            let values = try arguments.map { try groupValue($0, group).attributeValue }
            let result = try CoreExpression.function(name, arguments: values.map { .constant($0) }).value()
            return .attribute(result.attributeValue ?? .null)
        }
        guard let first = group.first else { return .attribute(.null) }
        return try rowValue(expression, first, nil)
    }

    /// The value of an expression for one row: key paths walk to-one
    /// relationships; other expressions are evaluated.
    private func rowValue(_ expression: CoreExpression, _ row: RowSnapshot, _ type: AttributeType?) throws -> SnapshotValue {
        if case .keyPath(let path) = expression {
            var current: RowSnapshot? = row
            let keys = path.split(separator: ".").map(String.init)
            for (index, key) in keys.enumerated() {
                guard let here = current else { return .attribute(.null) }
                guard let value = here.value(named: key) else {
                    if key == "objectID" && index == keys.count - 1 { return .toOne(here.objectID) }
                    throw CoreDataError(.coreData, "keypath \(path) not found in entity \(here.objectID.entity.name)",
                                        entityName: here.objectID.entity.name, key: key)
                }
                if index == keys.count - 1 {
                    if case .toMany = value {
                        throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                            "A dictionary fetch can't fetch the to-many relationship '\(path)'",
                                            entityName: row.objectID.entity.name, key: key)
                    }
                    return value
                }
                guard case .toOne(let id) = value else {
                    throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                        "A dictionary fetch can only follow to-one relationships, not '\(key)' in '\(path)'",
                                        entityName: here.objectID.entity.name, key: key)
                }
                current = try id.flatMap { try graph.loadRow($0) }
            }
            return .attribute(.null)
        }
        let result = try expression.value(with: RowObject(row: row, graph: graph))
        if case .object(let object) = result, let rowObject = object as? RowObject { return .toOne(rowObject.row.objectID) }
        return .attribute(result.attributeValue ?? .null)
    }

    /// An aggregate of the non-nil values of a group, as SQL computes it.
    static func aggregate(_ name: String, _ values: [AttributeValue]) throws -> AttributeValue {
        switch name {
        case "count:":
            return .int(Int64(values.count))
        case "sum:", "average:":
            guard !values.isEmpty else { return .null }
            if name == "sum:", values.allSatisfy({ if case .int = $0 { return true }; if case .bool = $0 { return true }; return false }) {
                return .int(values.reduce(0) { $0 &+ ($1.int64Value ?? 0) })
            }
            var total = 0.0
            for value in values {
                guard let number = value.doubleValue ?? value.dateReferenceValue else {
                    throw PredicateEvaluationError.typeMismatch("\(name) needs numbers, not \(value)")
                }
                total += number
            }
            return .double(name == "sum:" ? total : total / Double(values.count))
        default: // min:, max:
            guard var best = values.first else { return .null }
            let ascending = CoreSortDescriptor(key: nil, ascending: true)
            for value in values.dropFirst() {
                let order = ascending.compareValues(.value(value), .value(best))
                if (name == "min:" && order == .orderedAscending) || (name == "max:" && order == .orderedDescending) { best = value }
            }
            return best
        }
    }

    /// A value given the type an expression description asks for.
    package static func coerce(_ value: SnapshotValue, to type: AttributeType?) -> SnapshotValue {
        guard let type, case .attribute(let v) = value, !v.isNull else { return value }
        switch type {
        case .integer16, .integer32, .integer64:
            if let date = v.dateReferenceValue, case .date = v { return .attribute(.int(Int64(date))) }
            return .attribute(v.int64Value.map { .int($0) } ?? v)
        case .double, .float:
            return .attribute((v.doubleValue ?? v.dateReferenceValue).map { .double($0) } ?? v)
        case .decimal:
            if case .decimal = v { return value }
            return .attribute(v.doubleValue.map { .decimal(Decimal($0)) } ?? v)
        case .boolean:
            return .attribute(v.boolValue.map { .bool($0) } ?? v)
        case .date:
            if case .date = v { return value }
            return .attribute(v.doubleValue.map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? v)
        default:
            return value
        }
    }
}

extension AttributeValue {
    /// A date as seconds since the reference date (how stores keep dates).
    var dateReferenceValue: Double? {
        if case .date(let date) = self { return date.timeIntervalSinceReferenceDate }
        return nil
    }
}

/// The rows of a store by object ID, loaded once each: lets evaluation walk
/// relationships of rows.
final class StoreRowGraph: RowSource {
    let reads: StoreRowReads
    private var rows: [ManagedObjectID: RowSnapshot] = [:]

    init(reads: StoreRowReads) { self.reads = reads }
    convenience init(store: any PersistentStore) { self.init(reads: StoreRowReads(store)) }

    func remember(_ row: RowSnapshot) { rows[row.objectID] = row }

    /// The row of `id`, read from the store once; store errors are thrown.
    func loadRow(_ id: ManagedObjectID) throws -> RowSnapshot? {
        if let row = rows[id] { return row }
        guard let row = try reads.row(id) else { return nil }
        rows[id] = row
        return row
    }

    /// The row of `id` for evaluation, where a row that cannot be read is none.
    func row(_ id: ManagedObjectID) -> RowSnapshot? { (try? loadRow(id)) ?? nil }

    func relatedIDs(of row: RowSnapshot, _ relationship: RelationshipDescription) -> [ManagedObjectID] {
        if case .toMany(let ids?)? = row.value(named: relationship.name) { return ids }
        return (try? reads.relatedObjectIDs(row.objectID, relationship)) ?? []
    }
}

