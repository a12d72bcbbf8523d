/// Named points of a save or a migration where a test stops the process, as a
/// kill would there: how the fault tests check that an interrupted save or
/// migration leaves the store as it was or as it would be, never a mixture.
///
/// Production code only names its points; the behaviour at a point is the hook a
/// test installs (in an exit test's child process, which it then ends). Without
/// a hook, reaching a point does nothing.
///
/// ```swift
/// await #expect(processExitsWith: .exitCode(75)) {
///     FaultPoints.install { point in if point == "renamed" { _exit(75) } }
///     try StoreMigrator.migrateStore(at: url, plan: plan)
/// }
/// ```
///
/// The points: a migration's `copied`, `in-place` (inside a step's transaction),
/// `migrated`, `checkpointed` and `renamed` (``StoreMigrator``); the PostgreSQL
/// store's `before-commit` (every row of a save written, the transaction open).
package enum FaultPoints {
    private static let hook = Lock<(@Sendable (String) -> Void)?>(nil)

    /// Runs `body` with the name of each point reached from now on in this process.
    package static func install(_ body: @escaping @Sendable (String) -> Void) {
        hook.withLock { $0 = body }
    }

    /// Hands `point` to the installed hook, if any.
    package static func reach(_ point: String) {
        guard let body = hook.withLock({ $0 }) else { return }
        body(point)
    }
}
