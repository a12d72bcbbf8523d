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
