import Foundation
import Testing
import OpenCoreData
import OpenCoreDataPredicates

// The first program of Sources/OpenCoreData/OpenCoreData.docc/FetchedResultsControllerGuide.md
// (class names prefixed to keep them apart from other tests' classes).
@ManagedEntity final class GuideNote: ManagedObject {
    @Managed var title: String
    @Managed var day: String
    @Managed var position: Int64
}

final class GuideNoteList: FetchedResultsControllerDelegate {
    var log: [String] = []

    func controller(_ controller: FetchedResultsController<GuideNote>, didChange object: GuideNote,
                    at indexPath: IndexPath?, for type: FetchedResultsChangeType,
                    newIndexPath: IndexPath?) {
        switch type {
        case .insert: log.append("insert \(object.title) at \(newIndexPath!)")
        case .delete: log.append("delete row \(indexPath!)")
        case .move: log.append("move \(object.title) \(indexPath!) -> \(newIndexPath!)")
        case .update: log.append("reload \(indexPath!)")
        }
    }

    func controller(_ controller: FetchedResultsController<GuideNote>, didChange sectionInfo: FetchedResultsSectionInfo<GuideNote>,
                    atSectionIndex sectionIndex: Int, for type: FetchedResultsChangeType) {
        log.append("\(type) section \(sectionInfo.name) at \(sectionIndex)")
    }
}

@Suite("The fetched results controller guide's program runs as written")
struct FetchedResultsGuideTests {
    @Test func firstList() throws {
        let model = try ManagedObjectModel(classes: [GuideNote.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        for (title, day, position) in [("Milk", "Monday", 1), ("Bread", "Monday", 2), ("Call Ann", "Tuesday", 1)] {
            let note = GuideNote(context: context)
            note.title = title
            note.day = day
            note.position = Int64(position)
        }
        try context.save()

        let request = GuideNote.fetchRequest()
        request.sortDescriptors = [CoreSortDescriptor(key: "day"), CoreSortDescriptor(key: "position")]
        request.fetchBatchSize = 20
        let notes = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                             sectionNameKeyPath: "day", cacheName: nil)
        let list = GuideNoteList()
        notes.delegate = list
        try notes.performFetch()

        #expect(notes.sections?.map(\.name) == ["Monday", "Tuesday"])
        #expect(try notes.object(at: IndexPath(row: 1, section: 0)).title == "Bread")

        let bread = try notes.object(at: IndexPath(row: 1, section: 0))
        bread.day = "Tuesday"
        bread.position = 2
        context.delete(try notes.object(at: IndexPath(row: 0, section: 0)))
        let plan = GuideNote(context: context)
        plan.title = "Plan"
        plan.day = "Wednesday"
        plan.position = 1
        context.processPendingChanges()

        #expect(list.log == ["delete section Monday at 0", "insert section Wednesday at 1",
                             "delete row [0, 0]", "insert Plan at [1, 0]", "move Bread [0, 1] -> [0, 1]"])
    }
}
