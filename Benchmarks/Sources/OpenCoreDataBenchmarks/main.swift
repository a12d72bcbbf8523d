import Foundation
import GRDBSQLite
import OpenCoreData

// OpenCoreData against raw SQLite (see /work/shared/docs/benchmarks.md and
// Benchmarks/run, which drives this executable).
//
//   OpenCoreDataBenchmarks version
//   OpenCoreDataBenchmarks prepare --dir D --count N
//   OpenCoreDataBenchmarks run --workload W1|W2|W3 [--peers raw,opencoredata]
//                              [--count N] [--runs 7] [--warmup 1] --dir D
//
// `prepare` creates, outside any timer, the empty store the raw peer's W1 copies
// and the populated store W2 and W3 read. `run` measures the peers interleaved
// (warm-up first, then `runs` rounds, alternating which peer goes first) and
// prints one JSON object on standard output: median, min, max per peer, W1's
// create/save split, checksums, and the process's peak memory (run one peer per
// process for a per-peer peak).

struct Options {
    var command = ""
    var workload = "W1"
    var peers = ["raw", "opencoredata"]
    var count = 100_000
    var runs = 7
    var warmup = 1
    var dir = ""

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        guard let command = rest.popFirst() else { throw BenchmarkError("usage: OpenCoreDataBenchmarks version|prepare|run [options]") }
        self.command = command
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw BenchmarkError("\(flag) needs a value") }
            switch flag {
            case "--workload": workload = value
            case "--peers": peers = value.split(separator: ",").map(String.init)
            case "--count": count = try Self.integer(value, flag)
            case "--runs": runs = try Self.integer(value, flag)
            case "--warmup": warmup = try Self.integer(value, flag)
            case "--dir": dir = value
            default: throw BenchmarkError("unknown option \(flag)")
            }
        }
        for peer in peers where !["raw", "opencoredata"].contains(peer) { throw BenchmarkError("unknown peer \(peer)") }
        if command != "version" && dir.isEmpty { throw BenchmarkError("--dir is required") }
    }

    static func integer(_ value: String, _ flag: String) throws -> Int {
        guard let n = Int(value), n >= 0 else { throw BenchmarkError("\(flag) needs a number, not \(value)") }
        return n
    }

    var emptyStore: String { dir + "/empty.sqlite" }
    var populatedStore: String { dir + "/people-\(count).sqlite" }
}

func prepare(_ options: Options) throws {
    try FileManager.default.createDirectory(atPath: options.dir, withIntermediateDirectories: true)
    removeDatabase(options.emptyStore)
    try OpenCoreDataPeer.createEmpty(path: options.emptyStore)
    removeDatabase(options.populatedStore)
    let start = now()
    try OpenCoreDataPeer.populate(count: options.count, path: options.populatedStore)
    log("prepared \(options.populatedStore) (\(options.count) persons) in \(String(format: "%.2f", now() - start)) s")

    // The store's files are in WAL mode without anyone asking, and the age index is
    // there and used by the W3 query.
    var handle: OpaquePointer?
    guard sqlite3_open_v2(options.populatedStore, &handle, SQLITE_OPEN_READONLY, nil) == SQLITE_OK, let handle else {
        throw BenchmarkError("can't open \(options.populatedStore)")
    }
    defer { sqlite3_close_v2(handle) }
    func rows(_ sql: String) -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return [] }
        defer { sqlite3_finalize(statement) }
        var result: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            let column = sqlite3_column_count(statement) - 1
            result.append(sqlite3_column_text(statement, column).map { String(cString: $0) } ?? "NULL")
        }
        return result
    }
    let mode = rows("PRAGMA journal_mode").first ?? "?"
    guard mode == "wal" else { throw BenchmarkError("the store's journal_mode is \(mode), not wal") }
    let indexes = rows("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ZPERSON'")
    let plan = rows("EXPLAIN QUERY PLAN \(PersonTable.selectAll) WHERE ZAGE = 7")
    log("journal_mode=\(mode); indexes: \(indexes.joined(separator: "; ")); W3 plan: \(plan.joined(separator: "; "))")
    guard plan.contains(where: { $0.contains("USING INDEX") }) else { throw BenchmarkError("the W3 query does not use an index") }
}

func run(_ options: Options) throws {
    let count = options.count
    let expected: Checksum
    switch options.workload {
    case "W1", "W2": expected = .allAttributes(count: count)
    case "W3":
        guard count % 100 == 0 else { throw BenchmarkError("W3 needs a count divisible by 100") }
        expected = .scoresOnly(count: count)
    default: throw BenchmarkError("unknown workload \(options.workload)")
    }
    if options.workload != "W1", !FileManager.default.fileExists(atPath: options.populatedStore) {
        throw BenchmarkError("no \(options.populatedStore): run `prepare --count \(count)` first")
    }
    var entityNumber = 0
    if options.workload == "W1" {
        let connection = try RawConnection(path: options.emptyStore)
        entityNumber = try connection.integers("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'")[0]
    }

    /// One run of one peer; database files are set up and checked outside the timer.
    func measure(_ peer: String) throws -> Sample {
        switch options.workload {
        case "W1":
            let path = options.dir + "/w1-\(peer).sqlite"
            removeDatabase(path)
            if peer == "raw" { try FileManager.default.copyItem(atPath: options.emptyStore, toPath: path) }
            var sample = peer == "raw"
                ? try RawPeer.insert(count: count, path: path, entityNumber: entityNumber)
                : try OpenCoreDataPeer.insert(count: count, path: path)
            let written = try writtenChecksum(path: path)
            sample.checksum = written.text
            removeDatabase(path)
            return sample
        case "W2":
            return peer == "raw" ? try RawPeer.fetchAll(path: options.populatedStore) : try OpenCoreDataPeer.fetchAll(path: options.populatedStore)
        default:
            return peer == "raw" ? try RawPeer.fetchByAge(path: options.populatedStore) : try OpenCoreDataPeer.fetchByAge(path: options.populatedStore)
        }
    }

    var samples: [String: [Sample]] = [:]
    for round in 0..<(options.warmup + options.runs) {
        let order = round % 2 == 0 ? options.peers : options.peers.reversed()
        for peer in order {
            let sample = try measure(peer)
            guard sample.checksum == expected.text else {
                throw BenchmarkError("\(options.workload) \(peer): checksum \(sample.checksum), expected \(expected.text)")
            }
            let warm = round < options.warmup
            let parts = sample.parts.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.4f", $0.value))" }
            log("\(options.workload) \(peer)\(warm ? " (warm-up)" : "") \(String(format: "%.4f", sample.seconds)) s\(parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")")
            if !warm { samples[peer, default: []].append(sample) }
        }
    }

    var peers: [String: Any] = [:]
    for (peer, list) in samples {
        var entry = Summary(list.map(\.seconds)).json
        entry["samples"] = list.map(\.seconds)
        entry["checksum"] = list.first?.checksum ?? ""
        var parts: [String: Any] = [:]
        for key in Set(list.flatMap(\.parts.keys)) {
            parts[key] = Summary(list.compactMap { $0.parts[key] }).json
        }
        if !parts.isEmpty { entry["parts"] = parts }
        peers[peer] = entry
    }
    let result: [String: Any] = [
        "workload": options.workload,
        "count": count,
        "runs": options.runs,
        "warmup": options.warmup,
        "sqlite_version": try sqliteVersion(),
        "expected_checksum": expected.text,
        "peak_mb": peakMemoryMiB(),
        "peers": peers,
    ]
    let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
    print(String(decoding: json, as: UTF8.self))
}

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    switch options.command {
    case "version": print(try sqliteVersion())
    case "prepare": try prepare(options)
    case "run": try run(options)
    case "frc": try FetchedResultsWorkload.run(count: options.count, runs: options.runs, dir: options.dir)
    default: throw BenchmarkError("unknown command \(options.command)")
    }
} catch {
    log("error: \(error)")
    exit(1)
}
