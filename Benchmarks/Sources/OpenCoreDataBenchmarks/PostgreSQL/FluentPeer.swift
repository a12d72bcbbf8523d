#if PostgreSQL
import FluentKit
import FluentPostgresDriver
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresKit

/// Fluent's ORM on the same tables, used the way a Vapor app uses it: models with
/// property wrappers, `create`/`update`/`delete(on:)`, query builders, eager
/// loading with `with`. (FluentKit with its PostgreSQL driver: the ORM of
/// vapor/fluent without the web framework around it.)
enum FluentPeer {
    /// A database of schema `schema` and what must be shut down after it.
    final class Opened {
        let databases: Databases
        let database: any Database

        init(_ env: PGEnvironment, schema: String) throws {
            databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
            var configuration = SQLPostgresConfiguration(hostname: env.host, port: env.port, username: env.user, password: env.password,
                                                         database: env.database, tls: .disable)
            configuration.searchPath = [schema, "pg_catalog"]
            databases.use(.postgres(configuration: configuration, maxConnectionsPerEventLoop: 1, encodingContext: .default,
                                    decodingContext: .default, sqlLogLevel: .trace), as: .psql)
            var logger = Logger(label: "bench.fluent")
            logger.logLevel = .critical
            guard let database = databases.database(.psql, logger: logger, on: MultiThreadedEventLoopGroup.singleton.any()) else {
                throw BenchmarkError("Fluent has no database")
            }
            self.database = database
            // The pool's connection opened before any timer.
            let db = database
            _ = try blocking { try await FluentPerson.query(on: db).limit(1).all().count }
        }

        deinit {
            databases.shutdown()
        }
    }
}

// Fluent's models are classes whose property wrappers it mutates; FluentKit
// documents `@unchecked Sendable` for them (a model is used by one task at a time).
final class FluentPerson: Model, @unchecked Sendable {
    static let schema = "zperson"
    @ID(custom: "z_pk", generatedBy: .user) var id: Int64?
    @Field(key: "z_ent") var entity: Int64
    @Field(key: "z_opt") var version: Int64
    @OptionalField(key: "zname") var name: String?
    @Field(key: "zage") var age: Int64
    @Field(key: "zscore") var score: Double
    @OptionalField(key: "zemail") var email: String?
    @Field(key: "zjoined") var joined: Double

    init() {}

    init(_ i: Int, entity: Int64) {
        id = Int64(i + 1)
        self.entity = entity
        version = 1
        name = PersonData.name(i)
        age = Int64(PersonData.age(i))
        score = PersonData.score(i)
        email = PersonData.email(i)
        joined = PersonData.joined(i)
    }

    func add(to c: inout Checksum) {
        c.rows += 1
        c.ages += Int(age)
        c.scores2 += Int(score * 2)
        c.joined += Int(joined)
        if let name { c.textBytes &+= PersonData.byteSum(name) }
        if let email { c.textBytes &+= PersonData.byteSum(email) }
    }
}

// (See FluentPerson.)
final class FluentParent: Model, @unchecked Sendable {
    static let schema = "zparent"
    @ID(custom: "z_pk", generatedBy: .user) var id: Int64?
    @OptionalField(key: "zname") var name: String?
    @Children(for: \.$parent) var children: [FluentChild]

    init() {}
}

// (See FluentPerson.)
final class FluentChild: Model, @unchecked Sendable {
    static let schema = "zchild"
    @ID(custom: "z_pk", generatedBy: .user) var id: Int64?
    @OptionalField(key: "zname") var name: String?
    @OptionalParent(key: "zparent") var parent: FluentParent?

    init() {}
}
#endif
