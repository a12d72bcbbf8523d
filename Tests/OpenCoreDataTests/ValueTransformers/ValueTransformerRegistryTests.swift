import Foundation
import GRDB
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("ValueTransformer: registry")
struct ValueTransformerRegistryTests {
    /// The objc.io "Moody" app's `ColorsTransformer`: an array of colors stored as
    /// 3 bytes (red, green, blue) each. Colors are `{red, green, blue}` dictionaries here.
    static func registerColors(in registry: ValueTransformerRegistry) {
        struct NotColors: Error {}
        registry.register(name: "ColorsTransformer", transformedValue: { value in
            guard case .array(let colors) = value else { throw NotColors() }
            var bytes = Data()
            for color in colors {
                guard case .dictionary(let rgb) = color else { throw NotColors() }
                for key in ["red", "green", "blue"] {
                    guard let component = rgb[key]?.int64Value, (0...255).contains(component) else { throw NotColors() }
                    bytes.append(UInt8(component))
                }
            }
            return bytes
        }, reverseTransformedValue: { data in
            guard data.count.isMultiple(of: 3) else { throw NotColors() }
            let bytes = [UInt8](data)
            var colors: [AttributeValue] = []
            for index in stride(from: 0, to: bytes.count, by: 3) {
                let red = AttributeValue.int(Int64(bytes[index]))
                let green = AttributeValue.int(Int64(bytes[index + 1]))
                let blue = AttributeValue.int(Int64(bytes[index + 2]))
                colors.append(.dictionary(["red": red, "green": green, "blue": blue]))
            }
            return .array(colors)
        })
    }

    @Test func transformableWithoutNameUsesSecureUnarchiveFromData() throws {
        let registry = ValueTransformerRegistry()
        let attribute = AttributeDescription(name: "tags", type: .transformable)
        let value: AttributeValue = ["a", "b", ["nested": 1]]
        let data = try #require(try registry.transformedValue(value, for: attribute))
        #expect(data == (try AttributeValueArchiver.archivedData(withRootValue: value)))
        #expect(try registry.reverseTransformedValue(data, for: attribute) == value)
        #expect(try registry.transformer(for: attribute).name == "NSSecureUnarchiveFromData")
    }

    @Test(arguments: ["NSSecureUnarchiveFromDataTransformerName", "NSSecureUnarchiveFromData", "",
                      "NSKeyedUnarchiveFromData", "NSKeyedUnarchiveFromDataTransformerName"])
    func builtInNamesArchiveTheSameWay(_ name: String) throws {
        let registry = ValueTransformerRegistry()
        let attribute = AttributeDescription(name: "payload", type: .transformable)
        attribute.valueTransformerName = name
        let data = try #require(try registry.transformedValue(VTSupport.everyShape, for: attribute))
        #expect(try AttributeValueArchiver.unarchivedValue(from: data) == VTSupport.everyShape)
        #expect(try registry.reverseTransformedValue(data, for: attribute) == VTSupport.everyShape)
    }

    @Test func legacyNameIsItsOwnTransformer() throws {
        let registry = ValueTransformerRegistry()
        #expect(registry.transformer(named: "NSKeyedUnarchiveFromData")?.name == "NSKeyedUnarchiveFromData")
        #expect(registry.transformer(named: "NSKeyedUnarchiveFromDataTransformerName")?.name == "NSKeyedUnarchiveFromData")
        #expect(registry.names == ["NSKeyedUnarchiveFromData", "NSSecureUnarchiveFromData"])
    }

    @Test func nullIsStoredAsSQLNull() throws {
        let registry = ValueTransformerRegistry()
        let attribute = AttributeDescription(name: "tags", type: .transformable)
        #expect(try registry.transformedValue(.null, for: attribute) == nil)
        #expect(try registry.reverseTransformedValue(nil, for: attribute) == .null)
    }

    @Test func customTransformerDecodesTheMoodyStoresColors() throws {
        let registry = ValueTransformerRegistry()
        Self.registerColors(in: registry)
        let attribute = AttributeDescription(name: "colors", type: .transformable)
        attribute.valueTransformerName = "ColorsTransformer"

        let store = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody.moody")
        defer { try? FileManager.default.removeItem(at: store.deletingLastPathComponent()) }
        let blobs = try DatabaseQueue(path: store.path).read { db in
            try Data.fetchAll(db, sql: "SELECT ZCOLORS FROM ZMOOD WHERE ZCOLORS IS NOT NULL ORDER BY Z_PK")
        }
        #expect(!blobs.isEmpty)
        for blob in blobs {
            let value = try registry.reverseTransformedValue(blob, for: attribute)
            guard case .array(let colors) = value else {
                Issue.record("not an array")
                continue
            }
            #expect(colors.count == blob.count / 3)
            #expect(try registry.transformedValue(value, for: attribute) == blob)
        }

        // A module-qualified class name finds the transformer too.
        attribute.valueTransformerName = "Moody.ColorsTransformer"
        #expect(try registry.transformer(for: attribute).name == "ColorsTransformer")
    }

    @Test func missingTransformerIsAnErrorNamingAttributeAndTransformer() throws {
        let registry = ValueTransformerRegistry()
        let attribute = AttributeDescription(name: "colors", type: .transformable)
        attribute.valueTransformerName = "ColorsTransformer"
        let error = try #require(throws: CoreDataError.self) { try registry.transformedValue(["x"], for: attribute) }
        #expect(error.code == .coreData)
        #expect(error.message.contains("'colors'"))
        #expect(error.message.contains("'ColorsTransformer'"))
        #expect(error.key == "colors")

        let named = try #require(throws: CoreDataError.self) {
            try registry.transformer(named: "Missing", attributeName: "colors", entityName: "Mood")
        }
        #expect(named.message.contains("'Mood.colors'"))
        #expect(named.entityName == "Mood")
    }

    @Test func replacingAndUnregistering() throws {
        let registry = ValueTransformerRegistry()
        registry.register(name: "Upper", transformedValue: { Data(($0.stringValue ?? "").uppercased().utf8) },
                          reverseTransformedValue: { .string(String(decoding: $0, as: UTF8.self)) })
        #expect(try registry.transformer(named: "Upper", attributeName: "a").transformedValue("abc") == Data("ABC".utf8))
        registry.register(name: "Upper", transformedValue: { _ in Data([1]) }, reverseTransformedValue: { _ in .null })
        #expect(try registry.transformer(named: "Upper", attributeName: "a").transformedValue("abc") == Data([1]))
        #expect(registry.unregister(name: "Upper"))
        #expect(!registry.unregister(name: "Upper"))
        #expect(registry.transformer(named: "Upper") == nil)
        // A registered transformer can replace a built-in one.
        registry.register(name: "NSSecureUnarchiveFromData", transformedValue: { _ in Data([9]) }, reverseTransformedValue: { _ in .null })
        #expect(try registry.transformedValue("x", for: AttributeDescription(name: "a", type: .transformable)) == Data([9]))
        #expect(try ValueTransformerRegistry().transformedValue("x", for: AttributeDescription(name: "a", type: .transformable)) != Data([9]))
    }

    @Test func concurrentUseIsSafe() async throws {
        let registry = ValueTransformerRegistry()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<200 {
                        let name = "T\(task)-\(index % 10)"
                        registry.register(name: name, transformedValue: { _ in Data([UInt8(task)]) }, reverseTransformedValue: { _ in .int(Int64(task)) })
                        _ = registry.transformer(named: name)
                        _ = registry.names
                        if index.isMultiple(of: 3) { registry.unregister(name: name) }
                        _ = try? registry.transformer(named: nil, attributeName: "a").transformedValue(.int(Int64(index)))
                    }
                }
            }
        }
        #expect(registry.transformer(named: "NSSecureUnarchiveFromData") != nil)
    }
}
