import ArgumentParser
@testable import OCDKit

/// Runs `ocd arguments` in-process and returns what it printed.
@discardableResult
func runOCD(_ arguments: [String]) throws -> String {
    let sink = CommandOutput.Sink()
    try CommandOutput.$sink.withValue(sink) {
        var command = try OCD.parseAsRoot(arguments)
        try command.run()
    }
    return sink.text
}

/// Runs `ocd arguments` in-process, awaiting asynchronous commands (`ocd demo`),
/// and returns what it printed.
@discardableResult
func runOCDAsync(_ arguments: [String]) async throws -> String {
    let sink = CommandOutput.Sink()
    try await CommandOutput.$sink.withValue(sink) {
        var command = try OCD.parseAsRoot(arguments)
        if var asyncCommand = command as? any AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
    }
    return sink.text
}
