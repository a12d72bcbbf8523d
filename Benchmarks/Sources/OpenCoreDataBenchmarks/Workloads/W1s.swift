import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W1s: 1000 saves of one new person each: the latency of a small save (p50 and
/// p99 are reported as parts; the total is the sum). `synchronous` follows
/// `--synchronous` (NORMAL by default; FULL for the second variant of the plan).
struct W1s: Workload {
    let name = "W1s"
    let title = "1000 saves of 1 person each (p50 / p99 latency)"
    static let saves = 1000

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { Checksum.allAttributes(count: W1s.saves).text }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.emptyStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        var latencies: [Double] = []
        latencies.reserveCapacity(W1s.saves)
        switch peer {
        case .raw:
            let connection = try RawConnection(path: path)
            try connection.execute("PRAGMA synchronous=\(env.synchronous)")
            let entityNumber = try connection.entityNumber("Person")
            let insert = try connection.prepare(RawPersonWriter.insertSQL)
            defer { sqlite3_finalize(insert) }
            let writer = RawPersonWriter()
            for i in 0..<W1s.saves {
                let start = now()
                try connection.execute("BEGIN")
                writer.bind(i, entityNumber: entityNumber, to: insert)
                try connection.stepDone(insert)
                try connection.execute("COMMIT")
                latencies.append(now() - start)
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path, synchronous: env.synchronous)
            for i in 0..<W1s.saves {
                let start = now()
                OpenCoreDataPeer.insertPersons(i..<(i + 1), into: context)
                try context.save()
                latencies.append(now() - start)
            }
            withExtendedLifetime(coordinator) {}
        case .grdb:
            var configuration = Configuration()
            let synchronous = env.synchronous
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA journal_mode=WAL")
                try db.execute(sql: "PRAGMA synchronous=\(synchronous)")
            }
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            let entityNumber = try queue.read { try Int.fetchOne($0, sql: "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'") } ?? 0
            for i in 0..<W1s.saves {
                let start = now()
                try queue.write { db in try GRDBPerson(i, entityNumber: entityNumber).insert(db) }
                latencies.append(now() - start)
            }
        }
        let sorted = latencies.sorted()
        return Sample(seconds: latencies.reduce(0, +),
                      parts: ["p50": sorted[sorted.count / 2], "p99": sorted[min(sorted.count - 1, sorted.count * 99 / 100)]],
                      checksum: try writtenChecksum(path: path).text)
    }
}
