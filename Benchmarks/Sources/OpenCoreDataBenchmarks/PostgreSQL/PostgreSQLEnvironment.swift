#if PostgreSQL
import Foundation
import Logging
import NIOCore
import NIOPosix
import OpenCoreData
import OpenCoreDataPostgreSQL
import PostgresNIO

/// The peers of the PostgreSQL workloads (SQLAlchemy on psycopg runs in its own
/// process: Benchmarks/python/bench_postgresql.py).
enum PGPeer: String, CaseIterable {
    /// postgres-nio's connection, statements written by hand: the limit.
    case raw
    /// OpenCoreData on its PostgreSQL store.
    case opencoredata
    /// Fluent's ORM (FluentKit with its PostgreSQL driver).
    case fluent
}

/// The database of the PostgreSQL workloads and its schemas, all in Core Data's
/// layout (made by OpenCoreData's store, so every peer reads and writes the same
/// tables): `bench_people` (`count` persons) and `bench_family` (`count / 10`
/// parents with 10 children each), read by the read workloads; and one write
/// schema per peer, `bench_w_<peer>`, emptied or refilled before each write run
/// (outside its timer) by the functions `bench_reset_empty()` and
/// `bench_reset_people()` that `prepare` installs in it.
struct PGEnvironment {
    let url: URL
    let count: Int
    let host: String
    let port: Int
    let user: String
    let password: String?
    let database: String

    static let people = "bench_people"
    static let family = "bench_family"
    /// Every write schema, SQLAlchemy's included.
    static let writers = PGPeer.allCases.map(\.rawValue) + ["sqlalchemy"]
    static func writeSchema(_ peer: String) -> String { "bench_w_" + peer }

    init(url text: String, count: Int) throws {
        guard let url = URL(string: text), let components = URLComponents(string: text), let host = components.host,
              ["postgres", "postgresql"].contains(components.scheme ?? "") else {
            throw BenchmarkError("--url must be postgres://user@host:port/database, not \(text)")
        }
        self.url = url
        self.count = count
        self.host = host
        port = components.port ?? 5432
        user = components.user ?? "postgres"
        password = components.password
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        database = path.isEmpty ? user : path
    }

    var connectionConfiguration: PostgresConnection.Configuration {
        PostgresConnection.Configuration(host: host, port: port, username: user, password: password, database: database, tls: .disable)
    }
}

/// Runs `body` on Swift's concurrency pool and waits for it (the benchmark's main
/// code is synchronous, as OpenCoreData's store calls are).
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    try MultiThreadedEventLoopGroup.singleton.any().makeFutureWithTask(body).wait()
}

/// One postgres-nio connection with its `search_path` set: the raw peer's, and
/// the one every peer's setup and checks use.
final class PGRawConnection: Sendable {
    let connection: PostgresConnection
    let logger: Logger

    init(_ env: PGEnvironment, schema: String) throws {
        var logger = Logger(label: "bench.raw")
        logger.logLevel = .critical
        self.logger = logger
        connection = try PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: env.connectionConfiguration,
                                                    id: 1, logger: logger).wait()
        try execute("SET search_path TO \(schema), pg_catalog")
    }

    deinit {
        try? connection.close().wait()
    }

    /// Runs one statement (no parameters) and waits for it.
    func execute(_ sql: String) throws {
        _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).wait()
    }

    /// The first column of the first row of `sql`, as text.
    func scalar(_ sql: String) throws -> String? {
        let rows = try connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).wait()
        for row in rows { return try row.decode(String?.self, context: .default) }
        return nil
    }

    /// The checksum of every attribute of the persons in this connection's schema
    /// (what a write run left).
    func writtenChecksum() throws -> String {
        let connection = self.connection, logger = self.logger
        return try blocking {
            var c = Checksum()
            let rows = try await connection.query("SELECT zname, zage, zscore, zemail, zjoined FROM zperson", logger: logger)
            for try await (name, age, score, email, joined) in rows.decode((String?, Int64, Double, String?, Double).self) {
                c.rows += 1
                c.ages += Int(age)
                c.scores2 += Int(score * 2)
                c.joined += Int(joined)
                if let name { c.textBytes &+= PersonData.byteSum(name) }
                if let email { c.textBytes &+= PersonData.byteSum(email) }
            }
            return c.text
        }
    }

    /// The number of persons in this connection's schema.
    func personCount() throws -> Int {
        Int(try scalar("SELECT COUNT(*)::text FROM zperson") ?? "") ?? -1
    }
}

extension OpenCoreDataPeer {
    /// A coordinator with the PostgreSQL store in `schema` and a context on it
    /// (the store's defaults otherwise: remote-change announcements on).
    static func open(_ env: PGEnvironment, schema: String) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .postgreSQL, at: env.url, options: [PostgreSQLStore.Option.schema: schema])
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }
}

/// `prepare`: every schema made anew, filled, analyzed, with the reset functions.
enum PGPrepare {
    static func run(_ env: PGEnvironment) throws {
        let admin = try PGRawConnection(env, schema: "public")
        for schema in [PGEnvironment.people, PGEnvironment.family] + PGEnvironment.writers.map(PGEnvironment.writeSchema) {
            try admin.execute("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        }
        var start = now()
        do {
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: PGEnvironment.people)
            try OpenCoreDataPeer.populate(count: env.count, into: context)
            withExtendedLifetime(coordinator) {}
        }
        log("prepared \(PGEnvironment.people) (\(env.count) persons) in \(String(format: "%.2f", now() - start)) s")
        start = now()
        do {
            let (coordinator, context) = try OpenCoreDataPeer.open(env, schema: PGEnvironment.family)
            try OpenCoreDataPeer.populateFamilies(parents: env.count / FamilyData.childrenPerParent, into: context)
            withExtendedLifetime(coordinator) {}
        }
        log("prepared \(PGEnvironment.family) in \(String(format: "%.2f", now() - start)) s")
        for peer in PGEnvironment.writers {
            let schema = PGEnvironment.writeSchema(peer)
            let (coordinator, _) = try OpenCoreDataPeer.open(env, schema: schema)
            withExtendedLifetime(coordinator) {}
            try admin.execute("""
                CREATE FUNCTION \(schema).bench_reset_empty() RETURNS void LANGUAGE plpgsql AS $$
                BEGIN
                  TRUNCATE \(schema).zperson, \(schema).zparent, \(schema).zchild;
                  UPDATE \(schema).z_primarykey SET z_max = 0;
                END $$
                """)
            try admin.execute("""
                CREATE FUNCTION \(schema).bench_reset_people() RETURNS void LANGUAGE plpgsql AS $$
                BEGIN
                  TRUNCATE \(schema).zperson, \(schema).zparent, \(schema).zchild;
                  INSERT INTO \(schema).zperson SELECT * FROM \(PGEnvironment.people).zperson;
                  UPDATE \(schema).z_primarykey k SET z_max = p.z_max
                    FROM \(PGEnvironment.people).z_primarykey p WHERE k.z_name = p.z_name;
                  ANALYZE \(schema).zperson;
                END $$
                """)
        }
        try admin.execute("ANALYZE")
        let plan = try admin.scalar("EXPLAIN SELECT * FROM \(PGEnvironment.people).zperson WHERE zage = 7") ?? ""
        log("server \(try admin.scalar("SHOW server_version") ?? "?"); W3 plan: \(plan)")
    }
}
#endif
