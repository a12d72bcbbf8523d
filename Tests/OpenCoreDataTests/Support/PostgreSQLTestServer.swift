#if PostgreSQLTests
import Foundation
import OpenCoreData
import OpenCoreDataPostgreSQL

/// A throwaway PostgreSQL server for the tests: a cluster made with `initdb` in a
/// temporary folder and started with `pg_ctl` on a free local port, once per
/// test process, stopped and removed when the process exits.
///
/// - `OCD_POSTGRESQL_URL` (`postgres://user@host:port/database`) uses a server you
///   run instead.
/// - Otherwise the server's programs are looked for in `OCD_POSTGRESQL_BIN`, then
///   `/usr/lib/postgresql/<version>/bin` (Debian's `postgresql` package). PostgreSQL
///   refuses to run as root: as root, the cluster belongs to the `postgres` user
///   when there is one, else to a user `ocdtest` made for it.
/// - Without a server the PostgreSQL tests are skipped, and ``unavailableReason``
///   says why — unless `OCD_REQUIRE_POSTGRESQL=1` (CI sets it), when they fail.
///
/// Each store made for a test lives in a schema of its own (``storeOptions()``).
enum PostgreSQLTestServer {
    /// The server's URL, or why there is none.
    static let server: Result<URL, ServerError> = start()

    struct ServerError: Error, CustomStringConvertible {
        var description: String
    }

    /// Whether the PostgreSQL tests run. When they cannot, the reason is printed
    /// once, and a run that requires them fails.
    static var isAvailable: Bool {
        switch server {
        case .success: return true
        case .failure(let error):
            reportOnce(error)
            return ProcessInfo.processInfo.environment["OCD_REQUIRE_POSTGRESQL"] == "1"
        }
    }

    private static let reported = Lock(false)
    private static func reportOnce(_ error: ServerError) {
        let first = reported.withLock { reported -> Bool in
            defer { reported = true }
            return !reported
        }
        if first {
            FileHandle.standardError.write(Data("PostgreSQL store tests skipped: \(error). Install PostgreSQL's server (Debian: apt-get install postgresql) or set OCD_POSTGRESQL_URL.\n".utf8))
        }
    }

    /// The URL of the server's database, throwing the reason when there is no server.
    static func url() throws -> URL {
        try server.get()
    }

    /// Options putting a store in a new schema of its own.
    static func storeOptions(schema: String = "t_" + UUID().uuidString.prefix(8).lowercased()) -> [String: String] {
        [PostgreSQLStore.Option.schema: schema]
    }

    // MARK: Starting the cluster

    private static func start() -> Result<URL, ServerError> {
        let environment = ProcessInfo.processInfo.environment
        if let text = environment["OCD_POSTGRESQL_URL"], let url = URL(string: text) { return .success(url) }
        guard let bin = binaries() else {
            return .failure(ServerError(description: "no PostgreSQL server programs (initdb, pg_ctl) found"))
        }
        do {
            let user = try clusterUser()
            reapAbandonedClusters(pgctl: bin + "/pg_ctl", user: user)
            let folder = URL(fileURLWithPath: "/tmp/ocd-postgresql-\(getpid())")
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let data = folder.appendingPathComponent("data").path
            if let user { try run("/bin/chown", ["-R", user, folder.path]) }
            try run(bin + "/initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"], as: user)
            // TLS with a certificate of a private authority, when openssl can make
            // one (the TLS test needs it; plain connections are unaffected).
            var tls = try? makeCertificates(in: folder, user: user)
            var lastError: (any Error)?
            for _ in 0..<8 {
                let port = Int.random(in: 20_000..<60_000)
                let tlsOptions = tls.map { " -c ssl=on -c ssl_cert_file=\($0.certificate) -c ssl_key_file=\($0.key)" } ?? ""
                do {
                    try run(bin + "/pg_ctl", ["-D", data, "-l", folder.appendingPathComponent("server.log").path, "-w", "-t", "60",
                                              "-o", "-p \(port) -k \(folder.path) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" + tlsOptions,
                                              "start"], as: user)
                    stopCommand.withLock { $0 = (bin + "/pg_ctl", data, user, folder.path) }
                    authority.withLock { $0 = tls.map { URL(fileURLWithPath: $0.authority) } }
                    atexit { PostgreSQLTestServer.stop() }
                    return .success(URL(string: "postgres://postgres@127.0.0.1:\(port)/postgres")!)
                } catch {
                    lastError = error
                    // The next attempts without TLS: a server that starts matters
                    // more than the TLS test (which then says it was skipped).
                    tls = nil
                }
            }
            throw lastError ?? ServerError(description: "pg_ctl start failed")
        } catch {
            return .failure(ServerError(description: "the throwaway PostgreSQL server did not start: \(error)"))
        }
    }

    private static let authority = Lock<URL?>(nil)

    /// The PEM file of the authority that signed the throwaway server's TLS
    /// certificate (for `127.0.0.1`), or nil when the server has no TLS (openssl
    /// missing, or a server of `OCD_POSTGRESQL_URL`).
    static var certificateAuthority: URL? {
        _ = server
        return authority.withLock { $0 }
    }

    /// An authority and a server certificate it signed (for `127.0.0.1` and
    /// `localhost`, valid two days), made with openssl in `folder`; the server's
    /// key readable by `user` alone, as PostgreSQL requires.
    private static func makeCertificates(in folder: URL, user: String?) throws -> (authority: String, certificate: String, key: String) {
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"]
            .first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let openssl else { throw ServerError(description: "no openssl") }
        let path = { (name: String) in folder.appendingPathComponent(name).path }
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run(openssl, ["req", "-x509"] + curve + ["-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "2",
                                                     "-subj", "/CN=OpenCoreData test authority"])
        try run(openssl, ["req"] + curve + ["-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try run(openssl, ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                          "-CAcreateserial", "-out", path("server.crt"), "-days", "2", "-extfile", path("server.ext")])
        if let user { try run("/bin/chown", [user, path("server.crt"), path("server.key")]) }
        try run("/bin/chmod", ["600", path("server.key")])
        return (path("ca.crt"), path("server.crt"), path("server.key"))
    }

    /// Stops and removes the clusters of test processes that ended without
    /// stopping theirs (killed, or crashed): folders `/tmp/ocd-postgresql-<pid>`
    /// whose process is gone. A running process's cluster is left alone.
    private static func reapAbandonedClusters(pgctl: String, user: String?) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") else { return }
        for name in names where name.hasPrefix("ocd-postgresql-") {
            guard let pid = Int32(name.dropFirst("ocd-postgresql-".count)), pid != getpid() else { continue }
            // kill(pid, 0): the process exists (or belongs to another user).
            if kill(pid, 0) == 0 || errno == EPERM { continue }
            let folder = "/tmp/" + name
            _ = try? run(pgctl, ["-D", folder + "/data", "-m", "immediate", "-w", "stop"], as: user)
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    private static let stopCommand = Lock<(pgctl: String, data: String, user: String?, folder: String)?>(nil)

    private static func stop() {
        guard let command = stopCommand.withLock({ $0 }) else { return }
        _ = try? run(command.pgctl, ["-D", command.data, "-m", "immediate", "-w", "stop"], as: command.user)
        try? FileManager.default.removeItem(atPath: command.folder)
    }

    /// The folder of `initdb` and `pg_ctl`.
    private static func binaries() -> String? {
        let fileManager = FileManager.default
        if let bin = ProcessInfo.processInfo.environment["OCD_POSTGRESQL_BIN"] { return bin }
        let root = "/usr/lib/postgresql"
        let versions = ((try? fileManager.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions where fileManager.isExecutableFile(atPath: "\(root)/\(version)/bin/pg_ctl") {
            return "\(root)/\(version)/bin"
        }
        for folder in ["/usr/local/bin", "/usr/bin", "/opt/homebrew/bin"] where fileManager.isExecutableFile(atPath: folder + "/pg_ctl") {
            return folder
        }
        return nil
    }

    /// The user the cluster runs as: nil when the tests do not run as root.
    private static func clusterUser() throws -> String? {
        guard getuid() == 0 else { return nil }
        if (try? run("/usr/bin/id", ["-u", "postgres"])) != nil { return "postgres" }
        if (try? run("/usr/bin/id", ["-u", "ocdtest"])) == nil {
            try run("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/bin/sh", "ocdtest"])
        }
        return "ocdtest"
    }

    /// Runs a program (as `user`, through `runuser`, when given) and throws its
    /// output when it fails.
    ///
    /// Spawned and waited for with `posix_spawn` and `waitpid`, its output in a
    /// file: Foundation's `Process` learns that a child ended when the last holder
    /// of a descriptor it shares closes it, and the server `pg_ctl start` leaves
    /// running holds it for as long as it runs.
    @discardableResult
    private static func run(_ program: String, _ arguments: [String], as user: String? = nil) throws -> String {
        let argv = user.map { ["/usr/sbin/runuser", "-u", $0, "--", program] + arguments } ?? [program] + arguments
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-run-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else {
            throw ServerError(description: "\(argv[0]) could not start (error \(spawned))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        // Exited normally (low 7 bits 0) with status 0.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw ServerError(description: "\((program as NSString).lastPathComponent) failed (status \(status)): \(text.suffix(600))")
        }
        return text
    }
}
#endif
