import Foundation

/// An error that ends the benchmark with a message.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic wall-clock time in seconds.
@inline(__always)
func now() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
}

/// What a peer opened for one run (a connection, a database queue, a coordinator
/// with its store), kept open until the run's timer has stopped and closed after it.
///
/// Opening comes before the timer (fairness rule 4) and closing after it, for every
/// peer alike. Closing the last connection to a WAL database checkpoints the WAL
/// into the database file and syncs it; SQLAlchemy's pooled connection does that
/// after its timer too. The objects a run made are still released inside the timer.
///
/// ```swift
/// let open = OpenConnections()
/// let connection = open.keep(try RawConnection(path: path))
/// let start = now()
/// // ... the timed work ...
/// let seconds = now() - start
/// open.closeAll()
/// ```
final class OpenConnections {
    private var handles: [AnyObject] = []

    /// Keeps `handle` open until ``closeAll()`` and returns it.
    @discardableResult
    func keep<Handle: AnyObject>(_ handle: Handle) -> Handle {
        handles.append(handle)
        return handle
    }

    /// Lets go of everything kept: the connections and stores close.
    func closeAll() { handles.removeAll() }
}

/// The process's peak resident set size in MiB (`VmHWM` in /proc/self/status,
/// `ru_maxrss` where there is no /proc).
func peakMemoryMiB() -> Double {
    if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let digits = line.dropFirst("VmHWM:".count).filter(\.isNumber)
            if let kib = Double(String(digits)) { return kib / 1024 }
        }
    }
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    #endif
    return Double(usage.ru_maxrss) / 1024
}

/// Writes a progress line to standard error (standard output carries the JSON).
func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// One measured run of one peer: the total and, for W1, its parts.
struct Sample {
    var seconds: Double
    var parts: [String: Double] = [:]
    var checksum: String
}

/// Median, minimum and maximum of samples.
struct Summary {
    let median: Double
    let min: Double
    let max: Double

    init(_ values: [Double]) {
        let sorted = values.sorted()
        let n = sorted.count
        median = n == 0 ? .nan : (n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2)
        min = sorted.first ?? .nan
        max = sorted.last ?? .nan
    }

    var json: [String: Any] { ["median": median, "min": min, "max": max] }
}

/// The deterministic data set of benchmarks.md: person `i`.
enum PersonData {
    static func name(_ i: Int) -> String { "name \(i)" }
    static func age(_ i: Int) -> Int { i % 100 }
    static func score(_ i: Int) -> Double { Double(i) * 0.5 }
    static func email(_ i: Int) -> String { "user \(i)@example.com" }
    /// The 5th attribute: a date, `i` seconds after the reference date.
    static func joined(_ i: Int) -> Double { Double(i) }

    /// Sum of the UTF-8 bytes of a string, read from its contiguous storage as the
    /// raw peer reads SQLite's buffer (iterating `utf8` one byte at a time costs
    /// ~20 instructions a byte, the same for every Swift peer).
    static func byteSum(_ s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in
            var sum = 0
            for byte in bytes { sum &+= Int(byte) }
            return sum
        }
    }
}

/// Checksums every peer computes the same way, and their expected values.
struct Checksum: Equatable {
    var rows = 0
    var ages = 0
    /// Sum of `score * 2` (an integer for this data set).
    var scores2 = 0
    /// Sum of `joined` seconds.
    var joined = 0
    /// Sum of every UTF-8 byte of `name` and `email`.
    var textBytes = 0

    var text: String { "rows=\(rows) age=\(ages) score2=\(scores2) joined=\(joined) text=\(textBytes)" }

    /// What reading every attribute of persons `0..<count` sums to.
    static func allAttributes(count: Int) -> Checksum {
        var c = Checksum()
        for i in 0..<count {
            c.rows += 1
            c.ages += PersonData.age(i)
            c.scores2 += Int(PersonData.score(i) * 2)
            c.joined += Int(PersonData.joined(i))
            c.textBytes &+= PersonData.byteSum(PersonData.name(i)) &+ PersonData.byteSum(PersonData.email(i))
        }
        return c
    }

    /// What W3 sums to: every row once (age 0...99), its score only.
    static func scoresOnly(count: Int) -> Checksum {
        var c = Checksum()
        for i in 0..<count {
            c.rows += 1
            c.scores2 += Int(PersonData.score(i) * 2)
        }
        return c
    }
}

/// Writes decimal digits of `value` (>= 0) at `buffer + offset`; returns the new offset.
@inline(__always)
func writeDecimal(_ value: Int, into buffer: UnsafeMutablePointer<UInt8>, at offset: Int) -> Int {
    if value == 0 {
        buffer[offset] = UInt8(ascii: "0")
        return offset + 1
    }
    var digits = 0
    var v = value
    while v > 0 { digits += 1; v /= 10 }
    v = value
    var position = offset + digits - 1
    while v > 0 {
        buffer[position] = UInt8(ascii: "0") + UInt8(v % 10)
        v /= 10
        position -= 1
    }
    return offset + digits
}

/// Copies `bytes` to `buffer + offset`; returns the new offset.
@inline(__always)
func writeBytes(_ bytes: StaticString, into buffer: UnsafeMutablePointer<UInt8>, at offset: Int) -> Int {
    let count = bytes.utf8CodeUnitCount
    (buffer + offset).update(from: bytes.utf8Start, count: count)
    return offset + count
}

/// Removes a SQLite database and its `-wal` / `-shm` companions.
func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        try? FileManager.default.removeItem(atPath: path + suffix)
    }
}
