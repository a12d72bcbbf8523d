import Foundation
import NIOSSL
import OpenCoreData
import PostgresNIO

/// Where a PostgreSQL store lives: the server, the database, the schema holding
/// the store's tables, and how to connect, read from a store URL
/// (`postgres://user:password@host:port/database`, optionally `?schema=name`) and
/// the store's options.
///
/// ```swift
/// let url = URL(string: "postgres://app@db.internal:5432/moody")!
/// let location = try PostgreSQLLocation(url: url, options: [PostgreSQLStore.Option.schema: "tenant_42"])
/// location.schema   // "tenant_42"
/// ```
struct PostgreSQLLocation: Sendable, CustomStringConvertible {
    var host: String
    var port: Int
    var username: String
    var password: String?
    var database: String
    /// The schema holding the store's tables (``PostgreSQLStore/Option/schema``).
    var schema: String
    /// ``PostgreSQLStore/Option/tls``: `disable`, `prefer` or `require`.
    var tls: String
    /// The authorities of ``PostgreSQLStore/Option/tlsRootCertificates`` (nil: the system's).
    var tlsRootCertificates: [NIOSSLCertificate]?
    /// ``PostgreSQLStore/Option/statementTimeout``, in milliseconds.
    var statementTimeoutMilliseconds: Int?
    /// ``PostgreSQLStore/Option/poolSize``.
    var poolSize: Int

    /// - Throws: ``CoreDataError/Code/persistentStoreOpen`` (134080) naming what
    ///   is wrong with the URL or an option.
    init(url: URL?, options: [String: String]) throws {
        guard let url else {
            throw CoreDataError(.persistentStoreOpen, "A PostgreSQL store needs a URL: postgres://user@host:port/database")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" else {
            throw CoreDataError(.persistentStoreOpen, "A PostgreSQL store URL starts with postgres://, not \(url.absoluteString)", url: url)
        }
        guard let host = url.host, !host.isEmpty else {
            throw CoreDataError(.persistentStoreOpen, "The PostgreSQL store URL \(url.absoluteString) names no host", url: url)
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        guard !database.isEmpty, !database.contains("/") else {
            throw CoreDataError(.persistentStoreOpen, "The PostgreSQL store URL \(url.absoluteString) names no database (postgres://user@host:port/database)", url: url)
        }
        self.host = host
        self.port = url.port ?? 5432
        self.username = url.user?.removingPercentEncoding ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        self.password = url.password?.removingPercentEncoding
        self.database = database.removingPercentEncoding ?? database
        // The schema: the option, else the URL's `?schema=` (so that a URL alone can
        // name a store, as a path names a file), else `public`.
        let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems
        let schema = options[PostgreSQLStore.Option.schema] ?? query?.first(where: { $0.name == "schema" })?.value ?? "public"
        guard !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0) else {
            throw CoreDataError(.persistentStoreOpen, "Invalid PostgreSQL schema name '\(schema)' (1 to 63 bytes, no NUL)", url: url)
        }
        self.schema = schema
        let tls = (options[PostgreSQLStore.Option.tls] ?? "disable").lowercased()
        guard ["disable", "prefer", "require"].contains(tls) else {
            throw CoreDataError(.persistentStoreOpen, "Invalid \(PostgreSQLStore.Option.tls) option '\(tls)': disable, prefer or require", url: url)
        }
        self.tls = tls
        if let path = options[PostgreSQLStore.Option.tlsRootCertificates] {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw CoreDataError(.persistentStoreOpen, "Can't read the certificates of \(PostgreSQLStore.Option.tlsRootCertificates) '\(path)': \(error)", url: url)
            }
            guard !certificates.isEmpty else {
                throw CoreDataError(.persistentStoreOpen, "No certificate in \(PostgreSQLStore.Option.tlsRootCertificates) '\(path)'", url: url)
            }
            tlsRootCertificates = certificates
        }
        if let text = options[PostgreSQLStore.Option.statementTimeout] {
            guard let seconds = Double(text), seconds >= 0, seconds < 86_400 * 365 else {
                throw CoreDataError(.persistentStoreOpen, "Invalid \(PostgreSQLStore.Option.statementTimeout) option '\(text)': seconds", url: url)
            }
            statementTimeoutMilliseconds = Int((seconds * 1000).rounded())
        }
        if let text = options[PostgreSQLStore.Option.poolSize] {
            guard let size = Int(text), (1...1000).contains(size) else {
                throw CoreDataError(.persistentStoreOpen, "Invalid \(PostgreSQLStore.Option.poolSize) option '\(text)': 1 to 1000", url: url)
            }
            poolSize = size
        } else {
            poolSize = 4
        }
    }

    /// postgres-nio's configuration of a connection.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        let mode: PostgresConnection.Configuration.TLS
        switch tls {
        case "disable":
            mode = .disable
        default:
            let context: NIOSSLContext
            do {
                var configuration = TLSConfiguration.makeClientConfiguration()
                if let tlsRootCertificates { configuration.trustRoots = .certificates(tlsRootCertificates) }
                context = try NIOSSLContext(configuration: configuration)
            } catch {
                throw CoreDataError(.persistentStoreOpen, "Can't set up TLS for \(description): \(error)")
            }
            mode = tls == "require" ? .require(context) : .prefer(context)
        }
        return PostgresConnection.Configuration(host: host, port: port, username: username, password: password,
                                                database: database, tls: mode)
    }

    /// The location without the password.
    var description: String { "postgres://\(username)@\(host):\(port)/\(database) (schema \(schema))" }
}
