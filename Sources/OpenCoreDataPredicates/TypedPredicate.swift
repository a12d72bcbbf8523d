import Foundation

/// A type whose key paths name properties a predicate can query: what turns
/// `\Mood.date` in a `#Predicate` or a `SortDescriptor` into the key `date`.
///
/// Managed object classes conform (the key paths of their `@Managed`
/// properties, made known by `@ManagedEntity`). Conform your own
/// ``KeyValueCoding`` types to query them with typed predicates:
///
/// ```swift
/// final class Person: KeyValueCoding, PredicateKeyPathNaming {
///     var name = ""
///     func value(forKey key: String) -> Any? { key == "name" ? name : nil }
///     static func predicateKey(for keyPath: AnyKeyPath) -> String? {
///         keyPath == \Person.name ? "name" : nil
///     }
/// }
/// let p = try CorePredicate(#Predicate<Person> { $0.name == "Ada" })
/// p.predicateFormat   // name == "Ada"
/// ```
public protocol PredicateKeyPathNaming {
    /// The key of the property `keyPath` reads, or nil when it reads none (a
    /// computed property, a property the model does not have).
    static func predicateKey(for keyPath: AnyKeyPath) -> String?
}

/// Why a typed predicate or sort descriptor has no Core Data equivalent.
///
/// ```swift
/// do {
///     _ = try CorePredicate(#Predicate<Mood> { $0.computedScore > 3 })
/// } catch let error as TypedPredicateError {
///     print(error)   // The key path \Mood.computedScore names no modeled property...
/// }
/// ```
public enum TypedPredicateError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An expression type of Foundation's predicates that has no counterpart in
    /// Core Data's predicate language (the type's name, then why).
    case unsupportedExpression(String, String)
    /// A key path that names no property the predicate can query.
    case unknownKeyPath(String)
    /// A captured value of a type that is not a predicate constant.
    case unsupportedValue(String)

    public var description: String {
        switch self {
        case let .unsupportedExpression(type, reason):
            return "The predicate expression \(type) has no Core Data equivalent: \(reason)"
        case .unknownKeyPath(let path):
            return "The key path \(path) names no modeled property: key paths in typed predicates and sort descriptors "
                + "must read @Managed properties of an @ManagedEntity class (or a type conforming to PredicateKeyPathNaming)"
        case .unsupportedValue(let type):
            return "A value of type \(type) cannot be a predicate constant (give a scalar, a date, data, a UUID, a URL, "
                + "an object, an object ID, an enum with a raw value, or a collection of them)"
        }
    }
}

extension CorePredicate {
    /// The Core Data predicate equivalent to Foundation's typed predicate:
    /// `NSPredicate(_: Predicate<Root>)`.
    ///
    /// ```swift
    /// let p = try CorePredicate(#Predicate<Mood> { $0.rating > 3 && $0.name.contains("a") })
    /// p.predicateFormat   // rating > 3 AND name CONTAINS "a"
    /// ```
    ///
    /// Key paths become keys (through ``PredicateKeyPathNaming``), captured values
    /// constants (objects and object IDs their identity), and each expression its
    /// counterpart: comparisons, `&&`, `||`, `!`, arithmetic, `?:` and `??` (as
    /// alternatives joined by `OR`), `?.` (key paths through to-one
    /// relationships), `contains`/`starts(with:)` on strings (`CONTAINS`,
    /// `BEGINSWITH`), `contains` on collections (`IN`), `contains(where:)`,
    /// `allSatisfy`, `filter` and `count`/`isEmpty`/`first`/`last` on to-many
    /// relationships (`SUBQUERY`, `@count`, `FIRST`, `LAST`), ranges (`BETWEEN`).
    ///
    /// - Throws: ``TypedPredicateError`` naming the first expression, key path or
    ///   value that has no equivalent; nothing is left to evaluate in memory.
    public init<Root>(_ predicate: Predicate<Root>) throws {
        var translator = TypedPredicateTranslator()
        translator.bind(predicate.variable.key, to: .evaluatedObject)
        self = try translator.predicate(predicate.expression)
    }
}

extension CoreSortDescriptor {
    /// The Core Data sort descriptor equivalent to Foundation's typed one:
    /// `NSSortDescriptor(_: SortDescriptor<Compared>)`.
    ///
    /// ```swift
    /// let s = try CoreSortDescriptor(SortDescriptor(\Mood.date, order: .reverse))
    /// s.description   // (date, descending, compare:)
    /// ```
    ///
    /// The key path becomes its key (``PredicateKeyPathNaming``), the order
    /// `ascending`, the string comparator a selector: `.lexical` is `compare:`;
    /// where Foundation has them, `.localizedStandard` is
    /// `localizedStandardCompare:` and `.localized` is `localizedCompare:`.
    ///
    /// - Throws: ``TypedPredicateError/unknownKeyPath(_:)`` for a key path that
    ///   names no property, ``TypedPredicateError/unsupportedExpression(_:_:)``
    ///   for a descriptor without a key path or with another comparator.
    public init<Compared>(_ descriptor: SortDescriptor<Compared>) throws {
        guard let keyPath = descriptor.keyPath else {
            throw TypedPredicateError.unsupportedExpression(
                "SortDescriptor<\(Compared.self)>", "it compares with a comparator rather than a key path")
        }
        guard let key = TypedPredicateTranslator.key(for: keyPath, root: Compared.self) else {
            throw TypedPredicateError.unknownKeyPath(String(describing: keyPath))
        }
        var selector = SortSelector.compare
        if var comparator = descriptor.stringComparator {
            comparator.order = .forward
            if comparator == .lexical {
                selector = .compare
            } else {
                #if canImport(Darwin)
                if comparator == .localizedStandard {
                    selector = .localizedStandardCompare
                } else if comparator == .localized {
                    selector = .localizedCompare
                } else {
                    throw TypedPredicateError.unsupportedExpression(
                        "SortDescriptor<\(Compared.self)>", "its string comparator has no sort selector")
                }
                #else
                throw TypedPredicateError.unsupportedExpression(
                    "SortDescriptor<\(Compared.self)>", "its string comparator has no sort selector")
                #endif
            }
        }
        self.init(key: key, ascending: descriptor.order == .forward, selector: selector)
    }
}

// MARK: - The translation

/// One possible value of a typed expression: `value` when `condition` holds (nil:
/// always). `?:` and `??` have several; a comparison of them is the disjunction
/// of the comparisons of each pair under both conditions, which every store can
/// run (Core Data's `TERNARY` is not translatable to SQL over key paths).
struct TypedBranch {
    var condition: CorePredicate?
    var value: CoreExpression

    init(_ value: CoreExpression, when condition: CorePredicate? = nil) {
        self.value = value
        self.condition = condition
    }

    func adding(_ extra: CorePredicate?) -> TypedBranch {
        TypedBranch(value, when: TypedBranch.both(extra, condition))
    }

    static func both(_ a: CorePredicate?, _ b: CorePredicate?) -> CorePredicate? {
        switch (a, b) {
        case (nil, nil): return nil
        case (let x?, nil), (nil, let x?): return x
        case let (x?, y?): return x && y
        }
    }
}

/// Walks Foundation's predicate expression tree (each supported node type
/// conforms to ``TypedPredicateNode``) and builds the Core Data predicate.
struct TypedPredicateTranslator {
    private var bindings: [PredicateExpressions.VariableID: [TypedBranch]] = [:]
    private var variableCount = 0

    mutating func bind(_ variable: PredicateExpressions.VariableID, to expression: CoreExpression) {
        bindings[variable] = [TypedBranch(expression)]
    }

    mutating func bind(_ variable: PredicateExpressions.VariableID, to branches: [TypedBranch]) {
        bindings[variable] = branches
    }

    func bound(_ variable: PredicateExpressions.VariableID) throws -> [TypedBranch] {
        guard let branches = bindings[variable] else {
            throw TypedPredicateError.unsupportedExpression("Variable", "a variable that no enclosing expression binds")
        }
        return branches
    }

    /// A fresh name for a `SUBQUERY` variable.
    mutating func newVariableName() -> String {
        variableCount += 1
        return variableCount == 1 ? "x" : "x\(variableCount)"
    }

    static func node(_ expression: Any) throws -> any TypedPredicateNode {
        guard let node = expression as? any TypedPredicateNode else {
            throw TypedPredicateError.unsupportedExpression(
                TypedPredicateTranslator.typeName(of: expression), "Core Data's predicate language has no counterpart")
        }
        return node
    }

    static func typeName(of value: Any) -> String {
        let name = String(describing: type(of: value))
        return name.hasPrefix("PredicateExpressions.") ? String(name.dropFirst("PredicateExpressions.".count)) : name
    }

    mutating func predicate(_ expression: Any) throws -> CorePredicate {
        try Self.node(expression).typedPredicate(in: &self)
    }

    mutating func value(_ expression: Any) throws -> [TypedBranch] {
        try Self.node(expression).typedValue(in: &self)
    }

    /// The single, unconditional expression of an operand that cannot have
    /// alternatives (a `SUBQUERY` collection).
    mutating func single(_ expression: Any, in context: String) throws -> CoreExpression {
        let branches = try value(expression)
        guard branches.count == 1, branches[0].condition == nil else {
            throw TypedPredicateError.unsupportedExpression(context, "its collection is chosen by ?: or ??")
        }
        return branches[0].value
    }

    /// `lhs op rhs` over every pair of alternatives.
    static func compare(
        _ lhs: [TypedBranch], _ op: ComparisonOperator, _ rhs: [TypedBranch], options: ComparisonOptions = []
    ) -> CorePredicate {
        var alternatives: [CorePredicate] = []
        for l in lhs {
            for r in rhs {
                let comparison = CorePredicate.comparison(ComparisonPredicate(l.value, op, r.value, options: options))
                if let condition = TypedBranch.both(l.condition, r.condition) {
                    alternatives.append(condition && comparison)
                } else {
                    alternatives.append(comparison)
                }
            }
        }
        return alternatives.count == 1 ? alternatives[0] : .or(alternatives)
    }

    /// A function of the operands' alternatives.
    static func combine(
        _ lhs: [TypedBranch], _ rhs: [TypedBranch], _ make: (CoreExpression, CoreExpression) -> CoreExpression
    ) throws -> [TypedBranch] {
        try bounded(lhs.flatMap { l in rhs.map { r in TypedBranch(make(l.value, r.value), when: TypedBranch.both(l.condition, r.condition)) } })
    }

    /// Whether an expression is a key path (nil when any object on the way is nil).
    static func isKeyPath(_ expression: CoreExpression) -> Bool {
        switch expression {
        case .keyPath, .evaluatedObject, .variable: return true
        case .member(let base, _):
            if case .subquery = base { return false }
            return isKeyPath(base)
        default: return false
        }
    }

    /// The most alternatives an expression may have: each `??` or `?:` doubles
    /// them, and every alternative binds its own values in SQL.
    static let maximumAlternatives = 64

    static func bounded(_ branches: [TypedBranch]) throws -> [TypedBranch] {
        guard branches.count <= maximumAlternatives else {
            throw TypedPredicateError.unsupportedExpression(
                "NilCoalesce/Conditional", "more than \(maximumAlternatives) alternatives (nested ?? and ?: multiply them)")
        }
        return branches
    }

    /// `base.key`, with key paths from the evaluated object kept as plain key paths
    /// (as the format parser writes them).
    static func member(_ base: CoreExpression, _ key: String) -> CoreExpression {
        switch base {
        case .evaluatedObject: return .keyPath(key)
        case .keyPath(let path): return .keyPath(path + "." + key)
        case let .member(inner, path):
            if case .subquery = inner { return .member(base, keyPath: key) }
            return .member(inner, keyPath: path + "." + key)
        default: return .member(base, keyPath: key)
        }
    }

    /// The key a key path of `root` names.
    static func key(for keyPath: AnyKeyPath, root: Any.Type) -> String? {
        (root as? any PredicateKeyPathNaming.Type)?.predicateKey(for: keyPath)
    }

    /// The constant a captured value stands for.
    static func constant(_ value: Any) throws -> AttributeValue {
        if let optional = value as? any TypedOptional {
            guard let wrapped = optional.typedWrapped else { return .null }
            return try constant(wrapped)
        }
        if let argument = value as? any FormatArgument { return argument.formatArgumentValue }
        if let raw = value as? any RawRepresentable { return try constant(raw.rawValue) }
        if value is any StringProtocol { return .string(String(describing: value)) }
        if let sequence = value as? any Sequence {
            var members: [AttributeValue] = []
            for member in sequence { members.append(try constant(member)) }
            return .array(members)
        }
        throw TypedPredicateError.unsupportedValue(String(describing: type(of: value)))
    }
}

/// `Optional`, seen through an existential.
protocol TypedOptional {
    var typedWrapped: Any? { get }
}

extension Optional: TypedOptional {
    var typedWrapped: Any? {
        switch self {
        case .none: return nil
        case .some(let wrapped): return wrapped
        }
    }
}

/// An expression type of Foundation's predicates that has a Core Data
/// counterpart: as a value, or as a predicate (a Boolean expression).
protocol TypedPredicateNode {
    /// The alternatives of the expression's value.
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch]
    /// The expression as a predicate; by default its value compared with `true`.
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate
}

extension TypedPredicateNode {
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        TypedPredicateTranslator.compare(try typedValue(in: &translator), .equalTo, [TypedBranch(.constant(.bool(true)))])
    }

    /// For nodes that are predicates only.
    func notAValue() -> TypedPredicateError {
        .unsupportedExpression(TypedPredicateTranslator.typeName(of: self),
                               "a Boolean test used as a value (compare it, or combine it with && and ||)")
    }
}

// MARK: Leaves

extension PredicateExpressions.Variable: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try translator.bound(key)
    }
}

extension PredicateExpressions.Value: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        [TypedBranch(.constant(try TypedPredicateTranslator.constant(value)))]
    }

    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        if let flag = value as? Bool { return .constant(flag) }
        return TypedPredicateTranslator.compare(try typedValue(in: &translator), .equalTo, [TypedBranch(.constant(.bool(true)))])
    }
}

extension PredicateExpressions.NilLiteral: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        [TypedBranch(.constant(.null))]
    }
}

extension PredicateExpressions.KeyPath: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        let base = try translator.value(root)
        if let kind {
            let isString = Root.Output.self is any StringProtocol.Type
            return try base.map { branch in
                let value: CoreExpression
                switch kind {
                case .collectionCount where isString:
                    // Swift counts characters (grapheme clusters); SQLite's LENGTH
                    // counts code points and Foundation's length UTF-16 units.
                    throw TypedPredicateError.unsupportedExpression(
                        TypedPredicateTranslator.typeName(of: self),
                        "count of a string (Swift counts characters, Core Data's length: UTF-16 units)")
                case .collectionCount:
                    value = TypedPredicateTranslator.member(branch.value, "@count")
                case .collectionFirst where !isString:
                    value = .index(branch.value, .first)
                case .bidirectionalCollectionLast where !isString:
                    value = .index(branch.value, .last)
                case .collectionIsEmpty:
                    throw notAValue()
                default:
                    throw TypedPredicateError.unsupportedExpression(
                        TypedPredicateTranslator.typeName(of: self), "\(keyPath) of a string")
                }
                return TypedBranch(value, when: branch.condition)
            }
        }
        guard let key = TypedPredicateTranslator.key(for: keyPath, root: Root.Output.self) else {
            throw TypedPredicateError.unknownKeyPath(String(describing: keyPath))
        }
        return base.map { TypedBranch(TypedPredicateTranslator.member($0.value, key), when: $0.condition) }
    }

    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        if kind == .collectionIsEmpty {
            let base = try translator.value(root)
            let isString = Root.Output.self is any StringProtocol.Type
            if isString {
                return TypedPredicateTranslator.compare(base, .equalTo, [TypedBranch(.constant(.string("")))])
            }
            let counts = base.map { TypedBranch(TypedPredicateTranslator.member($0.value, "@count"), when: $0.condition) }
            return TypedPredicateTranslator.compare(counts, .equalTo, [TypedBranch(.constant(.int(0)))])
        }
        return TypedPredicateTranslator.compare(try typedValue(in: &translator), .equalTo, [TypedBranch(.constant(.bool(true)))])
    }
}

// MARK: Logic

extension PredicateExpressions.Conjunction: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        try translator.predicate(lhs) && translator.predicate(rhs)
    }
}

extension PredicateExpressions.Disjunction: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        try translator.predicate(lhs) || translator.predicate(rhs)
    }
}

extension PredicateExpressions.Negation: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        .not(try translator.predicate(wrapped))
    }
}

extension PredicateExpressions.Conditional: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        let condition = try translator.predicate(test)
        let whenTrue = try translator.value(trueBranch).map { $0.adding(condition) }
        let whenFalse = try translator.value(falseBranch).map { $0.adding(.not(condition)) }
        return try TypedPredicateTranslator.bounded(whenTrue + whenFalse)
    }

    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        let condition = try translator.predicate(test)
        let whenTrue = try translator.predicate(trueBranch)
        let whenFalse = try translator.predicate(falseBranch)
        return (condition && whenTrue) || (.not(condition) && whenFalse)
    }
}

// MARK: Comparisons

/// `lhs == rhs` or `lhs != rhs`: of values, or of two Boolean tests.
private func equality(
    _ lhs: Any, _ rhs: Any, equal: Bool, operandsAreBool: Bool, in translator: inout TypedPredicateTranslator
) throws -> CorePredicate {
    do {
        let l = try translator.value(lhs)
        let r = try translator.value(rhs)
        return TypedPredicateTranslator.compare(l, equal ? .equalTo : .notEqualTo, r)
    } catch let error as TypedPredicateError {
        // Two Boolean tests (`($0.a > 1) == $0.flag`): equal when both hold or neither.
        guard operandsAreBool else { throw error }
        let l = try translator.predicate(lhs)
        let r = try translator.predicate(rhs)
        let same = (l && r) || (.not(l) && .not(r))
        return equal ? same : .not(same)
    }
}

extension PredicateExpressions.Equal: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        try equality(lhs, rhs, equal: true, operandsAreBool: LHS.Output.self == Bool.self, in: &translator)
    }
}

extension PredicateExpressions.NotEqual: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        try equality(lhs, rhs, equal: false, operandsAreBool: LHS.Output.self == Bool.self, in: &translator)
    }
}

extension PredicateExpressions.Comparison: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        let operatorType: ComparisonOperator
        switch op {
        case .lessThan: operatorType = .lessThan
        case .lessThanOrEqual: operatorType = .lessThanOrEqualTo
        case .greaterThan: operatorType = .greaterThan
        case .greaterThanOrEqual: operatorType = .greaterThanOrEqualTo
        @unknown default:
            throw TypedPredicateError.unsupportedExpression(TypedPredicateTranslator.typeName(of: self), "the operator \(op)")
        }
        return TypedPredicateTranslator.compare(try translator.value(lhs), operatorType, try translator.value(rhs))
    }
}

// MARK: Arithmetic

extension PredicateExpressions.Arithmetic: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        let function: String
        switch op {
        case .add: function = "add:to:"
        case .subtract: function = "from:subtract:"
        case .multiply: function = "multiply:by:"
        @unknown default:
            throw TypedPredicateError.unsupportedExpression(TypedPredicateTranslator.typeName(of: self), "the operator \(op)")
        }
        return try TypedPredicateTranslator.combine(try translator.value(lhs), try translator.value(rhs)) {
            .function(function, arguments: [$0, $1])
        }
    }
}

extension PredicateExpressions.FloatDivision: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try TypedPredicateTranslator.combine(try translator.value(lhs), try translator.value(rhs)) {
            .function("divide:by:", arguments: [$0, $1])
        }
    }
}

extension PredicateExpressions.IntDivision: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        // Swift's integer division truncates: trunc(a / b).
        try TypedPredicateTranslator.combine(try translator.value(lhs), try translator.value(rhs)) {
            .function("trunc:", arguments: [.function("divide:by:", arguments: [$0, $1])])
        }
    }
}

extension PredicateExpressions.IntRemainder: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try TypedPredicateTranslator.combine(try translator.value(lhs), try translator.value(rhs)) {
            .function("modulus:by:", arguments: [$0, $1])
        }
    }
}

extension PredicateExpressions.UnaryMinus: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try translator.value(wrapped).map {
            TypedBranch(.function("from:subtract:", arguments: [.constant(.int(0)), $0.value]), when: $0.condition)
        }
    }
}

// MARK: Optionals

extension PredicateExpressions.NilCoalesce: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        let fallback = try translator.value(rhs)
        var branches: [TypedBranch] = []
        for branch in try translator.value(lhs) {
            let isNil = CorePredicate.comparison(ComparisonPredicate(branch.value, .equalTo, .constant(.null)))
            branches.append(branch.adding(.not(isNil)))
            branches += fallback.map { $0.adding(TypedBranch.both(branch.condition, isNil)) }
        }
        return try TypedPredicateTranslator.bounded(branches)
    }
}

extension PredicateExpressions.OptionalFlatMap: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        // A key path through nil is nil in Core Data, as `?.` gives nil in Swift.
        // The transform runs only when the wrapped value is not nil; otherwise
        // the result is nil (a transform like `{ $0.nickname ?? "none" }` must not
        // make a value from a nil relationship).
        var branches: [TypedBranch] = []
        for branch in try translator.value(wrapped) {
            let isNil = CorePredicate.comparison(ComparisonPredicate(branch.value, .equalTo, .constant(.null)))
            translator.bind(variable.key, to: [TypedBranch(branch.value)])
            let transformed = try translator.value(transform)
            if transformed.count == 1, transformed[0].condition == nil, TypedPredicateTranslator.isKeyPath(transformed[0].value) {
                // A key path through nil is nil already.
                branches.append(transformed[0].adding(branch.condition))
                continue
            }
            branches += transformed.map { $0.adding(TypedBranch.both(branch.condition, .not(isNil))) }
            branches.append(TypedBranch(.constant(.null), when: TypedBranch.both(branch.condition, isNil)))
        }
        return try TypedPredicateTranslator.bounded(branches)
    }
}

extension PredicateExpressions.ForcedUnwrap: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try translator.value(inner)
    }
}

// MARK: Strings and collections

extension PredicateExpressions.CollectionContainsCollection: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        guard Base.Output.self is any StringProtocol.Type else {
            throw TypedPredicateError.unsupportedExpression(
                TypedPredicateTranslator.typeName(of: self), "contains(_:) of a collection that is not a string")
        }
        return TypedPredicateTranslator.compare(try translator.value(base), .contains, try translator.value(other))
    }
}

extension PredicateExpressions.SequenceStartsWith: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        guard Base.Output.self is any StringProtocol.Type else {
            throw TypedPredicateError.unsupportedExpression(
                TypedPredicateTranslator.typeName(of: self), "starts(with:) of a sequence that is not a string")
        }
        return TypedPredicateTranslator.compare(try translator.value(base), .beginsWith, try translator.value(prefix))
    }
}

extension PredicateExpressions.SequenceContains: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        TypedPredicateTranslator.compare(try translator.value(element), .in, try translator.value(sequence))
    }
}

/// `SUBQUERY(collection, $x, test)`, its variable bound while `test` translates.
private func subquery(
    _ sequence: Any, _ variable: PredicateExpressions.VariableID, _ test: Any, negated: Bool,
    context: String, in translator: inout TypedPredicateTranslator
) throws -> CoreExpression {
    let collection = try translator.single(sequence, in: context)
    let name = translator.newVariableName()
    translator.bind(variable, to: .variable(name))
    let predicate = try translator.predicate(test)
    return .subquery(collection: collection, variable: name, predicate: negated ? .not(predicate) : predicate)
}

extension PredicateExpressions.SequenceContainsWhere: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        let matches = try subquery(sequence, variable.key, test, negated: false,
                                   context: TypedPredicateTranslator.typeName(of: self), in: &translator)
        return .comparison(ComparisonPredicate(.member(matches, keyPath: "@count"), .greaterThan, .constant(.int(0))))
    }
}

extension PredicateExpressions.SequenceAllSatisfy: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        let failures = try subquery(sequence, variable.key, test, negated: true,
                                    context: TypedPredicateTranslator.typeName(of: self), in: &translator)
        return .comparison(ComparisonPredicate(.member(failures, keyPath: "@count"), .equalTo, .constant(.int(0))))
    }
}

extension PredicateExpressions.Filter: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        [TypedBranch(try subquery(sequence, variable.key, filter, negated: false,
                                  context: TypedPredicateTranslator.typeName(of: self), in: &translator))]
    }
}

extension PredicateExpressions.SequenceMinimum: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try translator.value(elements).map { TypedBranch(.function("min:", arguments: [$0.value]), when: $0.condition) }
    }
}

extension PredicateExpressions.SequenceMaximum: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try translator.value(elements).map { TypedBranch(.function("max:", arguments: [$0.value]), when: $0.condition) }
    }
}

extension PredicateExpressions.CollectionIndexSubscript: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        try TypedPredicateTranslator.combine(try translator.value(wrapped), try translator.value(index)) {
            .index($0, .expression($1))
        }
    }
}

// MARK: Ranges

extension PredicateExpressions.RangeExpressionContains: TypedPredicateNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] { throw notAValue() }
    func typedPredicate(in translator: inout TypedPredicateTranslator) throws -> CorePredicate {
        let element = try translator.value(self.element)
        let lower: [TypedBranch], upper: [TypedBranch], closed: Bool
        if let range = range as? any TypedRangeNode {
            (lower, upper, closed) = try range.bounds(in: &translator)
        } else if let captured = range as? any TypedCapturedRange, let bounds = captured.capturedBounds {
            (lower, upper, closed) = ([TypedBranch(.constant(try TypedPredicateTranslator.constant(bounds.lower)))],
                                      [TypedBranch(.constant(try TypedPredicateTranslator.constant(bounds.upper)))],
                                      bounds.closed)
        } else {
            throw TypedPredicateError.unsupportedExpression(
                TypedPredicateTranslator.typeName(of: range), "contains(_:) of a range other than a..<b or a...b")
        }
        return TypedPredicateTranslator.compare(element, .greaterThanOrEqualTo, lower)
            && TypedPredicateTranslator.compare(element, closed ? .lessThanOrEqualTo : .lessThan, upper)
    }
}

/// A range written in the predicate: its bounds. A range has no value of its own
/// in Core Data's language; it translates inside `contains(_:)` only.
protocol TypedRangeNode: TypedPredicateNode {
    func bounds(in translator: inout TypedPredicateTranslator) throws -> ([TypedBranch], [TypedBranch], Bool)
}

extension TypedRangeNode {
    func typedValue(in translator: inout TypedPredicateTranslator) throws -> [TypedBranch] {
        throw TypedPredicateError.unsupportedExpression(
            TypedPredicateTranslator.typeName(of: self), "a range outside contains(_:)")
    }
}

extension PredicateExpressions.Range: TypedRangeNode {
    func bounds(in translator: inout TypedPredicateTranslator) throws -> ([TypedBranch], [TypedBranch], Bool) {
        (try translator.value(lower), try translator.value(upper), false)
    }
}

extension PredicateExpressions.ClosedRange: TypedRangeNode {
    func bounds(in translator: inout TypedPredicateTranslator) throws -> ([TypedBranch], [TypedBranch], Bool) {
        (try translator.value(lower), try translator.value(upper), true)
    }
}

/// A captured `Range` or `ClosedRange` value.
protocol TypedCapturedRange {
    var capturedBounds: (lower: Any, upper: Any, closed: Bool)? { get }
}

extension PredicateExpressions.Value: TypedCapturedRange {
    var capturedBounds: (lower: Any, upper: Any, closed: Bool)? {
        if let range = value as? any TypedRangeValue { return range.typedBounds }
        return nil
    }
}

protocol TypedRangeValue {
    var typedBounds: (lower: Any, upper: Any, closed: Bool) { get }
}

extension Range: TypedRangeValue {
    var typedBounds: (lower: Any, upper: Any, closed: Bool) { (lowerBound, upperBound, false) }
}

extension ClosedRange: TypedRangeValue {
    var typedBounds: (lower: Any, upper: Any, closed: Bool) { (lowerBound, upperBound, true) }
}
