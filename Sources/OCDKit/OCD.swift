import ArgumentParser
import Foundation

/// `ocd`: inspect Core Data models and stores, run queries, run the demo.
public struct OCD: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "ocd",
        abstract: "OpenCoreData's command-line tool: inspect Core Data models and stores, run queries, run the demo.",
        subcommands: [ModelCommand.self, PredicateCommand.self, StoreCommand.self, FetchCommand.self, DemoCommand.self]
    )
}
