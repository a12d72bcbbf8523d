import Foundation
import OpenCoreData

/// W2f: W2 with OpenCoreData's objects returned as faults (the default of a fetch
/// request), then every fault fired by reading its attributes. The peers without
/// faults do exactly what they do in W2.
struct W2f: Workload {
    let name = "W2f"
    let title = "fetch {n} as faults, fire every fault"

    func expectedChecksum(_ env: BenchEnvironment) throws -> String { Checksum.allAttributes(count: env.count).text }

    func run(_ peer: Peer, _ env: BenchEnvironment) throws -> Sample {
        try W2.fetchAll(peer, env, asFaults: true)
    }
}
