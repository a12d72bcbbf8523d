import Foundation

/// The in-process peers. SQLAlchemy runs in its own process (Benchmarks/python).
enum Peer: String, CaseIterable {
    /// SQLite's C API from Swift: the physical limit.
    case raw
    /// OpenCoreData on its SQLite store.
    case opencoredata
    /// GRDB.swift records (`FetchableRecord & PersistableRecord` structs).
    case grdb
}

/// What every workload run knows: the sizes and the database files `prepare` made.
struct BenchEnvironment {
    let dir: String
    let count: Int
    /// `synchronous` for W1s (NORMAL, or FULL for its second variant).
    var synchronous = "NORMAL"

    /// An empty store in Core Data's layout (every write run starts from a copy).
    var emptyStore: String { dir + "/empty.sqlite" }
    /// `count` persons.
    var populatedStore: String { dir + "/people-\(count).sqlite" }
    /// `count / 10` parents with 10 children each.
    var familyStore: String { dir + "/family-\(count).sqlite" }

    /// A fresh copy of `source` for one write run of `peer` (outside any timer).
    func freshCopy(of source: String, for peer: Peer, workload: String) throws -> String {
        let path = dir + "/\(workload)-\(peer.rawValue).sqlite"
        removeDatabase(path)
        try FileManager.default.copyItem(atPath: source, toPath: path)
        return path
    }
}

/// One workload of /work/shared/docs/benchmarks.md. Each lives in its own file under
/// Workloads/ and is listed in ``allWorkloads``; `run` measures one run of one peer
/// (setting up files outside its timer) and returns the seconds and a checksum that
/// must equal ``expectedChecksum(_:)``.
protocol Workload: Sendable {
    /// The short name used on the command line and in the report ("W1").
    var name: String { get }
    /// The report's description; `{n}` stands for the count.
    var title: String { get }
    /// The in-process peers that run it.
    var peers: [Peer] { get }
    /// What every peer's checksum must be.
    func expectedChecksum(_ env: BenchEnvironment) throws -> String
    /// One measured run of `peer`.
    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample
}

extension Workload {
    var peers: [Peer] { Peer.allCases }
}

/// Every workload, in report order. Add a workload: one file in Workloads/, one line here.
let allWorkloads: [any Workload] = [
    W1(), W1s(), W1c(), W2(), W2f(), W3(), W3t(), W4a(), W4b(), W5a(), W5b(), W6a(), W6b(), W7(), M1(), M2(),
]
