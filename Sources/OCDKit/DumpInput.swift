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
        load(files: [("dump.jsonl", data)], folder: false, model: model, scratch: scratch)
    }

    /// Loads `data`, a CSV dump folder (`ocd store dump --format csv`) in one
    /// file, into a new SQLite store of `model` in `scratch`, as `ocd store load`
    /// loads the folder, and removes everything after.
    ///
    /// Each file of the folder starts with a line `==> NAME <==` (as `head`
    /// prints several files), followed by its lines: `store.json` (the header)
    /// and one `<Entity>.csv` per entity. Other names (a path, an empty name) are
    /// passed over, so no input writes outside `scratch`.
    @discardableResult
    public static func loadCSV(_ data: Data, model: ManagedObjectModel, scratch: URL) -> Bool {
        load(files: csvFolderFiles(data), folder: true, model: model, scratch: scratch)
    }

    /// The files of a CSV folder in one file, by name, in order.
    static func csvFolderFiles(_ data: Data) -> [(name: String, contents: Data)] {
        var files: [(name: String, contents: Data)] = []
        let bytes = [UInt8](data)
        var lineStart = 0
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            let line = bytes[lineStart..<lineEnd]
            if line.starts(with: Array("==> ".utf8)), line.count > 8, Array(line.suffix(4)) == Array(" <==".utf8) {
                let name = String(decoding: line.dropFirst(4).dropLast(4), as: UTF8.self)
                files.append((name, Data()))
            } else if !files.isEmpty {
                files[files.count - 1].contents.append(contentsOf: line)
                files[files.count - 1].contents.append(UInt8(ascii: "\n"))
            }
            lineStart = lineEnd + 1
        }
        let plain = { (name: String) in
            name == "store.json" || (name.hasSuffix(".csv") && name.count > 4
                && name.dropLast(4).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        }
        return files.filter { plain($0.name) }
    }

    private static func load(files: [(name: String, contents: Data)], folder: Bool, model: ManagedObjectModel, scratch: URL) -> Bool {
        let dump = folder ? scratch.appendingPathComponent("dump") : scratch.appendingPathComponent(files.first?.name ?? "dump.jsonl")
        let store = scratch.appendingPathComponent("loaded.sqlite")
        let fileManager = FileManager.default
        defer {
            for path in [dump.path, store.path, store.path + "-wal", store.path + "-shm"] { try? fileManager.removeItem(atPath: path) }
        }
        do {
            try fileManager.createDirectory(at: scratch, withIntermediateDirectories: true)
            if folder {
                try fileManager.createDirectory(at: dump, withIntermediateDirectories: true)
                for (name, contents) in files { try contents.write(to: dump.appendingPathComponent(name)) }
            } else {
                try files.first?.contents.write(to: dump)
            }
            _ = try StoreLoader(input: dump.path, storePath: store.path, model: model, batchSize: 50).load()
            return true
        } catch {
            return false
        }
    }
}
