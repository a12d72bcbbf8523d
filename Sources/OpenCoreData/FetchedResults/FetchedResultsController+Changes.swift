import Foundation
import OpenCoreDataPredicates

/// One object's change, before it is reported: where it was (in the sections
/// before the change, by section ID) and where it is (after).
struct ResultsChange<Result> {
    var object: Result
    var oldSection: Int?
    var oldRow: Int?
    var newSection: Int?
    var newRow: Int?
}

/// A place between the objects that did not move: a section and how many of
/// them come before.
struct ResultsGap: Hashable {
    var section: Int
    var unmovedBefore: Int
}

extension FetchedResultsController: ContextChangeObserver {
    func context(_ context: ManagedObjectContext, didChange change: ObservedContextChange) {
        guard state != nil else { return }
        switch change.kind {
        case .reloaded:
            reload(changed: nil)
        case .didSave:
            // The objects are the same; new ones have permanent IDs now.
            publishSnapshot(onlyIfIDsChanged: true)
            writeCache()
        case .objectsDidChange:
            if fetchRequest.fetchLimit > 0 || fetchRequest.fetchOffset > 0 {
                // Objects beyond the limit may move in: only a fetch knows them.
                let changed = Set((change.inserted + change.updated + change.deleted).map { ObjectIdentifier($0) })
                reload(changed: changed)
            } else {
                follow(change)
            }
        }
    }

    // MARK: Following one event

    /// Updates the sections for the objects of one event, in time proportional to
    /// the number of objects changed (times the logarithm of the results' size).
    func follow(_ change: ObservedContextChange) {
        guard let oldState = state else { return }
        var candidates: [Result] = []
        var seen = Set<ObjectIdentifier>()
        for object in change.deleted + change.inserted + change.updated {
            guard let result = object as? Result, isOfFetchedEntity(result) || members.contains(ObjectIdentifier(result)),
                  seen.insert(ObjectIdentifier(result)).inserted else { continue }
            candidates.append(result)
        }
        guard !candidates.isEmpty else { return }

        let oldIndexByID = Dictionary(uniqueKeysWithValues: oldState.enumerated().map { ($1.id, $0) })
        let oldSectionInfo = oldState.map { SectionInfo(name: $0.name, indexTitle: $0.indexTitle, objects: []) }
        var deletes: [ResultsChange<Result>] = []
        var inserts: [ResultsChange<Result>] = []
        var moves: [ResultsChange<Result>] = []
        var inPlace: [ResultsChange<Result>] = []
        var removals: [Int: [Int]] = [:]   // old section index -> rows to remove

        // 1. Where each changed object was, and what becomes of it.
        for object in candidates {
            let id = ObjectIdentifier(object)
            let isMember = matches(object)
            guard members.contains(id) else {
                if isMember { inserts.append(ResultsChange(object: object)) }
                continue
            }
            let newKeys = sortKeys(of: object)
            let newName = sectionName(of: object)
            let earlier = change.valuesBefore[id].map { EarlierValues(object: object, values: $0) }
            let oldKeys = earlier.map { sortKeys(of: $0) }
            let oldName = earlier.map { sectionName(of: $0) }
            guard let old = locate(object, keys: oldKeys ?? newKeys, sectionName: oldName ?? newName) else {
                members.remove(id)
                if isMember { inserts.append(ResultsChange(object: object)) }
                continue
            }
            let located = ResultsChange(object: object, oldSection: oldState[old.section].id, oldRow: old.row)
            if isMember, let oldKeys, oldName == newName, sameKeys(oldKeys, newKeys) {
                inPlace.append(located)
                continue
            }
            removals[old.section, default: []].append(old.row)
            if isMember { moves.append(located) } else { deletes.append(located) }
        }
        guard !deletes.isEmpty || !inserts.isEmpty || !moves.isEmpty || !inPlace.isEmpty else { return }

        // 2. Take out the deleted and moving objects.
        for (sectionIndex, rows) in removals {
            let section = oldState[sectionIndex]
            if rows.count <= 8 {
                for row in rows.sorted(by: >) { section.objects.remove(at: row) }
            } else {
                let doomed = Set(rows)
                section.objects = section.objects.enumerated().filter { !doomed.contains($0.offset) }.map(\.element)
            }
        }
        for change in deletes + moves { members.remove(ObjectIdentifier(change.object)) }

        // 3. Put the inserted and moving objects where their keys say. New
        // sections go before the first section whose objects sort after theirs.
        var sections = oldState
        var arrivals: [String: [Result]] = [:]
        var names: [String] = []
        for change in inserts + moves {
            let name = sectionName(of: change.object)
            if arrivals[name] == nil { names.append(name) }
            arrivals[name, default: []].append(change.object)
            members.insert(ObjectIdentifier(change.object))
        }
        for name in names where sectionByName[name] == nil {
            guard let first = arrivals[name]?.first else { continue }
            let keys = sortKeys(of: first)
            let position = sections.firstIndex { other in
                guard let representative = other.objects.first ?? arrivals[other.name]?.first else { return false }
                return compare(keys, with: representative) == .orderedAscending
            } ?? sections.count
            let section = Section(id: newSectionID(), name: name, indexTitle: indexTitle(forSectionName: name), objects: [])
            sections.insert(section, at: position)
            sectionByName[name] = section
        }
        for name in names {
            guard let section = sectionByName[name], let objects = arrivals[name] else { continue }
            insert(objects, into: section)
        }

        // 4. Sections left empty go.
        sections.removeAll { $0.objects.isEmpty }
        let newIndexByID = Dictionary(uniqueKeysWithValues: sections.enumerated().map { ($1.id, $0) })
        for (name, section) in sectionByName where newIndexByID[section.id] == nil { sectionByName[name] = nil }
        state = sections
        flatObjects = nil

        // 5. Where the inserted, moved and updated objects are now.
        func place(_ change: inout ResultsChange<Result>) {
            guard let new = locate(change.object, keys: sortKeys(of: change.object), sectionName: sectionName(of: change.object)) else { return }
            change.newSection = sections[new.section].id
            change.newRow = new.row
        }
        for index in inserts.indices { place(&inserts[index]) }
        for index in moves.indices { place(&moves[index]) }
        for index in inPlace.indices { place(&inPlace[index]) }

        report(deletes: deletes, inserts: inserts, moved: moves, updates: inPlace,
               oldIndexByID: oldIndexByID, oldSectionInfo: oldSectionInfo, newIndexByID: newIndexByID)
    }

    func sameKeys(_ a: [EvaluatedValue], _ b: [EvaluatedValue]) -> Bool {
        for (index, descriptor) in fetchRequest.sortDescriptors.enumerated() where descriptor.compareValues(a[index], b[index]) != .orderedSame {
            return false
        }
        return true
    }

    /// Inserts objects into a sorted section: one binary search each, or, for
    /// many, one sort of the newcomers and a merge.
    func insert(_ objects: [Result], into section: Section) {
        if objects.count <= 8 {
            for object in objects {
                section.objects.insert(object, at: upperBound(sortKeys(of: object), in: section.objects))
            }
            return
        }
        let newcomers = objects.map { (object: $0, keys: sortKeys(of: $0)) }
            .sorted { a, b in compare(a.keys, with: b.object) == .orderedAscending }
        var merged: [Result] = []
        merged.reserveCapacity(section.objects.count + newcomers.count)
        var next = 0
        for object in section.objects {
            while next < newcomers.count, compare(newcomers[next].keys, with: object) == .orderedAscending {
                merged.append(newcomers[next].object)
                next += 1
            }
            merged.append(object)
        }
        while next < newcomers.count {
            merged.append(newcomers[next].object)
            next += 1
        }
        section.objects = merged
    }

    // MARK: Refetching

    /// Fetches again and reports the difference, by object ID. Objects in
    /// `changed` (nil: every object) may have changed; the others kept their values.
    func reload(changed: Set<ObjectIdentifier>?) {
        guard let oldState = state else { return }
        guard let objects = try? managedObjectContext.fetch(fetchRequest),
              let sections = try? makeSections(objects, reusing: oldState) else { return }
        let oldIndexByID = Dictionary(uniqueKeysWithValues: oldState.enumerated().map { ($1.id, $0) })
        let oldSectionInfo = oldState.map { SectionInfo(name: $0.name, indexTitle: $0.indexTitle, objects: []) }
        var oldPlaces: [ManagedObjectID: ResultsChange<Result>] = [:]
        for section in oldState {
            for (row, object) in section.objects.enumerated() {
                oldPlaces[object.objectID] = ResultsChange(object: object, oldSection: section.id, oldRow: row)
            }
        }
        var inserts: [ResultsChange<Result>] = []
        var common: [ResultsChange<Result>] = []
        var unchanged: [ResultsChange<Result>] = []
        for section in sections {
            for (row, object) in section.objects.enumerated() {
                guard var place = oldPlaces.removeValue(forKey: object.objectID) else {
                    inserts.append(ResultsChange(object: object, newSection: section.id, newRow: row))
                    continue
                }
                let same = place.object === object && changed.map { !$0.contains(ObjectIdentifier(object)) } ?? false
                place.object = object
                place.newSection = section.id
                place.newRow = row
                if same && place.oldSection == place.newSection { unchanged.append(place) } else { common.append(place) }
            }
        }
        // Unchanged objects must keep their order; if a fetch ordered ties
        // differently, they are treated as changed.
        let byOldOrder = unchanged.sorted { ($0.oldSection ?? 0, $0.oldRow ?? 0) < ($1.oldSection ?? 0, $1.oldRow ?? 0) }
        if zip(byOldOrder, byOldOrder.dropFirst()).contains(where: { $0.newSection == $1.newSection && ($0.newRow ?? 0) > ($1.newRow ?? 0) }) {
            common += unchanged
        }
        let deletes = Array(oldPlaces.values)
        let newIndexByID = Dictionary(uniqueKeysWithValues: sections.enumerated().map { ($1.id, $0) })
        install(sections)
        guard !deletes.isEmpty || !inserts.isEmpty || !common.isEmpty || oldIndexByID.keys.sorted() != newIndexByID.keys.sorted() else { return }
        report(deletes: deletes, inserts: inserts, moved: common, updates: [],
               oldIndexByID: oldIndexByID, oldSectionInfo: oldSectionInfo, newIndexByID: newIndexByID)
    }

    // MARK: Reporting

    /// Tells the delegate and the snapshot observers. `moved` objects were taken
    /// out and put back: those that kept their order among the objects that stayed
    /// are reported as updates, the others as moves.
    func report(deletes: [ResultsChange<Result>], inserts: [ResultsChange<Result>], moved: [ResultsChange<Result>],
                updates: [ResultsChange<Result>], oldIndexByID: [Int: Int], oldSectionInfo: [SectionInfo],
                newIndexByID: [Int: Int]) {
        let (kept, moves) = classify(moved, deletes: deletes, inserts: inserts)
        if let delegate, !(delegate is any FetchedResultsControllerSnapshotDelegate<Result>) {
            sendChanges(to: delegate, deletes: deletes, inserts: inserts, moves: moves, updates: updates + kept,
                        oldIndexByID: oldIndexByID, oldSectionInfo: oldSectionInfo, newIndexByID: newIndexByID)
        }
        publishSnapshot(onlyIfIDsChanged: false)
    }

    private func sendChanges(to delegate: any FetchedResultsControllerDelegate<Result>, deletes: [ResultsChange<Result>],
                             inserts: [ResultsChange<Result>], moves: [ResultsChange<Result>], updates: [ResultsChange<Result>],
                             oldIndexByID: [Int: Int], oldSectionInfo: [SectionInfo], newIndexByID: [Int: Int]) {
        func oldPath(_ change: ResultsChange<Result>) -> IndexPath? {
            guard let section = change.oldSection.flatMap({ oldIndexByID[$0] }), let row = change.oldRow else { return nil }
            return IndexPath(indexes: [section, row])
        }
        func newPath(_ change: ResultsChange<Result>) -> IndexPath? {
            guard let section = change.newSection.flatMap({ newIndexByID[$0] }), let row = change.newRow else { return nil }
            return IndexPath(indexes: [section, row])
        }
        let state = self.state ?? []
        delegate.controllerWillChangeContent(self)
        for (id, index) in oldIndexByID.sorted(by: { $0.value < $1.value }) where newIndexByID[id] == nil {
            delegate.controller(self, didChange: oldSectionInfo[index], atSectionIndex: index, for: .delete)
        }
        for (id, index) in newIndexByID.sorted(by: { $0.value < $1.value }) where oldIndexByID[id] == nil {
            let section = state[index]
            delegate.controller(self, didChange: SectionInfo(name: section.name, indexTitle: section.indexTitle, objects: section.objects),
                                atSectionIndex: index, for: .insert)
        }
        let orderedDeletes = deletes.compactMap { change in oldPath(change).map { (change, $0) } }.sorted { $0.1 < $1.1 }
        for (change, path) in orderedDeletes {
            delegate.controller(self, didChange: change.object, at: path, for: .delete, newIndexPath: nil)
        }
        let orderedInserts = inserts.compactMap { change in newPath(change).map { (change, $0) } }.sorted { $0.1 < $1.1 }
        for (change, path) in orderedInserts {
            delegate.controller(self, didChange: change.object, at: nil, for: .insert, newIndexPath: path)
        }
        for change in moves.sorted(by: { ($0.newSection ?? 0, $0.newRow ?? 0) < ($1.newSection ?? 0, $1.newRow ?? 0) }) {
            guard let old = oldPath(change), let new = newPath(change) else { continue }
            delegate.controller(self, didChange: change.object, at: old, for: .move, newIndexPath: new)
        }
        for change in updates.sorted(by: { ($0.oldSection.flatMap { oldIndexByID[$0] } ?? 0, $0.oldRow ?? 0) < ($1.oldSection.flatMap { oldIndexByID[$0] } ?? 0, $1.oldRow ?? 0) }) {
            guard let old = oldPath(change) else { continue }
            delegate.controller(self, didChange: change.object, at: old, for: .update, newIndexPath: newPath(change))
        }
        delegate.controllerDidChangeContent(self)
    }

    /// Splits objects that were taken out and put back into those that can be
    /// reported as updates — in the same section, with as many unmoved objects
    /// before them as before the change, and in the same order among themselves
    /// (a longest increasing subsequence) — and those that must be moves.
    func classify(_ moved: [ResultsChange<Result>], deletes: [ResultsChange<Result>], inserts: [ResultsChange<Result>])
        -> (kept: [ResultsChange<Result>], moves: [ResultsChange<Result>]) {
        guard !moved.isEmpty else { return ([], []) }
        var removedRows: [Int: [Int]] = [:]
        var insertedRows: [Int: [Int]] = [:]
        for change in deletes + moved {
            if let section = change.oldSection, let row = change.oldRow { removedRows[section, default: []].append(row) }
        }
        for change in inserts + moved {
            if let section = change.newSection, let row = change.newRow { insertedRows[section, default: []].append(row) }
        }
        for key in removedRows.keys { removedRows[key]?.sort() }
        for key in insertedRows.keys { insertedRows[key]?.sort() }
        func countBelow(_ rows: [Int]?, _ value: Int) -> Int {
            guard let rows else { return 0 }
            var low = 0, high = rows.count
            while low < high {
                let middle = (low + high) / 2
                if rows[middle] < value { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var groups: [ResultsGap: [ResultsChange<Result>]] = [:]
        var moves: [ResultsChange<Result>] = []
        for change in moved {
            guard let section = change.oldSection, section == change.newSection, let oldRow = change.oldRow, let newRow = change.newRow else {
                moves.append(change)
                continue
            }
            let before = oldRow - countBelow(removedRows[section], oldRow)
            let after = newRow - countBelow(insertedRows[section], newRow)
            if before == after {
                groups[ResultsGap(section: section, unmovedBefore: before), default: []].append(change)
            } else {
                moves.append(change)
            }
        }
        var kept: [ResultsChange<Result>] = []
        for group in groups.values {
            let ordered = group.sorted { ($0.oldRow ?? 0) < ($1.oldRow ?? 0) }
            let keep = Self.longestIncreasing(ordered.map { $0.newRow ?? 0 })
            for (index, change) in ordered.enumerated() {
                if keep.contains(index) { kept.append(change) } else { moves.append(change) }
            }
        }
        return (kept, moves)
    }

    /// The indexes of a longest strictly increasing subsequence of `values`.
    static func longestIncreasing(_ values: [Int]) -> Set<Int> {
        var tails: [Int] = []          // index into values of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var result = Set<Int>()
        var index = tails.last ?? -1
        while index >= 0 {
            result.insert(index)
            index = previous[index]
        }
        return result
    }

    // MARK: Snapshots

    /// Sends the current snapshot to the snapshot delegate and observers; with
    /// `onlyIfIDsChanged`, only when the object IDs differ from the last one sent
    /// (a save made new objects' IDs permanent).
    func publishSnapshot(onlyIfIDsChanged: Bool) {
        let snapshotDelegate = delegate as? any FetchedResultsControllerSnapshotDelegate<Result>
        guard !snapshotObservers.isEmpty || snapshotDelegate != nil, let snapshot else {
            lastSnapshot = nil
            return
        }
        if onlyIfIDsChanged && snapshot == lastSnapshot { return }
        lastSnapshot = snapshot
        snapshotDelegate?.controller(self, didChangeContentWith: snapshot)
        for continuation in snapshotObservers.values { continuation.yield(snapshot) }
    }
}
