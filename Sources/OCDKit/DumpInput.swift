import Foundation
import OpenCoreData

/// `ocd store load`'s reader of dump files, reached from raw bytes: the entry
/// point of the dump fuzz target (the `Fuzz` package) and of the test that
/// replays every input a fuzzer ever found crashing. The counterpart of
/// OpenCoreData's `UntrustedInput` for the one parser that lives in `ocd`.
///
/// This is SPI, not API: `@_spi(Fuzzing) import OCDKit`.
///
/// ```swift
/// @_spi(Fuzzing) import OCDKit
///
/// let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-dump")
/// DumpInput.load(dumpBytes, model: model, scratch: scratch)
/// ```
@_spi(Fuzzing)
public enum DumpInput {
    /// Loads `data`, a JSON-lines dump (`ocd store dump --format jsonl`), into
    /// a new SQLite store of `model` in `scratch`, as `ocd store load` does, and
    /// removes both files after. Returns whether it loaded: an error is an
    /// answer, not a failure.
    @discardableResult
    public static func load(_ data: Data, model: ManagedObjectModel, scratch: URL) -> Bool {
        let input = scratch.appendingPathComponent("dump.jsonl")
        let store = scratch.appendingPathComponent("loaded.sqlite")
        let fileManager = FileManager.default
        defer {
            for path in [input.path, store.path, store.path + "-wal", store.path + "-shm"] { try? fileManager.removeItem(atPath: path) }
        }
        do {
            try fileManager.createDirectory(at: scratch, withIntermediateDirectories: true)
            try data.write(to: input)
            _ = try StoreLoader(input: input.path, storePath: store.path, model: model, batchSize: 50).load()
            return true
        } catch {
            return false
        }
    }
}
