import Foundation
@testable import OpenCoreData
import Testing

/// Back references (object → context, property → entity, entity → model and
/// superentity, relationship → destination and inverse) are `weak`: they turn nil
/// when their target goes, and keep no model, entity or context alive.
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

    @Test("A context goes while its objects live on: a fault outliving its context stays a fault")
    func contextFreedBeforeObjects() throws {
        let model = try personModel()
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        _ = try coordinator.addPersistentStore(type: .inMemory)
        let entity = try #require(model.entitiesByName["Person"])
        weak var weakContext: ManagedObjectContext?
        var context: ManagedObjectContext? = ManagedObjectContext(concurrencyType: .privateQueue)
        context?.persistentStoreCoordinator = coordinator
        weakContext = context
        var kept: ManagedObject? = try context.map { context in
            try context.performAndWait {
                let person = ManagedObject(entity: entity, insertInto: context)
                person.setValue("Ada", forKey: "name")
                try context.save()
                // Registered, unregistered and registered again.
                context.reset()
                let fault = context.object(with: person.objectID)
                #expect(fault.isFault && fault.managedObjectContext === context)
                return fault
            }
        }
        context = nil
        // Objects do not keep their context alive.
        #expect(weakContext == nil)
        #expect(kept?.managedObjectContext == nil)
        // Reading the fault without a context fires nothing and does not crash.
        #expect(kept?.value(forKey: "name") == nil)
        #expect(kept?.isFault == true)
        kept = nil
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

    @Test("An object ID outliving its model, store and context still names its entity, and frees it when it goes")
    func objectIDOutlivesModel() throws {
        // IDs hold their entity: the entity lives as long as an ID names it, and
        // not longer (a server that opens many stores gets their models back).
        var ids: [ManagedObjectID] = []
        weak var usedEntity: EntityDescription?
        weak var unusedEntity: EntityDescription?
        weak var weakModel: ManagedObjectModel?
        do {
            let model = try ManagedObjectModel {
                Entity("Kept", className: "ManagedObject") { Attribute("name", .string) }
                Entity("Unused", className: "ManagedObject") { Attribute("name", .string) }
            }
            weakModel = model
            let entity = try #require(model.entitiesByName["Kept"])
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
            ids.append(ManagedObjectID(entity: entity, storeIdentifier: "STORE", primaryKey: 42))
        }
        #expect(weakModel == nil)
        #expect(unusedEntity == nil)
        #expect(usedEntity != nil)
        #expect(ids.map(\.entity.name) == ["Kept", "Kept"])
        #expect(ids[1].uriRepresentation().absoluteString == "x-coredata://STORE/Kept/p42")
        #expect(ids[1] == ManagedObjectID(entity: ids[1].entity, storeIdentifier: "STORE", primaryKey: 42))
        #expect(Set(ids).count == 2)
        ids = []
        #expect(usedEntity == nil)
    }

    @Test("A frozen model's relationships resolve while the model lives; every entity goes with it")
    func frozenRelationshipsGoWithModel() throws {
        weak var weakModel: ManagedObjectModel?
        weak var owner: EntityDescription?
        weak var item: EntityDescription?
        weak var items: RelationshipDescription?
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
            }
            weakModel = model
            owner = model.entitiesByName["Owner"]
            item = model.entitiesByName["Item"]
            let itemsRelationship = try #require(owner?.relationshipsByName["items"])
            let ownerRelationship = try #require(item?.relationshipsByName["owner"])
            items = itemsRelationship
            try model.freeze()
            #expect(itemsRelationship.destinationEntity === item)
            #expect(itemsRelationship.inverseRelationship === ownerRelationship)
            #expect(ownerRelationship.inverseRelationship === itemsRelationship)
            #expect(ownerRelationship.entity === item)
        }
        // No reference cycle keeps a model's parts: all of them are freed.
        #expect(weakModel == nil)
        #expect(owner == nil)
        #expect(item == nil)
        #expect(items == nil)
    }

    @Test("A relationship kept after its model went sees no destination")
    func relationshipOutlivesModel() throws {
        let items: RelationshipDescription
        do {
            let model = try ManagedObjectModel {
                Entity("Owner", className: "ManagedObject") {
                    Relationship("items", to: "Item", inverse: "owner", toMany: true)
                }
                Entity("Item", className: "ManagedObject") {
                    Relationship("owner", to: "Owner", inverse: "items")
                }
            }
            items = try #require(model.entitiesByName["Owner"]?.relationshipsByName["items"])
            try model.freeze()
            #expect(items.destinationEntity?.name == "Item")
        }
        #expect(items.entity == nil)
        #expect(items.destinationEntity == nil)
        #expect(items.inverseRelationship == nil)
        #expect(items.name == "items")
    }
}
