import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Seed data for the fetch tests, kept as plain values so that every expectation
/// is computed from it independently of any store.
struct FetchSeed {
    struct MoodData {
        var rating: Int
        var creator: String?
        var country: Int?      // index into countries
        var tags: [Int]        // indexes into tags
    }
    var countryCodes: [Int] = [276, 250, 380, 724]
    var continentOfCountry: [Int?] = [0, 0, 0, nil]
    var tagNames: [String] = ["calm", "happy", "tired"]
    var moods: [MoodData] = []

    init() {
        let creators: [String?] = ["ann", "bob", nil, "cid", "ann"]
        for i in 0..<23 {
            moods.append(MoodData(rating: (i * 7) % 6, creator: creators[i % creators.count],
                                  country: i % 5 == 4 ? nil : i % 4, tags: Array(0..<(i % 3)).map { ($0 + i) % 3 }))
        }
    }

    /// Inserts everything into `stack`'s context and saves. Returns the objects.
    @discardableResult
    func insert(into stack: TestStack) throws -> (moods: [Mood], countries: [ManagedObject], tags: [ManagedObject], continent: ManagedObject) {
        let context = stack.context
        let continent = ManagedObject(entity: stack.model.entitiesByName["Continent"]!, insertInto: context)
        continent.setValue(150, forKey: "numericISO3166Code")
        var countries: [ManagedObject] = []
        for (index, code) in countryCodes.enumerated() {
            let country = ManagedObject(entity: stack.model.entitiesByName["Country"]!, insertInto: context)
            country.setValue(code, forKey: "numericISO3166Code")
            if continentOfCountry[index] != nil { country.setValue(continent, forKey: "continent") }
            countries.append(country)
        }
        let tags = tagNames.map { stack.tag($0) }
        var moods: [Mood] = []
        for (index, data) in moods_.enumerated() {
            let mood = stack.mood(rating: data.rating)
            mood.setValue(Date(timeIntervalSinceReferenceDate: Double(index * 1000)), forKey: "date")
            mood.setValue(data.creator, forKey: "creatorID")
            if let country = data.country { mood.setValue(countries[country], forKey: "country") }
            mood.setValue(Set(data.tags.map { tags[$0] }), forKey: "tags")
            moods.append(mood)
        }
        try context.save()
        return (moods, countries, tags, continent)
    }

    private var moods_: [MoodData] { moods }
}

extension Dictionary where Key == String, Value == Any {
    /// An integer entry, whatever integer type holds it.
    func int(_ key: String) -> Int? {
        switch self[key] {
        case let value as Int: return value
        case let value as Int64: return Int(value)
        case let value as Int16: return Int(value)
        case let value as Int32: return Int(value)
        case let value as Double: return Int(exactly: value)
        default: return nil
        }
    }

    func double(_ key: String) -> Double? {
        switch self[key] {
        case let value as Double: return value
        case let value as Int: return Double(value)
        case let value as Int64: return Double(value)
        default: return nil
        }
    }
}
