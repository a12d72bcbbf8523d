import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W2: fetch every person and read all 5 attributes. OpenCoreData fetches with
/// `returnsObjectsAsFaults = false` (the values come with the objects).
struct W2: Workload {
    let name = "W2"
    let title = "fetch {n}, read every attribute"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { Checksum.allAttributes(count: env.count).text }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        try W2.fetchAll(peer, env, asFaults: false)
    }

    /// Fetches every person, reading each attribute; OpenCoreData's objects are
    /// faults fired one by one when `asFaults`.
    static func fetchAll(_ peer: Peer, _ env: BenchEnvironment, asFaults: Bool) throws -> Sample {
        let path = env.populatedStore
        var c = Checksum()
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            let select = try connection.prepare(PersonTable.selectAll)
            defer { sqlite3_finalize(select) }
            while true {
                let rc = sqlite3_step(select)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw BenchmarkError("SELECT: \(connection.errorMessage)") }
                rawAddPerson(select, to: &c)
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.returnsObjectsAsFaults = asFaults
            let people = try context.fetch(request)
            for person in people { OpenCoreDataPeer.add(person, to: &c) }
            withExtendedLifetime((coordinator, people)) {}
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            start = now()
            let people = try queue.read { db in try GRDBPerson.fetchAll(db) }
            for person in people { person.add(to: &c) }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: c.text)
    }
}
