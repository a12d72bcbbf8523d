import Foundation

/// A file of predicate test cases, and a runner that checks each one.
///
/// The format is the one of GNUstep's cases extracted as data
/// (`gnustep-cases.json`):
///
/// ```json
/// {
///   "source": "where the cases come from",
///   "cases": [
///     { "id": "basic.m:38", "format": "%K == %@", "arguments": ["Record1.Name", "John"],
///       "object": {"Record1": {"Name": "John"}}, "expect": true },
///     { "id": "formatOperators.m:23", "format": "a < 1", "expect": "parses",
///       "canonical": "a < 1" },
///     { "id": "basic.m:312", "format": "SELF.foo <= 2", "object": {"foo": "2"},
///       "expect": "eval-error" }
///   ]
/// }
/// ```
///
/// - `arguments`, `object` and `variables` are JSON values (see
///   ``AttributeValue/init(json:)`` for dates and `NSNull`).
/// - `expect` is `true`/`false` (the result of evaluating against `object`),
///   `"parses"`, `"parse-error"` or `"eval-error"`.
/// - `canonical`, if present, is the expected ``CorePredicate/predicateFormat``
///   (after substituting `variables`, if present).
///
/// ```swift
/// let file = try PredicateCaseFile(contentsOf: url)
/// let report = file.run()
/// for failure in report.failures { print(failure) }
/// print("\(report.passedCount) passed, \(report.failedCount) failed")
/// ```
public struct PredicateCaseFile: Sendable {
    /// Where the cases come from.
    public var source: String?
    /// The cases, in file order.
    public var cases: [PredicateCase]

    /// A case file built in code.
    public init(source: String? = nil, cases: [PredicateCase]) {
        self.source = source
        self.cases = cases
    }

    /// Loads a case file.
    public init(contentsOf url: URL) throws {
        try self.init(data: Data(contentsOf: url))
    }

    /// Reads a case file from JSON data.
    public init(data: Data) throws {
        let node = try JSONDecoder().decode(JSONNode.self, from: data)
        guard case .object(let root) = node, case .array(let list)? = root["cases"] else {
            throw CaseFileError(message: "a case file is an object with a \"cases\" array")
        }
        if case .string(let source)? = root["source"] { self.source = source }
        cases = try list.enumerated().map { index, entry in try PredicateCase(node: entry, index: index) }
    }

    /// Cases whose expectation contradicts Apple's documented behaviour, with what
    /// Apple's Foundation does instead. The runner checks them against that.
    public static let knownDeviations: [String: PredicateCaseDeviation] = [
        "formatOperators.m:30": PredicateCaseDeviation(
            canonical: "a == 1",
            reason: "GNUstep prints the equality operator parsed from '=' as '='. Apple's "
                + "NSComparisonPredicate has a single equality operator type "
                + "(NSEqualToPredicateOperatorType, NSComparisonPredicate.Operator.equalTo) and prints it as "
                + "'==' whichever spelling it was parsed from; '=' and '==' are the same operator "
                + "(Predicate Programming Guide, Predicate Format String Syntax, Basic Comparisons).",
            reference: "https://developer.apple.com/documentation/foundation/nscomparisonpredicate/operator/equalto"),
    ]

    /// Runs every case.
    ///
    /// - parameter deviations: cases checked against another expectation (Apple's,
    ///   where the file records another implementation's); by default
    ///   ``knownDeviations``.
    public func run(deviations: [String: PredicateCaseDeviation] = PredicateCaseFile.knownDeviations) -> PredicateCaseReport {
        PredicateCaseReport(results: cases.map { $0.run(deviation: deviations[$0.id]) })
    }

    struct CaseFileError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}

/// A case whose recorded expectation is not Apple's behaviour.
public struct PredicateCaseDeviation: Sendable, Hashable {
    /// The `predicateFormat` Apple's Foundation prints instead, if the deviation is
    /// about printing.
    public var canonical: String?
    /// The result Apple's Foundation gives instead, if the deviation is about it.
    public var expect: PredicateCaseExpectation?
    /// Why the case's expectation is not Apple's.
    public var reason: String
    /// Where Apple documents its behaviour.
    public var reference: String

    /// A deviation: what Apple does instead, why, and where it is documented.
    public init(canonical: String? = nil, expect: PredicateCaseExpectation? = nil, reason: String, reference: String) {
        self.canonical = canonical
        self.expect = expect
        self.reason = reason
        self.reference = reference
    }
}

/// What a case expects.
public enum PredicateCaseExpectation: Sendable, Hashable {
    /// Evaluating against the case's object gives this.
    case value(Bool)
    /// The format parses.
    case parses
    /// The format does not parse.
    case parseError
    /// The format parses, but evaluating raises.
    case evaluationError
}

/// One case of a ``PredicateCaseFile``.
public struct PredicateCase: Sendable, Hashable {
    /// The case's name (`basic.m:38`); `#<index>` when the file gives none.
    public var id: String
    /// The predicate format string.
    public var format: String
    /// The values for the format's specifiers, in order.
    public var arguments: [AttributeValue]
    /// The object to evaluate against; `nil` evaluates against `nil`.
    public var object: AttributeValue?
    /// What should happen.
    public var expect: PredicateCaseExpectation
    /// The expected `predicateFormat`.
    public var canonical: String?
    /// Substitution variables applied before printing and evaluating.
    public var variables: [String: AttributeValue]?
    /// A comment explaining the case.
    public var note: String?

    /// A case built in code.
    public init(
        id: String, format: String, arguments: [AttributeValue] = [], object: AttributeValue? = nil,
        expect: PredicateCaseExpectation, canonical: String? = nil, variables: [String: AttributeValue]? = nil,
        note: String? = nil
    ) {
        self.id = id
        self.format = format
        self.arguments = arguments
        self.object = object
        self.expect = expect
        self.canonical = canonical
        self.variables = variables
        self.note = note
    }

    init(node: JSONNode, index: Int) throws {
        guard case .object(let fields) = node else {
            throw PredicateCaseFile.CaseFileError(message: "case \(index) is not an object")
        }
        func string(_ key: String) -> String? {
            if case .string(let s)? = fields[key] { return s }
            return nil
        }
        guard let format = string("format") else {
            throw PredicateCaseFile.CaseFileError(message: "case \(index) has no \"format\" string")
        }
        self.format = format
        self.id = string("id") ?? "#\(index)"
        switch fields["arguments"] {
        case nil: arguments = []
        case .array(let list)?: arguments = try list.map { try $0.attributeValue() }
        default: throw PredicateCaseFile.CaseFileError(message: "case \(id): \"arguments\" is not an array")
        }
        object = try fields["object"]?.attributeValue()
        switch fields["expect"] {
        case .bool(let b)?: expect = .value(b)
        case .string("parses")?: expect = .parses
        case .string("parse-error")?, .string("error")?: expect = .parseError
        case .string("eval-error")?: expect = .evaluationError
        default:
            throw PredicateCaseFile.CaseFileError(
                message: "case \(id): \"expect\" must be true, false, \"parses\", \"parse-error\" or \"eval-error\"")
        }
        canonical = string("canonical")
        note = string("note")
        switch fields["variables"] {
        case nil: variables = nil
        case .object(let values)?: variables = try values.mapValues { try $0.attributeValue() }
        default: throw PredicateCaseFile.CaseFileError(message: "case \(id): \"variables\" is not an object")
        }
    }

    /// Runs the case.
    public func run(deviation: PredicateCaseDeviation? = nil) -> PredicateCaseResult {
        let expect = deviation?.expect ?? self.expect
        let canonical = deviation?.canonical ?? self.canonical
        func result(_ passed: Bool, _ message: String? = nil) -> PredicateCaseResult {
            PredicateCaseResult(id: id, format: format, passed: passed, message: message, deviation: deviation)
        }
        var predicate: CorePredicate
        do {
            predicate = try CorePredicate(format: format, arguments: arguments)
        } catch {
            if expect == .parseError { return result(true) }
            return result(false, "does not parse: \(error)")
        }
        if expect == .parseError {
            return result(false, "parses as \(predicate.predicateFormat), expected a parse error")
        }
        if let variables {
            predicate = predicate.withSubstitutionVariables(variables)
        }
        if let canonical, predicate.predicateFormat != canonical {
            return result(false, "prints as \(predicate.predicateFormat), expected \(canonical)")
        }
        switch expect {
        case .parses, .parseError:
            return result(true)
        case .value(let expected):
            do {
                let value = try predicate.evaluate(with: object)
                return value == expected ? result(true) : result(false, "evaluates to \(value), expected \(expected)")
            } catch {
                return result(false, "evaluation fails (\(error)), expected \(expected)")
            }
        case .evaluationError:
            do {
                let value = try predicate.evaluate(with: object)
                return result(false, "evaluates to \(value), expected an evaluation error")
            } catch {
                return result(true)
            }
        }
    }
}

/// The outcome of one case.
public struct PredicateCaseResult: Sendable, Hashable, CustomStringConvertible {
    /// The case's id.
    public var id: String
    /// The case's format string.
    public var format: String
    /// Whether the case behaved as expected.
    public var passed: Bool
    /// Why the case failed.
    public var message: String?
    /// The deviation the case was checked with, if any.
    public var deviation: PredicateCaseDeviation?

    /// `PASS id: format` or `FAIL id: format — why`.
    public var description: String {
        var text = "\(passed ? "PASS" : "FAIL") \(id): \(format)"
        if let message { text += " — \(message)" }
        if let deviation { text += " [checked against Apple's behaviour: \(deviation.reason)]" }
        return text
    }
}

/// The outcome of a case file.
public struct PredicateCaseReport: Sendable {
    /// One result per case, in file order.
    public var results: [PredicateCaseResult]

    public init(results: [PredicateCaseResult]) { self.results = results }

    /// The cases that did not behave as expected.
    public var failures: [PredicateCaseResult] { results.filter { !$0.passed } }
    /// The cases checked against Apple's behaviour instead of the file's expectation.
    public var deviations: [PredicateCaseResult] { results.filter { $0.deviation != nil } }
    /// How many cases passed.
    public var passedCount: Int { results.count - failedCount }
    /// How many cases failed.
    public var failedCount: Int { results.reduce(0) { $0 + ($1.passed ? 0 : 1) } }
}
