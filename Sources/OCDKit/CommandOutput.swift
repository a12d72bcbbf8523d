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
        private let warningStorage = Lock<[String]>([])
        public init() {}
        func append(_ line: String) { storage.withLock { $0.append(line) } }
        func appendWarning(_ line: String) { warningStorage.withLock { $0.append(line) } }
        /// The warnings written so far (standard error's lines, without the sink).
        public var warnings: [String] { warningStorage.withLock { $0 } }
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

/// Writes one warning: to standard error as `warning: <text>`, or to the task's sink.
func warn(_ text: String) {
    if let sink = CommandOutput.sink {
        sink.appendWarning(text)
    } else {
        FileHandle.standardError.write(Data(("warning: " + text + "\n").utf8))
    }
}
