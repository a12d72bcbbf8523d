import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W6a: `n/10` parents with 10 children each; fetch the parents, then for each
/// one its children (one query per parent: OpenCoreData fires each to-many fault)
/// and read every child's name. W6b prefetches the children.
struct W6a: Workload {
    let name = "W6a"
    let title = "{n/10} parents x 10 children: traverse, firing each to-many fault"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String {
        var c = Checksum()
        for p in 0..<(env.count / FamilyData.childrenPerParent) {
            c.ages += 1
            for j in 0..<FamilyData.childrenPerParent {
                c.rows += 1
                c.textBytes &+= PersonData.byteSum(FamilyData.childName(p, j))
            }
        }
        return c.text
    }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = env.familyStore
        // `ages` counts parents, `rows` children, `textBytes` the children's names.
        var c = Checksum()
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            let parents = try connection.prepare("SELECT Z_PK FROM ZPARENT")
            defer { sqlite3_finalize(parents) }
            let children = try connection.prepare("SELECT Z_PK, ZNAME FROM ZCHILD WHERE ZPARENT = ?")
            defer { sqlite3_finalize(children) }
            while sqlite3_step(parents) == SQLITE_ROW {
                c.ages += 1
                sqlite3_bind_int64(children, 1, sqlite3_column_int64(parents, 0))
                while sqlite3_step(children) == SQLITE_ROW {
                    c.rows += 1
                    c.textBytes &+= rawByteSum(children, 1)
                }
                sqlite3_reset(children)
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            for parent in try context.fetch(FetchRequest<ManagedObject>(entityName: "Parent")) {
                c.ages += 1
                for child in parent.objects(forRelationship: "children") {
                    c.rows += 1
                    if case .string(let name) = child.attributeValue(forKey: "name") { c.textBytes &+= PersonData.byteSum(name) }
                }
            }
        case .grdb:
            let queue = open.keep(try GRDBPeer.open(path: path))
            start = now()
            try queue.read { db in
                for parent in try GRDBParent.fetchAll(db) {
                    c.ages += 1
                    for child in try parent.childrenRequest.fetchAll(db) {
                        c.rows += 1
                        c.textBytes &+= PersonData.byteSum(child.name)
                    }
                }
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: c.text)
    }
}
