import Foundation

/// What happened to an object or a section (`NSFetchedResultsChangeType`).
public enum FetchedResultsChangeType: UInt, Sendable, Hashable {
    /// It was inserted: `newIndexPath` says where (after every change).
    case insert = 1
    /// It was deleted: `indexPath` says where it was (before any change).
    case delete = 2
    /// It moved: from `indexPath` (before) to `newIndexPath` (after). The two can
    /// be equal when its sort keys changed but it kept its place; apply it as a
    /// delete and an insert.
    case move = 3
    /// Its values changed but it kept its place among the other objects: reload
    /// the row at `indexPath` (before); `newIndexPath` is where it is after.
    case update = 4
}

/// The receiver of a fetched results controller's reports
/// (`NSFetchedResultsControllerDelegate`).
///
/// After each change of the context that touches the results, the controller
/// calls, in this order: ``controllerWillChangeContent(_:)``; the section
/// changes; the object changes (deletes, inserts, moves, updates); and
/// ``controllerDidChangeContent(_:)``. The index paths can be given to a table
/// view's batch update as they are: deletes (and the sources of moves) in the
/// coordinates before the change, inserts (and the destinations of moves) in the
/// coordinates after it, updates at their row before the change.
///
/// ```swift
/// final class MoodList: FetchedResultsControllerDelegate {
///     var rows: [[String]] = []
///     func controller(_ controller: FetchedResultsController<Mood>, didChange object: Mood,
///                     at indexPath: IndexPath?, for type: FetchedResultsChangeType,
///                     newIndexPath: IndexPath?) {
///         print(type, indexPath as Any, newIndexPath as Any)
///     }
/// }
/// ```
///
/// Every method has a default that does nothing, so implement only those you need.
/// A delegate that wants whole snapshots instead conforms to
/// ``FetchedResultsControllerSnapshotDelegate``.
public protocol FetchedResultsControllerDelegate<Result>: AnyObject {
    /// The kind of object the controller fetches.
    associatedtype Result: ManagedObject

    /// The controller is about to report changes.
    ///
    /// - Parameter controller: The controller reporting.
    func controllerWillChangeContent(_ controller: FetchedResultsController<Result>)

    /// One object was inserted, deleted, moved or updated.
    ///
    /// - Parameters:
    ///   - controller: The controller reporting.
    ///   - object: The object that changed.
    ///   - indexPath: Where the object was before the change; nil for an insert.
    ///   - type: What happened to the object.
    ///   - newIndexPath: Where the object is after the change; nil for a delete.
    func controller(_ controller: FetchedResultsController<Result>, didChange object: Result,
                    at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?)

    /// A section was inserted (at its index after the change) or deleted (at its
    /// index before the change).
    ///
    /// - Parameters:
    ///   - controller: The controller reporting.
    ///   - sectionInfo: The section.
    ///   - sectionIndex: The section's index: after the change for an insert,
    ///     before it for a delete.
    ///   - type: ``FetchedResultsChangeType/insert`` or
    ///     ``FetchedResultsChangeType/delete``.
    func controller(_ controller: FetchedResultsController<Result>, didChange sectionInfo: FetchedResultsSectionInfo<Result>,
                    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType)

    /// The controller has reported every change.
    ///
    /// - Parameter controller: The controller reporting.
    func controllerDidChangeContent(_ controller: FetchedResultsController<Result>)

    /// The index title of a section; the default is the controller's
    /// ``FetchedResultsController/sectionIndexTitle(forSectionName:)``.
    ///
    /// - Parameters:
    ///   - controller: The controller asking.
    ///   - sectionName: The section's name.
    /// - Returns: The section's index title, or nil for none.
    func controller(_ controller: FetchedResultsController<Result>, sectionIndexTitleForSectionName sectionName: String) -> String?
}

extension FetchedResultsControllerDelegate {
    public func controllerWillChangeContent(_ controller: FetchedResultsController<Result>) {}
    public func controller(_ controller: FetchedResultsController<Result>, didChange object: Result,
                           at indexPath: IndexPath?, for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {}
    public func controller(_ controller: FetchedResultsController<Result>, didChange sectionInfo: FetchedResultsSectionInfo<Result>,
                           atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType) {}
    public func controllerDidChangeContent(_ controller: FetchedResultsController<Result>) {}
    public func controller(_ controller: FetchedResultsController<Result>, sectionIndexTitleForSectionName sectionName: String) -> String? {
        controller.sectionIndexTitle(forSectionName: sectionName)
    }
}

/// A delegate that receives the whole result after each change as a
/// ``FetchedResultsSnapshot`` (the form of `controller(_:didChangeContentWith:)`
/// that takes an `NSDiffableDataSourceSnapshot`). As in Core Data, a delegate
/// that takes snapshots is not sent the individual changes.
///
/// ```swift
/// final class MoodFeed: FetchedResultsControllerSnapshotDelegate {
///     var shown: FetchedResultsSnapshot?
///     func controller(_ controller: FetchedResultsController<Mood>,
///                     didChangeContentWith snapshot: FetchedResultsSnapshot) {
///         if let shown {
///             let difference = snapshot.difference(from: shown)
///             print(difference.items)     // per section: CollectionDifference<ManagedObjectID>
///         }
///         shown = snapshot
///     }
/// }
/// ```
public protocol FetchedResultsControllerSnapshotDelegate<Result>: FetchedResultsControllerDelegate {
    /// The results changed; `snapshot` is what they are now.
    ///
    /// - Parameters:
    ///   - controller: The controller reporting.
    ///   - snapshot: The results after the change.
    func controller(_ controller: FetchedResultsController<Result>, didChangeContentWith snapshot: FetchedResultsSnapshot)
}
