import Foundation

// MARK: - Printing predicates as Apple does

extension CorePredicate: CustomStringConvertible {
    /// The predicate in the format language, as `-[NSPredicate predicateFormat]`
    /// prints it.
    ///
    /// ```swift
    /// try CorePredicate(format: "name = 'John' && age > 30").predicateFormat
    /// // name == "John" AND age > 30
    /// try CorePredicate(format: "(a = 1 || b = 2) && c = 3").predicateFormat
    /// // (a == 1 OR b == 2) AND c == 3
    /// try CorePredicate(format: "NOT (name BEGINSWITH[c] 'j')").predicateFormat
    /// // NOT name BEGINSWITH[c] "j"
    /// ```
    ///
    /// The forms follow Apple's: `==` for equality, strings in double quotes, `nil`,
    /// numbers as `NSNumber` prints them (`YES` is `1`), dates as
    /// `CAST(<seconds since 2001>, "NSDate")`, arrays as `{1, 2}`, functions as
    /// `sum:({1, 2})` or with their operator (`a + b`), and every compound
    /// subpredicate of a compound predicate in parentheses.
    ///
    /// Reading the printed form back gives an equal predicate. Constants that have no
    /// literal in the language are printed as a `CAST` that reads back as the
    /// constant: `CAST("…", "NSUUID")`, `CAST("…", "NSURL")`, `CAST("<base64>",
    /// "NSData")`, `CAST({{"key", value}}, "NSDictionary")`, `CAST("nan", "NSNumber")`.
    public var predicateFormat: String {
        if TreeDepth.exceeds(self, PredicateWriter.largeStackDepth),
           let output = try? LargeStack.run({ [self] in PredicateWriter.format(self) }) {
            return output
        }
        return PredicateWriter.format(self)
    }

    public var description: String { predicateFormat }
}

extension CoreExpression: CustomStringConvertible {
    /// The expression in the format language, as `-[NSExpression description]` prints
    /// it: `name`, `"text"`, `$x.age`, `sum:(items.price)`, `a + (b * 2)`...
    public var description: String {
        if TreeDepth.exceeds(self, PredicateWriter.largeStackDepth),
           let output = try? LargeStack.run({ [self] in PredicateWriter.format(self) }) {
            return output
        }
        return PredicateWriter.format(self)
    }
}

enum PredicateWriter {
    /// Trees deeper than this are printed on a thread with a large stack.
    static let largeStackDepth = 48

    static func format(_ predicate: CorePredicate) -> String {
        var output = ""
        write(predicate, into: &output)
        return output
    }

    static func format(_ expression: CoreExpression) -> String {
        var output = ""
        write(expression, into: &output)
        return output
    }

    static func write(_ predicate: CorePredicate, into out: inout String) {
        switch predicate {
        case .constant(let value):
            out += value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .and(let list):
            writeCompound(list, joiner: " AND ", empty: "TRUEPREDICATE", into: &out)
        case .or(let list):
            writeCompound(list, joiner: " OR ", empty: "FALSEPREDICATE", into: &out)
        case .not(let operand):
            out += "NOT "
            writeSubpredicate(operand, into: &out)
        case .comparison(let comparison):
            write(comparison, into: &out)
        }
    }

    private static func writeCompound(_ list: [CorePredicate], joiner: String, empty: String, into out: inout String) {
        guard !list.isEmpty else {
            out += empty
            return
        }
        for (i, sub) in list.enumerated() {
            if i > 0 { out += joiner }
            writeSubpredicate(sub, into: &out)
        }
    }

    /// Apple puts every compound subpredicate of a compound predicate in parentheses.
    private static func writeSubpredicate(_ predicate: CorePredicate, into out: inout String) {
        switch predicate {
        case .and, .or, .not:
            out += "("
            write(predicate, into: &out)
            out += ")"
        case .constant, .comparison:
            write(predicate, into: &out)
        }
    }

    private static func write(_ comparison: ComparisonPredicate, into out: inout String) {
        if comparison.modifier != .direct {
            out += comparison.modifier.rawValue
            out += " "
        }
        write(comparison.leftExpression, into: &out)
        out += " "
        out += comparison.operatorType.symbol
        let letters = comparison.options.letters
        if !letters.isEmpty {
            out += "[" + letters + "]"
        }
        out += " "
        write(comparison.rightExpression, into: &out)
    }

    // MARK: Expressions

    static func write(_ expression: CoreExpression, into out: inout String) {
        switch expression {
        case .constant(let value):
            writeConstant(value, into: &out)
        case .evaluatedObject:
            out += "SELF"
        case .keyPath(let path):
            writeKeyPath(path, into: &out)
        case .variable(let name):
            out += "$" + name
        case let .member(base, path):
            writePostfixBase(base, into: &out)
            out += "." + path
        case .aggregate(let list):
            writeList(list, open: "{", close: "}", into: &out)
        case let .function(name, arguments):
            if let function = PredicateFunction(rawValue: name), let symbol = function.infixOperator,
               arguments.count == 2 {
                writeOperand(arguments[0], into: &out)
                out += " " + symbol + " "
                writeOperand(arguments[1], into: &out)
            } else {
                out += name
                writeList(arguments, open: "(", close: ")", into: &out)
            }
        case let .customFunction(receiver, selector, arguments):
            out += "FUNCTION("
            write(receiver, into: &out)
            out += ", " + quoted(selector, quote: "'")
            for argument in arguments {
                out += ", "
                write(argument, into: &out)
            }
            out += ")"
        case let .subquery(collection, variable, predicate):
            out += "SUBQUERY("
            write(collection, into: &out)
            out += ", $" + variable + ", "
            write(predicate, into: &out)
            out += ")"
        case let .conditional(predicate, a, b):
            out += "TERNARY("
            write(predicate, into: &out)
            out += ", "
            write(a, into: &out)
            out += ", "
            write(b, into: &out)
            out += ")"
        case let .index(base, subscription):
            writePostfixBase(base, into: &out)
            out += "["
            switch subscription {
            case .first: out += "FIRST"
            case .last: out += "LAST"
            case .size: out += "SIZE"
            case .expression(let index):
                if case .keyPath(let path) = index, ["FIRST", "LAST", "SIZE"].contains(path.uppercased()) {
                    out += "#" + path
                } else {
                    write(index, into: &out)
                }
            }
            out += "]"
        case let .cast(value, type):
            out += "CAST("
            write(value, into: &out)
            out += ", " + quoted(type) + ")"
        case let .setOperation(operation, a, b):
            writeOperand(a, into: &out)
            out += " " + operation.rawValue + " "
            writeOperand(b, into: &out)
        case let .assignment(variable, value):
            out += "$" + variable + " := "
            write(value, into: &out)
        case .anyKey:
            out += "ANYKEY"
        }
    }

    private static func writeList(_ list: [CoreExpression], open: String, close: String, into out: inout String) {
        out += open
        for (i, element) in list.enumerated() {
            if i > 0 { out += ", " }
            write(element, into: &out)
        }
        out += close
    }

    /// Whether the expression prints with an infix operator (and so needs parentheses
    /// as the operand of another one, as Apple prints `a + (b * 2)`).
    private static func isInfix(_ expression: CoreExpression) -> Bool {
        switch expression {
        case let .function(name, arguments):
            return arguments.count == 2 && PredicateFunction(rawValue: name)?.infixOperator != nil
        case .setOperation, .assignment:
            return true
        default:
            return false
        }
    }

    private static func writeOperand(_ expression: CoreExpression, into out: inout String) {
        if isInfix(expression) {
            out += "("
            write(expression, into: &out)
            out += ")"
        } else {
            write(expression, into: &out)
        }
    }

    private static func writePostfixBase(_ expression: CoreExpression, into out: inout String) {
        var needsParentheses = isInfix(expression)
        if case .constant(let value) = expression {
            switch value {
            case .int(let i): needsParentheses = i < 0
            case .double(let d): needsParentheses = d < 0 || d.sign == .minus
            case .decimal(let d): needsParentheses = d < 0
            default: break
            }
        }
        if needsParentheses {
            out += "("
            write(expression, into: &out)
            out += ")"
        } else {
            write(expression, into: &out)
        }
    }

    // MARK: Key paths and constants

    static func writeKeyPath(_ path: String, into out: inout String) {
        let first = path.prefix { $0 != "." }
        if let head = first.unicodeScalars.first, PredicateLexer.isIdentifierStart(head),
           first.unicodeScalars.allSatisfy(PredicateLexer.isIdentifierContinuation),
           PredicateLexer.reservedWords.contains(first.uppercased()) {
            out += "#"
        }
        out += path
    }

    static func writeConstant(_ value: AttributeValue, into out: inout String) {
        switch value {
        case .null:
            out += "nil"
        case .bool(let b):
            out += b ? "1" : "0"
        case .int(let i):
            out += String(i)
        case .double(let d):
            out += formatDouble(d)
        case .decimal(let d):
            if d.isNaN {
                out += "CAST(\"nan\", \"NSNumber\")"
            } else {
                out += d.description
            }
        case .string(let s):
            out += quoted(s)
        case .date(let date):
            out += "CAST(" + formatSeconds(date.timeIntervalSinceReferenceDate) + ", \"NSDate\")"
        case .data(let data):
            out += "CAST(" + quoted(data.base64EncodedString()) + ", \"NSData\")"
        case .uuid(let uuid):
            out += "CAST(" + quoted(uuid.uuidString) + ", \"NSUUID\")"
        case .uri(let url):
            out += "CAST(" + quoted(url.absoluteString) + ", \"NSURL\")"
        case .array(let values):
            out += "{"
            for (i, element) in values.enumerated() {
                if i > 0 { out += ", " }
                writeConstant(element, into: &out)
            }
            out += "}"
        case .dictionary(let values):
            out += "CAST({"
            for (i, key) in values.keys.sorted().enumerated() {
                if i > 0 { out += ", " }
                out += "{" + quoted(key) + ", "
                writeConstant(values[key] ?? .null, into: &out)
                out += "}"
            }
            out += "}, \"NSDictionary\")"
        }
    }

    /// As `NSNumber` prints a double: integral values without a fraction (`30`),
    /// others in their shortest exact form (`1.5`, `0.1`, `1e+20`).
    static func formatDouble(_ d: Double) -> String {
        if d.isNaN { return "CAST(\"nan\", \"NSNumber\")" }
        if d.isInfinite { return d < 0 ? "CAST(\"-inf\", \"NSNumber\")" : "CAST(\"inf\", \"NSNumber\")" }
        if let i = NumericValue.exactInt64(d), Swift.abs(d) < 1e16 { return String(i) }
        return d.description
    }

    /// Seconds as `%f` prints them (Apple's `CAST(599529600.000000, "NSDate")`), or
    /// exactly when six decimals would lose precision.
    static func formatSeconds(_ t: Double) -> String {
        guard t.isFinite else { return formatDouble(t) }
        let fixed = String(format: "%f", t)
        if Double(fixed) == t { return fixed }
        return t.description
    }

    static func quoted(_ s: String, quote: Unicode.Scalar = "\"") -> String {
        var out = String.UnicodeScalarView()
        out.append(quote)
        for scalar in s.unicodeScalars {
            if scalar == quote || scalar == "\\" { out.append("\\") }
            out.append(scalar)
        }
        out.append(quote)
        return String(out)
    }
}
