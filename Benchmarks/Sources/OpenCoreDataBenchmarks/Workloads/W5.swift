import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W5a: delete every person, object by object, in one save (the fetch of what to
/// delete is timed too). W5b is the batch delete request.
struct W5a: Workload {
    let name = "W5a"
    let title = "delete {n} persons object by object + save"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { "deleted=\(env.count) remaining=0" }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.populatedStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        var deleted = 0
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            var keys: [Int64] = []
            let select = try connection.prepare("SELECT Z_PK FROM ZPERSON")
            while sqlite3_step(select) == SQLITE_ROW { keys.append(sqlite3_column_int64(select, 0)) }
            sqlite3_finalize(select)
            let delete = try connection.prepare("DELETE FROM ZPERSON WHERE Z_PK = ?")
            defer { sqlite3_finalize(delete) }
            try connection.execute("BEGIN")
            for key in keys {
                sqlite3_bind_int64(delete, 1, key)
                try connection.stepDone(delete)
                deleted += 1
            }
            try connection.execute("COMMIT")
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            for person in try context.fetch(FetchRequest<ManagedObject>(entityName: "Person")) {
                context.delete(person)
                deleted += 1
            }
            try context.save()
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            start = now()
            try queue.write { db in
                for person in try GRDBPerson.fetchAll(db) {
                    if try person.delete(db) { deleted += 1 }
                }
            }
        }
        let seconds = now() - start
        open.closeAll()
        let remaining = try RawConnection(path: path).integers("SELECT COUNT(*) FROM ZPERSON")[0]
        return Sample(seconds: seconds, checksum: "deleted=\(deleted) remaining=\(remaining)")
    }
}
