import Foundation
@testable import OpenCoreData
import Testing

/// Firing a to-many fault loads the relationship: it becomes part of the object's
/// current and committed values alike, and is no change. An object whose current
/// and committed values are one set keeps them one set (`writeLoadedValue`).
@Suite("A fired to-many fault is loaded, not changed")
struct ToManyFaultFillTests {
    @Test("Unchanged owner: the relationship is committed, the owner has no changes, a later change is seen against it",
          arguments: [false, true])
    func filledRelationshipIsCommitted(changedFirst: Bool) throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent("Fill.sqlite")
        let (coordinator, _, context) = try HeldReadTests.stack(try HeldReadTests.model(), url)
        try HeldReadTests.insertItems(0..<4, owner: "a", in: context)
        try context.performAndWait {
            context.reset()
            let owner = try #require(try HeldReadTests.owner(named: "a", in: context))
            if changedFirst { owner.setValue("b", forKey: "name") }
            let items = owner.objects(forRelationship: "items")
            #expect(items.count == 4)
            let itemIDs = Set(items.map(\.objectID))
            #expect(owner.changedValues().keys.sorted() == (changedFirst ? ["name"] : []))
            #expect(owner.hasChanges == changedFirst)
            let committed = owner.committedValues(forKeys: ["name", "items"])
            #expect(committed["name"] as? String == "a")
            #expect(committed["items"] as? Set<ManagedObjectID> == itemIDs)
            // Loaded into the committed row itself (not read again from the store).
            let index = try #require(owner.entity.propertyIndex(named: "items"))
            guard case .toMany(let committedIDs?)? = owner.committed?.rowValues[index] else {
                Issue.record("the committed row does not hold the loaded relationship")
                return
            }
            #expect(Set(committedIDs) == itemIDs)

            // A change after the fill is a change of the current values only.
            owner.setValue("c", forKey: "name")
            #expect(owner.committedValues(forKeys: ["name"])["name"] as? String == "a")
            #expect(owner.changedValues()["name"] as? String == "c")
            #expect(owner.objects(forRelationship: "items").count == 4)
            context.rollback()
            #expect(owner.value(forKey: "name") as? String == "a")
            #expect(Set(owner.objects(forRelationship: "items").map(\.objectID)) == itemIDs)
            #expect(!owner.hasChanges)
        }
        withExtendedLifetime(coordinator) {}
    }
}
