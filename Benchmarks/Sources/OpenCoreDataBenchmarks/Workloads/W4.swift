import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData
import OpenCoreDataPredicates

/// The change W4 makes to the persons aged under 10 (a tenth of them): score + 1,
/// and "x" before the email.
enum W4Change {
    static let predicate = "age < 10"
    static func isChanged(_ i: Int) -> Bool { PersonData.age(i) < 10 }
    static func score(_ score: Double) -> Double { score + 1 }
    static func email(_ email: String) -> String { "x" + email }

    /// Every attribute of every row once the change is saved.
    static func expected(count: Int) -> String {
        var c = Checksum.allAttributes(count: count)
        for i in 0..<count where isChanged(i) {
            c.scores2 += 2
            c.textBytes &+= Int(UInt8(ascii: "x"))
        }
        return c.text
    }

    static func apply(to person: ManagedObject) {
        if case .double(let score) = person.attributeValue(forKey: "score") { person.setValue(W4Change.score(score), forKey: "score") }
        if case .string(let email) = person.attributeValue(forKey: "email") { person.setValue(W4Change.email(email), forKey: "email") }
    }

    static func apply(to person: inout GRDBPerson) {
        person.score = score(person.score)
        person.email = email(person.email)
    }

    /// The raw peer's UPDATE of one row: new score and email, version + 1.
    static let rawUpdateSQL = "UPDATE ZPERSON SET ZSCORE = ?, ZEMAIL = ?, Z_OPT = Z_OPT + 1 WHERE Z_PK = ?"

    /// Reads (pk, score, email) of the rows to change with the raw API.
    static func rawRows(_ connection: RawConnection) throws -> [(Int64, Double, [UInt8])] {
        let select = try connection.prepare("SELECT Z_PK, ZSCORE, ZEMAIL FROM ZPERSON WHERE ZAGE < 10")
        defer { sqlite3_finalize(select) }
        var rows: [(Int64, Double, [UInt8])] = []
        while sqlite3_step(select) == SQLITE_ROW {
            var email: [UInt8] = [UInt8(ascii: "x")]
            if let text = sqlite3_column_text(select, 2) {
                email.append(contentsOf: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(select, 2))))
            }
            rows.append((sqlite3_column_int64(select, 0), score(sqlite3_column_double(select, 1)), email))
        }
        return rows
    }

    static func rawUpdate(_ rows: [(Int64, Double, [UInt8])], _ connection: RawConnection) throws {
        let update = try connection.prepare(rawUpdateSQL)
        defer { sqlite3_finalize(update) }
        try connection.execute("BEGIN")
        for (pk, score, email) in rows {
            sqlite3_bind_double(update, 1, score)
            sqlite3_bind_int64(update, 3, pk)
            // SQLITE_STATIC: the bytes are only valid in the closure, so step there.
            try email.withUnsafeBufferPointer { buffer in
                sqlite3_bind_text(update, 2, buffer.baseAddress, Int32(buffer.count), nil)
                try connection.stepDone(update)
            }
        }
        try connection.execute("COMMIT")
    }
}

/// W4a: every person registered (fetched with its values, outside the timer), a
/// tenth of them changed on 2 attributes (outside the timer); the save is timed.
struct W4a: Workload {
    let name = "W4a"
    let title = "save 2 changed attributes of {n/10} of {n} registered persons"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { W4Change.expected(count: env.count) }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.populatedStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        let seconds: Double
        switch peer {
        case .raw:
            let connection = try RawConnection(path: path)
            let rows = try W4Change.rawRows(connection)
            let start = now()
            try W4Change.rawUpdate(rows, connection)
            seconds = now() - start
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.returnsObjectsAsFaults = false
            let people = try context.fetch(request)
            for person in people {
                if case .int(let age) = person.attributeValue(forKey: "age"), age < 10 { W4Change.apply(to: person) }
            }
            let start = now()
            try context.save()
            seconds = now() - start
            withExtendedLifetime((coordinator, people)) {}
        case .grdb:
            let queue = try GRDBPeer.open(path: path)
            var people = try queue.read { db in try GRDBPerson.fetchAll(db) }
            var changed: [GRDBPerson] = []
            for index in people.indices where people[index].age < 10 {
                W4Change.apply(to: &people[index])
                changed.append(people[index])
            }
            let start = now()
            try queue.write { db in
                for person in changed { try person.update(db, columns: [GRDBPerson.Columns.score, GRDBPerson.Columns.email]) }
            }
            seconds = now() - start
        }
        return Sample(seconds: seconds, checksum: try writtenChecksum(path: path).text)
    }
}

/// W4b: fetch the tenth of the persons to change (`age < 10`), change 2
/// attributes, save: all timed.
struct W4b: Workload {
    let name = "W4b"
    let title = "fetch {n/10} of {n} persons, change 2 attributes, save"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { W4Change.expected(count: env.count) }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        let path = try env.freshCopy(of: env.populatedStore, for: peer, workload: name)
        defer { removeDatabase(path) }
        let seconds: Double
        switch peer {
        case .raw:
            let connection = try RawConnection(path: path)
            let start = now()
            try W4Change.rawUpdate(try W4Change.rawRows(connection), connection)
            seconds = now() - start
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(path: path)
            let start = now()
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.predicate = try CorePredicate(format: W4Change.predicate)
            for person in try context.fetch(request) { W4Change.apply(to: person) }
            try context.save()
            seconds = now() - start
            withExtendedLifetime(coordinator) {}
        case .grdb:
            let queue = try GRDBPeer.open(path: path)
            let start = now()
            try queue.write { db in
                for var person in try GRDBPerson.filter(GRDBPerson.Columns.age < 10).fetchAll(db) {
                    W4Change.apply(to: &person)
                    try person.update(db, columns: [GRDBPerson.Columns.score, GRDBPerson.Columns.email])
                }
            }
            seconds = now() - start
        }
        return Sample(seconds: seconds, checksum: try writtenChecksum(path: path).text)
    }
}
