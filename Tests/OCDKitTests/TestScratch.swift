import Foundation

/// The test process's scratch folder: every temporary folder a test makes lies
/// inside `OCDKitTests-<process ID>` in the system's temporary directory,
/// and the whole folder is removed when the process exits (tests that remove
/// their own folders still may). A run leaves nothing behind in `/tmp` unless the
/// process crashes.
enum TestScratch {
    /// The process's scratch folder, made (and its removal at exit registered) on
    /// first use.
    static let root: URL = {
        let root = rootURL(for: getpid())
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // A C callback captures nothing: it finds the folder again by process ID
        // (an exit test's child process has its own, removed at its own exit).
        atexit { try? FileManager.default.removeItem(at: TestScratch.rootURL(for: getpid())) }
        return root
    }()

    static func rootURL(for process: pid_t) -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("OCDKitTests-\(process)")
    }

    /// A new empty folder inside ``root``, named `prefix-<UUID>`.
    static func folder(_ prefix: String = "test") throws -> URL {
        let folder = root.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
