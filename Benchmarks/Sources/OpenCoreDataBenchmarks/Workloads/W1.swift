import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W1: insert `count` persons and save them in one transaction. OpenCoreData's
/// creation of the objects and its save are timed separately and summed.
struct W1: Workload {
    let name = "W1"
    let title = "insert + save {n} persons x 5 attributes"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { Checksum.allAttributes(count: env.count).text }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.emptyStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        var sample = try insert(peer, path: path, range: 0..<env.count)
        sample.checksum = try writtenChecksum(path: path).text
        return sample
    }

    /// Inserts persons `range` into the store at `path` in one save.
    func insert(_ peer: Peer, path: String, range: Range<Int>) throws -> Sample {
        switch peer {
        case .raw:
            let connection = try RawConnection(path: path)
            let entityNumber = try connection.entityNumber("Person")
            let insert = try connection.prepare(RawPersonWriter.insertSQL)
            defer { sqlite3_finalize(insert) }
            let writer = RawPersonWriter()
            let start = now()
            try connection.execute("BEGIN")
            for i in range {
                writer.bind(i, entityNumber: entityNumber, to: insert)
                try connection.stepDone(insert)
            }
            try connection.execute("COMMIT")
            return Sample(seconds: now() - start, checksum: "")
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            let start = now()
            OpenCoreDataPeer.insertPersons(range, into: context)
            let created = now()
            try context.save()
            let saved = now()
            withExtendedLifetime(coordinator) {}
            return Sample(seconds: saved - start, parts: ["create": created - start, "save": saved - created], checksum: "")
        case .grdb:
            let queue = try GRDBPeer.open(path: path)
            let entityNumber = try queue.read { try Int.fetchOne($0, sql: "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Person'") } ?? 0
            let start = now()
            try queue.write { db in
                for i in range { try GRDBPerson(i, entityNumber: entityNumber).insert(db) }
            }
            return Sample(seconds: now() - start, checksum: "")
        }
    }
}
