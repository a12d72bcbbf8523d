import ArgumentParser
import Foundation
import OpenCoreData

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the Moody demo on an embedded SQLite store."
    )

    func run() throws {
        emit("The Moody demo arrives with the SQLite store and the fetched results controller.")
        emit("Available now: `ocd model show <path.xcdatamodeld> [--json]` and `ocd predicate ...`.")
    }
}
