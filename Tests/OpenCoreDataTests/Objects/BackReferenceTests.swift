import Foundation
@testable import OpenCoreData
import Testing

/// Back references (object → context, property → entity, entity → model and
/// superentity) go through `WeakAnchor` instead of `weak`: they must still behave
/// like weak references, turning nil when their target goes.
@Suite("Back references behave as weak references")
struct BackReferenceTests {
    private func personModel() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Person", className: "ManagedObject") {
                Attribute("name", .string)
            }
        }
    }

    @Test("An object outliving its context has no context, and keeps its values")
    func objectOutlivesContext() throws {
        let model = try personModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .inMemory)
        var context: ManagedObjectContext? = ManagedObjectContext(concurrencyType: .privateQueue)
        context?.persistentStoreCoordinator = coordinator
        let person = try #require(context.map { ManagedObject(entity: model.entitiesByName["Person"]!, insertInto: $0) })
        person.setValue("Ada", forKey: "name")
        #expect(person.managedObjectContext === context)
        context = nil
        #expect(person.managedObjectContext == nil)
        #expect(person.value(forKey: "name") as? String == "Ada")
        // Changing it without a context records nothing and does not crash.
        person.setValue("Grace", forKey: "name")
        #expect(person.value(forKey: "name") as? String == "Grace")
    }

    @Test("Objects hold their context's anchor by hand: it goes with the last holder, and a fault outliving its context stays a fault")
    func anchorHeldByObjects() throws {
        let model = try personModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .inMemory)
        let entity = try #require(model.entitiesByName["Person"])
        weak var anchor: WeakAnchor<ManagedObjectContext>?
        var context: ManagedObjectContext? = ManagedObjectContext(concurrencyType: .privateQueue)
        context?.persistentStoreCoordinator = coordinator
        anchor = context?.weakAnchor
        var kept: ManagedObject? = try context.map { context in
            try context.performAndWait {
                let person = ManagedObject(entity: entity, insertInto: context)
                person.setValue("Ada", forKey: "name")
                try context.save()
                // Registered, unregistered and registered again: one reference each time.
                context.reset()
                let fault = context.object(with: person.objectID)
                #expect(fault.isFault && fault.managedObjectContext === context)
                return fault
            }
        }
        context = nil
        // The object still holds the anchor; the anchor no longer has its target.
        #expect(anchor != nil)
        #expect(kept?.managedObjectContext == nil)
        // Reading the fault without a context fires nothing and does not crash.
        #expect(kept?.value(forKey: "name") == nil)
        #expect(kept?.isFault == true)
        kept = nil
        #expect(anchor == nil)
    }

    @Test("Properties and entities outliving their owners see nil owners")
    func modelPartsOutliveOwners() {
        var entity: EntityDescription? = EntityDescription(name: "Person")
        let attribute = AttributeDescription(name: "name", type: .string)
        entity?.properties = [attribute]
        #expect(attribute.entity === entity)
        var model: ManagedObjectModel? = ManagedObjectModel()
        let sub = EntityDescription(name: "Employee")
        entity?.subentities = [sub]
        model?.entities = [entity!, sub]
        #expect(sub.superentity === entity)
        #expect(sub.managedObjectModel === model)
        model = nil
        #expect(sub.managedObjectModel == nil)
        entity = nil
        #expect(attribute.entity == nil)
        #expect(sub.superentity == nil)
    }

    @Test("An object ID outliving its model, store and context still names its entity")
    func objectIDOutlivesModel() throws {
        // IDs hold their entity unretained: the entity an ID was made for is
        // pinned for the life of the process.
        var ids: [ObjectID] = []
        weak var usedEntity: EntityDescription?
        weak var unusedEntity: EntityDescription?
        weak var weakModel: ManagedObjectModel?
        do {
            let model = try ManagedObjectModel {
                Entity("Pinned", className: "ManagedObject") { Attribute("name", .string) }
                Entity("Unused", className: "ManagedObject") { Attribute("name", .string) }
            }
            weakModel = model
            let entity = try #require(model.entitiesByName["Pinned"])
            usedEntity = entity
            unusedEntity = model.entitiesByName["Unused"]
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            _ = try coordinator.addPersistentStore(type: .inMemory)
            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                let object = ManagedObject(entity: entity, insertInto: context)
                object.setValue("kept", forKey: "name")
                try context.save()
                ids.append(object.objectID)
            }
            ids.append(ObjectID(entity: entity, storeIdentifier: "STORE", primaryKey: 42))
        }
        #expect(weakModel == nil)
        #expect(unusedEntity == nil)
        #expect(usedEntity != nil)
        #expect(ids.map(\.entity.name) == ["Pinned", "Pinned"])
        #expect(ids[1].uriRepresentation().absoluteString == "x-coredata://STORE/Pinned/p42")
        #expect(ids[1] == ObjectID(entity: ids[1].entity, storeIdentifier: "STORE", primaryKey: 42))
        #expect(Set(ids).count == 2)
    }

    @Test("A frozen model's relationships keep their destination and inverse, which outlive the model")
    func frozenRelationshipsOutliveModel() throws {
        let items: RelationshipDescription
        let owner: RelationshipDescription
        weak var weakModel: ManagedObjectModel?
        weak var unrelated: EntityDescription?
        weak var itemEntity: EntityDescription?
        do {
            let model = try ManagedObjectModel {
                Entity("Owner", className: "ManagedObject") {
                    Attribute("name", .string)
                    Relationship("items", to: "Item", inverse: "owner", toMany: true)
                }
                Entity("Item", className: "ManagedObject") {
                    Attribute("name", .string)
                    Relationship("owner", to: "Owner", inverse: "items")
                }
                Entity("Loner", className: "ManagedObject") { Attribute("name", .string) }
            }
            weakModel = model
            unrelated = model.entitiesByName["Loner"]
            itemEntity = model.entitiesByName["Item"]
            items = try #require(model.entitiesByName["Owner"]?.relationshipsByName["items"])
            owner = try #require(model.entitiesByName["Item"]?.relationshipsByName["owner"])
            try model.freeze()
            #expect(items.destinationEntity === itemEntity)
            #expect(items.inverseRelationship === owner)
            #expect(owner.inverseRelationship === items)
        }
        // The model is gone; the entities relationships point to are kept, with
        // their relationships; an entity nothing points to is freed.
        #expect(weakModel == nil)
        #expect(unrelated == nil)
        #expect(itemEntity != nil)
        #expect(items.destinationEntity?.name == "Item")
        #expect(items.inverseRelationship?.name == "owner")
        #expect(owner.destinationEntity?.name == "Owner")
        #expect(owner.inverseRelationship === items)
        #expect(items.entity?.name == "Owner")
        #expect(owner.entity === itemEntity)
    }
}
