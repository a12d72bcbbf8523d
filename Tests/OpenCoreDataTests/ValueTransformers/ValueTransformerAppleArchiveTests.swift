import Foundation
import GRDB
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Archives in the layout Apple's `NSKeyedArchiver` writes, decoded and compared
/// with what OpenCoreData writes.
///
/// Where the layouts come from:
/// * **Real Apple bytes**: the `ZBOOK.ZFILEURL` column of the fixture
///   `objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite` (written by
///   Core Data framework 419 for a Transformable attribute with no transformer
///   name) holds NSKeyedArchiver archives of NSStrings.
/// * **Hand-written NSArray of two NSStrings**: each object's bytes are written out
///   below. The keyed-archive layout (`NS.objects` then `$class` in an object,
///   `$classname` then `$classes` in a class description, the class description
///   after the object's children, `$null` first) is the one of the Apple-written
///   `Z_MODELCACHE` archives of the fixture stores; the top-level key order
///   (`$version, $archiver, $top, $objects`) that of the framework-1048 stores;
///   the object order in the property list (a dictionary, its keys, then each
///   value followed by its children; equal strings shared; UIDs not shared) that
///   of the Model1.sqlite archives and of CoreFoundation's `CFBinaryPlistWrite`.
/// * **Python-assembled archives**: the remaining archives were assembled with
///   Python's `plistlib` (an independent binary-plist writer) from `$objects`
///   arrays laid out as above, with the classes and keys Foundation uses
///   (`NS.keys`/`NS.objects`, `NS.time`, `NS.uuidbytes`, `NS.base`/`NS.relative`,
///   `NS.string`, `NS.data`, NSMutable* class hierarchies).
@Suite("ValueTransformer: Apple-format archives")
struct ValueTransformerAppleArchiveTests {
    /// `ZFILEURL` of the first ZBOOK row of Model1.sqlite (real Apple bytes).
    static let theTrial = Data(VTSupport.hex("""
        62706c6973743030d40102030405080b0c5424746f7058246f626a65637473582476657273696f6e5924617263686976
        6572d1060754726f6f748001a2090a55246e756c6c5e54686520547269616c2e66696c6512000186a05f100f4e534b65
        79656441726368697665720811161f2832353a3c3f4554590000000000000101000000000000000d0000000000000000
        000000000000006b
        """))

    @Test func realAppleArchiveOfAStringDecodes() throws {
        #expect(Self.theTrial.count == 152)
        #expect(try AttributeValueArchiver.unarchivedValue(from: Self.theTrial) == .string("The Trial.file"))
    }

    @Test func writerReproducesTheRealAppleArchiveByteForByte() throws {
        var writer = KeyedArchiveWriter()
        writer.topKeyOrder = ["$top", "$objects", "$version", "$archiver"]   // the 2011 hash order
        #expect(try writer.archive(.string("The Trial.file")) == Self.theTrial)
        // The default (recent) key order gives the same objects in another order.
        let recent = try AttributeValueArchiver.archivedData(withRootValue: .string("The Trial.file"))
        #expect(recent.count == Self.theTrial.count)
        #expect(try BinaryPropertyList.parse(recent) == BinaryPropertyList.parse(Self.theTrial))
    }

    @Test func everyTransformableValueOfTheFixtureStoreDecodes() throws {
        let store = try Fixtures.copyStore("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite")
        defer { try? FileManager.default.removeItem(at: store.deletingLastPathComponent()) }
        let rows = try DatabaseQueue(path: store.path).read { db in
            try Row.fetchAll(db, sql: "SELECT ZTITLE, ZFILEURL FROM ZBOOK ORDER BY Z_PK")
        }
        #expect(rows.count == 4)
        let attribute = AttributeDescription(name: "fileURL", type: .transformable)
        var legacyOrder = KeyedArchiveWriter()
        legacyOrder.topKeyOrder = ["$top", "$objects", "$version", "$archiver"]
        for row in rows {
            let title: String = row["ZTITLE"]
            let blob: Data = row["ZFILEURL"]
            let value = try ValueTransformerRegistry().reverseTransformedValue(blob, for: attribute)
            #expect(value == .string("\(title).file"))
            #expect(try legacyOrder.archive(value) == blob, "byte-exact for \(title)")
        }
    }

    /// `@[@"Hello", @"World"]` archived by NSKeyedArchiver, object by object.
    static let helloWorld: Data = VTSupport.assemble([
        VTSupport.hex("D4 01 02 03 04  05 06 07 0A"),          // 0: top dictionary: 4 keys, 4 values
        VTSupport.ascii("$version"),                            // 1
        VTSupport.ascii("$archiver"),                           // 2
        VTSupport.ascii("$top"),                                // 3
        VTSupport.ascii("$objects"),                            // 4
        VTSupport.hex("12 00 01 86 A0"),                        // 5: 100000, a 4-byte integer
        VTSupport.hex("5F 10 0F") + Array("NSKeyedArchiver".utf8), // 6: 15 characters: long-count form
        VTSupport.hex("D1 08 09"),                              // 7: $top = {root: UID 1}
        VTSupport.ascii("root"),                                // 8
        VTSupport.hex("80 01"),                                 // 9: UID 1
        VTSupport.hex("A5 0B 0C 13 14 15"),                     // 10: $objects, 5 entries
        VTSupport.ascii("$null"),                               // 11: $objects[0]
        VTSupport.hex("D2 0D 0E 0F 12"),                        // 12: $objects[1] = {NS.objects: [...], $class: UID 4}
        VTSupport.ascii("NS.objects"),                          // 13
        VTSupport.ascii("$class"),                              // 14
        VTSupport.hex("A2 10 11"),                              // 15: [UID 2, UID 3]
        VTSupport.hex("80 02"),                                 // 16
        VTSupport.hex("80 03"),                                 // 17
        VTSupport.hex("80 04"),                                 // 18
        VTSupport.ascii("Hello"),                               // 19: $objects[2]
        VTSupport.ascii("World"),                               // 20: $objects[3]
        VTSupport.hex("D2 16 17 18 19"),                        // 21: $objects[4] = class description
        VTSupport.ascii("$classname"),                          // 22
        VTSupport.ascii("$classes"),                            // 23
        VTSupport.ascii("NSArray"),                             // 24: shared by $classname and $classes
        VTSupport.hex("A2 18 1A"),                              // 25: ["NSArray", "NSObject"]
        VTSupport.ascii("NSObject"),                            // 26
    ])

    @Test func handWrittenArrayOfTwoStringsDecodes() throws {
        #expect(try AttributeValueArchiver.unarchivedValue(from: Self.helloWorld) == .array(["Hello", "World"]))
    }

    @Test func writerProducesTheHandWrittenArrayByteForByte() throws {
        #expect(try AttributeValueArchiver.archivedData(withRootValue: .array(["Hello", "World"])) == Self.helloWorld)
    }

    /// NSMutableDictionary {name: "Zoë", tags: NSMutableArray [same "Zoë" object
    /// twice], when: NSDate 700000000.25} (Python-assembled).
    static let mutableDictionary = Data(VTSupport.hex("""
        62706c6973743030d4010203040506070a582476657273696f6e592461726368697665725424746f7058246f626a6563
        747312000186a05f100f4e534b657965644172636869766572d1080954726f6f748001ab0b0c191a1b1c1d22292d3055
        246e756c6cd30d0e0f101418574e532e6b6579735a4e532e6f626a656374735624636c617373a3111213800280038004
        a3151617800580068008800a546e616d655474616773547768656e63005a006f00ebd20e0f1e21a21f20800580058007
        d2232425265a24636c6173736e616d655824636c61737365735e4e534d757461626c654172726179a3252728574e5341
        72726179584e534f626a656374d22a0f2b2c574e532e74696d652341c4dc93802000008009d223242e2f564e53446174
        65a22e28d2232431325f10134e534d757461626c6544696374696f6e617279a33133285c4e5344696374696f6e617279
        00080011001a00240029003200370049004c00510053005f0065006c0074007f0086008a008c008e0090009400960098
        009a009c00a100a600ab00b200b700ba00bc00be00c000c500d000d900e800ec00f400fd0102010a01130115011a0121
        01240129013f01430000000000000201000000000000003400000000000000000000000000000150
        """))

    @Test func mutableDictionaryWithSharedReferencesDecodes() throws {
        let value = try AttributeValueArchiver.unarchivedValue(from: Self.mutableDictionary)
        #expect(value == .dictionary([
            "name": "Zoë",
            "tags": ["Zoë", "Zoë"],
            "when": .date(Date(timeIntervalSinceReferenceDate: 700_000_000.25)),
        ]))
    }

    /// NSArray [42, 2^40, -7, 3.25, YES, NO, $null, NSUUID, NSURL, NSMutableString,
    /// NSMutableData, NSNull] (Python-assembled).
    static let mixed = Data(VTSupport.hex("""
        62706c6973743030d4010203040506070a582476657273696f6e592461726368697665725424746f7058246f626a6563
        747312000186a05f100f4e534b657965644172636869766572d1080954726f6f748001af10140b0c1d1e1f2021222327
        2d3334373b3f4347494c55246e756c6cd20d0e0f1c5a4e532e6f626a656374735624636c617373ac1011121314151617
        18191a1b80028003800480058006800780008008800a800d800f80118013102a13000001000000000013ffffffffffff
        fff923400a0000000000000908d2240e25265c4e532e7575696462797465734f10100ad863ba758440cf8896bd87b328
        0c348009d228292a2b5a24636c6173736e616d655824636c6173736573564e5355554944a22a2c584e534f626a656374
        d32e2f0e303132574e532e626173655b4e532e72656c61746976658000800b800c5f101968747470733a2f2f6578616d
        706c652e636f6d2f613f623d63d228293536554e5355524ca2352cd2380e393a594e532e737472696e67576d75746162
        6c65800ed228293c3d5f100f4e534d757461626c65537472696e67a33c3e2c584e53537472696e67d2400e4142574e53
        2e64617461430001ff8010d2282944455d4e534d757461626c6544617461a344462c564e5344617461d10e488012d228
        294a4b564e534e756c6ca24a2cd228294d4e574e534172726179a24d2c00080011001a00240029003200370049004c00
        510053006a0070007500800087009400960098009a009c009e00a000a200a400a600a800aa00ac00ae00b000b900c200
        cb00cc00cd00d200df00f200f400f90104010d0114011701200127012f013b013d013f0141015d01620168016b017001
        7a018201840189019b019f01a801ad01b501b901bb01c001ce01d201d901dc01de01e301ea01ed01f201fa0000000000
        000201000000000000004f000000000000000000000000000001fd
        """))

    @Test func numbersUUIDsURLsAndMutableVariantsDecode() throws {
        let value = try AttributeValueArchiver.unarchivedValue(from: Self.mixed)
        #expect(value == .array([
            .int(42), .int(1 << 40), .int(-7), .double(3.25), .bool(true), .bool(false), .null,
            .uuid(UUID(uuidString: "0AD863BA-7584-40CF-8896-BD87B3280C34")!),
            .uri(URL(string: "https://example.com/a?b=c")!),
            .string("mutable"), .data(Data([0, 1, 255])), .null,
        ]))
    }

    /// An NSMutableArray whose only element is itself (Python-assembled).
    static let cyclic = Data(VTSupport.hex("""
        62706c6973743030d4010203040506070a582476657273696f6e592461726368697665725424746f7058246f626a6563
        747312000186a05f100f4e534b657965644172636869766572d1080954726f6f748001a30b0c1255246e756c6cd20d0e
        0f115a4e532e6f626a656374735624636c617373a11080018002d2131415165a24636c6173736e616d655824636c6173
        7365735e4e534d757461626c654172726179a3151718574e534172726179584e534f626a65637408111a24293237494c
        5153575d626d7476787a7f8a93a2a6ae00000000000001010000000000000019000000000000000000000000000000b7
        """))

    @Test func cyclicArchiveIsAnError() throws {
        let error = try #require(throws: CoreDataError.self) { try AttributeValueArchiver.unarchivedValue(from: Self.cyclic) }
        #expect(error.code == .fileReadCorruptFile)
        #expect(error.message.contains("contains itself"))
    }

    /// An NSArray holding a UIColor (Python-assembled).
    static let unknownClass = Data(VTSupport.hex("""
        62706c6973743030d4010203040506070a582476657273696f6e592461726368697665725424746f7058246f626a6563
        747312000186a05f100f4e534b657965644172636869766572d1080954726f6f748001a50b0c121d2355246e756c6cd2
        0d0e0f115a4e532e6f626a656374735624636c617373a11080028004d613141516170e18191a181b1c55554952656457
        5549477265656e565549426c7565575549416c7068615f10155549436f6c6f72436f6d706f6e656e74436f756e74233f
        f0000000000000233fe000000000000023000000000000000010048003d21e1f20215a24636c6173736e616d65582463
        6c6173736573575549436f6c6f72a22022584e534f626a656374d21e1f2425574e534172726179a2242200080011001a
        00240029003200370049004c005100530059005f0064006f00760078007a007c0089008f0097009e00a600be00c700d0
        00d900db00dd00e200ed00f600fe0101010a010f01170000000000000201000000000000002600000000000000000000
        00000000011a
        """))

    @Test func unknownClassIsAnErrorNamingTheClass() throws {
        let error = try #require(throws: CoreDataError.self) { try AttributeValueArchiver.unarchivedValue(from: Self.unknownClass) }
        #expect(error.code == .coreData)
        #expect(error.message.contains("UIColor"))
    }
}
