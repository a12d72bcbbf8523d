import Foundation
import Testing
import OpenCoreData

// The first program of Sources/OpenCoreData/OpenCoreData.docc/ObjectsAndContexts.md
// (class names prefixed to keep them apart from other tests' classes).
@ManagedEntity final class GuideCountry: ManagedObject {
    @Managed var numericISO3166Code: Int16
    @Managed(inverse: "country", deleteRule: .cascade) var moods: Set<GuideMood>
}

@ManagedEntity final class GuideMood: ManagedObject {
    @Managed var date: Date
    @Managed var colors: [String]
    @Managed(inverse: "moods") var country: GuideCountry?
}

@Suite("The guide's first program runs as written")
struct GuideExampleTests {
    @Test func firstProgram() throws {
        let model = try ManagedObjectModel(classes: [GuideCountry.self, GuideMood.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        let germany = GuideCountry(context: context)
        germany.numericISO3166Code = 276
        let mood = GuideMood(context: context)
        mood.date = Date()
        mood.colors = ["red", "blue"]
        mood.country = germany
        #expect(germany.moods == [mood])
        try context.save()

        let other = ManagedObjectContext(concurrencyType: .mainQueue)
        other.persistentStoreCoordinator = coordinator
        let moods = try other.fetch(GuideMood.fetchRequest())
        #expect(moods.count == 1)
        #expect(moods[0].colors == ["red", "blue"])
        #expect(moods[0].country?.numericISO3166Code == 276)
        other.delete(try #require(moods[0].country))
        try other.save()
        #expect(try other.count(for: GuideMood.fetchRequest()) == 0)
    }
}
