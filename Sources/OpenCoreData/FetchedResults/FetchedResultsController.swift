import Foundation
import OpenCoreDataPredicates

/// The results of a fetch request, kept up to date with its context and split
/// into sections (`NSFetchedResultsController`): the model of a list.
///
/// ```swift
/// let request = FetchRequest<Mood>(entityName: "Mood")
/// request.sortDescriptors = [CoreSortDescriptor(key: "country.name", ascending: true),
///                            CoreSortDescriptor(key: "date", ascending: false)]
/// request.fetchBatchSize = 20
/// let controller = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
///                                           sectionNameKeyPath: "country.name", cacheName: "Moods")
/// controller.delegate = moodList
/// try controller.performFetch()
///
/// controller.sections?.count                      // one per country
/// let first = try controller.object(at: IndexPath(row: 0, section: 0))
/// controller.indexPath(forObject: first)          // [0, 0]
/// ```
///
/// After ``performFetch()`` the controller follows its context: every event
/// (``ManagedObjectContext/processPendingChanges()``, so the context's own changes,
/// undo and redo, refreshes and merges from other contexts), save, `reset()` and
/// `rollback()`. Objects that start or stop matching the predicate are inserted
/// or deleted, objects whose sort or section keys change move, and the
/// ``delegate`` is told in Core Data's order with index paths a table view applies
/// directly. Reacting to a change costs in proportion to the change (binary
/// searches in the sorted results), not to the number of results.
///
/// The fetch request's first sort descriptor must order the objects by section:
/// objects of one section must be together, or ``performFetch()`` fails with
/// Core Data's error (134060). Changes of related objects (a country's name for
/// a `country.name` section key path) are not followed, as in Core Data.
public final class FetchedResultsController<Result: ManagedObject> {
    /// A section of the results.
    public typealias SectionInfo = FetchedResultsSectionInfo<Result>

    /// The request whose results the controller keeps. Change its predicate or
    /// sort descriptors only before ``performFetch()`` (delete the cache first).
    public let fetchRequest: FetchRequest<Result>
    /// The context the controller fetches from and follows.
    public let managedObjectContext: ManagedObjectContext
    /// The key path whose value names an object's section; nil for one section.
    public let sectionNameKeyPath: String?
    /// The name of the on-disk cache of section information; nil for none.
    public let cacheName: String?
    /// Told of every change to the results.
    public weak var delegate: (any FetchedResultsControllerDelegate<Result>)?

    final class Section {
        let id: Int
        let name: String
        var indexTitle: String?
        var objects: [Result]
        init(id: Int, name: String, indexTitle: String?, objects: [Result]) {
            self.id = id
            self.name = name
            self.indexTitle = indexTitle
            self.objects = objects
        }
    }

    /// The sections; nil before the first fetch.
    var state: [Section]?
    var sectionByName: [String: Section] = [:]
    /// Every fetched object, by identity.
    var members: Set<ObjectIdentifier> = []
    var nextSectionID = 0
    var entity: EntityDescription?
    var flatObjects: [Result]?
    var snapshotObservers: [UUID: AsyncStream<FetchedResultsSnapshot>.Continuation] = [:]
    /// The object IDs last sent as a snapshot, to notice IDs made permanent by a save.
    var lastSnapshot: FetchedResultsSnapshot?

    /// A controller for the results of `fetchRequest` in `context`.
    ///
    /// - Parameters:
    ///   - fetchRequest: the request; it needs at least one sort descriptor.
    ///   - context: the context to fetch from and follow.
    ///   - sectionNameKeyPath: a key path (through to-one relationships too) whose
    ///     value names each object's section; nil for a single section.
    ///   - cacheName: the name of a cache of section information kept on disk, so
    ///     that a later ``performFetch()`` of the same request on an unchanged
    ///     store does not compute the sections again; nil for none.
    public init(fetchRequest: FetchRequest<Result>, managedObjectContext context: ManagedObjectContext,
                sectionNameKeyPath: String?, cacheName: String?) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = cacheName
    }

    deinit {
        for continuation in snapshotObservers.values { continuation.finish() }
    }

    // MARK: Fetching

    /// Runs the fetch request and starts following the context. On error the
    /// previous results stay.
    ///
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the request has no sort descriptor or its objects are not
    ///   sorted by section; the errors of ``ManagedObjectContext/fetch(_:)``.
    public func performFetch() throws {
        guard !fetchRequest.sortDescriptors.isEmpty else {
            throw CoreDataError(.coreData, "A fetched results controller needs a fetch request with sort descriptors",
                                entityName: fetchRequest.entityName)
        }
        let entity = try managedObjectContext.resolveEntity(fetchRequest)
        let objects = try managedObjectContext.fetch(fetchRequest)
        let sections: [Section]
        if let cached = cachedSections(entity: entity, objectCount: objects.count) {
            sections = split(objects, by: cached)
        } else {
            sections = try makeSections(objects)
        }
        self.entity = entity
        install(sections)
        writeCache()
        managedObjectContext.addChangeObserver(self)
        publishSnapshot(onlyIfIDsChanged: false)
    }

    /// Splits fetched objects into sections by their section names, checking that
    /// each section's objects are together.
    func makeSections(_ objects: [Result], reusing previous: [Section]? = nil) throws -> [Section] {
        var previousIDs: [String: Int] = [:]
        for section in previous ?? [] { previousIDs[section.name] = section.id }
        var sections: [Section] = []
        guard sectionNameKeyPath != nil else {
            if objects.isEmpty { return [] }
            return [Section(id: previousIDs[""] ?? newSectionID(), name: "", indexTitle: nil, objects: objects)]
        }
        var seen = Set<String>()
        for (index, object) in objects.enumerated() {
            let name = sectionName(of: object)
            if let last = sections.last, last.name == name {
                last.objects.append(object)
                continue
            }
            guard seen.insert(name).inserted else {
                throw CoreDataError(.coreData, "The fetched object at index \(index) has an out of order section name '\(name)'. Objects must be sorted by section name",
                                    entityName: object.entity.name, key: sectionNameKeyPath)
            }
            sections.append(Section(id: previousIDs[name] ?? newSectionID(), name: name, indexTitle: indexTitle(forSectionName: name), objects: [object]))
        }
        return sections
    }

    /// Splits objects by cached section sizes (no section key is read).
    func split(_ objects: [Result], by cached: [SectionInfoCache.Entry]) -> [Section] {
        var sections: [Section] = []
        var start = 0
        for entry in cached where entry.count > 0 {
            let end = start + entry.count
            sections.append(Section(id: newSectionID(), name: entry.name, indexTitle: entry.indexTitle, objects: Array(objects[start..<end])))
            start = end
        }
        return sections
    }

    func newSectionID() -> Int {
        nextSectionID += 1
        return nextSectionID
    }

    func install(_ sections: [Section]) {
        state = sections
        sectionByName = Dictionary(sections.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        members = Set(sections.lazy.flatMap(\.objects).map { ObjectIdentifier($0) })
        flatObjects = nil
    }

    // MARK: Results

    /// Every fetched object in order, section after section; nil before
    /// ``performFetch()``.
    public var fetchedObjects: [Result]? {
        guard let state else { return nil }
        if state.count == 1 { return state[0].objects }
        if let flatObjects { return flatObjects }
        let all = state.flatMap(\.objects)
        flatObjects = all
        return all
    }

    /// The sections, in order; nil before ``performFetch()``. Without a section
    /// key path there is one section (none when nothing matches).
    public var sections: [SectionInfo]? {
        state?.map { SectionInfo(name: $0.name, indexTitle: $0.indexTitle, objects: $0.objects) }
    }

    /// The object at `indexPath` (`[section, row]`).
    ///
    /// ```swift
    /// let mood = try controller.object(at: IndexPath(row: 0, section: 2))
    /// ```
    ///
    /// - Parameter indexPath: A section index and a row index in that section.
    /// - Returns: The object at that position.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when there is no such object (Core Data raises an exception).
    public func object(at indexPath: IndexPath) throws -> Result {
        guard indexPath.count == 2, let state, state.indices.contains(indexPath[0]),
              state[indexPath[0]].objects.indices.contains(indexPath[1]) else {
            throw CoreDataError(.coreData, "No object at index path \(Array(indexPath)) in the fetched results (\(state?.map(\.objects.count) ?? []) objects per section)")
        }
        return state[indexPath[0]].objects[indexPath[1]]
    }

    /// Where `object` is in the results (`[section, row]`), or nil when it is not
    /// one of them.
    ///
    /// - Parameter object: An object of the controller's context.
    /// - Returns: The object's section index and row, or nil.
    public func indexPath(forObject object: Result) -> IndexPath? {
        guard members.contains(ObjectIdentifier(object)) else { return nil }
        return locate(object, keys: sortKeys(of: object), sectionName: sectionName(of: object))
            .map { IndexPath(indexes: [$0.section, $0.row]) }
    }

    /// The results by object ID (see ``FetchedResultsSnapshot``); nil before
    /// ``performFetch()``.
    public var snapshot: FetchedResultsSnapshot? {
        guard let state else { return nil }
        return FetchedResultsSnapshot(sectionIdentifiers: state.map(\.name),
                                      itemIdentifiersBySection: state.map { $0.objects.map(\.objectID) })
    }

    /// The results as an asynchronous sequence of snapshots: the current one
    /// (once fetched), then one after each change.
    ///
    /// ```swift
    /// for await snapshot in controller.snapshots {
    ///     print(snapshot.numberOfItems)
    /// }
    /// ```
    public var snapshots: AsyncStream<FetchedResultsSnapshot> {
        let (stream, continuation) = AsyncStream<FetchedResultsSnapshot>.makeStream(bufferingPolicy: .unbounded)
        if let snapshot { continuation.yield(snapshot) }
        snapshotObservers[UUID()] = continuation
        return stream
    }

    // MARK: Section index

    /// The index title of a section: by default the section name's first letter,
    /// capitalized (nil for an empty name). A delegate can choose others.
    ///
    /// - Parameter sectionName: The section's name.
    /// - Returns: The section's index title, or nil for none.
    public func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        sectionName.first.map { String($0).uppercased() }
    }

    /// The titles of the section index (a table view's index down its side): the
    /// sections' index titles, each once, in order.
    public var sectionIndexTitles: [String] {
        var seen = Set<String>()
        return (state ?? []).compactMap(\.indexTitle).filter { seen.insert($0).inserted }
    }

    /// The section a tap on the section index goes to: the first section whose
    /// index title is `title`; when there is none, the section at `sectionIndex`
    /// (clamped to the sections there are).
    ///
    /// - Parameters:
    ///   - title: The index title tapped.
    ///   - sectionIndex: The title's position in ``sectionIndexTitles``.
    /// - Returns: The index of the section to show.
    public func section(forSectionIndexTitle title: String, at sectionIndex: Int) -> Int {
        let sections = state ?? []
        if let index = sections.firstIndex(where: { $0.indexTitle == title }) { return index }
        return max(0, min(sectionIndex, sections.count - 1))
    }

    func indexTitle(forSectionName name: String) -> String? {
        if let delegate { return delegate.controller(self, sectionIndexTitleForSectionName: name) }
        return sectionIndexTitle(forSectionName: name)
    }

    // MARK: Keys

    /// The name of the section of an object (or of an object's earlier values).
    func sectionName(of object: any KeyValueCoding) -> String {
        guard let keyPath = sectionNameKeyPath else { return "" }
        let value = (try? EvaluatedValue.object(object).value(forKeyPath: keyPath)) ?? .null
        return Self.sectionName(for: value)
    }

    /// A value as a section name, as Foundation describes it (`""` for nil).
    static func sectionName(for value: EvaluatedValue) -> String {
        switch value {
        case .null: return ""
        case .value(let attribute):
            switch attribute {
            case .null: return ""
            case .string(let string): return string
            case .int(let int): return String(int)
            case .bool(let bool): return bool ? "1" : "0"
            case .double(let double): return NSNumber(value: double).description
            case .decimal(let decimal): return decimal.description
            case .date(let date): return date.description
            case .uuid(let uuid): return uuid.uuidString
            case .uri(let url): return url.absoluteString
            default: return "\(attribute)"
            }
        case .object(let object):
            return (object as? ManagedObject)?.objectID.uriRepresentation().absoluteString ?? "\(object)"
        case .collection, .dictionary:
            return "\(value)"
        }
    }

    /// The values an object is sorted by.
    func sortKeys(of object: any KeyValueCoding) -> [EvaluatedValue] {
        let value = EvaluatedValue.object(object)
        return fetchRequest.sortDescriptors.map { $0.value(of: value) }
    }

    /// How sort key values compare with an object's.
    func compare(_ keys: [EvaluatedValue], with object: Result) -> ComparisonResult {
        let value = EvaluatedValue.object(object)
        for (index, descriptor) in fetchRequest.sortDescriptors.enumerated() {
            let result = descriptor.compareValues(keys[index], descriptor.value(of: value))
            if result != .orderedSame { return result }
        }
        return .orderedSame
    }

    /// The first index whose object is not before `keys`.
    func lowerBound(_ keys: [EvaluatedValue], in objects: [Result]) -> Int {
        var low = 0, high = objects.count
        while low < high {
            let middle = (low + high) / 2
            if compare(keys, with: objects[middle]) == .orderedDescending { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first index whose object is after `keys` (where an object with these
    /// keys goes, after its equals).
    func upperBound(_ keys: [EvaluatedValue], in objects: [Result]) -> Int {
        var low = 0, high = objects.count
        while low < high {
            let middle = (low + high) / 2
            if compare(keys, with: objects[middle]) == .orderedAscending { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Where `object` is: found by binary search with the keys it is sorted by,
    /// or, if they are not the ones it was placed with, by scanning.
    func locate(_ object: Result, keys: [EvaluatedValue], sectionName: String) -> (section: Int, row: Int)? {
        guard let state else { return nil }
        if let section = sectionByName[sectionName], let sectionIndex = state.firstIndex(where: { $0 === section }) {
            let objects = section.objects
            var row = lowerBound(keys, in: objects)
            // The object itself compares with its current keys: if they sort
            // before the ones it was placed with, the search ends just after it.
            if row > 0, objects[row - 1] === object { return (sectionIndex, row - 1) }
            while row < objects.count {
                if objects[row] === object { return (sectionIndex, row) }
                if compare(keys, with: objects[row]) != .orderedSame { break }
                row += 1
            }
        }
        for (sectionIndex, section) in state.enumerated() {
            if let row = section.objects.firstIndex(where: { $0 === object }) { return (sectionIndex, row) }
        }
        return nil
    }

    /// Whether an object belongs in the results now.
    func matches(_ object: ManagedObject) -> Bool {
        guard object is Result, !object.isDeleted, object.managedObjectContext === managedObjectContext,
              let entity else { return false }
        guard fetchRequest.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity else { return false }
        guard let predicate = fetchRequest.predicate else { return true }
        return (try? predicate.evaluate(with: object)) ?? false
    }

    /// Whether an object is of the fetched entity (matching or not).
    func isOfFetchedEntity(_ object: ManagedObject) -> Bool {
        guard object is Result, let entity else { return false }
        return fetchRequest.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
    }
}

/// An object seen with the values it had when the current event began (the keys
/// it was placed with): its own attributes and to-one relationships from those
/// values, the rest as it is now.
struct EarlierValues: KeyValueCoding {
    let object: ManagedObject
    let values: RowValues

    func value(forKey key: String) -> Any? {
        guard let index = object.entity.propertyIndex(named: key), index < values.count else {
            return object.value(forKey: key)
        }
        switch values[index] {
        case .attribute(let value): return value.nativeValue
        case .toOne(let id): return id.flatMap { object.managedObjectContext?.object(with: $0) }
        case .toMany: return object.value(forKey: key)
        }
    }

    var predicateIdentity: AttributeValue? { object.predicateIdentity }
}
