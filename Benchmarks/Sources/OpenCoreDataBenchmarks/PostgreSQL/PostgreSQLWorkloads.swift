#if PostgreSQL
import FluentKit
import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import PostgresNIO
import Synchronization

/// W1-W7 on PostgreSQL (benchmarks.md's workloads, the data and checksums of the
/// SQLite runs), for the raw, OpenCoreData and Fluent peers.
///
/// Each run opens its connection or store before its timer and closes it after
/// (fairness rule 4); write runs start from their peer's write schema emptied or
/// refilled by `bench_reset_empty()` / `bench_reset_people()`, outside the timer.
/// Every peer runs at PostgreSQL's default durability (`synchronous_commit = on`),
/// one transaction per save.
struct PGWorkload: Sendable {
    let name: String
    let title: String
    let expected: @Sendable (PGEnvironment) -> String
    let run: @Sendable (PGPeer, PGEnvironment) throws -> Sample

    static let all: [PGWorkload] = [
        PGWorkload(name: "W1", title: "insert + save {n} objects", expected: { Checksum.allAttributes(count: $0.count).text }, run: w1),
        PGWorkload(name: "W2", title: "fetch {n} objects, read every attribute",
                   expected: { Checksum.allAttributes(count: $0.count).text }, run: w2),
        PGWorkload(name: "W3", title: "100 x fetch age == k ({n/100} rows each)",
                   expected: { Checksum.scoresOnly(count: $0.count).text }, run: w3),
        PGWorkload(name: "W4a", title: "save changes to {n/10} of {n} registered objects",
                   expected: { W4Change.expected(count: $0.count) }, run: { try w4($0, $1, fetchInTimer: false) }),
        PGWorkload(name: "W4b", title: "fetch {n/10} of {n} objects, change, save",
                   expected: { W4Change.expected(count: $0.count) }, run: { try w4($0, $1, fetchInTimer: true) }),
        PGWorkload(name: "W5a", title: "delete {n} objects one by one + save",
                   expected: { "deleted=\($0.count) remaining=0" }, run: w5a),
        PGWorkload(name: "W5b", title: "batch delete {n} objects (one DELETE)",
                   expected: { "deleted=\($0.count) remaining=0" }, run: w5b),
        PGWorkload(name: "W6a", title: "{n/10} parents x 10 children, to-many faults",
                   expected: familyChecksum, run: { try w6($0, $1, prefetch: false) }),
        PGWorkload(name: "W6b", title: "{n/10} parents x 10 children, prefetched",
                   expected: familyChecksum, run: { try w6($0, $1, prefetch: true) }),
        PGWorkload(name: "W7", title: "scroll {n/10} objects in batches of 20 (first batch / end)",
                   expected: scrollChecksum, run: w7),
    ]

    static func familyChecksum(_ env: PGEnvironment) -> String {
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

    static func scrollChecksum(_ env: PGEnvironment) -> String {
        var c = Checksum()
        for i in 0..<env.count where PersonData.age(i) < 10 {
            c.rows += 1
            c.textBytes &+= PersonData.byteSum(PersonData.name(i))
        }
        return c.text
    }

    /// The write schema of `peer`, reset with `function`; its checking connection.
    static func resetWriteSchema(_ peer: PGPeer, _ env: PGEnvironment, _ function: String) throws -> (String, PGRawConnection) {
        let schema = PGEnvironment.writeSchema(peer.rawValue)
        let check = try PGRawConnection(env, schema: schema)
        try check.execute("SELECT \(function)()")
        return (schema, check)
    }

    static let selectPersons = "SELECT z_pk, zname, zage, zscore, zemail, zjoined FROM zperson"

    // MARK: W1

    static func w1(_ peer: PGPeer, _ env: PGEnvironment) throws -> Sample {
        let (schema, check) = try resetWriteSchema(peer, env, "bench_reset_empty")
        let count = env.count
        let open = OpenConnections()
        var parts: [String: Double] = [:]
        let seconds: Double
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: schema))
            let entity = Int64(try raw.scalar("SELECT z_ent::text FROM z_primarykey WHERE z_name = 'Person'") ?? "") ?? 0
            let start = now()
            try blocking {
                // One transaction; rows sent as arrays, 10,000 at a time, unnested by the server.
                _ = try await raw.connection.query("BEGIN", logger: raw.logger)
                var first = 0
                while first < count {
                    let range = first..<min(count, first + 10_000)
                    var binds = PostgresBindings(capacity: 7)
                    binds.append(range.map { Int64($0 + 1) })
                    binds.append(entity)
                    binds.append(range.map { PersonData.name($0) })
                    binds.append(range.map { Int64(PersonData.age($0)) })
                    binds.append(range.map { PersonData.score($0) })
                    binds.append(range.map { PersonData.email($0) })
                    binds.append(range.map { PersonData.joined($0) })
                    _ = try await raw.connection.query(PostgresQuery(unsafeSQL: """
                        INSERT INTO zperson (z_pk, z_ent, z_opt, zname, zage, zscore, zemail, zjoined)
                        SELECT pk, $2, 1, name, age, score, email, joined
                        FROM unnest($1::int8[], $3::text[], $4::int8[], $5::float8[], $6::text[], $7::float8[])
                          AS t(pk, name, age, score, email, joined)
                        """, binds: binds), logger: raw.logger)
                    first = range.upperBound
                }
                _ = try await raw.connection.query("COMMIT", logger: raw.logger)
            }
            seconds = now() - start
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: schema)
            open.keep(coordinator)
            let start = now()
            OpenCoreDataPeer.insertPersons(0..<count, into: context)
            let created = now()
            try context.save()
            let saved = now()
            context.reset()
            seconds = now() - start
            parts = ["create": created - start, "save": saved - created]
        case .fluent:
            let fluent = open.keep(try FluentPeer.Opened(env, schema: schema))
            let db = fluent.database
            let entity = Int64(try check.scalar("SELECT z_ent::text FROM z_primarykey WHERE z_name = 'Person'") ?? "") ?? 0
            let start = now()
            let people = (0..<count).map { FluentPerson($0, entity: entity) }
            let created = now()
            try blocking {
                try await db.transaction { tx in
                    // A statement takes at most 65,535 parameters: 8 columns x 5,000 rows.
                    var first = 0
                    while first < people.count {
                        let end = min(people.count, first + 5_000)
                        try await Array(people[first..<end]).create(on: tx)
                        first = end
                    }
                }
            }
            let saved = now()
            seconds = saved - start
            parts = ["create": created - start, "save": saved - created]
        }
        open.closeAll()
        return Sample(seconds: seconds, parts: parts, checksum: try check.writtenChecksum())
    }

    // MARK: W2, W3

    static func w2(_ peer: PGPeer, _ env: PGEnvironment) throws -> Sample {
        let open = OpenConnections()
        let start: Double
        let checksum: Checksum
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: PGEnvironment.people))
            start = now()
            checksum = try blocking {
                var c = Checksum()
                let rows = try await raw.connection.query(PostgresQuery(unsafeSQL: selectPersons), logger: raw.logger)
                for try await (_, name, age, score, email, joined) in rows.decode((Int64, String?, Int64, Double, String?, Double).self) {
                    c.rows += 1
                    c.ages += Int(age)
                    c.scores2 += Int(score * 2)
                    c.joined += Int(joined)
                    if let name { c.textBytes &+= PersonData.byteSum(name) }
                    if let email { c.textBytes &+= PersonData.byteSum(email) }
                }
                return c
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: PGEnvironment.people)
            open.keep(coordinator)
            start = now()
            var c = Checksum()
            for person in try context.fetch(FetchRequest<ManagedObject>(entityName: "Person")) { OpenCoreDataPeer.add(person, to: &c) }
            checksum = c
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: PGEnvironment.people)).database
            start = now()
            checksum = try blocking {
                var c = Checksum()
                for person in try await FluentPerson.query(on: db).all() { person.add(to: &c) }
                return c
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: checksum.text)
    }

    static func w3(_ peer: PGPeer, _ env: PGEnvironment) throws -> Sample {
        let open = OpenConnections()
        let start: Double
        let checksum: Checksum
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: PGEnvironment.people))
            start = now()
            checksum = try blocking {
                var c = Checksum()
                for k in 0..<100 {
                    let rows = try await raw.connection.query("SELECT zscore FROM zperson WHERE zage = \(Int64(k))", logger: raw.logger)
                    for try await score in rows.decode(Double.self) {
                        c.rows += 1
                        c.scores2 += Int(score * 2)
                    }
                }
                return c
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: PGEnvironment.people)
            open.keep(coordinator)
            start = now()
            var c = Checksum()
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            for k in 0..<100 {
                request.predicate = try CorePredicate(format: "age == %d", k)
                for person in try context.fetch(request) {
                    c.rows += 1
                    if case .double(let score) = person.attributeValue(forKey: "score") { c.scores2 += Int(score * 2) }
                }
            }
            checksum = c
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: PGEnvironment.people)).database
            start = now()
            checksum = try blocking {
                var c = Checksum()
                for k in 0..<100 {
                    for person in try await FluentPerson.query(on: db).filter(\.$age == Int64(k)).all() {
                        c.rows += 1
                        c.scores2 += Int(person.score * 2)
                    }
                }
                return c
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: checksum.text)
    }

    // MARK: W4

    /// Changes the persons aged under 10 and saves: the save alone timed (W4a, the
    /// objects fetched and changed before the timer) or the fetch too (W4b).
    static func w4(_ peer: PGPeer, _ env: PGEnvironment, fetchInTimer: Bool) throws -> Sample {
        let (schema, check) = try resetWriteSchema(peer, env, "bench_reset_people")
        let open = OpenConnections()
        var seconds = 0.0
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: schema))
            // The rows to change, read with one statement; the change written with one.
            let read: @Sendable () async throws -> [(Int64, Double, String)] = {
                var rows: [(Int64, Double, String)] = []
                let result = try await raw.connection.query("SELECT z_pk, zscore, zemail FROM zperson WHERE zage < 10", logger: raw.logger)
                for try await (pk, score, email) in result.decode((Int64, Double, String).self) { rows.append((pk, score, email)) }
                return rows
            }
            let write: @Sendable ([(Int64, Double, String)]) async throws -> Void = { rows in
                var binds = PostgresBindings(capacity: 3)
                binds.append(rows.map(\.0))
                binds.append(rows.map { W4Change.score($0.1) })
                binds.append(rows.map { W4Change.email($0.2) })
                _ = try await raw.connection.query(PostgresQuery(unsafeSQL: """
                    UPDATE zperson SET zscore = v.score, zemail = v.email, z_opt = z_opt + 1
                    FROM unnest($1::int8[], $2::float8[], $3::text[]) AS v(pk, score, email) WHERE z_pk = v.pk
                    """, binds: binds), logger: raw.logger)
            }
            if fetchInTimer {
                let start = now()
                try blocking { try await write(try await read()) }
                seconds = now() - start
            } else {
                let rows = try blocking { try await read() }
                let start = now()
                try blocking { try await write(rows) }
                seconds = now() - start
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: schema)
            open.keep(coordinator)
            if fetchInTimer {
                let start = now()
                let request = FetchRequest<ManagedObject>(entityName: "Person")
                request.predicate = try CorePredicate(format: W4Change.predicate)
                for person in try context.fetch(request) { W4Change.apply(to: person) }
                try context.save()
                seconds = now() - start
            } else {
                let request = FetchRequest<ManagedObject>(entityName: "Person")
                request.returnsObjectsAsFaults = false
                let people = try context.fetch(request)
                for person in people {
                    if case .int(let age) = person.attributeValue(forKey: "age"), age < 10 { W4Change.apply(to: person) }
                }
                let start = now()
                try context.save()
                seconds = now() - start
                withExtendedLifetime(people) {}
            }
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: schema)).database
            let change: @Sendable ([FluentPerson]) async throws -> Void = { people in
                try await db.transaction { tx in
                    for person in people where person.age < 10 {
                        person.score = W4Change.score(person.score)
                        person.email = W4Change.email(person.email ?? "")
                        try await person.update(on: tx)
                    }
                }
            }
            if fetchInTimer {
                let start = now()
                try blocking { try await change(try await FluentPerson.query(on: db).filter(\.$age < 10).all()) }
                seconds = now() - start
            } else {
                let people = try blocking { try await FluentPerson.query(on: db).all() }
                let start = now()
                try blocking { try await change(people) }
                seconds = now() - start
            }
        }
        open.closeAll()
        return Sample(seconds: seconds, checksum: try check.writtenChecksum())
    }

    // MARK: W5

    static func w5a(_ peer: PGPeer, _ env: PGEnvironment) throws -> Sample {
        let (schema, check) = try resetWriteSchema(peer, env, "bench_reset_people")
        let open = OpenConnections()
        let start: Double
        var deleted = 0
        switch peer {
        case .raw:
            // Every key read, then every row deleted by key in one transaction
            // (one statement with the keys as an array).
            let raw = open.keep(try PGRawConnection(env, schema: schema))
            start = now()
            deleted = try blocking {
                var keys: [Int64] = []
                for try await key in try await raw.connection.query("SELECT z_pk FROM zperson", logger: raw.logger).decode(Int64.self) {
                    keys.append(key)
                }
                var binds = PostgresBindings(capacity: 1)
                binds.append(keys)
                _ = try await raw.connection.query(PostgresQuery(unsafeSQL: "DELETE FROM zperson WHERE z_pk = ANY($1::int8[])", binds: binds),
                                                   logger: raw.logger)
                return keys.count
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: schema)
            open.keep(coordinator)
            start = now()
            for person in try context.fetch(FetchRequest<ManagedObject>(entityName: "Person")) {
                context.delete(person)
                deleted += 1
            }
            try context.save()
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: schema)).database
            start = now()
            deleted = try blocking {
                let people = try await FluentPerson.query(on: db).all()
                try await db.transaction { tx in
                    for person in people { try await person.delete(on: tx) }
                }
                return people.count
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: "deleted=\(deleted) remaining=\(try check.personCount())")
    }

    static func w5b(_ peer: PGPeer, _ env: PGEnvironment) throws -> Sample {
        let (schema, check) = try resetWriteSchema(peer, env, "bench_reset_people")
        let before = try check.personCount()
        let open = OpenConnections()
        let start: Double
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: schema))
            start = now()
            try raw.execute("DELETE FROM zperson")
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: schema)
            open.keep(coordinator)
            start = now()
            _ = try context.execute(BatchDeleteRequest(fetchRequest: FetchRequest<ManagedObject>(entityName: "Person")))
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: schema)).database
            start = now()
            try blocking { try await FluentPerson.query(on: db).delete() }
        }
        let seconds = now() - start
        open.closeAll()
        let remaining = try check.personCount()
        return Sample(seconds: seconds, checksum: "deleted=\(before - remaining) remaining=\(remaining)")
    }

    // MARK: W6, W7

    static func w6(_ peer: PGPeer, _ env: PGEnvironment, prefetch: Bool) throws -> Sample {
        let open = OpenConnections()
        let start: Double
        let checksum: Checksum
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: PGEnvironment.family))
            start = now()
            checksum = try blocking {
                var c = Checksum()
                var parents: [Int64] = []
                for try await (pk, _) in try await raw.connection.query("SELECT z_pk, zname FROM zparent", logger: raw.logger).decode((Int64, String?).self) {
                    parents.append(pk)
                }
                if prefetch {
                    // Every child of the parents read, in one statement.
                    var binds = PostgresBindings(capacity: 1)
                    binds.append(parents)
                    let rows = try await raw.connection.query(PostgresQuery(unsafeSQL: "SELECT zparent, zname FROM zchild WHERE zparent = ANY($1::int8[])",
                                                                            binds: binds), logger: raw.logger)
                    c.ages += parents.count
                    for try await (_, name) in rows.decode((Int64, String?).self) {
                        c.rows += 1
                        if let name { c.textBytes &+= PersonData.byteSum(name) }
                    }
                } else {
                    for parent in parents {
                        c.ages += 1
                        let rows = try await raw.connection.query("SELECT zname FROM zchild WHERE zparent = \(parent)", logger: raw.logger)
                        for try await name in rows.decode(String?.self) {
                            c.rows += 1
                            if let name { c.textBytes &+= PersonData.byteSum(name) }
                        }
                    }
                }
                return c
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: PGEnvironment.family)
            open.keep(coordinator)
            start = now()
            var c = Checksum()
            let request = FetchRequest<ManagedObject>(entityName: "Parent")
            if prefetch { request.relationshipKeyPathsForPrefetching = ["children"] }
            for parent in try context.fetch(request) {
                c.ages += 1
                for child in parent.objects(forRelationship: "children") {
                    c.rows += 1
                    if case .string(let name) = child.attributeValue(forKey: "name") { c.textBytes &+= PersonData.byteSum(name) }
                }
            }
            checksum = c
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: PGEnvironment.family)).database
            start = now()
            checksum = try blocking {
                var c = Checksum()
                if prefetch {
                    for parent in try await FluentParent.query(on: db).with(\.$children).all() {
                        c.ages += 1
                        for child in parent.children {
                            c.rows += 1
                            if let name = child.name { c.textBytes &+= PersonData.byteSum(name) }
                        }
                    }
                } else {
                    for parent in try await FluentParent.query(on: db).all() {
                        c.ages += 1
                        for child in try await parent.$children.get(on: db) {
                            c.rows += 1
                            if let name = child.name { c.textBytes &+= PersonData.byteSum(name) }
                        }
                    }
                }
                return c
            }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, checksum: checksum.text)
    }

    /// The persons aged under 10 in key order, 20 at a time: OpenCoreData with
    /// `fetchBatchSize` (the IDs, then a query per batch as it is read), Fluent
    /// with `chunk(max:)`, raw with one statement read as it arrives.
    static func w7(_ peer: PGPeer, _ env: PGEnvironment) throws -> Sample {
        let open = OpenConnections()
        let start: Double
        let result: (Checksum, Double)
        switch peer {
        case .raw:
            let raw = open.keep(try PGRawConnection(env, schema: PGEnvironment.people))
            start = now()
            result = try blocking {
                var c = Checksum()
                var first = 0.0
                let rows = try await raw.connection.query("SELECT zname FROM zperson WHERE zage < 10 ORDER BY z_pk", logger: raw.logger)
                for try await name in rows.decode(String?.self) {
                    c.rows += 1
                    if let name { c.textBytes &+= PersonData.byteSum(name) }
                    if c.rows == 20 { first = now() - start }
                }
                return (c, first)
            }
        case .opencoredata:
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: PGEnvironment.people)
            open.keep(coordinator)
            start = now()
            var c = Checksum()
            var first = 0.0
            let request = FetchRequest<ManagedObject>(entityName: "Person")
            request.predicate = try CorePredicate(format: "age < 10")
            request.fetchBatchSize = 20
            for person in try context.fetchInBatches(request) {
                c.rows += 1
                if case .string(let name) = person.attributeValue(forKey: "name") { c.textBytes &+= PersonData.byteSum(name) }
                if c.rows == 20 { first = now() - start }
            }
            result = (c, first)
        case .fluent:
            let db = open.keep(try FluentPeer.Opened(env, schema: PGEnvironment.people)).database
            start = now()
            let state = Mutex((Checksum(), 0.0))
            try blocking {
                try await FluentPerson.query(on: db).filter(\.$age < 10).sort(\.$id).chunk(max: 20) { chunk in
                    state.withLock { state in
                        for person in chunk {
                            guard let person = try? person.get() else { continue }
                            state.0.rows += 1
                            if let name = person.name { state.0.textBytes &+= PersonData.byteSum(name) }
                            if state.0.rows == 20 { state.1 = now() - start }
                        }
                    }
                }
            }
            result = state.withLock { $0 }
        }
        let seconds = now() - start
        open.closeAll()
        return Sample(seconds: seconds, parts: ["first": result.1], checksum: result.0.text)
    }
}
#endif
