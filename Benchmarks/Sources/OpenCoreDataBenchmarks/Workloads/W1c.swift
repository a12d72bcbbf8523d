import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W1c, the scaling run: `count` persons (1M in the full run) saved in chunks of
/// 10,000, one transaction each; OpenCoreData calls `reset()` after each save, so
/// its memory stays bounded whatever the count (the report shows peak memory).
struct W1c: Workload {
    let name = "W1c"
    let title = "insert {n} persons in saves of 10k (reset between them)"
    static let chunk = 10_000

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { Checksum.allAttributes(count: env.count).text }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.emptyStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        let chunks = stride(from: 0, to: env.count, by: W1c.chunk).map { $0..<min(env.count, $0 + W1c.chunk) }
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            let entityNumber = try connection.entityNumber("Person")
            let insert = try connection.prepare(RawPersonWriter.insertSQL)
            defer { sqlite3_finalize(insert) }
            let writer = RawPersonWriter()
            start = now()
            for range in chunks {
                try connection.execute("BEGIN")
                for i in range {
                    writer.bind(i, entityNumber: entityNumber, to: insert)
                    try connection.stepDone(insert)
                }
                try connection.execute("COMMIT")
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            for range in chunks {
                OpenCoreDataPeer.insertPersons(range, into: context)
                try context.save()
                context.reset()
            }
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            let entityNumber = try queue.read { try Int.fetchOne($0, sql: "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'") } ?? 0
            start = now()
            for range in chunks {
                try queue.write { db in
                    for i in range { try GRDBPerson(i, entityNumber: entityNumber).insert(db) }
                }
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: try writtenChecksum(path: path).text)
    }
}
