import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates

/// A list of items in groups, each item of an owner: the model of the fetched
/// results controller tests.
struct ListStack {
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator
    let context: ManagedObjectContext
    let storeURL: URL?

    init(storeType: PersistentStoreType = .inMemory, undo: Bool = false, at url: URL? = nil) throws {
        model = try ManagedObjectModel {
            Entity("Item", className: "ManagedObject") {
                Attribute("name", .string, optional: false, defaultValue: "")
                Attribute("rank", .integer64, optional: false, defaultValue: 0)
                Attribute("group", .string)
                Attribute("flag", .boolean, optional: false, defaultValue: false)
                Relationship("owner", to: "Owner", inverse: "items")
            }
            Entity("Owner", className: "ManagedObject") {
                Attribute("name", .string, optional: false, defaultValue: "")
                Relationship("items", to: "Item", inverse: "owner", toMany: true)
            }
        }
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        if storeType == .sqlite {
            let file = try url ?? Fixtures.temporaryDirectory().appendingPathComponent("List.sqlite")
            try coordinator.addPersistentStore(type: storeType, at: file)
            storeURL = file
        } else {
            try Fixtures.addStore(type: storeType, to: coordinator)
            storeURL = nil
        }
        context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        if undo { context.undoManager = CoreUndoManager() }
    }

    func newContext() -> ManagedObjectContext {
        let other = ManagedObjectContext(concurrencyType: .privateQueue)
        other.persistentStoreCoordinator = coordinator
        return other
    }

    @discardableResult
    func item(_ name: String, rank: Int, group: String? = nil, flag: Bool = false, owner: ManagedObject? = nil,
              in context: ManagedObjectContext? = nil) -> ManagedObject {
        let item = ManagedObject(entity: model.entitiesByName["Item"]!, insertInto: context ?? self.context)
        item.setValue(name, forKey: "name")
        item.setValue(rank, forKey: "rank")
        item.setValue(group, forKey: "group")
        item.setValue(flag, forKey: "flag")
        if let owner { item.setValue(owner, forKey: "owner") }
        return item
    }

    func owner(_ name: String) -> ManagedObject {
        let owner = ManagedObject(entity: model.entitiesByName["Owner"]!, insertInto: context)
        owner.setValue(name, forKey: "name")
        return owner
    }

    func request(_ predicate: String? = nil, sort: [CoreSortDescriptor]) throws -> FetchRequest<ManagedObject> {
        let request = FetchRequest<ManagedObject>(entityName: "Item")
        if let predicate { request.predicate = try CorePredicate(format: predicate) }
        request.sortDescriptors = sort
        return request
    }
}

/// One report of a delegate, in the order it came.
enum ReportedChange: Equatable, CustomStringConvertible {
    case willChange
    case section(name: String, index: Int, FetchedResultsChangeType)
    case object(name: String, from: IndexPath?, FetchedResultsChangeType, to: IndexPath?)
    case didChange

    var description: String {
        switch self {
        case .willChange: return "will"
        case .didChange: return "did"
        case let .section(name, index, type): return "section \(type) '\(name)' \(index)"
        case let .object(name, from, type, to): return "\(type) \(name) \(from.map { "\(Array($0))" } ?? "-") -> \(to.map { "\(Array($0))" } ?? "-")"
        }
    }
}

/// A delegate that records what it is told and keeps a copy of the list,
/// updated only by applying the reported changes as a table view would.
final class RecordingDelegate: FetchedResultsControllerDelegate {
    typealias Result = ManagedObject
    var reports: [ReportedChange] = []
    /// The table: section names and objects, as the reports built it.
    var table: [(name: String, ids: [ManagedObject])] = []
    private var pending: [ReportedChange] = []
    private var pendingObjects: [(object: ManagedObject, from: IndexPath?, type: FetchedResultsChangeType, to: IndexPath?)] = []
    private var pendingSections: [(name: String, index: Int, type: FetchedResultsChangeType)] = []
    var problems: [String] = []

    func load(_ controller: FetchedResultsController<ManagedObject>) {
        table = (controller.sections ?? []).map { ($0.name, $0.objects) }
    }

    func controllerWillChangeContent(_ controller: FetchedResultsController<ManagedObject>) {
        reports.append(.willChange)
        pendingObjects = []
        pendingSections = []
    }

    func controller(_ controller: FetchedResultsController<ManagedObject>, didChange sectionInfo: FetchedResultsSectionInfo<ManagedObject>,
                    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType) {
        reports.append(.section(name: sectionInfo.name, index: sectionIndex, type))
        pendingSections.append((sectionInfo.name, sectionIndex, type))
    }

    func controller(_ controller: FetchedResultsController<ManagedObject>, didChange object: ManagedObject, at indexPath: IndexPath?,
                    for type: FetchedResultsChangeType, newIndexPath: IndexPath?) {
        reports.append(.object(name: object.value(forKey: "name") as? String ?? "?", from: indexPath, type, to: newIndexPath))
        pendingObjects.append((object, indexPath, type, newIndexPath))
    }

    func controllerDidChangeContent(_ controller: FetchedResultsController<ManagedObject>) {
        reports.append(.didChange)
        apply()
    }

    /// A table view's batch update: deletes (and move sources) at their index
    /// paths before the change, then section deletes, section inserts, and inserts
    /// (and move destinations) at their index paths after it, in ascending order;
    /// updates reload a row that stays.
    private func apply() {
        var removed: [Int: Set<Int>] = [:]
        for change in pendingObjects where change.type == .delete || change.type == .move {
            guard let from = change.from, from.count == 2, table.indices.contains(from[0]), table[from[0]].ids.indices.contains(from[1]) else {
                problems.append("\(change.type) from an invalid index path \(change.from.map { Array($0) } ?? [])")
                continue
            }
            if !removed[from[0], default: []].insert(from[1]).inserted { problems.append("row \(Array(from)) removed twice") }
        }
        for change in pendingObjects where change.type == .update {
            guard let from = change.from, from.count == 2, table.indices.contains(from[0]), table[from[0]].ids.indices.contains(from[1]) else {
                problems.append("update at an invalid index path")
                continue
            }
            if removed[from[0]]?.contains(from[1]) == true { problems.append("update of a removed row \(Array(from))") }
        }
        for (section, rows) in removed {
            table[section].ids = table[section].ids.enumerated().filter { !rows.contains($0.offset) }.map(\.element)
        }
        let deletedSections = Set(pendingSections.filter { $0.type == .delete }.map(\.index))
        for index in deletedSections {
            if table.indices.contains(index), !table[index].ids.isEmpty { problems.append("deleted section \(index) still has rows") }
        }
        table = table.enumerated().filter { !deletedSections.contains($0.offset) }.map(\.element)
        for section in pendingSections.filter({ $0.type == .insert }).sorted(by: { $0.index < $1.index }) {
            guard section.index <= table.count else {
                problems.append("section inserted at \(section.index) past the end")
                continue
            }
            table.insert((section.name, []), at: section.index)
        }
        let arrivals = pendingObjects.filter { $0.type == .insert || $0.type == .move }
            .compactMap { change in change.to.map { (change.object, $0) } }
            .sorted { $0.1 < $1.1 }
        for (id, to) in arrivals {
            guard to.count == 2, table.indices.contains(to[0]), to[1] <= table[to[0]].ids.count else {
                problems.append("insert at an invalid index path \(Array(to))")
                continue
            }
            table[to[0]].ids.insert(id, at: to[1])
        }
        pendingObjects = []
        pendingSections = []
    }

    /// The table as section names and object IDs.
    var tableIDs: [[String]] {
        table.map { [$0.name] + $0.ids.map(\.objectID.description) }
    }
}

extension FetchedResultsController<ManagedObject> {
    /// The controller's sections as section names and object IDs.
    var sectionIDs: [[String]] {
        (sections ?? []).map { [$0.name] + $0.objects.map(\.objectID.description) }
    }
}

