import Foundation
import GRDB
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// ``CompiledModelWriter`` and ``Deflate``: models written as keyed archives read
/// back through ``CompiledModelReader`` unchanged, and stores created here carry
/// their model in `Z_MODELCACHE`.
@Suite("CompiledModel writer")
struct CompiledModelWriterTests {
    /// Every fixture model version, by "file: version" (the Xcode 3 binary one is skipped).
    static func fixtureModels() throws -> [(label: String, model: ManagedObjectModel)] {
        var result: [(String, ManagedObjectModel)] = []
        for url in Fixtures.allModelFiles() {
            guard let models = try? XcodeDataModel(contentsOf: url).allModels() else {
                // Only the unsupported binary 'elements' model may fail to load.
                let files = FileManager.default.enumerator(atPath: url.path)?.allObjects as? [String] ?? []
                #expect(files.contains { $0 == "elements" || $0.hasSuffix("/elements") }, "\(url.path)")
                continue
            }
            for name in models.keys.sorted() { result.append(("\(url.lastPathComponent): \(name)", models[name]!)) }
        }
        return result
    }

    @Test func everyFixtureModelVersionRoundTrips() throws {
        let models = try CompiledModelWriterTests.fixtureModels()
        #expect(models.count >= 15)
        for (label, model) in models {
            let data = try model.compiledModelData()
            #expect(data.starts(with: Array("bplist00".utf8)))
            let decoded = try CompiledModelReader(source: label).read(archiveData: data)
            #expect(decoded.entityVersionHashesByName == model.entityVersionHashesByName, "\(label)")
            #expect(decoded.versionIdentifiers == model.versionIdentifiers, "\(label)")
            CompiledModelWriterTests.expectSameStructure(decoded, model, label: label)
            // Through the cache form as well.
            let cached = try ManagedObjectModel(modelCacheData: try CompiledModelWriter().modelCacheData(for: model))
            #expect(cached.entityVersionHashesByName == model.entityVersionHashesByName, "\(label)")
        }
    }

    @Test func fixtureStoreCachesSurviveReadWriteRead() throws {
        for fixture in Fixtures.storesWithModels {
            guard let blob = try CompiledModelFixtureTests.modelCache(fixture.store) else { continue }
            let apple = try ManagedObjectModel(modelCacheData: blob)
            let again = try ManagedObjectModel(compiledModelData: try apple.compiledModelData())
            #expect(again.entityVersionHashesByName == apple.entityVersionHashesByName, "\(fixture.store)")
            CompiledModelWriterTests.expectSameStructure(again, apple, label: fixture.store)
        }
    }

    // MARK: Models built in code

    static func everyFeatureModel() -> ManagedObjectModel {
        let model = ManagedObjectModel()
        model.versionIdentifiers = ["v7", "beta"]

        let item = EntityDescription(name: "Item", managedObjectClassName: "Item")
        item.isAbstract = true
        item.userInfo = ["owner": "tests", "note": "é ünïcode"]
        item.versionHashModifier = "itemV2"
        item.renamingIdentifier = "OldItem"
        let title = AttributeDescription(name: "title", type: .string, optional: false, defaultValue: .string("Untitled"))
        title.validationRules = [ValidationRule(predicateFormat: "length > 0", warning: "too short"),
                                 ValidationRule(predicateFormat: "SELF BEGINSWITH[cd] \"A\" OR SELF MATCHES \"[a-z]+\"", warning: "bad")]
        title.userInfo = ["k": "v"]
        title.renamingIdentifier = "name"
        title.versionHashModifier = "t2"
        title.isIndexed = true
        title.isIndexedBySpotlight = true
        let created = AttributeDescription(name: "created", type: .date, defaultValue: .date(Date(timeIntervalSinceReferenceDate: 12345.5)))
        let count = AttributeDescription(name: "count", type: .integer64, defaultValue: .int(-7))
        count.isReadOnly = true
        let ratio = AttributeDescription(name: "ratio", type: .double, defaultValue: .double(0.25))
        let flag = AttributeDescription(name: "flag", type: .boolean, optional: false, defaultValue: .bool(true))
        let price = AttributeDescription(name: "price", type: .decimal, defaultValue: .decimal(Decimal(string: "-12.345")!))
        let blob = AttributeDescription(name: "blob", type: .binaryData)
        blob.allowsExternalBinaryDataStorage = true
        blob.preservesValueInHistoryOnDeletion = true
        blob.isStoredInExternalRecord = true
        let identifier = AttributeDescription(name: "identifier", type: .uuid,
                                              defaultValue: .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        let link = AttributeDescription(name: "link", type: .uri, defaultValue: .uri(URL(string: "https://example.com/a?b=1")!))
        let colors = AttributeDescription(name: "colors", type: .transformable)
        colors.valueTransformerName = "NSSecureUnarchiveFromData"
        colors.attributeValueClassName = "NSArray"
        colors.allowsCloudEncryption = true
        let scratch = AttributeDescription(name: "scratch", type: .string)
        scratch.isTransient = true
        let small = AttributeDescription(name: "small", type: .integer16, defaultValue: .int(3))
        let tags = RelationshipDescription(name: "tags", destination: "Tag", inverse: "items", toMany: true, ordered: true)
        tags.minCount = 1
        tags.maxCount = 5
        tags.deleteRule = .cascade
        let titleLength = DerivedAttributeDescription(name: "tagCount", type: .integer64, derivationExpression: "tags.@count")
        let recent = FetchedPropertyDescription(
            name: "recentTags",
            fetchRequest: FetchRequestTemplate(entityName: "Tag", predicateFormat: "label CONTAINS[c] $FETCH_SOURCE.title"))
        item.properties = [title, created, count, ratio, flag, price, blob, identifier, link, colors, scratch, small, tags,
                           titleLength, recent]
        item.uniquenessConstraints = [["identifier"], ["title", "created"]]
        item.compoundIndexes = [["title", "count"]]
        item.indexes = [
            FetchIndexDescription(name: "byTitle", elements: [FetchIndexElementDescription(property: "title"),
                                                              FetchIndexElementDescription(property: "created", ascending: false)],
                                  partialIndexPredicate: "count > 3"),
            FetchIndexDescription(name: "byRatio", elements: [FetchIndexElementDescription(property: "ratio", collationType: .rTree)]),
        ]

        let book = EntityDescription(name: "Book", managedObjectClassName: "Book")
        let pages = AttributeDescription(name: "pages", type: .integer32, defaultValue: .int(100))
        let author = RelationshipDescription(name: "author", destination: "Author", inverse: "books")
        author.deleteRule = .deny
        author.isOptional = false
        book.properties = [pages, author]
        let note = EntityDescription(name: "Note", managedObjectClassName: "NSManagedObject")
        note.properties = [AttributeDescription(name: "body", type: .string)]
        item.subentities = [book, note]

        let tag = EntityDescription(name: "Tag")
        tag.properties = [AttributeDescription(name: "label", type: .string),
                          RelationshipDescription(name: "items", destination: "Item", inverse: "tags", toMany: true)]
        let author_ = EntityDescription(name: "Author")
        author_.properties = [AttributeDescription(name: "name", type: .string),
                              RelationshipDescription(name: "books", destination: "Book", inverse: "author", toMany: true)]
        model.entities = [item, book, note, tag, author_]

        model.setEntities([tag, author_], forConfigurationName: "People")
        model.setEntities([item, book, note], forConfigurationName: "Content")
        var template = FetchRequestTemplate(entityName: "Book", predicateFormat: "pages >= $MIN AND NOT (author.name == nil)")
        template.fetchLimit = 10
        template.fetchOffset = 2
        template.fetchBatchSize = 20
        template.resultType = 2
        template.includesSubentities = false
        template.returnsDistinctResults = true
        template.returnsObjectsAsFaults = false
        model.setFetchRequestTemplate(template, forName: "bigBooks")
        model.setFetchRequestTemplate(FetchRequestTemplate(entityName: "Tag"), forName: "allTags")
        model.setFetchRequestTemplate(FetchRequestTemplate(entityName: "Tag", predicateFormat: "ANY items.count IN {1, 2, 3}"), forName: "inList")
        return model
    }

    @Test func everyFeatureModelRoundTrips() throws {
        let model = CompiledModelWriterTests.everyFeatureModel()
        try model.validate()
        let decoded = try ManagedObjectModel(compiledModelData: try model.compiledModelData())
        #expect(decoded.entityVersionHashesByName == model.entityVersionHashesByName)
        #expect(decoded.versionIdentifiers == ["v7", "beta"])
        CompiledModelWriterTests.expectSameStructure(decoded, model, label: "every feature")
        try decoded.validate()

        let item = try #require(decoded.entitiesByName["Item"])
        #expect(item.properties.map(\.name) == model.entitiesByName["Item"]!.properties.map(\.name), "property order survives")
        #expect(item.managedObjectClassName == "Item")
        #expect(decoded.entitiesByName["Note"]?.managedObjectClassName == "NSManagedObject")
        let title = try #require(item.attributesByName["title"])
        #expect(title.validationRules.map(\.warning) == ["too short", "bad"])
        #expect(try CorePredicate(format: title.validationRules[0].predicateFormat) == CorePredicate(format: "length > 0"))
        #expect(try CorePredicate(format: title.validationRules[1].predicateFormat)
                == CorePredicate(format: "SELF BEGINSWITH[cd] \"A\" OR SELF MATCHES \"[a-z]+\""))
        #expect(title.isIndexedBySpotlight)
        #expect(title.userInfo == ["k": "v"])
        #expect(item.attributesByName["count"]?.isReadOnly == true)
        #expect(item.attributesByName["scratch"]?.isTransient == true)
        let blob = try #require(item.attributesByName["blob"])
        #expect(blob.preservesValueInHistoryOnDeletion && blob.isStoredInExternalRecord && blob.allowsExternalBinaryDataStorage)
        let colors = try #require(item.attributesByName["colors"])
        #expect(colors.attributeValueClassName == "NSArray")
        #expect(colors.allowsCloudEncryption)
        let derived = try #require(item.attributesByName["tagCount"] as? DerivedAttributeDescription)
        #expect(derived.derivationExpression == "tags.@count")
        let fetched = try #require(item.propertiesByName["recentTags"] as? FetchedPropertyDescription)
        #expect(fetched.fetchRequest?.entityName == "Tag")
        #expect(try fetched.fetchRequest?.predicateFormat.map { try CorePredicate(format: $0) }
                == CorePredicate(format: "label CONTAINS[c] $FETCH_SOURCE.title"))
        #expect(item.userInfo == ["owner": "tests", "note": "é ünïcode"])
        #expect(item.indexes == model.entitiesByName["Item"]!.indexes)

        #expect(decoded.configurations == ["Content", "People"])
        #expect(decoded.entities(forConfigurationName: "People")?.map(\.name) == ["Author", "Tag"])
        let big = try #require(decoded.fetchRequestTemplate(forName: "bigBooks"))
        let original = model.fetchRequestTemplate(forName: "bigBooks")!
        #expect(big.entityName == "Book")
        #expect(try big.predicateFormat.map { try CorePredicate(format: $0) } == CorePredicate(format: original.predicateFormat!))
        var withoutPredicate = big
        withoutPredicate.predicateFormat = original.predicateFormat
        #expect(withoutPredicate == original)
        #expect(decoded.fetchRequestTemplate(forName: "allTags") == FetchRequestTemplate(entityName: "Tag"))
        let inList = try #require(decoded.fetchRequestTemplate(forName: "inList")?.predicateFormat)
        #expect(try CorePredicate(format: inList) == CorePredicate(format: "ANY items.count IN {1, 2, 3}"))
    }

    @Test func defaultValuesOfEveryTypeRoundTrip() throws {
        let model = CompiledModelWriterTests.everyFeatureModel()
        let decoded = try ManagedObjectModel(compiledModelData: try model.compiledModelData())
        let expected = model.entitiesByName["Item"]!
        let item = decoded.entitiesByName["Item"]!
        for name in ["title", "created", "count", "ratio", "flag", "price", "identifier", "link", "small"] {
            #expect(item.attributesByName[name]?.defaultValue == expected.attributesByName[name]?.defaultValue, "\(name)")
            #expect(item.attributesByName[name]?.defaultValue != nil, "\(name)")
        }
    }

    @Test func compositeAttributesRoundTrip() throws {
        let model = ManagedObjectModel()
        let place = EntityDescription(name: "Place")
        let location = CompositeAttributeDescription(name: "location", elements: [
            AttributeDescription(name: "latitude", type: .double, optional: false, defaultValue: .double(1.5)),
            AttributeDescription(name: "longitude", type: .double),
        ])
        place.properties = [AttributeDescription(name: "name", type: .string), location]
        model.entities = [place]
        let decoded = try ManagedObjectModel(compiledModelData: try model.compiledModelData())
        #expect(decoded.entityVersionHashesByName == model.entityVersionHashesByName)
        let composite = try #require(decoded.entitiesByName["Place"]?.attributesByName["location"] as? CompositeAttributeDescription)
        #expect(composite.elements.map(\.name) == ["latitude", "longitude"])
        #expect(composite.elements.first?.isOptional == false)
        #expect(composite.elements.first?.defaultValue == .double(1.5))
    }

    @Test func archiveLayoutFollowsNSKeyedArchiver() throws {
        let data = try CompiledModelWriterTests.everyFeatureModel().compiledModelData()
        let plist = try BinaryPropertyList.parse(data)
        guard case .dictionary(let top) = plist else { Issue.record("not a dictionary"); return }
        #expect(top["$archiver"] == .string("NSKeyedArchiver"))
        #expect(top["$version"] == .int(100_000))
        #expect(top["$top"] == .dictionary(["root": .uid(1)]))
        let archive = try KeyedArchive(data: data)
        guard case .object(let root) = try archive.resolve(try archive.topReference()) else { Issue.record("no root"); return }
        #expect(root.classes == ["NSManagedObjectModel", "NSObject"])
        guard case .uid(let entitiesIndex) = root["NSEntities"], case .dictionary(let entities) = archive.objects[entitiesIndex],
              case .uid(let classIndex)? = entities["$class"], case .dictionary(let info) = archive.objects[classIndex] else {
            Issue.record("no NSEntities"); return
        }
        #expect(info["$classname"] == .string("NSKnownKeysDictionary1"))
        var classNames: Set<[String]> = []
        for object in archive.objects {
            if case .dictionary(let fields) = object, case .array(let names)? = fields["$classes"] {
                classNames.insert(names.compactMap(\.stringValue))
            }
        }
        #expect(classNames.contains(["NSEntityDescription", "NSObject"]))
        #expect(classNames.contains(["NSAttributeDescription", "NSPropertyDescription", "NSObject"]))
        #expect(classNames.contains(["NSRelationshipDescription", "NSPropertyDescription", "NSObject"]))
        #expect(classNames.contains(["NSDerivedAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"]))
        #expect(classNames.contains(["NSFetchIndexDescription", "NSObject"]))
    }

    @Test func subentitiesCarryInheritedCopies() throws {
        let model = CompiledModelWriterTests.everyFeatureModel()
        let archive = try KeyedArchive(data: try model.compiledModelData())
        var bookProperties: [String] = []
        for object in archive.objects {
            guard case .dictionary(let fields) = object, fields["NSEntityName"] != nil,
                  case .object(let entity) = try archive.resolve(.uid(archive.objects.firstIndex(of: object)!)),
                  try archive.string(entity["NSEntityName"], "name") == "Book" else { continue }
            for entry in try archive.entries(entity["NSProperties"], "properties") {
                if let name = try archive.string(entry.key, "key") { bookProperties.append(name) }
            }
        }
        let expected = model.entitiesByName["Book"]!.allProperties.map(\.name)
        #expect(bookProperties == expected)
        let decoded = try ManagedObjectModel(compiledModelData: try model.compiledModelData())
        #expect(decoded.entitiesByName["Book"]?.properties.map(\.name) == ["pages", "author"])
        #expect(decoded.entitiesByName["Book"]?.superentity?.name == "Item")
    }

    /// Writes the archive and cache of the every-feature model to
    /// `$OCD_WRITER_DUMP` (a folder), for checking with other tools.
    @Test func dumpForExternalChecks() throws {
        guard let folder = ProcessInfo.processInfo.environment["OCD_WRITER_DUMP"] else { return }
        let model = CompiledModelWriterTests.everyFeatureModel()
        try model.compiledModelData().write(to: URL(fileURLWithPath: folder).appendingPathComponent("model.mom"))
        try CompiledModelWriter().modelCacheData(for: model).write(to: URL(fileURLWithPath: folder).appendingPathComponent("model.cache"))
        var generator = SystemRandomNumberGenerator()
        let mixed = (0..<200_000).map { $0 % 7_000 < 3_000 ? UInt8(truncatingIfNeeded: $0 % 97) : UInt8.random(in: 0...255, using: &generator) }
        try Data(mixed).write(to: URL(fileURLWithPath: folder).appendingPathComponent("mixed.raw"))
        try Deflate.compress(Data(mixed)).write(to: URL(fileURLWithPath: folder).appendingPathComponent("mixed.deflate"))
    }

    @Test func emptyModel() throws {
        let decoded = try ManagedObjectModel(compiledModelData: try ManagedObjectModel().compiledModelData())
        #expect(decoded.entities.isEmpty)
    }

    // MARK: Deflate

    static func roundTrip(_ bytes: [UInt8]) throws -> Data {
        let compressed = Deflate.compress(Data(bytes))
        #expect(try Inflate.decompress(compressed) == Data(bytes))
        return compressed
    }

    @Test func deflateRoundTrips() throws {
        #expect(try CompiledModelWriterTests.roundTrip([]).count <= 2)
        _ = try CompiledModelWriterTests.roundTrip([42])
        _ = try CompiledModelWriterTests.roundTrip(Array("hello hello hello hello, world".utf8))
        var generator = SystemRandomNumberGenerator()
        let random = (0..<1_048_576).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let randomCompressed = try CompiledModelWriterTests.roundTrip(random)
        #expect(randomCompressed.count < random.count + 200, "stored blocks for incompressible data")
        let repetitive = [UInt8](repeating: 7, count: 300_000)
        #expect(try CompiledModelWriterTests.roundTrip(repetitive).count < 3_000)
        let text = Array(String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 5_000).utf8)
        #expect(try CompiledModelWriterTests.roundTrip(text).count < text.count / 20)
        // Mixed: long matches at the window's edge, every byte value, boundaries.
        var mixed: [UInt8] = []
        for block in 0..<40 {
            mixed += (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* (block + 1)) }
            mixed += random[(block * 5_000)..<(block * 5_000 + 2_000)]
        }
        _ = try CompiledModelWriterTests.roundTrip(mixed)
        for size in [2, 3, 4, 257, 258, 259, 65_535, 65_536, 60_001] {
            _ = try CompiledModelWriterTests.roundTrip((0..<size).map { UInt8(truncatingIfNeeded: $0 % 251) })
            _ = try CompiledModelWriterTests.roundTrip(Array(random.prefix(size)))
        }
    }

    @Test func modelCachesAreSmall() throws {
        let model = CompiledModelWriterTests.everyFeatureModel()
        let archive = try model.compiledModelData()
        let cache = try CompiledModelWriter().modelCacheData(for: model)
        // Fixed Huffman only: about 70% of the archive (zlib's dynamic blocks do better).
        #expect(cache.count < archive.count * 4 / 5, "\(cache.count) of \(archive.count)")
    }

    // MARK: Stores

    @Test func createdStoresOpenWithoutTheirModel() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        var checked = 0
        var models: [(String, ManagedObjectModel)] = [("every feature", CompiledModelWriterTests.everyFeatureModel())]
        models += try CompiledModelWriterTests.fixtureModels().filter { (try? $0.model.validate()) != nil }
        for (index, (label, model)) in models.enumerated() {
            let url = folder.appendingPathComponent("store\(index).sqlite")
            try SQLiteStoreFile.createStore(at: url, model: model)
            let stored = try SQLiteStore.storedModel(at: url)
            #expect(stored.entityVersionHashesByName == model.entityVersionHashesByName, "\(label)")
            let metadata = try SQLiteStoreMetadata.read(at: url)
            #expect(stored.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata), "\(label)")
            checked += 1
        }
        #expect(checked >= 2)
    }

    // MARK: Comparison

    /// Entities, parents, properties with their options, relationships,
    /// constraints, indexes, configurations and templates.
    static func expectSameStructure(_ decoded: ManagedObjectModel, _ expected: ManagedObjectModel, label: String,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        CompiledModelFixtureTests.expectEqualModels(decoded, expected, label: label, sourceLocation: sourceLocation)
        #expect(decoded.entities.map(\.name) == expected.entities.map(\.name), "\(label)", sourceLocation: sourceLocation)
        for entity in expected.entities {
            guard let other = decoded.entitiesByName[entity.name] else { continue }
            let where_ = "\(label): \(entity.name)"
            #expect(other.properties.map(\.name) == entity.properties.map(\.name), "\(where_)", sourceLocation: sourceLocation)
            #expect(other.indexes == entity.indexes, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.userInfo == entity.userInfo, "\(where_)", sourceLocation: sourceLocation)
            let expectedClass = entity.managedObjectClassName == "NSManagedObject" ? "NSManagedObject" : entity.managedObjectClassName
            #expect(other.managedObjectClassName == expectedClass, "\(where_)", sourceLocation: sourceLocation)
            for property in entity.properties {
                guard let candidate = other.propertiesByName[property.name] else { continue }
                let what = "\(where_).\(property.name)"
                #expect(candidate.isReadOnly == property.isReadOnly, "\(what)", sourceLocation: sourceLocation)
                #expect(candidate.isIndexedBySpotlight == property.isIndexedBySpotlight, "\(what)", sourceLocation: sourceLocation)
                #expect(candidate.isStoredInExternalRecord == property.isStoredInExternalRecord, "\(what)", sourceLocation: sourceLocation)
                #expect(candidate.userInfo == property.userInfo, "\(what)", sourceLocation: sourceLocation)
                #expect(candidate.validationRules.map(\.warning) == property.validationRules.map(\.warning), "\(what)", sourceLocation: sourceLocation)
                if let attribute = property as? AttributeDescription, let decodedAttribute = candidate as? AttributeDescription {
                    #expect(decodedAttribute.preservesValueInHistoryOnDeletion == attribute.preservesValueInHistoryOnDeletion, "\(what)", sourceLocation: sourceLocation)
                    #expect(decodedAttribute.allowsCloudEncryption == attribute.allowsCloudEncryption, "\(what)", sourceLocation: sourceLocation)
                    if attribute.attributeType == .transformable {
                        #expect(decodedAttribute.attributeValueClassName == attribute.attributeValueClassName, "\(what)", sourceLocation: sourceLocation)
                    }
                }
                if let fetched = property as? FetchedPropertyDescription, let decodedFetched = candidate as? FetchedPropertyDescription {
                    #expect(decodedFetched.fetchRequest?.entityName == fetched.fetchRequest?.entityName, "\(what)", sourceLocation: sourceLocation)
                }
            }
        }
        #expect(decoded.configurations == expected.configurations.filter { $0 != ManagedObjectModel.defaultConfigurationName },
                "\(label)", sourceLocation: sourceLocation)
        for name in decoded.configurations {
            #expect(decoded.entities(forConfigurationName: name)?.map(\.name).sorted()
                    == expected.entities(forConfigurationName: name)?.map(\.name).sorted(), "\(label): \(name)", sourceLocation: sourceLocation)
        }
        #expect(decoded.fetchRequestTemplatesByName.keys.sorted() == expected.fetchRequestTemplatesByName.keys.sorted(),
                "\(label)", sourceLocation: sourceLocation)
        for (name, template) in expected.fetchRequestTemplatesByName {
            guard var other = decoded.fetchRequestTemplatesByName[name] else { continue }
            if let format = template.predicateFormat, let text = other.predicateFormat,
               (try? CorePredicate(format: format)) == (try? CorePredicate(format: text)) {
                other.predicateFormat = format
            }
            #expect(other == template, "\(label): template \(name)", sourceLocation: sourceLocation)
        }
    }
}
