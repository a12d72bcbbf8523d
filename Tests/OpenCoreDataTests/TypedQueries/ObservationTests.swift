import Foundation
import Observation
import Testing
import OpenCoreData
import OpenCoreDataPredicates

/// Counts Observation's change callbacks (they are `@Sendable`).
final class ChangeCounter: Sendable {
    private let value = Lock(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

@Suite("Managed objects in Swift's Observation")
struct ObservationTests {
    func stack() throws -> (PersistentStoreCoordinator, ManagedObjectContext, TQMood) {
        let (coordinator, context) = try TypedDataSet.sqliteStack("observe")
        let mood = TQMood(context: context)
        mood.name = "Sunny"
        mood.date = Date(timeIntervalSinceReferenceDate: 0)
        mood.rating = 3
        mood.score = 1
        mood.isFavorite = false
        try context.save()
        return (coordinator, context, mood)
    }

    /// Tracks reads of `mood.rating` (and nothing else); counts the change callbacks.
    func track(_ read: () -> Void) -> ChangeCounter {
        let counter = ChangeCounter()
        withObservationTracking(read) { counter.increment() }
        return counter
    }

    @Test func aSetterNotifiesTheObserversOfThatPropertyOnly() throws {
        let (_, context, mood) = try stack()
        let other = TQMood(context: context)
        other.name = "Other"
        other.date = Date()
        other.score = 0
        other.isFavorite = false
        let rating = track { _ = mood.rating }
        let name = track { _ = mood.name }
        let otherRating = track { _ = other.rating }
        mood.rating = 4
        #expect(rating.count == 1)
        #expect(name.count == 0)
        #expect(otherRating.count == 0)
        // Observation's tracking is one-shot: a second change needs a new tracking.
        mood.rating = 5
        #expect(rating.count == 1)
        let again = track { _ = mood.rating }
        mood.name = "Bright"
        #expect(again.count == 0)
        #expect(name.count == 1)
    }

    @Test func relationshipsAreObservedToo() throws {
        let (_, context, mood) = try stack()
        let tracking = track { _ = mood.country }
        let france = TQCountry(context: context)
        france.name = "France"
        mood.country = france
        #expect(tracking.count == 1)
        // The inverse changed on the country.
        let moods = track { _ = france.moods }
        mood.country = nil
        #expect(moods.count == 1)
    }

    @Test func undoRedoAndRollbackNotify() throws {
        let (_, context, mood) = try stack()
        context.undoManager = CoreUndoManager()
        mood.rating = 1
        context.processPendingChanges()
        let beforeUndo = track { _ = mood.rating }
        context.undo()
        #expect(mood.rating == 3)
        #expect(beforeUndo.count == 1)
        let beforeRedo = track { _ = mood.rating }
        context.redo()
        #expect(mood.rating == 1)
        #expect(beforeRedo.count == 1)
        let beforeRollback = track { _ = mood.rating }
        let unrelated = track { _ = mood.note }
        context.rollback()
        #expect(mood.rating == 3)
        #expect(beforeRollback.count == 1)
        #expect(unrelated.count == 0)
    }

    @Test func aMergeAndARefreshNotify() throws {
        let (coordinator, context, mood) = try stack()
        // A pending change keeps the object's values through the merge (an
        // unchanged object turns into a fault, which changes every property).
        mood.note = "pending"
        let rating = track { _ = mood.rating }
        let name = track { _ = mood.name }
        // Another context changes the rating and saves; this one merges.
        let writer = ManagedObjectContext(concurrencyType: .mainQueue)
        writer.persistentStoreCoordinator = coordinator
        let copy = try #require(try writer.existingObject(with: mood.objectID) as? TQMood)
        copy.rating = 5
        try writer.save()
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [RemoteChangeKey.updated: [mood.objectID]], into: [context])
        #expect(mood.rating == 5)
        #expect(mood.note == "pending")
        #expect(rating.count == 1)
        #expect(name.count == 0)
        // Turning into a fault: every property.
        let faulted = track { _ = mood.name }
        context.refresh(mood, mergeChanges: false)
        #expect(faulted.count == 1)
        #expect(mood.name == "Sunny")
    }

    @Test func aRefetchThatRefreshesNotifies() throws {
        let (coordinator, context, mood) = try stack()
        let writer = ManagedObjectContext(concurrencyType: .mainQueue)
        writer.persistentStoreCoordinator = coordinator
        let copy = try #require(try writer.existingObject(with: mood.objectID) as? TQMood)
        copy.rating = 1
        try writer.save()
        let rating = track { _ = mood.rating }
        let name = track { _ = mood.name }
        let request = try FetchRequest<TQMood>(predicate: #Predicate { $0.name == "Sunny" })
        request.shouldRefreshRefetchedObjects = true
        _ = try context.fetch(request)
        #expect(mood.rating == 1)
        #expect(rating.count == 1)
        #expect(name.count == 0)
    }

    @Test func changedKeysStream() async throws {
        let (_, context, mood) = try stack()
        let changes = mood.changedKeys()
        mood.rating = 4
        mood.name = "Bright"
        context.rollback()
        var received: [Set<String>] = []
        for await keys in changes {
            received.append(keys)
            if received.count == 3 { break }
        }
        #expect(received == [["rating"], ["name"], ["name", "rating"]])
    }
}
