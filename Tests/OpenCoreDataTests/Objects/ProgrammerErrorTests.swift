import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

// What Core Data raises as exceptions (an unknown key, a nil non-optional
// relationship) stops the program with a message naming the entity and the key;
// the same mistakes made with keys that come from data throw instead.

@Suite("Programmer errors stop with a message; keys from data throw")
struct ProgrammerErrorTests {
    @Test("value(forKey:) with a key the entity does not have stops the program, naming entity and key")
    func unknownKeyStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let stack = try TypedStack()
            let mood = TypedMood(context: stack.context)
            _ = mood.value(forKey: "colour")
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("TypedMood"))
        #expect(message.contains("'colour'"))
    }

    @Test("setValue(_:forKey:) with an unknown key stops the program")
    func unknownKeySetStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let stack = try TypedStack()
            TypedMood(context: stack.context).setValue(3, forKey: "ratng")
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("TypedMood") && message.contains("'ratng'"))
    }

    @Test("A nil non-optional @Managed to-one stops the program, naming entity and key")
    func nilNonOptionalToOneStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let stack = try TypedStack()
            let mood = TypedMood(context: stack.context)
            let country: TypedCountry = mood.managedValue(forKey: "country")
            _ = country
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("'country'") && message.contains("TypedMood"))
    }

    @Test("checkedValue(forKey:) and setCheckedValue(_:forKey:) throw for unknown keys, work for known ones")
    func checkedVariants() throws {
        let stack = try TypedStack()
        let tag = TypedTag(context: stack.context)
        try tag.setCheckedValue("calm", forKey: "name")
        #expect(tag.name == "calm")
        #expect(try tag.checkedValue(forKey: "name") as? String == "calm")
        #expect(try tag.checkedValue(forKey: "objectID") as? ManagedObjectID == tag.objectID)
        #expect(throws: PredicateEvaluationError.self) { try tag.checkedValue(forKey: "colour") }
        do {
            try tag.setCheckedValue(1, forKey: "colour")
            Issue.record("setCheckedValue accepted an unknown key")
        } catch let error as CoreDataError {
            #expect(error.code == .managedObjectValidation)
            #expect(error.key == "colour")
            #expect(error.entityName == "TypedTag")
            #expect(error.message.contains("colour"))
        }
        #expect(tag.changedValues().keys.sorted() == ["name"])
    }

    @Test("A predicate naming an unknown key is an evaluation error in memory and a fetch error, never a trap")
    func unknownKeyInPredicate() throws {
        let stack = try TypedStack()
        let tag = TypedTag(context: stack.context)
        tag.name = "calm"
        tag.orderedIn = TypedMood(context: stack.context)
        let predicate = try CorePredicate(format: "colour == 'red'")
        #expect(throws: PredicateEvaluationError.self) { try predicate.evaluate(with: tag) }
        // Through a key path too, and in a fetch of the in-memory store.
        #expect(throws: PredicateEvaluationError.self) { try CorePredicate(format: "orderedIn.colour == 'red'").evaluate(with: tag) }
        let request = FetchRequest<ManagedObject>(entityName: "TypedTag")
        request.predicate = predicate
        #expect(throws: (any Error).self) { try stack.context.fetch(request) }
        // Sorting by an unknown key does not trap either.
        request.predicate = nil
        request.sortDescriptors = [CoreSortDescriptor(key: "colour")]
        _ = try? stack.context.fetch(request)
    }
}
