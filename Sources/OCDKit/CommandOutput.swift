import Foundation
import OpenCoreData

/// Where `ocd`'s commands write their output: standard output, or a sink that tests
/// install for the task they run in.
///
/// ```swift
/// let sink = CommandOutput.Sink()
/// try CommandOutput.$sink.withValue(sink) { try command.run() }
/// sink.text   // what the command printed
/// ```
public enum CommandOutput {
    /// Collects lines.
    public final class Sink: Sendable {
        private let storage = Lock<[String]>([])
        public init() {}
        func append(_ line: String) { storage.withLock { $0.append(line) } }
        /// The lines written so far.
        public var lines: [String] { storage.withLock { $0 } }
        /// Everything written so far, one line each.
        public var text: String { lines.joined(separator: "\n") }
    }

    /// The sink of the current task, if any.
    @TaskLocal public static var sink: Sink?

    /// A function writing lines where ``emit(_:)`` writes them now, for code that
    /// runs later or on other queues (where the task's sink is not visible).
    static func emitter() -> @Sendable (String) -> Void {
        let sink = sink
        return { line in
            if let sink { sink.append(line) } else { print(line) }
        }
    }

    /// Writes one line.
    static func emit(_ line: String) {
        if let sink { sink.append(line) } else { print(line) }
    }
}

/// Writes one line of command output.
func emit(_ line: String) {
    CommandOutput.emit(line)
}
