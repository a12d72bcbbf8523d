#if PostgreSQL
import Foundation

/// The PostgreSQL commands (built with the benchmark package's PostgreSQL trait; see
/// Benchmarks/run --postgresql):
///
///   OpenCoreDataBenchmarks pg-prepare --url postgres://user@host:port/db --count N
///   OpenCoreDataBenchmarks pg-workloads
///   OpenCoreDataBenchmarks pg-run --url URL --workload W [--peers raw,opencoredata,fluent]
///                                 [--count N] [--runs 7] [--warmup 1]
///
/// `pg-run` prints one JSON object shaped like `run`'s, with the server's version
/// in place of SQLite's.
enum PGCommands {
    static func run(_ arguments: [String]) throws {
        var rest = arguments[...]
        let command = rest.popFirst() ?? ""
        var url = "", workload = "W1", count = 100_000, runs = 7, warmup = 1
        var peers = PGPeer.allCases
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw BenchmarkError("\(flag) needs a value") }
            switch flag {
            case "--url": url = value
            case "--workload": workload = value
            case "--count": count = try Options.integer(value, flag)
            case "--runs": runs = try Options.integer(value, flag)
            case "--warmup": warmup = try Options.integer(value, flag)
            case "--peers":
                peers = try value.split(separator: ",").map { name in
                    guard let peer = PGPeer(rawValue: String(name)) else { throw BenchmarkError("unknown peer \(name)") }
                    return peer
                }
            default: throw BenchmarkError("unknown option \(flag)")
            }
        }
        if command == "pg-workloads" {
            print(PGWorkload.all.map(\.name).joined(separator: " "))
            return
        }
        let env = try PGEnvironment(url: url, count: count)
        switch command {
        case "pg-prepare": try PGPrepare.run(env)
        case "pg-run": try measure(workload, peers: peers, env, runs: runs, warmup: warmup)
        default: throw BenchmarkError("unknown command \(command)")
        }
    }

    static func measure(_ name: String, peers: [PGPeer], _ env: PGEnvironment, runs: Int, warmup: Int) throws {
        guard let workload = PGWorkload.all.first(where: { $0.name == name }) else {
            throw BenchmarkError("unknown workload \(name); known: \(PGWorkload.all.map(\.name).joined(separator: " "))")
        }
        let expected = workload.expected(env)
        var samples: [PGPeer: [Sample]] = [:]
        for round in 0..<(warmup + runs) {
            let shift = round % max(1, peers.count)
            for peer in Array(peers[shift...] + peers[..<shift]) {
                let sample = try workload.run(peer, env)
                guard sample.checksum == expected else {
                    throw BenchmarkError("\(name) \(peer): checksum \(sample.checksum), expected \(expected)")
                }
                let warm = round < warmup
                let parts = sample.parts.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.4f", $0.value))" }
                log("\(name) \(peer)\(warm ? " (warm-up)" : "") \(String(format: "%.4f", sample.seconds)) s\(parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")")
                if !warm { samples[peer, default: []].append(sample) }
            }
        }
        var results: [String: Any] = [:]
        for (peer, list) in samples {
            var entry = Summary(list.map(\.seconds)).json
            entry["samples"] = list.map(\.seconds)
            entry["checksum"] = list.first?.checksum ?? ""
            var parts: [String: Any] = [:]
            for key in Set(list.flatMap(\.parts.keys)) { parts[key] = Summary(list.compactMap { $0.parts[key] }).json }
            if !parts.isEmpty { entry["parts"] = parts }
            results[peer.rawValue] = entry
        }
        let check = try PGRawConnection(env, schema: "public")
        let result: [String: Any] = [
            "workload": workload.name, "title": workload.title, "count": env.count, "runs": runs, "warmup": warmup,
            "server_version": try check.scalar("SHOW server_version") ?? "?", "expected_checksum": expected,
            "peak_mb": peakMemoryMiB(), "peers": results,
        ]
        let json = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys])
        print(String(decoding: json, as: UTF8.self))
    }
}
#endif
