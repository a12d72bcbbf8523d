import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

// Classes for the model errors; each is only used in one model.

@ManagedEntity
final class CodeFirstBadInverse: ManagedObject {
    @Managed(inverse: "nothing") var friend: CodeFirstBadInverse?
}

@ManagedEntity
final class CodeFirstLonely: ManagedObject {
    @Managed var mood: TypedMood?
}

enum CodeFirstOpaque: Codable {
    case one(Int)
    case two(String)
}

@ManagedEntity
final class CodeFirstNoNeutral: ManagedObject {
    @Managed var opaque: CodeFirstOpaque
}

@ManagedEntity
final class CodeFirstWithDefault: ManagedObject {
    @Managed(default: CodeFirstOpaque.one(1)) var opaque: CodeFirstOpaque
    @Managed var maybe: CodeFirstOpaque?
}

struct CodeFirstNotCodable {
    var value = 0
}

@ManagedEntity
final class CodeFirstUnsupported: ManagedObject {
    @Managed var thing: CodeFirstNotCodable?
}

final class CodeFirstPlain: ManagedObject {}

@Suite("Code-first models (@ManagedEntity)")
struct CodeFirstModelTests {
    @Test("Attribute types, optionality and transformables follow the Swift types")
    func attributes() throws {
        let model = try ManagedObjectModel(classes: [TypedSample.self])
        let entity = try #require(model.entitiesByName["TypedSample"])
        #expect(entity.managedObjectClassName == "TypedSample")
        let expected: [String: AttributeType] = [
            "int": .integer64, "int16": .integer16, "int32": .integer32, "int64": .integer64, "double": .double,
            "float": .float, "bool": .boolean, "string": .string, "date": .date, "data": .binaryData,
            "uuid": .uuid, "url": .uri, "decimal": .decimal, "optionalInt": .integer64, "names": .transformable,
            "place": .transformable, "weather": .transformable,
        ]
        for (name, type) in expected {
            #expect(entity.attributesByName[name]?.attributeType == type, "\(name)")
        }
        #expect(entity.attributesByName["int"]?.isOptional == false)
        #expect(entity.attributesByName["optionalInt"]?.isOptional == true)
        #expect(entity.attributesByName["names"]?.attributeValueClassName == "Array<String>")
        #expect(entity.attributesByName["place"]?.attributeValueClassName == "TypedPlace")
        #expect(entity.attributesByName["rating"]?.defaultValue == .int(3))
    }

    @Test("Relationships, delete rules, ordering and inheritance")
    func relationships() throws {
        let model = try ManagedObjectModel(classes: [TypedRegion.self, TypedCountry.self, TypedContinent.self,
                                                     TypedMood.self, TypedTag.self])
        let mood = try #require(model.entitiesByName["TypedMood"])
        let country = try #require(model.entitiesByName["TypedCountry"])
        let region = try #require(model.entitiesByName["TypedRegion"])

        let toOne = try #require(mood.relationshipsByName["country"])
        #expect(!toOne.isToMany)
        #expect(toOne.destinationEntityName == "TypedCountry")
        #expect(toOne.inverseRelationshipName == "moods")
        let tags = try #require(mood.relationshipsByName["tags"])
        #expect(tags.isToMany && !tags.isOrdered)
        let ordered = try #require(mood.relationshipsByName["ordered"])
        #expect(ordered.isToMany && ordered.isOrdered)
        #expect(country.relationshipsByName["moods"]?.deleteRule == .cascade)

        #expect(region.isAbstract)
        #expect(country.superentity === region)
        #expect(Set(region.subentities.map(\.name)) == ["TypedCountry", "TypedContinent"])
        #expect(country.attributesByName["code"]?.attributeType == .integer16)
    }

    @Test("An unknown inverse is a CoreDataError")
    func unknownInverse() {
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel(classes: [CodeFirstBadInverse.self])
        }
    }

    @Test("A destination or parent class missing from the list is a CoreDataError")
    func missingClasses() {
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel(classes: [CodeFirstLonely.self])
        }
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel(classes: [TypedContinent.self, TypedCountry.self])   // no TypedRegion
        }
    }

    @Test("A class without @ManagedEntity, or a property of a type @Managed can't store, is a CoreDataError")
    func unsupported() {
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel(classes: [CodeFirstPlain.self])
        }
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel(classes: [CodeFirstUnsupported.self])
        }
    }

    @Test("A non-optional Codable type with no neutral value needs a default")
    func neutralValueRequired() throws {
        #expect(throws: CoreDataError.self) {
            try ManagedObjectModel(classes: [CodeFirstNoNeutral.self])
        }
        let model = try ManagedObjectModel(classes: [CodeFirstWithDefault.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let object = CodeFirstWithDefault(context: context)
        guard case .one(1) = object.opaque else {
            Issue.record("expected the default")
            return
        }
        object.opaque = .two("x")
        object.maybe = .one(7)
        guard case .two("x") = object.opaque, case .one(7)? = object.maybe else {
            Issue.record("expected the values set")
            return
        }
        object.setAttributeValue(.null, forKey: "opaque")
        guard case .one(1) = object.opaque else {
            Issue.record("expected the default after clearing")
            return
        }
    }
}

@Suite("AttributeValueEncoder / AttributeValueDecoder")
struct AttributeValueCodingTests {
    struct Nested: Codable, Equatable {
        var int: Int
        var optional: String?
        var list: [Nested]
        var map: [String: Double]
        var date: Date
        var url: URL
        var big: UInt64
        var decimal: Decimal
        var flag: Bool
    }

    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case polygon([Int])
        case empty
    }

    @Test("Round trips of nested values keep dates, URLs, decimals and big integers")
    func roundTrip() throws {
        let value = Nested(
            int: -3, optional: nil,
            list: [Nested(int: 1, optional: "x", list: [], map: [:], date: Date(timeIntervalSinceReferenceDate: 1),
                          url: URL(fileURLWithPath: "/a"), big: 0, decimal: 1, flag: false)],
            map: ["pi": 3.14], date: Date(timeIntervalSinceReferenceDate: 99), url: URL(fileURLWithPath: "/b"),
            big: UInt64.max, decimal: Decimal(sign: .plus, exponent: -1, significand: 15), flag: true)
        let encoded = try AttributeValueEncoder().encode(value)
        guard case .dictionary(let fields) = encoded else {
            Issue.record("expected a dictionary, got \(encoded)")
            return
        }
        #expect(fields["date"] == .date(Date(timeIntervalSinceReferenceDate: 99)))
        #expect(fields["big"] == .decimal(Decimal(UInt64.max)))
        #expect(try AttributeValueDecoder().decode(Nested.self, from: encoded) == value)

        let shapes: [Shape] = [.circle(radius: 2), .polygon([1, 2, 3]), .empty]
        #expect(try AttributeValueDecoder().decode([Shape].self, from: AttributeValueEncoder().encode(shapes)) == shapes)
        #expect(try AttributeValueEncoder().encode([1, 2]) == [1, 2])
        #expect(try AttributeValueEncoder().encode("s") == "s")
        #expect(try AttributeValueEncoder().encode(["k": true]) == ["k": true])
    }

    @Test("Numbers convert between kinds when exact; mismatches throw")
    func conversions() throws {
        let decoder = AttributeValueDecoder()
        #expect(try decoder.decode(Double.self, from: .int(3)) == 3)
        #expect(try decoder.decode(Int.self, from: .double(3)) == 3)
        #expect(try decoder.decode(UUID.self, from: "00000000-0000-0000-0000-000000000001").uuidString
            == "00000000-0000-0000-0000-000000000001")
        #expect(throws: DecodingError.self) { try decoder.decode(Int.self, from: .double(3.5)) }
        #expect(throws: DecodingError.self) { try decoder.decode(Int8.self, from: .int(300)) }
        #expect(throws: DecodingError.self) { try decoder.decode(String.self, from: .int(1)) }
        #expect(throws: DecodingError.self) { try decoder.decode(Nested.self, from: [:]) }
    }
}
