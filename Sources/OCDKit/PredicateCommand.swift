import ArgumentParser
import Foundation
import OpenCoreDataPredicates

/// `ocd predicate`: reads, evaluates and checks predicates in Core Data's format
/// language (`NSPredicate(format:)`).
///
/// ```
/// $ ocd predicate parse "name = 'John' && age > 30"
/// name == "John" AND age > 30
/// $ ocd predicate eval "ANY tags ==[c] 'X'" --object '{"tags": ["x", "y"]}'
/// true
/// $ ocd predicate check Tests/OpenCoreDataPredicatesTests/Fixtures/gnustep-cases.json
/// 163 passed, 0 failed
/// ```
struct PredicateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "predicate",
        abstract: "Parse, evaluate and check NSPredicate format strings.",
        subcommands: [Parse.self, Eval.self, Check.self]
    )

    /// Prints a predicate in its canonical form (`predicateFormat`).
    struct Parse: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a predicate in its canonical form, as NSPredicate's predicateFormat.")

        @Argument(help: "The predicate format string.")
        var format: String

        @Option(name: .customLong("arg"), help: "A JSON value for the next %@, %K, %d... (repeatable, in order).")
        var arguments: [String] = []

        func run() throws {
            let predicate = try PredicateCommand.predicate(format, arguments: arguments)
            emit(predicate.predicateFormat)
        }
    }

    /// Evaluates a predicate against an object given as JSON.
    struct Eval: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Evaluate a predicate against a JSON object; prints true or false.",
            discussion: """
                JSON objects stand for dictionaries; {"$date": "2024-01-01T00:00:00Z"} is a date \
                and {"$null": true} is NSNull.
                """)

        @Argument(help: "The predicate format string.")
        var format: String

        @Option(help: "The object to evaluate against, as JSON (default: null).")
        var object: String?

        @Option(name: .customLong("var"), help: "A substitution variable as name=JSON (repeatable).")
        var variables: [String] = []

        @Option(name: .customLong("arg"), help: "A JSON value for the next %@, %K, %d... (repeatable, in order).")
        var arguments: [String] = []

        func run() throws {
            let predicate = try PredicateCommand.predicate(format, arguments: arguments)
            let target = try object.map { try PredicateCommand.json($0, what: "--object") }
            var bindings: [String: Any] = [:]
            for variable in variables {
                guard let equals = variable.firstIndex(of: "="), equals != variable.startIndex else {
                    PredicateCommand.printError("--var \(variable): expected name=JSON")
                    throw ExitCode.failure
                }
                let name = String(variable[..<equals])
                bindings[name] = try PredicateCommand.json(
                    String(variable[variable.index(after: equals)...]), what: "--var \(name)")
            }
            do {
                let result = try predicate.evaluate(with: target, substitutionVariables: bindings)
                emit(result ? "true" : "false")
            } catch {
                PredicateCommand.printError("evaluating \(predicate.predicateFormat): \(error)")
                throw ExitCode.failure
            }
        }
    }

    /// Runs a case file such as gnustep-cases.json.
    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a JSON file of predicate cases (the format of gnustep-cases.json).",
            discussion: "Prints each failing case, then 'N passed, N failed'; exits with 1 if any failed.")

        @Argument(help: "The case file.")
        var file: String

        @Flag(help: "Also print the cases that pass.")
        var verbose = false

        func run() throws {
            let data: Data
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } catch {
                PredicateCommand.printError("cannot read \(file): \(error.localizedDescription)")
                throw ExitCode.failure
            }
            let cases: PredicateCaseFile
            do {
                cases = try PredicateCaseFile(data: data)
            } catch {
                PredicateCommand.printError("\(file) is not a predicate case file: \(error)")
                throw ExitCode.failure
            }
            let report = cases.run()
            for result in report.results where !result.passed || verbose {
                emit("\(result)")
            }
            for result in report.deviations where result.passed && !verbose {
                emit("NOTE \(result.id): checked against Apple's behaviour, not the file's expectation")
            }
            emit("\(report.passedCount) passed, \(report.failedCount) failed")
            if report.failedCount > 0 {
                throw ExitCode(1)
            }
        }
    }

    // MARK: Helpers

    /// Parses a format, printing where it stopped when it does not parse.
    static func predicate(_ format: String, arguments: [String]) throws -> CorePredicate {
        let values = try arguments.enumerated().map { index, text in
            try json(text, what: "--arg \(index + 1)")
        }
        do {
            return try CorePredicate(format: format, arguments: values)
        } catch let error as PredicateParseError {
            printError("expected \(error.expected) at offset \(error.offset), found \(error.found)")
            printError("  " + format)
            printError("  " + String(repeating: " ", count: error.offset) + "^")
            throw ExitCode.failure
        }
    }

    static func json(_ text: String, what: String) throws -> AttributeValue {
        do {
            return try AttributeValue(json: text)
        } catch {
            printError("\(what) is not valid JSON: \(text)")
            throw ExitCode.failure
        }
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data(("error: " + message + "\n").utf8))
    }
}
