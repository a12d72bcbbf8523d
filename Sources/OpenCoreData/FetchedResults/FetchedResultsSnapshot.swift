import Foundation

/// One section of a fetched results controller's results
/// (`NSFetchedResultsSectionInfo`): its name, index title and objects.
///
/// ```swift
/// for section in controller.sections ?? [] {
///     print(section.name, section.numberOfObjects)
/// }
/// ```
public struct FetchedResultsSectionInfo<Result: ManagedObject> {
    /// The section's name: the value at the controller's `sectionNameKeyPath` for
    /// its objects, as a string (`""` for nil, and for the single section of a
    /// controller without a section key path).
    public let name: String
    /// The section's index title, nil when it has none.
    public let indexTitle: String?
    /// The section's objects, in order.
    public let objects: [Result]
    /// The number of objects in the section.
    public var numberOfObjects: Int { objects.count }
}

/// The results of a fetched results controller by identity: the section names
/// and, per section, the object IDs in order (what `NSDiffableDataSourceSnapshot`
/// holds for a Core Data controller; Sendable, so it can go to any task).
///
/// ```swift
/// let before = controller.snapshot
/// mood.setValue(5, forKey: "rating")
/// context.processPendingChanges()
/// let changes = controller.snapshot.difference(from: before)
/// for change in changes.items[""] ?? CollectionDifference([])! {
///     print(change)      // .remove(offset:element:) / .insert(offset:element:)
/// }
/// ```
public struct FetchedResultsSnapshot: Sendable, Hashable {
    /// The sections' names, in order.
    public var sectionIdentifiers: [String]
    /// The object IDs of each section, in order, parallel to ``sectionIdentifiers``.
    public var itemIdentifiersBySection: [[ManagedObjectID]]

    /// A snapshot of the given sections.
    ///
    /// - Parameters:
    ///   - sectionIdentifiers: The sections' names, in order.
    ///   - itemIdentifiersBySection: The object IDs of each section, in order,
    ///     one array per name of `sectionIdentifiers`.
    public init(sectionIdentifiers: [String], itemIdentifiersBySection: [[ManagedObjectID]]) {
        self.sectionIdentifiers = sectionIdentifiers
        self.itemIdentifiersBySection = itemIdentifiersBySection
    }

    /// Every object ID, section after section.
    public var itemIdentifiers: [ManagedObjectID] { itemIdentifiersBySection.flatMap { $0 } }
    /// The number of sections.
    public var numberOfSections: Int { sectionIdentifiers.count }
    /// The number of objects.
    public var numberOfItems: Int { itemIdentifiersBySection.reduce(0) { $0 + $1.count } }

    /// The object IDs of the section named `identifier` (empty if there is none).
    ///
    /// - Parameter identifier: The section's name.
    /// - Returns: The section's object IDs, in order.
    public func itemIdentifiers(inSection identifier: String) -> [ManagedObjectID] {
        sectionIdentifiers.firstIndex(of: identifier).map { itemIdentifiersBySection[$0] } ?? []
    }

    /// How this snapshot differs from an earlier one: the sections inserted and
    /// removed, and for each section of either snapshot, the object IDs removed
    /// (offsets in `earlier`) and inserted (offsets in this one). Apply
    /// ``Difference/items`` to the earlier section's IDs with `applying(_:)` to get
    /// this one's.
    ///
    /// - Parameter earlier: The snapshot to compare with.
    /// - Returns: The section and object ID changes from `earlier` to this one.
    public func difference(from earlier: FetchedResultsSnapshot) -> Difference {
        var items: [String: CollectionDifference<ManagedObjectID>] = [:]
        let names = Set(sectionIdentifiers).union(earlier.sectionIdentifiers)
        for name in names {
            let old = earlier.itemIdentifiers(inSection: name)
            let new = itemIdentifiers(inSection: name)
            guard old != new else { continue }
            items[name] = new.difference(from: old).inferringMoves()
        }
        return Difference(sections: sectionIdentifiers.difference(from: earlier.sectionIdentifiers).inferringMoves(), items: items)
    }

    /// The changes between two snapshots.
    public struct Difference: Sendable {
        /// The section names removed and inserted.
        public var sections: CollectionDifference<String>
        /// Per section name, the object IDs removed and inserted; sections whose
        /// objects did not change are absent.
        public var items: [String: CollectionDifference<ManagedObjectID>]
    }
}
