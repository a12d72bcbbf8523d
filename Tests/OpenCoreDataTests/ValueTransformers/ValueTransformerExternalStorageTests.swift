import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

@Suite("ValueTransformer: external binary storage")
struct ValueTransformerExternalStorageTests {
    private func makeStorage(threshold: Int = ExternalBinaryStorage.defaultThreshold) throws -> (ExternalBinaryStorage, URL) {
        let folder = try Fixtures.temporaryDirectory()
        return (ExternalBinaryStorage(storeURL: folder.appendingPathComponent("Photos.sqlite"), threshold: threshold), folder)
    }

    private func files(in storage: ExternalBinaryStorage) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: storage.directoryURL.path)) ?? []).sorted()
    }

    @Test func supportFolderIsNamedAfterTheStore() throws {
        let storage = ExternalBinaryStorage(storeURL: URL(fileURLWithPath: "/data/My Store.sqlite"))
        #expect(storage.directoryURL.path == "/data/.My Store_SUPPORT/_EXTERNAL_DATA")
        #expect(storage.threshold == 100 * 1024)
    }

    @Test func smallValuesStayInline() throws {
        let (storage, folder) = try makeStorage()
        defer { try? FileManager.default.removeItem(at: folder) }
        for size in [0, 1, 1000, 100 * 1024] {
            let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 * 7) })
            let column = try storage.encode(data)
            #expect(column.first == 0x01)
            #expect(column.dropFirst() == data)
            #expect(try storage.decode(column) == data)
            #expect(ExternalBinaryStorage.externalReference(in: column) == nil)
        }
        #expect(files(in: storage).isEmpty)
    }

    @Test func largeValuesGoToFiles() throws {
        let (storage, folder) = try makeStorage()
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = Data((0..<(100 * 1024 + 1)).map { UInt8(truncatingIfNeeded: $0) })
        let column = try storage.encode(data)
        #expect(column.count == 37)
        #expect(column.first == 0x02)
        let name = String(decoding: column.dropFirst(), as: UTF8.self)
        let uuid = try #require(ExternalBinaryStorage.externalReference(in: column))
        #expect(name == uuid.uuidString)
        let file = folder.appendingPathComponent(".Photos_SUPPORT/_EXTERNAL_DATA/\(name)")
        #expect(try Data(contentsOf: file) == data)
        #expect(try storage.decode(column) == data)
        #expect(files(in: storage) == [name], "no temporary files are left behind")

        // Each stored value gets its own file.
        let second = try storage.encode(data)
        #expect(second != column)
        #expect(files(in: storage).count == 2)
    }

    @Test func thresholdIsAParameter() throws {
        let (storage, folder) = try makeStorage(threshold: 10)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try storage.encode(Data(count: 10)).first == 0x01)
        let column = try storage.encode(Data(count: 11))
        #expect(column.first == 0x02)
        #expect(try storage.decode(column) == Data(count: 11))
    }

    @Test func trailingNulAfterTheUUIDIsAccepted() throws {
        let (storage, folder) = try makeStorage(threshold: 0)
        defer { try? FileManager.default.removeItem(at: folder) }
        var column = try storage.encode(Data("payload".utf8))
        column.append(0)
        #expect(try storage.decode(column) == Data("payload".utf8))
    }

    @Test func missingFileIsAnErrorNamingTheFile() throws {
        let (storage, folder) = try makeStorage()
        defer { try? FileManager.default.removeItem(at: folder) }
        let uuid = UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!
        let column = Data([0x02] + Array(uuid.uuidString.utf8))
        let error = try #require(throws: CoreDataError.self) { try storage.decode(column) }
        #expect(error.code == .fileReadNoSuchFile)
        #expect(error.message.contains("_EXTERNAL_DATA/0AD863BA-7584-40CF-8896-BD87B3280C34"))
        #expect(error.url == storage.fileURL(for: uuid))
    }

    @Test(arguments: [Data(), Data([0x03, 1, 2]), Data([0x02]), Data([0x02] + Array("../../../../etc/passwd".utf8)),
                      Data([0x02] + Array("0AD863BA-7584-40CF-8896-BD87B3280C3".utf8)),
                      Data([0x02] + Array("0AD863BA/7584-40CF-8896-BD87B3280C34".utf8)), Data("bplist00".utf8)])
    func malformedColumnsAreErrors(_ column: Data) throws {
        let (storage, folder) = try makeStorage()
        defer { try? FileManager.default.removeItem(at: folder) }
        let error = try #require(throws: CoreDataError.self) { try storage.decode(column) }
        #expect(error.code == .fileReadCorruptFile)
    }

    @Test func attributesWithoutTheOptionStoreRawBytes() throws {
        let (storage, folder) = try makeStorage(threshold: 4)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = AttributeDescription(name: "thumbnail", type: .binaryData)
        let external = AttributeDescription(name: "photo", type: .binaryData)
        external.allowsExternalBinaryDataStorage = true
        let data = Data("bplist00 and more".utf8)
        #expect(try storage.encode(data, for: plain) == data)
        #expect(try storage.decode(data, for: plain) == data)
        let column = try storage.encode(data, for: external)
        #expect(column.first == 0x02)
        #expect(try storage.decode(column, for: external) == data)
        #expect(try storage.encode(Data([1, 2]), for: external) == Data([0x01, 1, 2]))
    }

    @Test func transformableValuesCanBeStoredExternally() throws {
        let (storage, folder) = try makeStorage(threshold: 64)
        defer { try? FileManager.default.removeItem(at: folder) }
        let attribute = AttributeDescription(name: "document", type: .transformable)
        attribute.allowsExternalBinaryDataStorage = true
        let registry = ValueTransformerRegistry()
        let archived = try #require(try registry.transformedValue(VTSupport.everyShape, for: attribute))
        let column = try storage.encode(archived, for: attribute)
        #expect(column.first == 0x02)
        let value = try registry.reverseTransformedValue(try storage.decode(column, for: attribute), for: attribute)
        #expect(value == VTSupport.everyShape)
    }

    @Test func unreferencedFilesAreRemoved() throws {
        let (storage, folder) = try makeStorage(threshold: 0)
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(try storage.removeUnreferencedFiles(keeping: []) == [], "no folder yet")
        let columns = try (0..<3).map { try storage.encode(Data([UInt8($0)])) }
        let uuids = columns.compactMap(ExternalBinaryStorage.externalReference(in:))
        #expect(uuids.count == 3)
        let stray = storage.directoryURL.appendingPathComponent("notes.txt")
        try Data("keep me".utf8).write(to: stray)

        let removed = try storage.removeUnreferencedFiles(keeping: [uuids[1]])
        #expect(Set(removed) == [uuids[0], uuids[2]])
        #expect(files(in: storage) == [uuids[1].uuidString, "notes.txt"].sorted())
        #expect(try storage.decode(columns[1]) == Data([1]))
        #expect(throws: CoreDataError.self) { try storage.decode(columns[0]) }
        #expect(try storage.removeUnreferencedFiles(keeping: [uuids[1]]) == [])
    }
}
