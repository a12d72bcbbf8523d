import Foundation
import GRDB
import Testing
@testable import OpenCoreData

/// Decodes the model every fixture store keeps in `Z_MODELCACHE` and checks it
/// against the store's recorded version hashes and against the Xcode model of the
/// same version.
@Suite("CompiledModel fixtures")
struct CompiledModelFixtureTests {
    typealias Fixture = (store: String, model: String, version: String)

    /// The raw `Z_MODELCACHE.Z_CONTENT` of a store, nil when the store has no cache.
    static func modelCache(_ store: String) throws -> Data? {
        let copy = try Fixtures.copyStore(store)
        defer { try? FileManager.default.removeItem(at: copy.deletingLastPathComponent()) }
        let queue = try DatabaseQueue(path: copy.path)
        return try queue.read { db -> Data? in
            guard try db.tableExists("Z_MODELCACHE") else { return nil }
            return try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE")
        }
    }

    static let storesWithCache: [String] = Fixtures.storesWithModels.map(\.store).filter {
        (try? modelCache($0)) != nil
    }

    @Test func everyStoreButTheOldestHasAModelCache() throws {
        var missing: [String] = []
        for fixture in Fixtures.storesWithModels where try CompiledModelFixtureTests.modelCache(fixture.store) == nil {
            missing.append(fixture.store)
        }
        // Model1.sqlite predates Z_MODELCACHE.
        #expect(missing == ["objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite"])
        #expect(CompiledModelFixtureTests.storesWithCache.count == Fixtures.storesWithModels.count - 1)
    }

    @Test(arguments: Fixtures.storesWithModels.map(\.store))
    func modelCacheHashesMatchTheStoreMetadata(store: String) throws {
        guard let blob = try CompiledModelFixtureTests.modelCache(store) else { return }
        let model = try ManagedObjectModel(modelCacheData: blob)
        let metadata = try Fixtures.storeMetadata(store)
        let stored = try #require(metadata["NSStoreModelVersionHashes"] as? [String: Data])
        #expect(!stored.isEmpty)
        #expect(model.entityVersionHashesByName == stored, "\(store)")
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        if let identifiers = metadata["NSStoreModelVersionIdentifiers"] as? [String] {
            #expect(model.versionIdentifiers == Set(identifiers), "\(store)")
        }
        try model.validate()
    }

    @Test(arguments: Fixtures.storesWithModels.map(\.store))
    func modelCacheMatchesTheXcodeModel(store: String) throws {
        guard let blob = try CompiledModelFixtureTests.modelCache(store),
              let fixture = Fixtures.storesWithModels.first(where: { $0.store == store }) else { return }
        let decoded = try ManagedObjectModel(modelCacheData: blob)
        let xml = try XcodeDataModel(contentsOf: Fixtures.url(fixture.model)).model(forVersion: fixture.version)
        CompiledModelFixtureTests.expectEqualModels(decoded, xml, label: store)
    }

    @Test func momdFolderBuiltFromModelCachesLoadsThroughContentsOf() throws {
        let folder = try Fixtures.temporaryDirectory().appendingPathComponent("Moody.momd")
        defer { try? FileManager.default.removeItem(at: folder.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let moody = Fixtures.storesWithModels.filter { $0.store.hasPrefix("objcio+core-data/") }
        #expect(moody.count == 5)
        for fixture in moody {
            let blob = try #require(try CompiledModelFixtureTests.modelCache(fixture.store))
            try Inflate.decompress(blob).write(to: folder.appendingPathComponent(fixture.version + ".mom"))
        }
        let info = try PropertyListSerialization.data(
            fromPropertyList: ["NSManagedObjectModel_CurrentVersionName": "Moody 3"], format: .xml, options: 0)
        try info.write(to: folder.appendingPathComponent("VersionInfo.plist"))

        let bundle = try CompiledModelBundle(contentsOf: folder)
        #expect(bundle.versionNames == ["Moody", "Moody 2", "Moody 3", "Moody 4", "Moody 5"])
        #expect(bundle.currentVersionName == "Moody 3")

        let model = try ManagedObjectModel(contentsOf: folder)
        let xml = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 3")
        CompiledModelFixtureTests.expectEqualModels(model, xml, label: "Moody.momd")
        #expect(model.entityVersionHashesByName == xml.entityVersionHashesByName)

        // Every version through the bundle, and a single .mom through contentsOf.
        for (name, versionModel) in try bundle.allModels() {
            let expected = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: name)
            #expect(versionModel.entityVersionHashesByName == expected.entityVersionHashesByName, "\(name)")
        }
        let single = try ManagedObjectModel(contentsOf: folder.appendingPathComponent("Moody 5.mom"))
        let xml5 = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5")
        CompiledModelFixtureTests.expectEqualModels(single, xml5, label: "Moody 5.mom")

        // Without VersionInfo.plist the version named like the folder is current.
        try FileManager.default.removeItem(at: folder.appendingPathComponent("VersionInfo.plist"))
        #expect(try CompiledModelBundle(contentsOf: folder).currentVersionName == "Moody")
    }

    @Test func compiledModelDataMatchesModelCacheData() throws {
        let store = Fixtures.storesWithModels[0].store
        let blob = try #require(try CompiledModelFixtureTests.modelCache(store))
        let archive = try Inflate.decompress(blob)
        #expect(archive.starts(with: Array("bplist00".utf8)))
        let fromArchive = try ManagedObjectModel(compiledModelData: archive)
        let fromBlob = try ManagedObjectModel(modelCacheData: blob)
        #expect(fromArchive.entityVersionHashesByName == fromBlob.entityVersionHashesByName)
    }

    @Test func missingAndMalformedCompiledModelFiles() throws {
        let folder = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("Nothing.momd")
        #expect(throws: CoreDataError.self) { try ManagedObjectModel(contentsOf: missing) }
        do {
            _ = try ManagedObjectModel(contentsOf: missing)
        } catch let error as CoreDataError {
            #expect(error.code == .fileReadNoSuchFile)
        }
        let empty = folder.appendingPathComponent("Empty.momd")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        #expect(throws: CoreDataError.self) { try ManagedObjectModel(contentsOf: empty) }

        let garbage = folder.appendingPathComponent("Garbage.mom")
        try Data("not a model".utf8).write(to: garbage)
        do {
            _ = try ManagedObjectModel(contentsOf: garbage)
            Issue.record("a garbage .mom loaded")
        } catch let error as CoreDataError {
            #expect(error.code == .fileReadCorruptFile)
            #expect(error.message.contains("Garbage.mom"))
        }
    }

    // MARK: Comparison

    static func expectEqualModels(_ decoded: ManagedObjectModel, _ expected: ManagedObjectModel, label: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(decoded.entities.map(\.name).sorted() == expected.entities.map(\.name).sorted(), "\(label)", sourceLocation: sourceLocation)
        let decodedByName = decoded.entitiesByName
        for entity in expected.entities {
            guard let other = decodedByName[entity.name] else { continue }
            let where_ = "\(label): \(entity.name)"
            #expect(other.superentity?.name == entity.superentity?.name, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.subentities.map(\.name).sorted() == entity.subentities.map(\.name).sorted(), "\(where_)", sourceLocation: sourceLocation)
            #expect(other.isAbstract == entity.isAbstract, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.versionHashModifier == entity.versionHashModifier, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.renamingIdentifier == entity.renamingIdentifier, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.uniquenessConstraints == entity.uniquenessConstraints, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.compoundIndexes == entity.compoundIndexes, "\(where_)", sourceLocation: sourceLocation)
            #expect(other.properties.map(\.name).sorted() == entity.properties.map(\.name).sorted(), "\(where_)", sourceLocation: sourceLocation)
            #expect(other.versionHash == entity.versionHash, "\(where_)", sourceLocation: sourceLocation)
            let decodedProperties = Dictionary(other.properties.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            for property in entity.properties {
                guard let candidate = decodedProperties[property.name] else { continue }
                let what = "\(where_).\(property.name)"
                #expect(type(of: candidate) == type(of: property), "\(what)", sourceLocation: sourceLocation)
                #expect(candidate.isOptional == property.isOptional, "\(what) optional", sourceLocation: sourceLocation)
                #expect(candidate.isTransient == property.isTransient, "\(what) transient", sourceLocation: sourceLocation)
                #expect(candidate.renamingIdentifier == property.renamingIdentifier, "\(what) renaming", sourceLocation: sourceLocation)
                #expect(candidate.versionHashModifier == property.versionHashModifier, "\(what)", sourceLocation: sourceLocation)
                if let attribute = property as? AttributeDescription, let decodedAttribute = candidate as? AttributeDescription {
                    #expect(decodedAttribute.attributeType == attribute.attributeType, "\(what) type", sourceLocation: sourceLocation)
                    #expect(decodedAttribute.defaultValue == attribute.defaultValue, "\(what) default", sourceLocation: sourceLocation)
                    #expect(decodedAttribute.valueTransformerName == attribute.valueTransformerName, "\(what)", sourceLocation: sourceLocation)
                    #expect(decodedAttribute.isIndexed == attribute.isIndexed, "\(what) indexed", sourceLocation: sourceLocation)
                    #expect(decodedAttribute.allowsExternalBinaryDataStorage == attribute.allowsExternalBinaryDataStorage, "\(what)", sourceLocation: sourceLocation)
                }
                if let relationship = property as? RelationshipDescription, let decodedRelationship = candidate as? RelationshipDescription {
                    #expect(decodedRelationship.destinationEntityName == relationship.destinationEntityName, "\(what) destination", sourceLocation: sourceLocation)
                    #expect(decodedRelationship.inverseRelationshipName == relationship.inverseRelationshipName, "\(what) inverse", sourceLocation: sourceLocation)
                    #expect(decodedRelationship.minCount == relationship.minCount, "\(what) minCount", sourceLocation: sourceLocation)
                    #expect(decodedRelationship.maxCount == relationship.maxCount, "\(what) maxCount", sourceLocation: sourceLocation)
                    #expect(decodedRelationship.deleteRule == relationship.deleteRule, "\(what) deleteRule", sourceLocation: sourceLocation)
                    #expect(decodedRelationship.isOrdered == relationship.isOrdered, "\(what) ordered", sourceLocation: sourceLocation)
                }
            }
        }
    }
}
