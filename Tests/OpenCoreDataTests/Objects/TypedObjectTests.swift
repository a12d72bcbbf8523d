import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

@Suite("Typed subclasses (@Managed)")
struct TypedObjectTests {
    @Test("Each scalar type reads back what was set")
    func scalars() throws {
        let stack = try TypedStack()
        let sample = TypedSample(context: stack.context)
        let uuid = UUID()
        let url = URL(fileURLWithPath: "/var/data")
        let date = Date(timeIntervalSinceReferenceDate: 123_456.5)
        let decimal = Decimal(sign: .minus, exponent: -3, significand: 12_345)
        sample.int = Int.max
        sample.int16 = Int16.min
        sample.int32 = 70_000
        sample.int64 = Int64.min
        sample.double = 2.5e-300
        sample.float = 0.1
        sample.bool = true
        sample.string = "Zoë 🙂"
        sample.date = date
        sample.data = Data([0, 1, 2, 255])
        sample.uuid = uuid
        sample.url = url
        sample.decimal = decimal

        #expect(sample.int == Int.max)
        #expect(sample.int16 == Int16.min)
        #expect(sample.int32 == 70_000)
        #expect(sample.int64 == Int64.min)
        #expect(sample.double == 2.5e-300)
        #expect(sample.float == 0.1)
        #expect(sample.bool)
        #expect(sample.string == "Zoë 🙂")
        #expect(sample.date == date)
        #expect(sample.data == Data([0, 1, 2, 255]))
        #expect(sample.uuid == uuid)
        #expect(sample.url == url)
        #expect(sample.decimal == decimal)
        // Stored in the attribute's own representation, visible to key-value coding.
        #expect(sample.attributeValue(forKey: "int16") == .int(-32768))
        #expect(sample.value(forKey: "string") as? String == "Zoë 🙂")
        #expect(sample.attributeValue(forKey: "date") == .date(date))
    }

    @Test("Non-optional properties without a value read neutral values, never trap")
    func neutralValues() throws {
        let stack = try TypedStack()
        let sample = TypedSample(context: stack.context)
        #expect(sample.int == 0)
        #expect(sample.int16 == 0)
        #expect(sample.double == 0)
        #expect(sample.float == 0)
        #expect(sample.bool == false)
        #expect(sample.string == "")
        #expect(sample.date == Date(timeIntervalSinceReferenceDate: 0))
        #expect(sample.data.isEmpty)
        #expect(sample.uuid.uuidString == "00000000-0000-0000-0000-000000000000")
        #expect(sample.url == URL(fileURLWithPath: "/"))
        #expect(sample.decimal == 0)
        #expect(sample.names == [])
        #expect(sample.weather == .sunny)        // first case of a CaseIterable enum
        #expect(sample.forecast == .rainy)       // @Managed(default:)
        #expect(sample.rating == 3)              // @Managed(default:)
        // The default is the model's default value too: new objects start with it.
        #expect(sample.attributeValue(forKey: "rating") == .int(3))
        #expect(sample.attributeValue(forKey: "forecast") == .string("rainy"))

        // A value of the wrong type reads as the neutral value as well.
        sample.setValue("not a number", forKey: "int")
        #expect(sample.int == 0)

        // A detached object (no context) reads neutral values too.
        let detached = TypedSample(entity: stack.model.entitiesByName["TypedSample"]!, insertInto: nil)
        #expect(detached.string == "")
        #expect(detached.names == [])
    }

    @Test("Optionals are nil until set, and setting nil clears them")
    func optionals() throws {
        let stack = try TypedStack()
        let sample = TypedSample(context: stack.context)
        #expect(sample.optionalInt == nil)
        #expect(sample.optionalString == nil)
        #expect(sample.optionalDate == nil)
        #expect(sample.place == nil)
        sample.optionalInt = 0
        sample.optionalString = "x"
        sample.optionalDate = Date(timeIntervalSince1970: 0)
        sample.optionalData = Data()
        #expect(sample.optionalInt == 0)
        #expect(sample.optionalString == "x")
        #expect(sample.optionalDate == Date(timeIntervalSince1970: 0))
        #expect(sample.optionalData == Data())
        sample.optionalInt = nil
        sample.optionalString = nil
        #expect(sample.optionalInt == nil)
        #expect(sample.optionalString == nil)
        #expect(sample.attributeValue(forKey: "optionalInt") == .null)
    }

    @Test("Codable values are stored as an AttributeValue tree in a transformable attribute")
    func codable() throws {
        let stack = try TypedStack()
        let sample = TypedSample(context: stack.context)
        let id = UUID()
        let visited = Date(timeIntervalSinceReferenceDate: 42)
        let place = TypedPlace(name: "Lyon", coordinates: [45.76, 4.84], visited: visited, id: id, tags: ["food": 5])
        sample.names = ["a", "b", "c"]
        sample.place = place
        sample.weather = .windy
        #expect(sample.names == ["a", "b", "c"])
        #expect(sample.place == place)
        #expect(sample.weather == .windy)
        #expect(sample.attributeValue(forKey: "names") == ["a", "b", "c"])
        #expect(sample.attributeValue(forKey: "weather") == .string("windy"))
        #expect(sample.attributeValue(forKey: "place") == .dictionary([
            "name": "Lyon", "coordinates": [45.76, 4.84], "visited": .date(visited), "id": .uuid(id),
            "tags": ["food": 5],
        ]))
        sample.place = nil
        #expect(sample.place == nil)
        // Data that no longer decodes reads as nil for an optional.
        sample.setAttributeValue(.string("garbage"), forKey: "place")
        #expect(sample.place == nil)
    }

    @Test("key: stores under another name; transient and option flags reach the model")
    func keysAndOptions() throws {
        let stack = try TypedStack()
        let sample = TypedSample(context: stack.context)
        sample.alias = "other name"
        #expect(sample.value(forKey: "renamed") as? String == "other name")
        #expect(sample.alias == "other name")
        let entity = try #require(stack.model.entitiesByName["TypedSample"])
        #expect(entity.attributesByName["alias"] == nil)
        #expect(entity.attributesByName["renamed"]?.attributeType == .string)
        #expect(entity.attributesByName["scratch"]?.isTransient == true)
        #expect(entity.attributesByName["code"]?.isIndexed == true)
        #expect(entity.uniquenessConstraints == [["code"]])
    }

    @Test("To-one relationships are typed and keep their inverse")
    func toOne() throws {
        let stack = try TypedStack()
        let mood = TypedMood(context: stack.context)
        let france = TypedCountry(context: stack.context)
        let spain = TypedCountry(context: stack.context)
        #expect(mood.country == nil)
        mood.country = france
        #expect(mood.country === france)
        #expect(france.moods == [mood])
        mood.country = spain
        #expect(france.moods.isEmpty)
        #expect(spain.moods == [mood])
        mood.country = nil
        #expect(spain.moods.isEmpty)
        #expect(mood.country == nil)
    }

    @Test("To-many relationships are typed sets and keep their inverse")
    func toMany() throws {
        let stack = try TypedStack()
        let mood = TypedMood(context: stack.context)
        let red = TypedTag(context: stack.context)
        let blue = TypedTag(context: stack.context)
        red.name = "red"
        blue.name = "blue"
        mood.tags = [red, blue]
        #expect(mood.tags == [red, blue])
        #expect(red.moods == [mood])
        mood.tags.remove(red)
        #expect(mood.tags == [blue])
        #expect(red.moods.isEmpty)
        // Changing the other side shows through the typed property.
        let other = TypedMood(context: stack.context)
        blue.moods.insert(other)
        #expect(other.tags == [blue])
        #expect(Set(blue.moods.map(ObjectIdentifier.init)) == Set([mood, other].map(ObjectIdentifier.init)))
    }

    @Test("Ordered to-many relationships are typed arrays in order")
    func ordered() throws {
        let stack = try TypedStack()
        let mood = TypedMood(context: stack.context)
        let tags = (0..<4).map { index -> TypedTag in
            let tag = TypedTag(context: stack.context)
            tag.name = "t\(index)"
            return tag
        }
        mood.ordered = [tags[2], tags[0], tags[3]]
        #expect(mood.ordered.map(\.name) == ["t2", "t0", "t3"])
        #expect(tags[0].orderedIn === mood)
        #expect(tags[1].orderedIn == nil)
        mood.ordered.insert(tags[1], at: 1)
        #expect(mood.ordered.map(\.name) == ["t2", "t1", "t0", "t3"])
        #expect(tags[1].orderedIn === mood)
        mood.ordered.removeFirst()
        #expect(tags[2].orderedIn == nil)
        #expect(mood.ordered.map(\.name) == ["t1", "t0", "t3"])
    }

    @Test("Inverses not given are inferred, across subentities")
    func inferredInverses() throws {
        let stack = try TypedStack()
        let country = try #require(stack.model.entitiesByName["TypedCountry"])
        let continent = try #require(stack.model.entitiesByName["TypedContinent"])
        #expect(country.relationshipsByName["moods"]?.inverseRelationshipName == "country")
        #expect(country.relationshipsByName["continent"]?.inverseRelationshipName == "countries")
        #expect(continent.relationshipsByName["countries"]?.inverseRelationshipName == "continent")

        let europe = TypedContinent(context: stack.context)
        let france = TypedCountry(context: stack.context)
        france.continent = europe
        #expect(europe.countries == [france])
        europe.code = 150
        #expect(europe.code == 150)   // inherited attribute through the superclass's property
    }

    @Test("Saved objects come back typed in another context")
    func saveAndFetch() throws {
        let stack = try TypedStack()
        let sample = TypedSample(context: stack.context)
        sample.fillRequired()
        sample.place = TypedPlace(name: "Oslo", coordinates: [], visited: nil, id: UUID(), tags: [:])
        sample.scratch = "transient"
        let mood = TypedMood(context: stack.context)
        mood.date = Date(timeIntervalSinceReferenceDate: 1000)
        mood.colors = [TypedColor(red: 1, green: 0.5, blue: 0)]
        let norway = TypedCountry(context: stack.context)
        norway.name = "Norway"
        mood.country = norway
        let tag = TypedTag(context: stack.context)
        tag.name = "calm"
        mood.tags = [tag]
        mood.ordered = [tag]
        try stack.context.save()

        let other = stack.newContext()
        let moods = try other.fetch(TypedMood.fetchRequest())
        #expect(moods.count == 1)
        let fetched = try #require(moods.first)
        #expect(type(of: fetched) == TypedMood.self)
        #expect(fetched.managedObjectContext === other)
        #expect(fetched.date == Date(timeIntervalSinceReferenceDate: 1000))
        #expect(fetched.colors == [TypedColor(red: 1, green: 0.5, blue: 0)])
        #expect(fetched.country?.name == "Norway")
        #expect(fetched.tags.map(\.name) == ["calm"])
        #expect(fetched.ordered.first?.orderedIn === fetched)

        let samples = try other.fetch(TypedSample.fetchRequest())
        let fetchedSample = try #require(samples.first)
        #expect(fetchedSample.int == 1)
        #expect(fetchedSample.float == 6.25)
        #expect(fetchedSample.decimal == Decimal(sign: .plus, exponent: -2, significand: 1111))
        #expect(fetchedSample.weather == .windy)
        #expect(fetchedSample.place?.name == "Oslo")
        #expect(fetchedSample.scratch == nil)   // transient: not saved

        let countries = try other.fetch(TypedRegion.fetchRequest())
        #expect(countries.count == 1)
        #expect(countries.first is TypedCountry)
    }

    @Test("A non-optional required attribute left empty fails validation at save, not at read")
    func requiredValidation() throws {
        let stack = try TypedStack()
        let mood = TypedMood(context: stack.context)
        #expect(mood.date == Date(timeIntervalSinceReferenceDate: 0))
        #expect(throws: CoreDataError.self) { try stack.context.save() }
    }

    @Test("@Managed in an extension reads and writes the same storage")
    func extensionProperty() throws {
        let stack = try TypedStack()
        let tag = TypedTag(context: stack.context)
        #expect(tag.label == nil)
        tag.label = "calm"
        #expect(tag.name == "calm")
        tag.name = "busy"
        #expect(tag.label == "busy")
    }

    @Test("fetchRequest() and entity() name the class's entity")
    func fetchRequests() throws {
        let stack = try TypedStack()
        #expect(TypedMood.fetchRequest().entityName == "TypedMood")
        #expect(TypedCountry.fetchRequest().entityName == "TypedCountry")
        _ = stack.coordinator
        #expect(TypedMood.entity()?.name == "TypedMood")
        #expect(TypedSample.managedEntitySchema.name == "TypedSample")
    }
}
