import Foundation

/// Runs work that recurses deeply on a thread with a large stack, waiting for it.
///
/// Reading a deeply nested format string recurses once per level; how much stack a
/// level takes depends on the build (debug frames are many times larger) and the
/// caller's thread may have a small stack (secondary threads often have 512 KB).
/// Parsing such input on a 64 MB stack makes the nesting limit hold everywhere.
enum LargeStack {
    static let stackSize = 64 << 20

    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let outcome = LargeStackOutcome<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            outcome.set(Result { try body() })
            done.signal()
        }
        thread.stackSize = stackSize
        thread.start()
        done.wait()
        guard let result = outcome.get() else {
            throw PredicateEvaluationError.unsupported("the parsing thread did not finish")
        }
        return try result.get()
    }
}

/// The result handed from the large-stack thread back to the caller.
// @unchecked Sendable: `result` is read and written under `lock` only.
final class LargeStackOutcome<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<T, any Error>?

    func set(_ value: Result<T, any Error>) {
        lock.lock()
        result = value
        lock.unlock()
    }

    func get() -> Result<T, any Error>? {
        lock.lock()
        defer { lock.unlock() }
        return result
    }
}
