import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// W6b: W6a with the children fetched up front: OpenCoreData's
/// `relationshipKeyPathsForPrefetching`, GRDB's `including(all:)`, raw SQLite one
/// query for the parents and one for all their children.
struct W6b: Workload {
    let name = "W6b"
    let title = "{n/10} parents x 10 children: traverse with prefetching"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { try W6a().expectedChecksum(env) }

    /// A parent with its children, as GRDB decodes `including(all:)`.
    struct ParentWithChildren: Decodable, FetchableRecord {
        var parent: GRDBParent
        var children: [GRDBChild]

        enum CodingKeys: String, CodingKey { case parent, children }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            parent = try GRDBParent(from: decoder)
            children = try container.decode([GRDBChild].self, forKey: .children)
        }
    }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = env.familyStore
        var c = Checksum()
        let start: Double
        let open = OpenConnections()
        switch peer {
        case .raw:
            let connection = open.keep(try RawConnection(path: path))
            start = now()
            let parents = try connection.prepare("SELECT Z_PK FROM ZPARENT")
            defer { sqlite3_finalize(parents) }
            var names: [Int64: [Int]] = [:]
            let children = try connection.prepare("SELECT ZPARENT, ZNAME FROM ZCHILD WHERE ZPARENT IN (SELECT Z_PK FROM ZPARENT)")
            defer { sqlite3_finalize(children) }
            while sqlite3_step(children) == SQLITE_ROW {
                names[sqlite3_column_int64(children, 0), default: []].append(rawByteSum(children, 1))
            }
            while sqlite3_step(parents) == SQLITE_ROW {
                c.ages += 1
                for bytes in names[sqlite3_column_int64(parents, 0)] ?? [] {
                    c.rows += 1
                    c.textBytes &+= bytes
                }
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            open.keep(coordinator)
            start = now()
            let request = FetchRequest<ManagedObject>(entityName: "Parent")
            request.relationshipKeyPathsForPrefetching = ["children"]
            for parent in try context.fetch(request) {
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
                for entry in try GRDBParent.including(all: GRDBParent.children).asRequest(of: ParentWithChildren.self).fetchAll(db) {
                    c.ages += 1
                    for child in entry.children {
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
