import Foundation
import OpenCoreData
import PostgresNIO

/// Rows passed from a connection's event loop, as they arrive, to the thread
/// waiting for a statement: the event loop queues them, the waiting thread takes
/// every queued row at once, sleeping only while the queue is empty.
final class PostgreSQLRowHandoff: Sendable {
    private struct State {
        var rows: [PostgresRow] = []
        var result: Result<Void, any Error>?
        var waiting = false
        var cancelled = false
    }
    private let state = Lock(State())
    /// Signalled once for each time the waiting thread sleeps.
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Queues `row` (on the event loop); throws once the reader gave up.
    func deliver(_ row: PostgresRow) throws {
        let wake = try state.withLock { state throws -> Bool in
            if state.cancelled { throw CancellationError() }
            state.rows.append(row)
            defer { state.waiting = false }
            return state.waiting
        }
        if wake { wakeUp.signal() }
    }

    /// Records the statement's end (on the event loop).
    func finish(_ result: Result<Void, any Error>) {
        let wake = state.withLock { state -> Bool in
            state.result = result
            defer { state.waiting = false }
            return state.waiting
        }
        if wake { wakeUp.signal() }
    }

    /// Makes the event loop stop the statement at its next row.
    func cancel() { state.withLock { $0.cancelled = true } }

    /// The rows queued since the last call, waiting for some; nil once the
    /// statement ended and every row was taken.
    func next() -> [PostgresRow]? {
        while true {
            let taken = state.withLock { state -> [PostgresRow]? in
                if !state.rows.isEmpty {
                    defer { state.rows = [] }
                    return state.rows
                }
                if state.result != nil { return nil }
                state.waiting = true
                return []
            }
            guard let taken else { return nil }
            if !taken.isEmpty { return taken }
            wakeUp.wait()
        }
    }

    /// How the statement ended (nil while it runs).
    var result: Result<Void, any Error>? { state.withLock { $0.result } }
}
