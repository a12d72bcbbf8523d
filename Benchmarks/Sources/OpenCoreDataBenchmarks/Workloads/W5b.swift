import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W5b: delete every person with one batch request, in the store, without loading
/// objects (`BatchDeleteRequest`; raw: one `DELETE`; GRDB: `deleteAll`).
struct W5b: Workload {
    let name = "W5b"
    let title = "batch delete {n} persons"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { "deleted=\(env.count) remaining=0" }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.populatedStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        let before = try RawConnection(path: path).integers("SELECT COUNT(*) FROM ZPERSON")[0]
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            try connection.execute("BEGIN")
            try connection.execute("DELETE FROM ZPERSON")
            try connection.execute("COMMIT")
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            _ = try context.execute(BatchDeleteRequest(entityName: "Person"))
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            start = now()
            _ = try queue.write { db in try GRDBPerson.deleteAll(db) }
        }
        let seconds = now() - start
        open.closeAll()
        let remaining = try RawConnection(path: path).integers("SELECT COUNT(*) FROM ZPERSON")[0]
        return Sample(seconds: seconds, checksum: "deleted=\(before - remaining) remaining=\(remaining)")
    }
}
