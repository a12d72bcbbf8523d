import Foundation
import GRDBSQLite
import OpenCoreData

// OpenCoreData against raw SQLite and GRDB records (see
// /work/shared/docs/benchmarks.md and Benchmarks/run, which drives this executable;
// SQLAlchemy runs the same workloads from Benchmarks/python/bench.py).
//
//   OpenCoreDataBenchmarks version
//   OpenCoreDataBenchmarks workloads
//   OpenCoreDataBenchmarks prepare --dir D --count N
//   OpenCoreDataBenchmarks pg-prepare|pg-run ...   (PostgreSQL: PostgreSQL/PostgreSQLCommands.swift)
//   OpenCoreDataBenchmarks run --workload W [--peers raw,opencoredata,grdb]
//                              [--count N] [--runs 7] [--warmup 1] [--synchronous NORMAL] --dir D
//
// `prepare` creates, outside any timer, the empty store write runs copy and the
// populated stores read runs use. `run` measures the peers interleaved (warm-up
// first, then `runs` rounds, rotating which peer goes first) and prints one JSON
// object on standard output: median, min, max per peer, parts, checksums, and the
// process's peak memory (run one peer per process for a per-peer peak).

struct Options {
    var command = ""
    var workload = "W1"
    var peers: [Peer] = Peer.allCases
    var count = 100_000
    var runs = 7
    var warmup = 1
    var dir = ""
    var synchronous = "NORMAL"

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        guard let command = rest.popFirst() else { throw BenchmarkError("usage: OpenCoreDataBenchmarks version|workloads|prepare|run [options]") }
        self.command = command
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw BenchmarkError("\(flag) needs a value") }
            switch flag {
            case "--workload": workload = value
            case "--peers":
                peers = try value.split(separator: ",").map { name in
                    guard let peer = Peer(rawValue: String(name)) else { throw BenchmarkError("unknown peer \(name)") }
                    return peer
                }
            case "--count": count = try Self.integer(value, flag)
            case "--runs": runs = try Self.integer(value, flag)
            case "--warmup": warmup = try Self.integer(value, flag)
            case "--synchronous":
                guard ["NORMAL", "FULL"].contains(value) else { throw BenchmarkError("--synchronous is NORMAL or FULL") }
                synchronous = value
            case "--dir": dir = value
            default: throw BenchmarkError("unknown option \(flag)")
            }
        }
        if !["version", "workloads"].contains(command) && dir.isEmpty { throw BenchmarkError("--dir is required") }
    }

    static func integer(_ value: String, _ flag: String) throws -> Int {
        guard let n = Int(value), n >= 0 else { throw BenchmarkError("\(flag) needs a number, not \(value)") }
        return n
    }

    var environment: BenchEnvironment { BenchEnvironment(dir: dir, count: count, synchronous: synchronous) }
}

func prepare(_ options: Options) throws {
    let env = options.environment
    try FileManager.default.createDirectory(atPath: env.dir, withIntermediateDirectories: true)
    removeDatabase(env.emptyStore)
    try OpenCoreDataPeer.createEmpty(path: env.emptyStore)
    removeDatabase(env.populatedStore)
    var start = now()
    try OpenCoreDataPeer.populate(count: env.count, path: env.populatedStore)
    log("prepared \(env.populatedStore) (\(env.count) persons) in \(String(format: "%.2f", now() - start)) s")
    removeDatabase(env.familyStore)
    start = now()
    try OpenCoreDataPeer.populateFamilies(parents: env.count / FamilyData.childrenPerParent, path: env.familyStore)
    log("prepared \(env.familyStore) (\(env.count / FamilyData.childrenPerParent) parents x \(FamilyData.childrenPerParent) children) in \(String(format: "%.2f", now() - start)) s")

    // The store's files are in WAL mode without anyone asking, and the indexes the
    // queries need are there and used.
    let connection = try RawConnection(path: env.populatedStore)
    func rows(_ connection: RawConnection, _ sql: String) throws -> [String] {
        let statement = try connection.prepare(sql)
        defer { sqlite3_finalize(statement) }
        var result: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            let column = sqlite3_column_count(statement) - 1
            result.append(sqlite3_column_text(statement, column).map { String(cString: $0) } ?? "NULL")
        }
        return result
    }
    let mode = try rows(connection, "PRAGMA journal_mode").first ?? "?"
    guard mode == "wal" else { throw BenchmarkError("the store's journal_mode is \(mode), not wal") }
    let plan = try rows(connection, "EXPLAIN QUERY PLAN \(PersonTable.selectAll) WHERE ZAGE = 7")
    log("journal_mode=\(mode); W3 plan: \(plan.joined(separator: "; "))")
    guard plan.contains(where: { $0.contains("USING INDEX") }) else { throw BenchmarkError("the W3 query does not use an index") }
    let family = try RawConnection(path: env.familyStore)
    let childPlan = try rows(family, "EXPLAIN QUERY PLAN SELECT ZNAME FROM ZCHILD WHERE ZPARENT = 7")
    log("W6 plan: \(childPlan.joined(separator: "; "))")
    guard childPlan.contains(where: { $0.contains("USING INDEX") }) else { throw BenchmarkError("the W6 query does not use an index") }
}

func run(_ options: Options) throws {
    guard let workload = allWorkloads.first(where: { $0.name == options.workload }) else {
        throw BenchmarkError("unknown workload \(options.workload); known: \(allWorkloads.map(\.name).joined(separator: " "))")
    }
    let env = options.environment
    for file in [env.emptyStore, env.populatedStore, env.familyStore] where !FileManager.default.fileExists(atPath: file) {
        throw BenchmarkError("no \(file): run `prepare --count \(env.count)` first")
    }
    let expected = try workload.expectedChecksum(env)
    let peers = options.peers.filter { workload.peers.contains($0) }

    var samples: [Peer: [Sample]] = [:]
    for round in 0..<(options.warmup + options.runs) {
        // Rotate the order so that no peer always runs first (or last).
        let shift = round % max(1, peers.count)
        let order = Array(peers[shift...] + peers[..<shift])
        for peer in order {
            let sample = try workload.run(peer, env)
            guard sample.checksum == expected else {
                throw BenchmarkError("\(workload.name) \(peer): checksum \(sample.checksum), expected \(expected)")
            }
            let warm = round < options.warmup
            let parts = sample.parts.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.4f", $0.value))" }
            log("\(workload.name) \(peer)\(warm ? " (warm-up)" : "") \(String(format: "%.4f", sample.seconds)) s\(parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")")
            if !warm { samples[peer, default: []].append(sample) }
        }
    }

    var results: [String: Any] = [:]
    for (peer, list) in samples {
        var entry = Summary(list.map(\.seconds)).json
        entry["samples"] = list.map(\.seconds)
        entry["checksum"] = list.first?.checksum ?? ""
        var parts: [String: Any] = [:]
        for key in Set(list.flatMap(\.parts.keys)) {
            parts[key] = Summary(list.compactMap { $0.parts[key] }).json
        }
        if !parts.isEmpty { entry["parts"] = parts }
        results[peer.rawValue] = entry
    }
    let result: [String: Any] = [
        "workload": workload.name,
        "title": workload.title,
        "count": env.count,
        "runs": options.runs,
        "warmup": options.warmup,
        "sqlite_version": try sqliteVersion(),
        "expected_checksum": expected,
        "peak_mb": peakMemoryMiB(),
        "peers": results,
    ]
    let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
    print(String(decoding: json, as: UTF8.self))
}

#if PostgreSQL
if let command = CommandLine.arguments.dropFirst().first, command.hasPrefix("pg-") {
    do {
        try PGCommands.run(Array(CommandLine.arguments.dropFirst()))
        exit(0)
    } catch {
        log("error: \(error)")
        exit(1)
    }
}
#endif

do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    switch options.command {
    case "version": print(try sqliteVersion())
    case "workloads": print(allWorkloads.map(\.name).joined(separator: " "))
    case "prepare": try prepare(options)
    case "run": try run(options)
    case "frc": try FetchedResultsWorkload.run(count: options.count, runs: options.runs, dir: options.dir)
    default: throw BenchmarkError("unknown command \(options.command)")
    }
} catch {
    log("error: \(error)")
    exit(1)
}
