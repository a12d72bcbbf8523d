import Foundation
import OpenCoreData
import OpenCoreDataPredicates

// Typed subclasses for the @Managed tests. Their names are unique in the test
// process: the class registry is keyed by class name, and the context tests
// already have `Mood`, `Country` and `Continent`.

struct TypedColor: Codable, Hashable {
    var red: Double
    var green: Double
    var blue: Double
}

enum TypedWeather: String, Codable, CaseIterable {
    case sunny, rainy, windy
}

struct TypedPlace: Codable, Equatable {
    var name: String
    var coordinates: [Double]
    var visited: Date?
    var id: UUID
    var tags: [String: Int]
}

/// Every scalar type, optionals, Codable values, a renamed key and a transient.
@ManagedEntity("TypedSample")
final class TypedSample: ManagedObject {
    @Managed var int: Int
    @Managed var int16: Int16
    @Managed var int32: Int32
    @Managed var int64: Int64
    @Managed var double: Double
    @Managed var float: Float
    @Managed var bool: Bool
    @Managed var string: String
    @Managed var date: Date
    @Managed var data: Data
    @Managed var uuid: UUID
    @Managed var url: URL
    @Managed var decimal: Decimal
    @Managed var optionalInt: Int?
    @Managed var optionalString: String?
    @Managed var optionalDate: Date?
    @Managed var optionalData: Data?
    @Managed var names: [String]
    @Managed var place: TypedPlace?
    @Managed var weather: TypedWeather
    @Managed(default: TypedWeather.rainy) var forecast: TypedWeather
    @Managed(default: Int16(3)) var rating: Int16
    @Managed(key: "renamed") var alias: String?
    @Managed(.transient) var scratch: String?
    @Managed(.indexed, .unique) var code: String?

    /// Sets every non-optional attribute so that the object can be saved.
    func fillRequired() {
        int = 1
        int16 = 2
        int32 = 3
        int64 = 4
        double = 5.5
        float = 6.25
        bool = true
        string = "seven"
        date = Date(timeIntervalSinceReferenceDate: 8)
        data = Data([9])
        uuid = UUID()
        url = URL(fileURLWithPath: "/tmp/10")
        decimal = Decimal(sign: .plus, exponent: -2, significand: 1111)
        names = ["a"]
        weather = .windy
    }
}

@ManagedEntity(abstract: true)
class TypedRegion: ManagedObject {
    @Managed var code: Int16?
}

@ManagedEntity
final class TypedCountry: TypedRegion {
    @Managed var name: String?
    // Inverse inferred: TypedMood.country names this as its inverse.
    @Managed(deleteRule: .cascade) var moods: Set<TypedMood>
    // Inverse inferred: the only relationship of TypedContinent pointing back.
    @Managed var continent: TypedContinent?
}

@ManagedEntity
final class TypedContinent: TypedRegion {
    @Managed var countries: Set<TypedCountry>
}

@ManagedEntity
final class TypedMood: ManagedObject {
    @Managed var date: Date
    @Managed var colors: [TypedColor]
    @Managed(inverse: "moods") var country: TypedCountry?
    @Managed(inverse: "moods") var tags: Set<TypedTag>
    @Managed(inverse: "orderedIn") var ordered: [TypedTag]
}

@ManagedEntity
final class TypedTag: ManagedObject {
    @Managed var name: String
    @Managed(inverse: "tags") var moods: Set<TypedMood>
    @Managed(inverse: "ordered") var orderedIn: TypedMood?
}

/// A model from the typed classes, on the in-memory store.
struct TypedStack {
    let model: ManagedObjectModel
    let coordinator: PersistentStoreCoordinator
    let context: ManagedObjectContext

    init() throws {
        model = try ManagedObjectModel(classes: [
            TypedSample.self, TypedRegion.self, TypedCountry.self, TypedContinent.self, TypedMood.self, TypedTag.self,
        ])
        coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
    }

    func newContext() -> ManagedObjectContext {
        let other = ManagedObjectContext(concurrencyType: .privateQueue)
        other.persistentStoreCoordinator = coordinator
        return other
    }
}

extension TypedTag {
    /// `@Managed` works in an extension too (the property is not part of the
    /// `@ManagedEntity` schema: here it's another view of `name`).
    @Managed(key: "name") var label: String?
}
