import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData
import OpenCoreDataPredicates

/// W3: 100 fetches `age == k` (k = 0...99, 1% of the persons each, through the
/// index on age) in one context or connection, reading each result's score.
/// OpenCoreData's results are faults fired from the row cache.
struct W3: Workload {
    let name = "W3"
    let title = "100 x fetch `age == k` (indexed, {n/100} rows each), read 1 attribute"
    /// W3t: the same with `#Predicate<BenchPerson> { $0.age == k }`, translated per fetch.
    var typed = false

    func expectedChecksum(_ env: BenchEnvironment) throws -> String {
        guard env.count % 100 == 0 else { throw BenchmarkError("W3 needs a count divisible by 100") }
        return Checksum.scoresOnly(count: env.count).text
    }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = env.populatedStore
        var c = Checksum()
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            let select = try connection.prepare(PersonTable.selectAll + " WHERE ZAGE = ?")
            defer { sqlite3_finalize(select) }
            for k in 0..<100 {
                sqlite3_bind_int64(select, 1, Int64(k))
                while true {
                    let rc = sqlite3_step(select)
                    if rc == SQLITE_DONE { break }
                    guard rc == SQLITE_ROW else { throw BenchmarkError("SELECT: \(connection.errorMessage)") }
                    c.rows += 1
                    c.scores2 += Int(sqlite3_column_double(select, 5) * 2)
                }
                sqlite3_reset(select)
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            for k in 0..<100 {
                let request = FetchRequest<ManagedObject>(entityName: "Person")
                if typed {
                    let age = Int32(k)
                    request.predicate = try CorePredicate(#Predicate<BenchPerson> { $0.age == age })
                } else {
                    request.predicate = try CorePredicate(format: "age == %d", k)
                }
                for person in try context.fetch(request) {
                    c.rows += 1
                    if case .double(let score) = person.attributeValue(forKey: "score") { c.scores2 += Int(score * 2) }
                }
            }
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            start = now()
            try queue.read { db in
                for k in 0..<100 {
                    for person in try GRDBPerson.filter(GRDBPerson.Columns.age == k).fetchAll(db) {
                        c.rows += 1
                        c.scores2 += Int(person.score * 2)
                    }
                }
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: c.text)
    }
}

/// W3t: W3 with Foundation's `#Predicate` (the translation to a Core Data
/// predicate counted in every fetch). The other peers run W3 unchanged.
struct W3t: Workload {
    let name = "W3t"
    let title = "100 x fetch `#Predicate { $0.age == k }` (typed predicate, translated per fetch), read 1 attribute"
    var peers: [Peer] { [.raw, .opencoredata] }
    func expectedChecksum(_ env: BenchEnvironment) throws -> String { try W3().expectedChecksum(env) }
    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample { try W3(typed: true).run(peer, env) }
}

/// The typed face of the `Person` entity, for typed predicates: its key paths
/// name the entity's attributes (no object of this class is made).
@ManagedEntity("Person")
final class BenchPerson: ManagedObject {
    @Managed var age: Int32
    @Managed var score: Double
}
