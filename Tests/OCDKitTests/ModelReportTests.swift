import Foundation
import Testing
@testable import OCDKit
@testable import OpenCoreData

@Suite("ocd model show")
struct ModelReportTests {
    static let moody = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("OpenCoreDataTests/Fixtures/coredata/objcio+core-data/Migrations/Migrations/Moody.xcdatamodeld")

    @Test("--json has the documented shape, own properties only")
    func jsonShape() throws {
        let model = try XcodeDataModel(contentsOf: Self.moody).model(forVersion: "Moody")
        let text = try ModelReport.json(model)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(root["versionChecksum"] as? String == model.versionChecksum)
        let entities = try #require(root["entities"] as? [[String: Any]])
        #expect(entities.count == model.entities.count)
        for entity in entities {
            let name = try #require(entity["name"] as? String)
            let description = try #require(model.entitiesByName[name])
            #expect((entity["parent"] as? String) == description.superentity?.name)
            if description.superentity == nil { #expect(entity["parent"] is NSNull) }
            #expect(entity["abstract"] as? Bool == description.isAbstract)
            #expect(entity["versionHash"] as? String == description.versionHash.hexString)
            let attributes = try #require(entity["attributes"] as? [[String: Any]])
            #expect(attributes.count == description.properties.filter { $0 is AttributeDescription }.count)
            for attribute in attributes {
                #expect(attribute["type"] is String)
                #expect(attribute["optional"] is Bool)
                #expect(attribute["transient"] is Bool)
                #expect(attribute.keys.contains("defaultValue"))
            }
            let relationships = try #require(entity["relationships"] as? [[String: Any]])
            for relationship in relationships {
                for key in ["name", "destination", "inverse", "toMany", "ordered", "deleteRule", "minCount", "maxCount"] {
                    #expect(relationship.keys.contains(key), "\(name) relationship lacks \(key)")
                }
            }
        }
        let mood = try #require(entities.first { $0["name"] as? String == "Mood" })
        let flag = try #require((mood["attributes"] as? [[String: Any]])?.first { $0["name"] as? String == "markedForRemoteDeletion" })
        #expect(flag["type"] as? String == "Boolean")
        #expect(flag["optional"] as? Bool == false)
        #expect(flag["defaultValue"] as? Bool == false)
        let region = try #require(entities.first { $0["name"] as? String == "GeographicRegion" })
        let code = try #require((region["attributes"] as? [[String: Any]])?.first { $0["name"] as? String == "numericISO3166Code" })
        #expect(code["type"] as? String == "Integer 16")
        #expect((code["defaultValue"] as? NSNumber)?.intValue == 0)
        #expect(region["abstract"] as? Bool == true)
        let country = try #require(entities.first { $0["name"] as? String == "Country" })
        #expect(country["parent"] as? String == "GeographicRegion")
    }

    @Test("The text form names every entity and property")
    func text() throws {
        let model = try ManagedObjectModel(contentsOf: Self.moody)
        let text = ModelReport.text(model, versionName: "Moody 6")
        for entity in model.entities {
            #expect(text.contains("entity \(entity.name)"))
            for property in entity.properties { #expect(text.contains(property.name)) }
        }
    }
}
