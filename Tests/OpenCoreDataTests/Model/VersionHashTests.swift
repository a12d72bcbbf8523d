import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("Version hashes, as Core Data computes them")
struct VersionHashTests {
    @Test("SHA-256 and SHA-512 match FIPS 180-4 test vectors")
    func digests() {
        #expect(Data(SHA2.sha256(Array("abc".utf8))).hexString == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Data(SHA2.sha256([UInt8]())).hexString == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Data(SHA2.sha256(long)).hexString == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Data(SHA2.sha512(Array("abc".utf8))).hexString == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(Data(SHA2.sha256(million)).hexString == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("The Event test vector: optional and non-optional Date attribute")
    func eventVector() throws {
        func model(optional: Bool) -> ManagedObjectModel {
            let event = EntityDescription(name: "Event")
            event.properties = [AttributeDescription(name: "timeStamp", type: .date, optional: optional)]
            let model = ManagedObjectModel()
            model.entities = [event]
            return model
        }
        #expect(model(optional: true).entityVersionHashesByName["Event"]?.hexString
                == "5431c046d30e7f32c2cc809958add1e7579ad104a3aa8fc4846e97d7af01cc79")
        #expect(model(optional: false).entityVersionHashesByName["Event"]?.hexString
                == "d95195dd63a36d0b1527abe8a405374059bd1eb143fe8127c0ce7c60eeae97d9")
    }

    @Test("Every fixture store's recorded hashes match the model that wrote it",
          arguments: Fixtures.storesWithModels.map { $0.store })
    func storeHashes(store: String) throws {
        let entry = try #require(Fixtures.storesWithModels.first { $0.store == store })
        let metadata = try Fixtures.storeMetadata(entry.store)
        let stored = try #require(metadata["NSStoreModelVersionHashes"] as? [String: Data])
        let bundle = try XcodeDataModel(contentsOf: Fixtures.url(entry.model))
        let model = try bundle.model(forVersion: entry.version)
        let computed = model.entityVersionHashesByName
        #expect(Set(computed.keys) == Set(stored.keys))
        for (name, hash) in stored {
            #expect(computed[name]?.hexString == hash.hexString, "entity \(name) in \(store)")
        }
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        if let checksum = metadata["NSStoreModelVersionChecksumKey"] as? String {
            #expect(model.versionChecksum == checksum)
        }
        if let digest = metadata["NSStoreModelVersionHashesDigest"] as? String {
            #expect(model.versionHashesDigest == digest)
        }
    }

    @Test("Version identifiers come from userDefinedModelVersionIdentifier, as the store records them")
    func versionIdentifiers() throws {
        let metadata = try Fixtures.storeMetadata("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody")
        let model = try XcodeDataModel(contentsOf: Fixtures.moodyModel).model(forVersion: "Moody 5")
        #expect(metadata["NSStoreModelVersionIdentifiers"] as? [String] == ["5"])
        #expect(model.versionIdentifiers == ["5"])
    }

    @Test("A store does not match the other versions of its model")
    func otherVersionsIncompatible() throws {
        let metadata = try Fixtures.storeMetadata("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        let bundle = try XcodeDataModel(contentsOf: Fixtures.moodyModel)
        let model = try bundle.model(forVersion: "Moody 3")
        #expect(!model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let problems = model.incompatibilities(withName: nil, storeMetadata: metadata)
        #expect(!problems.isEmpty)
        #expect(problems.allSatisfy { $0.contains("entity '") })
    }
}
