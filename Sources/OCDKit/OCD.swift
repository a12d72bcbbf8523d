import ArgumentParser
import Foundation

/// `ocd`: inspect Core Data models and stores, run queries, run the demo.
public struct OCD: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "ocd",
        abstract: "OpenCoreData's command-line tool: inspect Core Data models and stores, run queries, run the demo.",
        subcommands: [ModelCommand.self, PredicateCommand.self, StoreCommand.self, FetchCommand.self, DemoCommand.self]
    )
}

extension OCD {
    /// Parses the program's arguments and runs the command, awaiting the
    /// asynchronous ones (`ocd demo`); what `ocd`'s `main.swift` calls.
    public static func runAsMain() async {
        do {
            var command = try await asyncParseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
