import Foundation
import GRDB
import OpenCoreDataPredicates

/// The state of one fetch's translation: the table aliases handed out, the joins
/// of each query level, the variables of subqueries, the collations used. Key
/// paths are resolved here into operands (``SQLOperand``); the predicate
/// translation (`SQLPredicateTranslation.swift`) compares them.
///
/// The fetched entity's table is `t0`. A to-one hop is joined (`LEFT JOIN ZCOUNTRY
/// t1 ON t1.Z_PK = t0.ZCOUNTRY`) only when a column of the destination is needed:
/// its primary key is the foreign key column. To-many relationships become
/// correlated subselects with their own aliases and joins.
final class SQLTranslationContext {
    let translator: SQLFetchTranslator
    let fetch: StoreFetch
    var layout: any SQLStoreLayout { translator.layout }
    /// The fetched object (`SELF`): `t0`.
    let selfObject: SQLObjectReference
    /// The query level being written: its joins and variables.
    private(set) var scope: SQLScope
    private let rootScope: SQLScope
    private var aliasCount = 0
    /// The localized collations the statement uses.
    private(set) var collations: [SQLiteSortCollation] = []

    init(translator: SQLFetchTranslator, fetch: StoreFetch) throws {
        self.translator = translator
        self.fetch = fetch
        let entity = fetch.entity
        guard translator.layout.tableName(for: entity) != nil else {
            throw CoreDataError(.coreData, "The entity \(entity.name) is not in this SQLite store", entityName: entity.name)
        }
        selfObject = SQLObjectReference(primaryKey: "t0.Z_PK", entity: entity, entityNumber: .column("t0.Z_ENT"),
                                        alias: "t0", isNullable: false)
        rootScope = SQLScope(parent: nil)
        scope = rootScope
    }

    // MARK: Statement parts

    /// `ZTABLE t0` and the joins of the top level.
    func fromClause() -> SQLFragment {
        let table = layout.tableName(for: fetch.entity) ?? ""
        var text = SQLiteIdentifier.quoted(table) + " t0"
        for join in rootScope.joins { text += " " + join }
        return SQLFragment(text)
    }

    /// The entity restriction and the predicate, or nil when every row matches.
    func whereCondition() throws -> SQLFragment? {
        var parts: [SQLFragment] = []
        if let restriction = try entityRestriction() { parts.append(restriction) }
        if let predicate = fetch.predicate {
            let condition = try self.condition(predicate)
            if condition != .trueCondition { parts.append(condition) }
        }
        if parts.isEmpty { return nil }
        return SQLFragment.joined(parts, separator: " AND ")
    }

    /// `t0.Z_ENT IN (...)` when the table holds entities the fetch does not want.
    private func entityRestriction() throws -> SQLFragment? {
        let entity = fetch.entity
        let wanted = fetch.includesSubentities ? entity.selfAndDescendants : [entity]
        let all = entity.rootEntity.selfAndDescendants
        if Set(all.map(\.name)) == Set(wanted.map(\.name)) { return nil }
        var numbers: [Int] = []
        for member in wanted {
            guard let number = layout.entityNumber(for: member) else {
                throw CoreDataError(.coreData, "The entity \(member.name) has no entity number in this SQLite store",
                                    entityName: member.name)
            }
            numbers.append(number)
        }
        if numbers.count == 1 { return SQLFragment("t0.Z_ENT = \(numbers[0])") }
        return SQLFragment("t0.Z_ENT IN (" + numbers.map(String.init).joined(separator: ", ") + ")")
    }

    /// The `ORDER BY` list: each descriptor, then `tieBreaker` (`t0.Z_PK`; a
    /// grouped fetch orders ties by the first row of each group).
    func orderBy(_ descriptors: [CoreSortDescriptor], tieBreaker: String = "t0.Z_PK") throws -> SQLFragment {
        var terms: [SQLFragment] = []
        for descriptor in descriptors {
            if descriptor.hasComparator {
                throw SQLFetchTranslator.unsupported("the sort descriptor \(descriptor), which sorts with a closure", entity: fetch.entity)
            }
            guard let key = descriptor.key else {
                throw SQLFetchTranslator.unsupported("the sort descriptor \(descriptor), which compares the objects themselves", entity: fetch.entity)
            }
            let operand = try self.operand(.keyPath(key))
            guard case .scalar(let value, let domain) = operand else {
                throw SQLFetchTranslator.unsupported(
                    "the sort descriptor \(descriptor): '\(key)' is not an attribute (sort by a relationship's attribute or @count)",
                    entity: fetch.entity)
            }
            var term = value
            let dialect = translator.dialect
            switch domain {
            case .string where dialect == .postgreSQL && (descriptor.selector ?? .compare) == .compare:
                // Foundation's order: canonically decomposed, UTF-16 order (the store's functions).
                term = "ocd_order_key(ocd_fold(" + term + ", 0))"
            case .string where dialect == .postgreSQL && descriptor.selector == .caseInsensitiveCompare:
                term = "ocd_order_key(ocd_fold(" + term + ", 1))"
            case .string:
                term.text += " COLLATE " + collationName(for: descriptor)
            case .uri:
                term.text += dialect.binaryCollation
            default:
                break
            }
            term.text += descriptor.ascending ? " ASC" : " DESC"
            // NULL sorts before every value, as in memory (SQLite's own order).
            if dialect == .postgreSQL { term.text += descriptor.ascending ? " NULLS FIRST" : " NULLS LAST" }
            terms.append(term)
        }
        terms.append(SQLFragment(tieBreaker))
        return SQLFragment.joined(terms, separator: ", ")
    }

    private func collationName(for descriptor: CoreSortDescriptor) -> String {
        let selector = descriptor.selector ?? .compare
        switch selector {
        case .compare:
            return translator.dialect == .sqlite ? SQLiteFunctions.compareCollationName : "\"C\""
        case .caseInsensitiveCompare:
            return SQLiteFunctions.caseInsensitiveCollationName
        case .localizedCompare, .localizedCaseInsensitiveCompare, .localizedStandardCompare:
            let collation = SQLiteSortCollation(
                selector: selector, localeIdentifier: (descriptor.locale ?? .current).identifier)
            if !collations.contains(collation) { collations.append(collation) }
            return SQLiteIdentifier.quoted(collation.name)
        }
    }

    // MARK: Aliases, joins, scopes

    /// A new table alias: `t1`, `t2`...
    func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount)"
    }

    /// Runs `body` in a new query level (a subselect), whose joins and variables it
    /// collects, and returns its result with the level.
    func withSubscope<T>(_ body: (SQLScope) throws -> T) rethrows -> T {
        let outer = scope
        let inner = SQLScope(parent: outer)
        scope = inner
        defer { scope = outer }
        return try body(inner)
    }

    /// The alias of a row holding `object`, joining its table in the current query
    /// level if needed.
    func alias(of object: inout SQLObjectReference) throws -> String {
        if let alias = object.alias { return alias }
        if let alias = scope.joinAliases[object.primaryKey.text] {
            object.alias = alias
            return alias
        }
        guard let table = layout.tableName(for: object.entity) else {
            throw SQLFetchTranslator.unsupported("the entity \(object.entity.name), which is not in this store", entity: object.entity)
        }
        let alias = newAlias()
        scope.joins.append("LEFT JOIN \(SQLiteIdentifier.quoted(table)) \(alias) ON \(alias).Z_PK = \(object.primaryKey.text)")
        scope.joinAliases[object.primaryKey.text] = alias
        object.alias = alias
        return alias
    }

    /// The SQL of the `Z_ENT` of `object`.
    func entityNumberSQL(of object: inout SQLObjectReference) throws -> String {
        switch object.entityNumber {
        case .fixed(let number): return String(number)
        case .column(let column): return column
        case .joined: return try alias(of: &object) + ".Z_ENT"
        }
    }

    // MARK: Operands

    /// The operand an expression stands for.
    func operand(_ expression: CoreExpression) throws -> SQLOperand {
        if SQLConstantFolding.isConstant(expression) {
            return .constant(try SQLConstantFolding.value(of: expression))
        }
        switch expression {
        case .constant(let value):
            return .constant(value)
        case .evaluatedObject:
            return .object(selfObject)
        case .keyPath(let path):
            return try resolve(path, from: selfObject, keyPath: path)
        case .variable(let name):
            guard let object = scope.variable(name) else {
                throw PredicateEvaluationError.unboundVariable(name)
            }
            return .object(object)
        case let .member(base, path):
            if case let .subquery(collection, variable, predicate) = base {
                guard path == "@count" else {
                    throw SQLFetchTranslator.unsupported("SUBQUERY(...).\(path) (only SUBQUERY(...).@count)", entity: fetch.entity)
                }
                return try subqueryCount(collection: collection, variable: variable, predicate: predicate)
            }
            switch try operand(base) {
            case .object(let object):
                return try resolve(path, from: object, keyPath: "\(base).\(path)")
            case .toMany(let many):
                return try finish(many.appending(path))
            default:
                throw SQLFetchTranslator.unsupported("the key path '\(path)' applied to \(base)", entity: fetch.entity)
            }
        case .aggregate(let list):
            return .list(try list.map { try operand($0) })
        case let .function(name, arguments):
            return try arithmetic(name, arguments)
        case .subquery:
            throw SQLFetchTranslator.unsupported("a SUBQUERY used other than as SUBQUERY(...).@count", entity: fetch.entity)
        case .customFunction(_, let selector, _):
            throw SQLFetchTranslator.unsupported("FUNCTION(..., '\(selector)')", entity: fetch.entity)
        case .conditional:
            throw SQLFetchTranslator.unsupported("TERNARY() over key paths", entity: fetch.entity)
        case .index:
            throw SQLFetchTranslator.unsupported("the subscript in \(expression)", entity: fetch.entity)
        case .cast:
            throw SQLFetchTranslator.unsupported("CAST() of a key path (\(expression))", entity: fetch.entity)
        case .setOperation(let operation, _, _):
            throw SQLFetchTranslator.unsupported("\(operation.rawValue) over key paths", entity: fetch.entity)
        case .assignment:
            throw SQLFetchTranslator.unsupported("a variable assignment (\(expression))", entity: fetch.entity)
        case .anyKey:
            throw SQLFetchTranslator.unsupported("ANYKEY", entity: fetch.entity)
        }
    }

    /// Resolves a key path from an object: an attribute gives its column, a to-one
    /// an object, a to-many a member path (or a scalar for `@count`, `@sum`...).
    func resolve(
        _ path: String, from start: SQLObjectReference, keyPath: String, allowsToMany: Bool = true
    ) throws -> SQLOperand {
        let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var current = start
        for (index, key) in components.enumerated() {
            let isLast = index == components.count - 1
            if key.hasPrefix("@") {
                throw SQLFetchTranslator.unsupported(
                    "the collection operator \(key) in '\(keyPath)' (it needs a to-many relationship before it)",
                    entity: current.entity)
            }
            guard let property = current.entity.propertiesByName[key] else {
                if key == "objectID", isLast { return .object(current) }
                throw SQLFetchTranslator.unknownKey(key, in: current.entity, keyPath: keyPath)
            }
            if let attribute = property as? AttributeDescription {
                guard isLast else {
                    throw SQLFetchTranslator.unsupported(
                        "the key path '\(keyPath)', which continues after the attribute '\(key)'", entity: current.entity)
                }
                return .scalar(try column(of: attribute, in: &current, keyPath: keyPath), SQLDomain(attribute.attributeType))
            }
            guard let relationship = property as? RelationshipDescription else {
                throw SQLFetchTranslator.unsupported("the fetched property '\(key)' in '\(keyPath)'", entity: current.entity)
            }
            guard let destination = relationship.destinationEntity else {
                throw SQLFetchTranslator.unsupported("the relationship '\(key)' without a destination entity", entity: current.entity)
            }
            if relationship.isToMany {
                guard allowsToMany else {
                    throw SQLFetchTranslator.unsupported(
                        "the key path '\(keyPath)', which goes through more than one to-many relationship", entity: current.entity)
                }
                let rest = Array(components[(index + 1)...])
                return try finish(SQLToManyPath(owner: current, relationship: relationship, rest: rest, keyPath: keyPath))
            }
            let alias = try self.alias(of: &current)
            guard let fk = layout.columnName(for: relationship, in: current.entity) else {
                throw SQLFetchTranslator.unsupported("the relationship '\(key)', which has no column in this store", entity: current.entity)
            }
            let entityNumber: SQLObjectReference.EntityNumber
            if let column = layout.entityColumnName(for: relationship, in: current.entity) {
                entityNumber = .column(alias + "." + SQLiteIdentifier.quoted(column))
            } else if destination.subentities.isEmpty, let number = layout.entityNumber(for: destination) {
                entityNumber = .fixed(number)
            } else {
                entityNumber = .joined
            }
            current = SQLObjectReference(primaryKey: SQLFragment(alias + "." + SQLiteIdentifier.quoted(fk)),
                                         entity: destination, entityNumber: entityNumber, alias: nil, isNullable: true)
        }
        return .object(current)
    }

    /// The column of an attribute of an object, joining its row if needed.
    private func column(of attribute: AttributeDescription, in object: inout SQLObjectReference, keyPath: String) throws -> SQLFragment {
        guard let name = layout.columnName(for: attribute, in: object.entity) else {
            throw SQLFetchTranslator.unsupported(
                "'\(keyPath)': the attribute '\(attribute.name)' has no column (transient?)", entity: object.entity)
        }
        return SQLFragment(try alias(of: &object) + "." + SQLiteIdentifier.quoted(name))
    }

    /// A to-many path as an operand: a collection operator makes it a scalar
    /// subselect; otherwise it stays a collection of members.
    private func finish(_ path: SQLToManyPath) throws -> SQLOperand {
        guard let first = path.rest.first, first.hasPrefix("@") else { return .toMany(path) }
        return try aggregate(path, operator: first, rest: Array(path.rest.dropFirst()))
    }

    // MARK: To-many members

    /// The rows of a to-many relationship's destination, for a subselect in the
    /// current query level: `FROM` text, the condition linking them to their owner,
    /// and the member object (`tN`).
    struct Members {
        var from: String
        var link: SQLFragment
        var member: SQLObjectReference
    }

    func members(of path: SQLToManyPath) throws -> Members {
        let relationship = path.relationship
        let owner = path.owner
        guard let storage = layout.toManyStorage(for: relationship, in: owner.entity),
              let destination = relationship.destinationEntity,
              let destinationTable = layout.tableName(for: destination) else {
            throw SQLFetchTranslator.unsupported(
                "the to-many relationship '\(relationship.name)', which has no storage in this store", entity: owner.entity)
        }
        let ownerKey = owner.primaryKey
        let alias = newAlias()
        switch storage {
        case let .foreignKey(table, column, _):
            return Members(
                from: "\(SQLiteIdentifier.quoted(table)) \(alias)",
                link: SQLFragment("\(alias).\(SQLiteIdentifier.quoted(column)) = ") + ownerKey,
                member: SQLObjectReference(primaryKey: SQLFragment("\(alias).Z_PK"), entity: destination,
                                           entityNumber: .column("\(alias).Z_ENT"), alias: alias, isNullable: false))
        case let .joinTable(table, sourceColumn, destinationColumn, _):
            let join = "j" + alias.dropFirst()
            return Members(
                from: "\(SQLiteIdentifier.quoted(table)) \(join) JOIN \(SQLiteIdentifier.quoted(destinationTable)) \(alias) ON \(alias).Z_PK = \(join).\(SQLiteIdentifier.quoted(destinationColumn))",
                link: SQLFragment("\(join).\(SQLiteIdentifier.quoted(sourceColumn)) = ") + ownerKey,
                member: SQLObjectReference(primaryKey: SQLFragment("\(alias).Z_PK"), entity: destination,
                                           entityNumber: .column("\(alias).Z_ENT"), alias: alias, isNullable: false))
        }
    }

    /// `(SELECT <selection> FROM <members> <joins> WHERE <link> AND <conditions>)`,
    /// with `body` giving the conditions inside the subselect's level, given the
    /// member. A nullable owner (a to-one along the way) gives `NULL` rather than a
    /// count or a sum when it is `nil`, as the evaluator does.
    func subselect(
        _ path: SQLToManyPath, selection: (SQLObjectReference) throws -> SQLFragment,
        where body: (inout SQLObjectReference) throws -> [SQLFragment]
    ) throws -> SQLFragment {
        let members = try self.members(of: path)
        return try withSubscope { inner in
            var member = members.member
            let conditions = try body(&member)
            let selected = try selection(member)
            var sql = SQLFragment("SELECT ") + selected + SQLFragment(" FROM " + members.from)
            for join in inner.joins { sql.text += " " + join }
            sql += " WHERE " + SQLFragment.joined([members.link] + conditions, separator: " AND ")
            return sql.parenthesized
        }
    }

    /// `rel.@count`, `rel.@sum.attr`, `rel.@avg.attr`, `rel.@min.attr`, `rel.@max.attr`.
    private func aggregate(_ path: SQLToManyPath, operator name: String, rest: [String]) throws -> SQLOperand {
        let entity = path.owner.entity
        var resultDomain = SQLDomain.numeric
        let value: SQLFragment
        switch name {
        case "@count":
            guard rest.isEmpty else {
                throw SQLFetchTranslator.unsupported("'\(path.keyPath)' (@count must end the key path)", entity: entity)
            }
            value = try subselect(path, selection: { _ in "COUNT(*)" }, where: { _ in [] })
        case "@sum", "@avg", "@min", "@max":
            guard !rest.isEmpty else {
                throw SQLFetchTranslator.unsupported("'\(path.keyPath)' (\(name) needs a key path after it)", entity: entity)
            }
            var memberValue: SQLFragment = ""
            var domain = SQLDomain.numeric
            let subselect = try self.subselect(path, selection: { _ in
                switch name {
                case "@sum": return translator.dialect.total(memberValue)
                case "@avg": return "AVG(" + memberValue + ")"
                default:
                    var argument = memberValue
                    if domain == .string || domain == .uri { argument.text += translator.dialect.binaryCollation }
                    return (name == "@min" ? "MIN(" : "MAX(") + argument + ")"
                }
            }, where: { member in
                let resolved = try resolve(rest.joined(separator: "."), from: member, keyPath: path.keyPath,
                                           allowsToMany: false)
                guard case .scalar(let sql, let d) = resolved else {
                    throw SQLFetchTranslator.unsupported(
                        "'\(path.keyPath)' (\(name) needs an attribute; arithmetic and collection operators over to-many members are not translated)",
                        entity: entity)
                }
                memberValue = sql
                domain = d
                return []
            })
            if name == "@sum" || name == "@avg" {
                guard domain == .numeric else {
                    throw PredicateEvaluationError.typeMismatch("'\(name)' needs numbers, not the values of '\(path.keyPath)'")
                }
            } else {
                resultDomain = domain
            }
            value = subselect
        default:
            throw SQLFetchTranslator.unsupported("the collection operator \(name) in '\(path.keyPath)'", entity: entity)
        }
        if path.owner.isNullable {
            return .scalar("(CASE WHEN " + path.owner.primaryKey + " IS NULL THEN NULL ELSE " + value + " END)", resultDomain)
        }
        return .scalar(value, resultDomain)
    }

    /// `SUBQUERY(collection, $variable, predicate).@count`.
    private func subqueryCount(collection: CoreExpression, variable: String, predicate: CorePredicate) throws -> SQLOperand {
        guard case .toMany(let path) = try operand(collection), path.rest.isEmpty else {
            throw SQLFetchTranslator.unsupported(
                "SUBQUERY over \(collection) (the collection must be a to-many relationship)", entity: fetch.entity)
        }
        let count = try subselect(path, selection: { _ in "COUNT(*)" }, where: { member in
            scope.variables[variable] = member
            let condition = try self.condition(predicate)
            return condition == .trueCondition ? [] : [condition]
        })
        if path.owner.isNullable {
            return .scalar("(CASE WHEN " + path.owner.primaryKey + " IS NULL THEN NULL ELSE " + count + " END)", .numeric)
        }
        return .scalar(count, .numeric)
    }

    // MARK: Arithmetic

    private func arithmetic(_ name: String, _ arguments: [CoreExpression]) throws -> SQLOperand {
        let symbol: String
        switch name {
        case PredicateFunction.add.rawValue: symbol = "+"
        case PredicateFunction.subtract.rawValue: symbol = "-"
        case PredicateFunction.multiply.rawValue: symbol = "*"
        // divide:by: gives a floating-point quotient, as NSExpression's does.
        case PredicateFunction.divide.rawValue: symbol = "* 1.0 /"
        case PredicateFunction.modulus.rawValue: symbol = "%"
        case PredicateFunction.trunc.rawValue, PredicateFunction.length.rawValue:
            return try unaryFunction(name, arguments)
        default:
            throw SQLFetchTranslator.unsupported("the function \(name)() over key paths", entity: fetch.entity)
        }
        var terms: [SQLFragment] = []
        for argument in arguments {
            switch try operand(argument) {
            case .scalar(let sql, let domain):
                guard domain == .numeric else {
                    throw PredicateEvaluationError.typeMismatch("'\(name)' needs numbers, not \(argument)")
                }
                terms.append(sql)
            case .constant(let value):
                if value.isNull {
                    terms.append("NULL")
                } else if let number = SQLiteValueEncoding.numericDatabaseValue(value) {
                    terms.append(.argument(number))
                } else {
                    throw PredicateEvaluationError.typeMismatch("'\(name)' needs numbers, not \(argument)")
                }
            case .toMany:
                throw SQLFetchTranslator.unsupported("arithmetic on the to-many key path \(argument)", entity: fetch.entity)
            default:
                throw SQLFetchTranslator.unsupported("arithmetic on \(argument)", entity: fetch.entity)
            }
        }
        guard terms.count == 2 else {
            throw SQLFetchTranslator.unsupported("\(name) with \(terms.count) arguments", entity: fetch.entity)
        }
        return .scalar(("(" + terms[0] + SQLFragment(" \(symbol) ") + terms[1] + ")"), .numeric)
    }

    /// `trunc:` (toward zero, as an integer) and `length:` (of a string, in
    /// characters) over a key path.
    private func unaryFunction(_ name: String, _ arguments: [CoreExpression]) throws -> SQLOperand {
        guard arguments.count == 1 else {
            throw SQLFetchTranslator.unsupported("\(name) with \(arguments.count) arguments", entity: fetch.entity)
        }
        let isLength = name == PredicateFunction.length.rawValue
        let term: SQLFragment
        switch try operand(arguments[0]) {
        case .scalar(let sql, let domain):
            guard isLength ? domain == .string : domain == .numeric else {
                throw PredicateEvaluationError.typeMismatch("'\(name)' does not apply to \(arguments[0])")
            }
            term = sql
        case .constant(let value):
            if value.isNull {
                term = "NULL"
            } else if isLength, case .string(let string) = value {
                term = .argument(string.databaseValue)
            } else if !isLength, let number = SQLiteValueEncoding.numericDatabaseValue(value) {
                term = .argument(number)
            } else {
                throw PredicateEvaluationError.typeMismatch("'\(name)' does not apply to \(arguments[0])")
            }
        default:
            throw SQLFetchTranslator.unsupported("\(name) of \(arguments[0])", entity: fetch.entity)
        }
        return .scalar(isLength ? "LENGTH(" + term + ")" : translator.dialect.truncated(term), .numeric)
    }
}

// MARK: - Operands and scopes

/// One query level of a translation (the top level or a subselect): its joins and
/// the subquery variables bound in it.
final class SQLScope {
    let parent: SQLScope?
    /// `LEFT JOIN ...` clauses, in order.
    var joins: [String] = []
    /// The alias joined for each primary-key expression.
    var joinAliases: [String: String] = [:]
    /// Subquery variables bound at this level.
    var variables: [String: SQLObjectReference] = [:]

    init(parent: SQLScope?) {
        self.parent = parent
    }

    /// A variable bound at this level or an enclosing one.
    func variable(_ name: String) -> SQLObjectReference? {
        variables[name] ?? parent?.variable(name)
    }
}

/// An object a key path reaches: `SELF`, a to-one destination, a to-many member.
struct SQLObjectReference {
    /// Where the object's entity number comes from.
    enum EntityNumber {
        /// Always this entity (the destination has no subentities).
        case fixed(Int)
        /// A column: `t0.Z_ENT`, a to-one's `Z<n>_<REL>`.
        case column(String)
        /// The `Z_ENT` of the object's row, once joined.
        case joined
    }

    /// The SQL of the object's primary key (a foreign key column for a to-one).
    var primaryKey: SQLFragment
    /// The entity the key path declares (the object may be of a subentity).
    var entity: EntityDescription
    var entityNumber: EntityNumber
    /// The alias of the object's row, once joined.
    var alias: String?
    /// Whether the object may be `nil` (reached through a to-one).
    var isNullable: Bool
}

/// A key path through a to-many relationship: its owner, the relationship and the
/// keys after it.
struct SQLToManyPath {
    var owner: SQLObjectReference
    var relationship: RelationshipDescription
    var rest: [String]
    var keyPath: String

    func appending(_ path: String) -> SQLToManyPath {
        var copy = self
        copy.rest += path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        copy.keyPath += "." + path
        return copy
    }
}

/// What an expression stands for in SQL.
enum SQLOperand {
    /// A value known at translation time (`nil` and arrays included).
    case constant(AttributeValue)
    /// A value computed by SQL: a column, a subselect, arithmetic.
    case scalar(SQLFragment, SQLDomain)
    /// An object: `SELF`, a to-one relationship, a subquery variable.
    case object(SQLObjectReference)
    /// The members of a to-many relationship (or their values along a key path).
    case toMany(SQLToManyPath)
    /// A list of expressions that are not all constants: `{a, b}`.
    case list([SQLOperand])
}

/// The kinds of values that compare with each other: values of different domains
/// are never equal and cannot be ordered, as in memory.
enum SQLDomain: Hashable {
    case numeric, string, date, uuid, uri, binary
    /// Transformable, composite, object ID and undefined attributes: only `nil`
    /// tests translate.
    case opaque

    init(_ type: AttributeType) {
        switch type {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: self = .numeric
        case .string: self = .string
        case .date: self = .date
        case .uuid: self = .uuid
        case .uri: self = .uri
        case .binaryData: self = .binary
        case .transformable, .objectID, .composite, .undefined: self = .opaque
        }
    }

    /// The domain of a constant, nil for `nil`, arrays and dictionaries.
    init?(_ value: AttributeValue) {
        switch value {
        case .bool, .int, .double, .decimal: self = .numeric
        case .string: self = .string
        case .date: self = .date
        case .uuid: self = .uuid
        case .uri: self = .uri
        case .data: self = .binary
        case .null, .array, .dictionary: return nil
        }
    }
}

/// Expressions without key paths, computed once by the evaluator.
enum SQLConstantFolding {
    /// Whether the expression depends on no object nor variable.
    static func isConstant(_ expression: CoreExpression) -> Bool {
        switch expression {
        case .constant: return true
        case .evaluatedObject, .keyPath, .variable, .subquery, .assignment, .anyKey: return false
        case .member(let base, _): return isConstant(base)
        case .aggregate(let list): return list.allSatisfy(isConstant)
        case .function(let name, let arguments):
            return PredicateFunction(rawValue: name) != nil && arguments.allSatisfy(isConstant)
        case .customFunction: return false
        case let .conditional(predicate, a, b): return isConstant(predicate) && isConstant(a) && isConstant(b)
        case let .index(base, subscription):
            if case .expression(let e) = subscription, !isConstant(e) { return false }
            return isConstant(base)
        case .cast(let e, _): return isConstant(e)
        case let .setOperation(_, a, b): return isConstant(a) && isConstant(b)
        }
    }

    static func isConstant(_ predicate: CorePredicate) -> Bool {
        switch predicate {
        case .constant: return true
        case .and(let list), .or(let list): return list.allSatisfy(isConstant)
        case .not(let p): return isConstant(p)
        case .comparison(let c): return isConstant(c.leftExpression) && isConstant(c.rightExpression)
        }
    }

    /// The value of a constant expression.
    static func value(of expression: CoreExpression) throws -> AttributeValue {
        if case .constant(let value) = expression { return value }
        let result = try expression.value()
        guard let value = result.attributeValue else {
            throw SQLFetchTranslator.unsupported("the expression \(expression), whose value is not a constant")
        }
        return value
    }
}
