import Foundation
import GRDB
import OpenCoreDataPredicates

/// The `SET` clause of a batch update done in one SQL `UPDATE` (SQLite's and
/// PostgreSQL's stores): constants bound as their attribute stores them, computed
/// values as arithmetic SQL evaluates exactly as the evaluator would.
///
/// ```swift
/// if let update = try translator.batchUpdate(of: entity, table: "ZMOOD", values: [ratingIndex: .constant(.int(5))],
///                                            encode: encode) {
///     // UPDATE ZMOOD SET ZRATING = ? , Z_OPT = Z_OPT + 1 WHERE Z_PK IN (...)
/// }
/// ```
package struct SQLBatchUpdate {
    /// One `column = value` term per changed attribute.
    package var assignments: [SQLFragment]
    /// The integer columns SQL computes, quoted, with the range their attribute
    /// allows: a value outside it fails the request, as it does in memory.
    package var checkedRanges: [(column: String, range: ClosedRange<Int64>)]
}

extension SQLFetchTranslator {
    /// The assignments of a batch update of `entity`'s rows in `table`, or nil
    /// when a value cannot be computed by SQL exactly as in memory (the store then
    /// updates row by row): only attributes, constants of their type, and `+`,
    /// `-`, `*` over numeric key paths of the entity (integers from integers).
    ///
    /// - Parameters:
    ///   - entity: The updated entity.
    ///   - table: Its table (computed values read the row being updated through it).
    ///   - values: The new values, by index in the entity's `allProperties`.
    ///   - encode: How the store writes an attribute's value.
    package func batchUpdate(of entity: EntityDescription, table: String, values: [Int: CoreExpression],
                             encode: (AttributeValue, AttributeDescription) throws -> DatabaseValue) throws -> SQLBatchUpdate? {
        guard !values.isEmpty else { return nil }
        var update = SQLBatchUpdate(assignments: [], checkedRanges: [])
        for (index, expression) in values.sorted(by: { $0.key < $1.key }) {
            guard index < entity.allProperties.count, let attribute = entity.allProperties[index] as? AttributeDescription,
                  let column = layout.columnName(for: attribute, in: entity) else { return nil }
            let quoted = SQLiteIdentifier.quoted(column)
            if case .constant(let value) = expression {
                let typed = try StoreBatchExecution.typed(value, attribute)
                update.assignments.append(SQLFragment("\(quoted) = ?", arguments: [try encode(typed, attribute)]))
                continue
            }
            let type = attribute.attributeType
            guard SQLDomain(type) == .numeric, type != .decimal, type != .boolean,
                  Self.isSQLArithmetic(expression, integral: type.integerRange != nil, entity: entity) else { return nil }
            let context = try SQLTranslationContext(translator: self, fetch: StoreFetch(entity: entity))
            guard case .scalar(let value, .numeric)? = try? context.operand(expression) else { return nil }
            var term = SQLFragment("\(quoted) = (SELECT ") + value + " FROM " + context.fromClause()
            term += SQLFragment(" WHERE t0.Z_PK = \(SQLiteIdentifier.quoted(table)).Z_PK)")
            update.assignments.append(term)
            if let range = type.integerRange { update.checkedRanges.append((quoted, range)) }
        }
        return update
    }

    /// Whether an expression is `+`, `-`, `*` over numeric key paths of the entity
    /// and numeric constants (integers only when `integral`).
    static func isSQLArithmetic(_ expression: CoreExpression, integral: Bool, entity: EntityDescription) -> Bool {
        switch expression {
        case .constant(let value):
            switch value {
            case .int: return true
            case .double: return !integral
            default: return false
            }
        case .keyPath(let path):
            guard let attribute = entity.propertiesByName[path] as? AttributeDescription else { return false }
            let type = attribute.attributeType
            if integral { return type.integerRange != nil }
            return SQLDomain(type) == .numeric && type != .decimal
        case let .function(name, arguments):
            guard [PredicateFunction.add.rawValue, PredicateFunction.subtract.rawValue, PredicateFunction.multiply.rawValue].contains(name),
                  arguments.count == 2 else { return false }
            return arguments.allSatisfy { isSQLArithmetic($0, integral: integral, entity: entity) }
        default:
            return false
        }
    }
}
