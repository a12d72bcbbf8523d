import Foundation
import GRDB

/// GRDB.swift, used the idiomatic way: Codable record structs conforming to
/// `FetchableRecord & PersistableRecord`, mapped onto the same tables as the other
/// peers (Core Data's `Z` layout), `DatabaseQueue.write` for each save.
enum GRDBPeer {
    /// A queue on `path` with the durability of the fairness rules, set explicitly.
    static func open(path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode=WAL")
            try db.execute(sql: "PRAGMA synchronous=NORMAL")
        }
        return try DatabaseQueue(path: path, configuration: configuration)
    }
}

/// A person row: a plain Codable struct.
struct GRDBPerson: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "ZPERSON"
    var id: Int64
    var entity: Int64
    var version: Int64
    var name: String
    var age: Int
    var score: Double
    var email: String
    var joined: Double

    enum CodingKeys: String, CodingKey {
        case id = "Z_PK", entity = "Z_ENT", version = "Z_OPT", name = "ZNAME", age = "ZAGE", score = "ZSCORE"
        case email = "ZEMAIL", joined = "ZJOINED"
    }

    enum Columns {
        static let age = Column(CodingKeys.age)
        static let score = Column(CodingKeys.score)
        static let email = Column(CodingKeys.email)
    }

    init(_ i: Int, entityNumber: Int) {
        id = Int64(i + 1)
        entity = Int64(entityNumber)
        version = 1
        name = PersonData.name(i)
        age = PersonData.age(i)
        score = PersonData.score(i)
        email = PersonData.email(i)
        joined = PersonData.joined(i)
    }

    func add(to c: inout Checksum) {
        c.rows += 1
        c.ages += age
        c.scores2 += Int(score * 2)
        c.joined += Int(joined)
        c.textBytes &+= PersonData.byteSum(name) &+ PersonData.byteSum(email)
    }
}

/// A parent of W6, with its children through a GRDB association.
struct GRDBParent: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "ZPARENT"
    static var children: HasManyAssociation<GRDBParent, GRDBChild> { hasMany(GRDBChild.self, key: "children", using: ForeignKey(["ZPARENT"])) }
    var id: Int64
    var name: String

    enum CodingKeys: String, CodingKey { case id = "Z_PK", name = "ZNAME" }

    var childrenRequest: QueryInterfaceRequest<GRDBChild> { request(for: GRDBParent.children) }
}

/// A child of W6.
struct GRDBChild: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "ZCHILD"
    var id: Int64
    var name: String
    var parent: Int64?

    enum CodingKeys: String, CodingKey { case id = "Z_PK", name = "ZNAME", parent = "ZPARENT" }
}
