import Foundation

// MARK: - Public entry points

extension CorePredicate {
    /// How deeply a format string may nest parentheses, operators, functions and
    /// predicates (and how deep the resulting tree may be). Deeper input is rejected
    /// with a ``PredicateParseError`` instead of exhausting the stack.
    public static let maximumNestingDepth = 500

    /// Reads a predicate from Apple's predicate format language
    /// (`+[NSPredicate predicateWithFormat:]`).
    ///
    /// Arguments replace the format specifiers in order: `%@` (any value), `%K` (a key
    /// path, from a string), `%d` `%i` `%ld` `%lld` `%u` (integers), `%f` (doubles),
    /// `%s` (strings). Specifiers inside quotes are literal text.
    ///
    /// ```swift
    /// let p = try CorePredicate(format: "name == %@ AND age > %d", "x", 3)
    /// let q = try CorePredicate(format: "%K BEGINSWITH[cd] $prefix", "title")
    /// let r = try CorePredicate(format: "ANY children.age < 5 OR NOT (city IN %@)",
    ///                           ["Paris", "Lyon"])
    /// ```
    ///
    /// - throws: ``PredicateParseError`` with the offset and what was expected.
    public init(format: String, _ arguments: any FormatArgument...) throws {
        try self.init(format: format, arguments: arguments)
    }

    /// Reads a predicate with its arguments in an array
    /// (`+[NSPredicate predicateWithFormat:argumentArray:]`).
    public init(format: String, arguments: [any FormatArgument]) throws {
        self = try PredicateParser.parse(format, arguments.map(\.formatArgumentValue)) {
            try $0.parsePredicateFormat()
        }
    }
}

extension CoreExpression {
    /// Reads an expression from the format language (`+[NSExpression
    /// expressionWithFormat:]`).
    ///
    /// ```swift
    /// let e = try CoreExpression(format: "sum(items.price) * %f", 1.2)
    /// ```
    ///
    /// - throws: ``PredicateParseError``.
    public init(format: String, _ arguments: any FormatArgument...) throws {
        try self.init(format: format, arguments: arguments)
    }

    /// Reads an expression with its arguments in an array.
    public init(format: String, arguments: [any FormatArgument]) throws {
        self = try PredicateParser.parse(format, arguments.map(\.formatArgumentValue)) {
            try $0.parseExpressionFormat()
        }
    }
}

// MARK: - Parser

/// A recursive-descent parser for the predicate format language.
///
/// Precedence, loosest first: `OR`, `AND`, `NOT`, comparison, `:=`, `UNION`
/// `INTERSECT` `MINUS`, `|`, `^`, `&`, `<<` `>>`, `+` `-`, `*` `/`, `**` (right
/// associative), unary `-` `~`, postfix `.key` `[index]`.
struct PredicateParser {
    private let lexer: PredicateLexer
    private let tokens: [Token]
    private var position = 0
    private let arguments: [AttributeValue]
    private var argumentIndex = 0
    private let maxDepth: Int
    private var recursion = 0
    private var collectionNesting = 0

    /// What parsing produced: parentheses may hold a predicate or an expression.
    private enum Node {
        case predicate(CorePredicate)
        case expression(CoreExpression)
    }

    /// A node and the depth of its tree.
    private struct Parsed {
        var node: Node
        var depth: Int
    }

    init(format: String, arguments: [AttributeValue], maxDepth: Int) throws {
        lexer = PredicateLexer(format)
        tokens = try lexer.tokenize()
        self.arguments = arguments
        self.maxDepth = maxDepth
    }

    /// Parses with `body`, on a thread with a large stack when the format could nest
    /// deeply, so that the nesting limit, not the caller's stack size, decides how
    /// deep a format may be.
    static func parse<T: Sendable>(
        _ format: String, _ arguments: [AttributeValue],
        _ body: @escaping @Sendable (inout PredicateParser) throws -> T
    ) throws -> T {
        var parser = try PredicateParser(
            format: format, arguments: arguments, maxDepth: CorePredicate.maximumNestingDepth)
        if parser.possibleRecursion <= 16 {
            return try body(&parser)
        }
        let prepared = parser
        return try LargeStack.run {
            var parser = prepared
            return try body(&parser)
        }
    }

    /// An upper bound of how deep parsing can recurse: twice the deepest nesting of
    /// brackets (a parenthesis may open a function and its predicate), plus every
    /// token that can open a level without a bracket (`NOT`, unary `-`...).
    private var possibleRecursion: Int {
        var depth = 0, deepest = 0, prefixes = 0
        for token in tokens {
            switch token.kind {
            case .symbol(let s):
                switch s {
                case "(", "{", "[":
                    depth += 1
                    deepest = Swift.max(deepest, depth)
                case ")", "}", "]":
                    depth -= 1
                case "!", "-", "~", "**", ":=":
                    prefixes += 1
                default:
                    break
                }
            case .identifier(let word) where word.count == 3 && word.uppercased() == "NOT":
                prefixes += 1
            default:
                break
            }
        }
        return 1 + 2 * deepest + prefixes
    }

    mutating func parsePredicateFormat() throws -> CorePredicate {
        let parsed = try parseOr()
        guard case .predicate(let predicate) = parsed.node else {
            throw fail(expected: "a comparison operator")
        }
        guard case .end = current.kind else {
            throw fail(expected: "AND, OR or the end of the format")
        }
        return predicate
    }

    mutating func parseExpressionFormat() throws -> CoreExpression {
        let start = current
        let parsed = try parseBinaryOrAssignment()
        guard case .expression(let expression) = parsed.node else {
            throw fail(at: start, expected: "an expression", found: "a predicate")
        }
        guard case .end = current.kind else {
            throw fail(expected: "an operator or the end of the format")
        }
        return expression
    }

    // MARK: Tokens

    private var current: Token { tokens[position] }

    private var next: Token { tokens[Swift.min(position + 1, tokens.count - 1)] }

    private mutating func advance() {
        if position < tokens.count - 1 { position += 1 }
    }

    private func isSymbol(_ symbol: String) -> Bool {
        if case .symbol(let s) = current.kind { return s == symbol }
        return false
    }

    private func isKeyword(_ keyword: String) -> Bool {
        if case .identifier(let word) = current.kind { return word.uppercased() == keyword }
        return false
    }

    private mutating func consumeSymbol(_ symbol: String) -> Bool {
        guard isSymbol(symbol) else { return false }
        advance()
        return true
    }

    private mutating func expectSymbol(_ symbol: String) throws {
        guard consumeSymbol(symbol) else { throw fail(expected: "'\(symbol)'") }
    }

    private static func describe(_ token: Token) -> String {
        switch token.kind {
        case .identifier(let w): return "'\(w)'"
        case .escapedIdentifier(let w): return "'#\(w)'"
        case .variable(let w): return "'$\(w)'"
        case .atIdentifier(let w): return "'@\(w)'"
        case .selector(let w): return "'\(w)'"
        case .integer(let v): return "the number \(v)"
        case .double(let v): return "the number \(v)"
        case .string(let s): return "the string \"\(s)\""
        case .format(let f): return "'\(f.text)'"
        case .symbol(let s): return "'\(s)'"
        case .end: return "end of format"
        }
    }

    private func fail(expected: String) -> PredicateParseError {
        fail(at: current, expected: expected, found: PredicateParser.describe(current))
    }

    private func fail(at token: Token, expected: String, found: String) -> PredicateParseError {
        lexer.error(at: token.offset, expected: expected, found: found)
    }

    // MARK: Depth

    /// Parentheses may double the nesting of the tree they hold (`NOT (NOT ...)`), so
    /// the parser recurses up to twice the tree depth limit.
    private mutating func enter() throws {
        recursion += 1
        if recursion > 2 * maxDepth + 2 {
            throw fail(expected: "at most \(maxDepth) levels of nesting")
        }
    }

    private mutating func leave() { recursion -= 1 }

    private func made(_ node: Node, _ childDepths: Int...) throws -> Parsed {
        let depth = (childDepths.max() ?? 0) + 1
        if depth > maxDepth {
            throw fail(expected: "at most \(maxDepth) levels of nesting")
        }
        return Parsed(node: node, depth: depth)
    }

    private func requirePredicate(_ parsed: Parsed) throws -> CorePredicate {
        guard case .predicate(let predicate) = parsed.node else {
            throw fail(expected: "a comparison operator")
        }
        return predicate
    }

    private func requireExpression(_ parsed: Parsed, at token: Token) throws -> CoreExpression {
        guard case .expression(let expression) = parsed.node else {
            throw fail(at: token, expected: "an expression", found: "a predicate")
        }
        return expression
    }

    // MARK: Predicates

    private mutating func parseOr() throws -> Parsed {
        try enter()
        defer { leave() }
        let first = try parseAnd()
        guard isKeyword("OR") || isSymbol("||") else { return first }
        var list = [try requirePredicate(first)]
        var depth = first.depth
        while isKeyword("OR") || isSymbol("||") {
            advance()
            let next = try parseAnd()
            list.append(try requirePredicate(next))
            depth = Swift.max(depth, next.depth)
        }
        return try made(.predicate(.or(list)), depth)
    }

    private mutating func parseAnd() throws -> Parsed {
        let first = try parseNot()
        guard isKeyword("AND") || isSymbol("&&") else { return first }
        var list = [try requirePredicate(first)]
        var depth = first.depth
        while isKeyword("AND") || isSymbol("&&") {
            advance()
            let next = try parseNot()
            list.append(try requirePredicate(next))
            depth = Swift.max(depth, next.depth)
        }
        return try made(.predicate(.and(list)), depth)
    }

    private mutating func parseNot() throws -> Parsed {
        guard isKeyword("NOT") || isSymbol("!") else { return try parseComparison() }
        try enter()
        defer { leave() }
        advance()
        let operand = try parseNot()
        return try made(.predicate(.not(try requirePredicate(operand))), operand.depth)
    }

    private mutating func parseComparison() throws -> Parsed {
        var modifier = ComparisonModifier.direct
        if isKeyword("ANY") || isKeyword("SOME") {
            modifier = .any
        } else if isKeyword("ALL") {
            modifier = .all
        } else if isKeyword("NONE") {
            modifier = .none
        }
        if modifier != .direct {
            advance()
        } else if isKeyword("TRUEPREDICATE") || isKeyword("FALSEPREDICATE") {
            let value = isKeyword("TRUEPREDICATE")
            advance()
            return Parsed(node: .predicate(.constant(value)), depth: 1)
        }
        let leftToken = current
        let left = try parseBinaryOrAssignment()
        let operatorToken = current
        guard let operatorType = scanComparisonOperator() else {
            if modifier != .direct { throw fail(expected: "a comparison operator") }
            return left
        }
        guard case .expression(let leftExpression) = left.node else {
            throw fail(at: leftToken, expected: "an expression before \(PredicateParser.describe(operatorToken))",
                       found: "a predicate")
        }
        let options = try scanOptions()
        let rightToken = current
        let right = try parseBinaryOrAssignment()
        let rightExpression = try requireExpression(right, at: rightToken)
        let comparison = ComparisonPredicate(
            leftExpression, operatorType, rightExpression, modifier: modifier, options: options)
        return try made(.predicate(.comparison(comparison)), left.depth, right.depth)
    }

    private mutating func scanComparisonOperator() -> ComparisonOperator? {
        let result: ComparisonOperator?
        switch current.kind {
        case .symbol(let s):
            switch s {
            case "==", "=": result = .equalTo
            case "!=", "<>": result = .notEqualTo
            case "<": result = .lessThan
            case "<=", "=<": result = .lessThanOrEqualTo
            case ">": result = .greaterThan
            case ">=", "=>": result = .greaterThanOrEqualTo
            default: result = nil
            }
        case .identifier(let word):
            switch word.uppercased() {
            case "MATCHES": result = .matches
            case "LIKE": result = .like
            case "BEGINSWITH": result = .beginsWith
            case "ENDSWITH": result = .endsWith
            case "IN": result = .in
            case "CONTAINS": result = .contains
            case "BETWEEN": result = .between
            case "UTI-CONFORMS-TO": result = .conformsTo
            case "UTI-EQUALS": result = .utiEquals
            default: result = nil
            }
        default:
            result = nil
        }
        if result != nil { advance() }
        return result
    }

    private mutating func scanOptions() throws -> ComparisonOptions {
        guard isSymbol("[") else { return [] }
        advance()
        guard case .identifier(let letters) = current.kind else {
            throw fail(expected: "comparison options such as c, d or cd")
        }
        var options: ComparisonOptions = []
        for letter in letters.lowercased() {
            switch letter {
            case "c": options.insert(.caseInsensitive)
            case "d": options.insert(.diacriticInsensitive)
            case "n": options.insert(.normalized)
            case "l": options.insert(.localeSensitive)
            default: throw fail(expected: "comparison options such as c, d or cd")
            }
        }
        advance()
        try expectSymbol("]")
        return options
    }

    // MARK: Expressions

    private mutating func parseExpression() throws -> (CoreExpression, Int) {
        let start = current
        let parsed = try parseBinaryOrAssignment()
        return (try requireExpression(parsed, at: start), parsed.depth)
    }

    private mutating func parseBinaryOrAssignment() throws -> Parsed {
        if case .variable(let name) = current.kind, case .symbol(":=") = next.kind {
            try enter()
            defer { leave() }
            advance()
            advance()
            let (value, depth) = try parseExpression()
            return try made(.expression(.assignment(variable: name, value)), depth)
        }
        return try parseBinary(minimumPrecedence: 0)
    }

    private struct BinaryOperator {
        var precedence: Int
        var rightAssociative: Bool
        var build: (CoreExpression, CoreExpression) -> CoreExpression
    }

    private func binaryOperator() -> BinaryOperator? {
        func function(_ f: PredicateFunction, _ precedence: Int, right: Bool = false) -> BinaryOperator {
            BinaryOperator(precedence: precedence, rightAssociative: right) {
                .function(f.rawValue, arguments: [$0, $1])
            }
        }
        func set(_ operation: SetOperation) -> BinaryOperator {
            BinaryOperator(precedence: 1, rightAssociative: false) { .setOperation(operation, $0, $1) }
        }
        switch current.kind {
        case .symbol(let s):
            switch s {
            case "|": return function(.bitwiseOr, 2)
            case "^": return function(.bitwiseXor, 3)
            case "&": return function(.bitwiseAnd, 4)
            case "<<": return function(.leftShift, 5)
            case ">>": return function(.rightShift, 5)
            case "+": return function(.add, 6)
            case "-": return function(.subtract, 6)
            case "*": return function(.multiply, 7)
            case "/": return function(.divide, 7)
            case "**": return function(.raise, 8, right: true)
            default: return nil
            }
        case .identifier(let word):
            switch word.uppercased() {
            case "UNION": return set(.union)
            case "INTERSECT": return set(.intersect)
            case "MINUS": return set(.minus)
            default: return nil
            }
        default:
            return nil
        }
    }

    private mutating func parseBinary(minimumPrecedence: Int) throws -> Parsed {
        var left = try parseUnary()
        while let op = binaryOperator(), op.precedence >= minimumPrecedence {
            guard case .expression(let leftExpression) = left.node else {
                throw fail(expected: "AND, OR, a comparison operator or ')'")
            }
            advance()
            let rightToken = current
            let right: Parsed
            if op.rightAssociative {
                try enter()
                defer { leave() }
                right = try parseBinary(minimumPrecedence: op.precedence)
            } else {
                right = try parseBinary(minimumPrecedence: op.precedence + 1)
            }
            let rightExpression = try requireExpression(right, at: rightToken)
            left = try made(.expression(op.build(leftExpression, rightExpression)), left.depth, right.depth)
        }
        return left
    }

    private mutating func parseUnary() throws -> Parsed {
        if isSymbol("-") {
            try enter()
            defer { leave() }
            advance()
            if case .integer(let magnitude) = current.kind, magnitude == UInt64(Int64.max) + 1 {
                advance()
                return try parsePostfix(Parsed(node: .expression(.constant(.int(.min))), depth: 1))
            }
            let operandToken = current
            let operand = try parseUnary()
            let expression = try requireExpression(operand, at: operandToken)
            switch expression {
            case .constant(.int(let i)) where i != .min:
                return Parsed(node: .expression(.constant(.int(-i))), depth: operand.depth)
            case .constant(.double(let d)):
                return Parsed(node: .expression(.constant(.double(-d))), depth: operand.depth)
            case .constant(.decimal(let d)):
                return Parsed(node: .expression(.constant(.decimal(-d))), depth: operand.depth)
            default:
                let negated = CoreExpression.function(
                    PredicateFunction.subtract.rawValue, arguments: [.constant(.int(0)), expression])
                return try made(.expression(negated), operand.depth)
            }
        }
        if isSymbol("~") {
            try enter()
            defer { leave() }
            advance()
            let operandToken = current
            let operand = try parseUnary()
            let expression = try requireExpression(operand, at: operandToken)
            let complement = CoreExpression.function(
                PredicateFunction.onesComplement.rawValue, arguments: [expression])
            return try made(.expression(complement), operand.depth)
        }
        return try parsePostfix(try parsePrimary())
    }

    private mutating func parsePostfix(_ base: Parsed) throws -> Parsed {
        var parsed = base
        while isSymbol(".") || isSymbol("[") {
            guard case .expression(let expression) = parsed.node else {
                throw fail(expected: "AND, OR, a comparison operator or ')'")
            }
            if consumeSymbol(".") {
                let key: String
                switch current.kind {
                case .identifier(let word), .escapedIdentifier(let word):
                    key = word
                case .atIdentifier(let word):
                    try checkCollectionOperator(word)
                    key = "@" + word
                default:
                    throw fail(expected: "a key after '.'")
                }
                advance()
                switch expression {
                case .keyPath(let path):
                    parsed = Parsed(node: .expression(.keyPath(path + "." + key)), depth: parsed.depth)
                case .evaluatedObject:
                    parsed = Parsed(node: .expression(.keyPath(key)), depth: parsed.depth)
                case .member(let inner, let path):
                    parsed = Parsed(node: .expression(.member(inner, keyPath: path + "." + key)), depth: parsed.depth)
                default:
                    parsed = try made(.expression(.member(expression, keyPath: key)), parsed.depth)
                }
            } else {
                advance()  // "["
                try enter()
                defer { leave() }
                let subscription: IndexSubscript
                var depth = 0
                if case .identifier(let word) = current.kind, case .symbol("]") = next.kind,
                   ["FIRST", "LAST", "SIZE"].contains(word.uppercased()) {
                    switch word.uppercased() {
                    case "FIRST": subscription = .first
                    case "LAST": subscription = .last
                    default: subscription = .size
                    }
                    advance()
                } else {
                    let (index, indexDepth) = try parseExpression()
                    subscription = .expression(index)
                    depth = indexDepth
                }
                try expectSymbol("]")
                parsed = try made(.expression(.index(expression, subscription)), parsed.depth, depth)
            }
        }
        return parsed
    }

    private static let collectionOperators: Set<String> = [
        "count", "sum", "avg", "min", "max", "distinctUnionOfObjects", "unionOfObjects",
        "distinctUnionOfArrays", "unionOfArrays", "distinctUnionOfSets",
    ]

    private func checkCollectionOperator(_ word: String) throws {
        guard PredicateParser.collectionOperators.contains(word) else {
            throw fail(expected: "a collection operator (@count, @sum, @avg, @min, @max, @distinctUnionOfObjects...)")
        }
    }

    private static func constant(_ value: AttributeValue) -> Parsed {
        Parsed(node: .expression(.constant(value)), depth: 1)
    }

    private mutating func parsePrimary() throws -> Parsed {
        let token = current
        switch token.kind {
        case .integer(let magnitude):
            advance()
            if let value = Int64(exactly: magnitude) { return PredicateParser.constant(.int(value)) }
            return PredicateParser.constant(.double(Double(magnitude)))
        case .double(let value):
            advance()
            return PredicateParser.constant(.double(value))
        case .string(let text):
            advance()
            return PredicateParser.constant(.string(text))
        case .format(let specifier):
            advance()
            return try consumeArgument(specifier, at: token)
        case .variable(let name):
            advance()
            return Parsed(node: .expression(.variable(name)), depth: 1)
        case .atIdentifier(let word):
            try checkCollectionOperator(word)
            advance()
            return Parsed(node: .expression(.keyPath("@" + word)), depth: 1)
        case .escapedIdentifier(let word):
            advance()
            return Parsed(node: .expression(.keyPath(word)), depth: 1)
        case .selector(let name):
            advance()
            return try parseFunctionCall(name, nameToken: token)
        case .identifier(let word):
            let upper = word.uppercased()
            switch upper {
            case "SELF":
                advance()
                return Parsed(node: .expression(.evaluatedObject), depth: 1)
            case "TRUE", "YES":
                advance()
                return PredicateParser.constant(.bool(true))
            case "FALSE", "NO":
                advance()
                return PredicateParser.constant(.bool(false))
            case "NULL", "NIL":
                advance()
                return PredicateParser.constant(.null)
            case "ANYKEY":
                advance()
                return Parsed(node: .expression(.anyKey), depth: 1)
            case "SUBQUERY":
                return try parseSubquery()
            case "CAST":
                return try parseCast()
            case "TERNARY":
                return try parseTernary()
            case "FUNCTION":
                return try parseCustomFunction()
            case "FETCH":
                throw fail(at: token, expected: "an expression (FETCH is not supported)", found: "'\(word)'")
            default:
                if PredicateLexer.reservedWords.contains(upper) {
                    throw fail(expected: "an expression")
                }
                advance()
                if isSymbol("(") { return try parseFunctionCall(word, nameToken: token) }
                return Parsed(node: .expression(.keyPath(word)), depth: 1)
            }
        case .symbol("("):
            advance()
            let inner = try parseOr()
            try expectSymbol(")")
            return inner
        case .symbol("{"):
            return try parseAggregate()
        default:
            throw fail(expected: "an expression")
        }
    }

    private mutating func parseArguments() throws -> ([CoreExpression], Int) {
        try expectSymbol("(")
        var arguments: [CoreExpression] = []
        var depth = 0
        if consumeSymbol(")") { return (arguments, depth) }
        repeat {
            let (argument, argumentDepth) = try parseExpression()
            arguments.append(argument)
            depth = Swift.max(depth, argumentDepth)
        } while consumeSymbol(",")
        try expectSymbol(")")
        return (arguments, depth)
    }

    private mutating func parseFunctionCall(_ name: String, nameToken: Token) throws -> Parsed {
        try enter()
        defer { leave() }
        let (arguments, depth) = try parseArguments()
        guard let function = PredicateFunction.resolve(name, argumentCount: arguments.count) else {
            let known = PredicateFunction.allCases.filter {
                $0.rawValue.lowercased() == name.lowercased()
                    || String($0.rawValue.lowercased().prefix { $0 != ":" }) == name.lowercased()
            }
            if let first = known.first {
                throw fail(at: nameToken, expected: "\(first.argumentCount) argument(s) for '\(first.rawValue)'",
                           found: "\(arguments.count)")
            }
            throw fail(at: nameToken, expected: "the name of a predefined function (sum, count, average, now...)",
                       found: "'\(name)'")
        }
        if function == .castObjectToType {
            guard case .constant(.string(let type)) = arguments[1] else {
                throw fail(at: nameToken, expected: "a type name string as the second argument of CAST",
                           found: arguments[1].description)
            }
            return try made(.expression(PredicateParser.cast(arguments[0], to: type)), depth)
        }
        return try made(.expression(.function(function.rawValue, arguments: arguments)), depth)
    }

    /// How deeply `{...}` literals may nest: collections nested deeper than this are
    /// no real predicate's, and comparing or converting them recurses per level.
    static let maximumCollectionNesting = 32

    private mutating func parseAggregate() throws -> Parsed {
        try enter()
        defer { leave() }
        collectionNesting += 1
        defer { collectionNesting -= 1 }
        if collectionNesting > PredicateParser.maximumCollectionNesting {
            throw fail(expected: "at most \(PredicateParser.maximumCollectionNesting) levels of nested collections")
        }
        try expectSymbol("{")
        var elements: [CoreExpression] = []
        var depth = 0
        if !consumeSymbol("}") {
            repeat {
                let (element, elementDepth) = try parseExpression()
                elements.append(element)
                depth = Swift.max(depth, elementDepth)
            } while consumeSymbol(",")
            try expectSymbol("}")
        }
        let constants = elements.compactMap(\.constantValue)
        if constants.count == elements.count {
            return try made(.expression(.constant(.array(constants))), depth)
        }
        return try made(.expression(.aggregate(elements)), depth)
    }

    private mutating func parseSubquery() throws -> Parsed {
        try enter()
        defer { leave() }
        advance()  // SUBQUERY
        try expectSymbol("(")
        let (collection, collectionDepth) = try parseExpression()
        try expectSymbol(",")
        guard case .variable(let variable) = current.kind else {
            throw fail(expected: "the subquery's iteration variable ($x)")
        }
        advance()
        try expectSymbol(",")
        let predicate = try parseOr()
        try expectSymbol(")")
        return try made(.expression(.subquery(
            collection: collection, variable: variable, predicate: try requirePredicate(predicate))),
            collectionDepth, predicate.depth)
    }

    private mutating func parseTernary() throws -> Parsed {
        try enter()
        defer { leave() }
        advance()  // TERNARY
        try expectSymbol("(")
        let predicate = try parseOr()
        let condition = try requirePredicate(predicate)
        try expectSymbol(",")
        let (a, aDepth) = try parseExpression()
        try expectSymbol(",")
        let (b, bDepth) = try parseExpression()
        try expectSymbol(")")
        return try made(.expression(.conditional(condition, trueExpression: a, falseExpression: b)),
                        predicate.depth, aDepth, bDepth)
    }

    private mutating func parseCast() throws -> Parsed {
        try enter()
        defer { leave() }
        advance()  // CAST
        try expectSymbol("(")
        let (value, depth) = try parseExpression()
        try expectSymbol(",")
        guard case .constant(.string(let type)) = try parseExpression().0 else {
            throw fail(expected: "')' after a type name string such as 'NSNumber'")
        }
        try expectSymbol(")")
        return try made(.expression(PredicateParser.cast(value, to: type)), depth)
    }

    /// `CAST` of a constant to the types the printer uses for constants that have no
    /// literal (dates, UUIDs, URLs, data, dictionaries, non-finite numbers) is that
    /// constant, so printed predicates read back equal.
    static func cast(_ value: CoreExpression, to type: String) -> CoreExpression {
        switch (value, type) {
        case (.constant(let constant), "NSDate"):
            switch constant {
            case .int, .double, .decimal, .bool:
                if let seconds = constant.doubleValue, seconds.isFinite {
                    return .constant(.date(Date(timeIntervalSinceReferenceDate: seconds)))
                }
            default:
                break
            }
        case (.constant(.string(let text)), "NSUUID"):
            if let uuid = UUID(uuidString: text) { return .constant(.uuid(uuid)) }
        case (.constant(.string(let text)), "NSURL"):
            if let url = URL(string: text) { return .constant(.uri(url)) }
        case (.constant(.string(let text)), "NSData"):
            if let data = Data(base64Encoded: text) { return .constant(.data(data)) }
        case (.constant(.string(let text)), "NSNumber"):
            switch text {
            case "nan": return .constant(.double(.nan))
            case "inf", "+inf": return .constant(.double(.infinity))
            case "-inf": return .constant(.double(-.infinity))
            default: break
            }
        case (.constant(.array(let pairs)), "NSDictionary"):
            var dictionary: [String: AttributeValue] = [:]
            for pair in pairs {
                guard case .array(let kv) = pair, kv.count == 2, case .string(let key) = kv[0],
                      dictionary[key] == nil else {
                    return .cast(value, toType: type)
                }
                dictionary[key] = kv[1]
            }
            return .constant(.dictionary(dictionary))
        default:
            break
        }
        return .cast(value, toType: type)
    }

    private mutating func parseCustomFunction() throws -> Parsed {
        try enter()
        defer { leave() }
        let token = current
        advance()  // FUNCTION
        let (arguments, depth) = try parseArguments()
        guard arguments.count >= 2 else {
            throw fail(at: token, expected: "FUNCTION(receiver, 'selector', arguments...)", found: "\(arguments.count) argument(s)")
        }
        guard case .constant(.string(let selector)) = arguments[1], !selector.isEmpty else {
            throw fail(at: token, expected: "a selector name string as the second argument of FUNCTION",
                       found: arguments[1].description)
        }
        return try made(.expression(.customFunction(
            receiver: arguments[0], selector: selector, arguments: Array(arguments.dropFirst(2)))), depth)
    }

    // MARK: Arguments

    private mutating func consumeArgument(_ specifier: FormatSpecifier, at token: Token) throws -> Parsed {
        guard argumentIndex < arguments.count else {
            throw fail(at: token, expected: "an argument for \(specifier.text)", found: "no more arguments")
        }
        let value = arguments[argumentIndex]
        argumentIndex += 1
        func wrong(_ wanted: String) -> PredicateParseError {
            fail(at: token, expected: "\(wanted) for \(specifier.text) (argument \(argumentIndex))",
                 found: CoreExpression.constant(value).description)
        }
        switch specifier.kind {
        case .object:
            return PredicateParser.constant(value)
        case .keyPath:
            guard case .string(let path) = value, !path.isEmpty else { throw wrong("a key path string") }
            return Parsed(node: .expression(.keyPath(path)), depth: 1)
        case .integer:
            switch value {
            case .int, .bool:
                return PredicateParser.constant(.int(value.int64Value ?? 0))
            case .double, .decimal:
                guard let i = value.int64Value else { throw wrong("an integer") }
                return PredicateParser.constant(.int(i))
            default:
                throw wrong("a number")
            }
        case .floatingPoint:
            guard value.isNumber, let d = value.doubleValue else { throw wrong("a number") }
            return PredicateParser.constant(.double(d))
        case .cString:
            guard case .string = value else { throw wrong("a string") }
            return PredicateParser.constant(value)
        case .unsupported:
            throw wrong("a supported format specifier")
        }
    }
}
