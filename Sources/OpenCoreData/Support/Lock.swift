#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a POSIX mutex: the lock every shared structure of the framework
/// uses.
///
/// It has the shape of the standard library's `Synchronization.Mutex`, and is used
/// instead of it for one reason: on Linux, `Mutex` locks with atomic operations and
/// `futex` calls inside the standard library, which ThreadSanitizer cannot see, so
/// every access it guards is reported as a race. A `pthread_mutex_t` is what the
/// sanitizer intercepts: with this lock, a report under `--sanitize=thread` is a
/// real race. An uncontended lock and unlock is two atomic operations, as with
/// `Mutex`.
///
/// ```swift
/// let names = Lock<[String: Int]>([:])
/// names.withLock { $0["Mood", default: 0] += 1 }
/// let count = names.withLock { $0.count }
/// ```
package final class Lock<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked Sendable: the value is reached only inside `withLock`, while the
    // mutex is held, and goes in and out as `sending` (as with `Mutex`).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// A lock around `initialValue`.
    package init(_ initialValue: consuming sending Value) {
        value = initialValue
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Calls `body` with the value, the lock held. Not reentrant: `body` must not
    /// take the same lock again.
    @inline(__always)
    package func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
