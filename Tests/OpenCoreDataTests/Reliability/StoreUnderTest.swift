import Foundation
import Testing
#if PostgreSQLTests
import OpenCoreDataPostgreSQL
#endif
@testable import OpenCoreData

/// The store a reliability test's processes share: a SQLite file, or a schema of
/// the test server's PostgreSQL database, with the options every process opens it
/// with. Codable, so an exit test's child process receives it.
struct StoreUnderTest: Codable, Sendable, CustomStringConvertible {
    enum Kind: String, Codable, Sendable {
        case sqlite, postgreSQL

        /// SQLite, and PostgreSQL when its tests are built and its server runs
        /// (or is required: then a missing server fails the test).
        static var availableForTests: [Kind] {
            #if PostgreSQLTests
            return PostgreSQLTestServer.isAvailable ? [.sqlite, .postgreSQL] : [.sqlite]
            #else
            return [.sqlite]
            #endif
        }
    }
    var kind: Kind
    /// The SQLite file's path, or the PostgreSQL server's URL.
    var location: String
    /// The PostgreSQL schema (empty for SQLite).
    var schema: String = ""
    var options: [String: String] = [:]

    static func sqlite(_ path: String, options: [String: String] = [:]) -> StoreUnderTest {
        StoreUnderTest(kind: .sqlite, location: path, options: options)
    }

    #if PostgreSQLTests
    /// A new schema on the test server.
    static func postgreSQL(options: [String: String] = [:]) throws -> StoreUnderTest {
        StoreUnderTest(kind: .postgreSQL, location: try PostgreSQLTestServer.url().absoluteString,
                       schema: PostgreSQLStoreTests.newSchema(), options: options)
    }
    #endif

    var tracksHistory: Bool { options[NSPersistentHistoryTrackingKey] == "1" }

    var description: String {
        "\(kind == .sqlite ? "SQLite" : "PostgreSQL") \(tracksHistory ? "with" : "without") history"
    }

    /// A coordinator of `model` with the store added.
    func open(_ model: ManagedObjectModel) throws -> PersistentStoreCoordinator {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        switch kind {
        case .sqlite:
            try coordinator.addPersistentStore(type: .sqlite, at: URL(fileURLWithPath: location), options: options)
        case .postgreSQL:
            #if PostgreSQLTests
            var options = options
            options[PostgreSQLStore.Option.schema] = schema
            try coordinator.addPersistentStore(type: .postgreSQL, at: URL(string: location)!, options: options)
            #else
            Issue.record("the PostgreSQL store is not built (trait PostgreSQLTests off)")
            #endif
        }
        return coordinator
    }
}
