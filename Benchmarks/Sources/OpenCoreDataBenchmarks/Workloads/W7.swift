import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData
import OpenCoreDataPredicates

/// W7: scroll the `n/10` persons aged under 10 in batches of 20, reading each
/// name: time to the first batch (part "first") and to the end (the total).
/// OpenCoreData uses `fetchInBatches` with `fetchBatchSize = 20` (one query for
/// the IDs, then one per batch as it is read); GRDB a cursor read 20 rows at a time;
/// raw SQLite one statement.
struct W7: Workload {
    let name = "W7"
    let title = "scroll {n/10} persons in batches of 20 (first batch / end)"
    static let batch = 20

    func expectedChecksum(_ env: BenchEnvironment) throws -> String {
        var c = Checksum()
        for i in 0..<env.count where PersonData.age(i) < 10 {
            c.rows += 1
            c.textBytes &+= PersonData.byteSum(PersonData.name(i))
        }
        return c.text
    }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = env.populatedStore
        var c = Checksum()
        var first = 0.0
        let start: Double
        func row(_ bytes: Int, _ start: Double) {
            c.rows += 1
            c.textBytes &+= bytes
            if c.rows == W7.batch { first = now() - start }
        }
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            let select = try connection.prepare(PersonTable.selectAll + " WHERE ZAGE < 10 ORDER BY Z_PK")
            defer { sqlite3_finalize(select) }
            while sqlite3_step(select) == SQLITE_ROW { row(rawByteSum(select, 3), start) }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.predicate = try CorePredicate(format: "age < 10")
            request.fetchBatchSize = W7.batch
            for person in try context.fetchInBatches(request) {
                guard case .string(let name) = person.attributeValue(forKey: "name") else { continue }
                row(PersonData.byteSum(name), start)
            }
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            start = now()
            try queue.read { db in
                let cursor = try GRDBPerson.filter(GRDBPerson.Columns.age < 10).order(Column("Z_PK")).fetchCursor(db)
                while let person = try cursor.next() { row(PersonData.byteSum(person.name), start) }
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, parts: ["first": first], checksum: c.text)
    }
}
