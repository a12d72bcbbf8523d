import Foundation
@testable import OpenCoreData
import Testing

/// Property lookup by name compares names' bits before comparing them as strings:
/// equal names with different representations must still be found.
@Suite("Model: property lookup by name")
struct PropertyLookupTests {
    @Test("Names are found whatever their representation; unknown names are not")
    func lookup() throws {
        let long = "aPropertyNameLongerThanFifteenBytes"
        let model = try ManagedObjectModel {
            Entity("Thing", className: "ManagedObject") {
                Attribute("name", .string)
                Attribute(long, .integer64)
                Attribute("naïve", .string)
            }
        }
        // Freezing builds the cached lookup tables.
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let entity = try #require(model.entitiesByName["Thing"])
        #expect(entity.isFrozen)
        let built = ["a", "Property", "Name", "Longer", "Than", "Fifteen", "Bytes"].joined()
        #expect(entity.propertyIndex(named: "name") == 0)
        #expect(entity.propertyIndex(named: String("eman".reversed())) == 0)
        #expect(entity.propertyIndex(named: long) == 1)
        #expect(entity.propertyIndex(named: built) == 1)
        // The same characters in another normalization are the same Swift string.
        #expect(entity.propertyIndex(named: "nai\u{0308}ve") == 2)
        #expect(entity.propertyIndex(named: "nam") == nil)
        #expect(entity.propertyIndex(named: built + "!") == nil)

        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        context.performAndWait {
            let thing = ManagedObject(entity: entity, insertInto: context)
            thing.setValue(7, forKey: built)
            #expect(thing.attributeValue(forKey: long) == .int(7))
        }
    }
}
