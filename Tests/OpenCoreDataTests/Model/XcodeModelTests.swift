import Foundation
import Testing
@testable import OpenCoreData
import OpenCoreDataPredicates

/// Writes `xml` as a single-version `.xcdatamodel` in a temporary folder.
func writeModel(_ xml: String, name: String = "Test") throws -> URL {
    let folder = try Fixtures.temporaryDirectory().appendingPathComponent("\(name).xcdatamodel")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try Data(xml.utf8).write(to: folder.appendingPathComponent("contents"))
    return folder
}

func modelXML(_ body: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" lastSavedToolsVersion="22758" systemVersion="23F79" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="v7">
    \(body)
    </model>
    """
}

@Suite("Xcode model files")
struct XcodeModelTests {
    @Test("Every fixture model loads, every version")
    func allFixturesLoad() throws {
        var loaded = 0
        for url in Fixtures.allModelFiles() {
            if url.path.contains("ponso") {
                // Xcode 3's binary `elements` format: a clear error, not a crash.
                #expect(throws: CoreDataError.self) { try XcodeDataModel(contentsOf: url).currentModel() }
                continue
            }
            let bundle = try XcodeDataModel(contentsOf: url)
            let models = try bundle.allModels()
            #expect(models.count == bundle.versionNames.count)
            for (version, model) in models {
                #expect(!model.entities.isEmpty, "\(url.lastPathComponent) \(version)")
                try model.validate()
                loaded += 1
            }
        }
        #expect(loaded >= 30)
    }

    @Test("A versioned bundle lists its versions and picks the current one from .xccurrentversion")
    func bundleVersions() throws {
        let bundle = try XcodeDataModel(contentsOf: Fixtures.moodyModel)
        #expect(bundle.versionNames == ["Moody", "Moody 2", "Moody 3", "Moody 4", "Moody 5", "Moody 6"])
        #expect(bundle.currentVersionName == "Moody 6")
        let current = try ManagedObjectModel(contentsOf: Fixtures.moodyModel)
        #expect(current.entityVersionHashesByName == (try bundle.model(forVersion: "Moody 6")).entityVersionHashesByName)
        #expect(throws: CoreDataError.self) { try bundle.model(forVersion: "Moody 99") }
    }

    @Test("Moody: inheritance, abstract entities, constraints, compound indexes, transformables, elementID")
    func moody() throws {
        let bundle = try XcodeDataModel(contentsOf: Fixtures.moodyModel)
        let model = try bundle.model(forVersion: "Moody")
        let region = try #require(model.entitiesByName["GeographicRegion"])
        let country = try #require(model.entitiesByName["Country"])
        let continent = try #require(model.entitiesByName["Continent"])
        let mood = try #require(model.entitiesByName["Mood"])
        #expect(region.isAbstract)
        #expect(region.superentity == nil)
        #expect(Set(region.subentities.map(\.name)) == ["Country", "Continent"])
        #expect(country.superentity === region)
        #expect(country.isKindOf(entity: region))
        #expect(!region.isKindOf(entity: country))
        #expect(country.propertiesByName["numericISO3166Code"] != nil)   // inherited
        #expect(country.properties.map(\.name).sorted() == ["continent", "moods"])  // own
        #expect(region.uniquenessConstraints == [["numericISO3166Code", "uniquenessDummy"]])
        #expect(region.compoundIndexes == [["markedForDeletionDate", "updatedAt"]])
        let colors = try #require(mood.attributesByName["colors"])
        #expect(colors.attributeType == .transformable)
        #expect(colors.valueTransformerName == "ColorsTransformer")
        let date = try #require(mood.attributesByName["date"])
        #expect(!date.isOptional && date.attributeType == .date)
        let flag = try #require(mood.attributesByName["markedForRemoteDeletion"])
        #expect(flag.defaultValue == .bool(false))
        let moods = try #require(country.relationshipsByName["moods"])
        #expect(moods.isToMany && moods.maxCount == 0)
        #expect(moods.destinationEntity === mood)
        #expect(moods.inverseRelationship === mood.relationshipsByName["country"])
        #expect(mood.relationshipsByName["country"]?.isToMany == false)
        #expect(continent.relationshipsByName["countries"]?.inverseRelationship === country.relationshipsByName["continent"])
        #expect(model.versionIdentifiers == ["1"])
        let v5 = try bundle.model(forVersion: "Moody 5")
        #expect(v5.entitiesByName["Mood"]?.attributesByName["remoteID"]?.renamingIdentifier == "remoteIdentifier")
        #expect(v5.entitiesByName["Mood"]?.attributesByName["remoteID"]?.isIndexed == true)
    }

    @Test("Every attribute type and option is read")
    func everyAttributeOption() throws {
        let url = try writeModel(modelXML("""
            <entity name="Item" representedClassName="App.Item" elementID="OldItem" versionHashModifier="v2" syncable="YES" codeGenerationType="class">
                <attribute name="i16" optional="YES" attributeType="Integer 16" defaultValueString="-3" minValueString="-10" maxValueString="10" usesScalarValueType="YES"/>
                <attribute name="i32" attributeType="Integer 32" defaultValueString="70000"/>
                <attribute name="i64" attributeType="Integer 64" defaultValueString="9000000000"/>
                <attribute name="dec" optional="YES" attributeType="Decimal" defaultValueString="1.25"/>
                <attribute name="dbl" optional="YES" attributeType="Double" defaultValueString="2.5" minValueString="0" maxValueString="100.5"/>
                <attribute name="flt" optional="YES" attributeType="Float" defaultValueString="0.5"/>
                <attribute name="str" optional="YES" attributeType="String" defaultValueString="hello" minValueString="1" maxValueString="64" regularExpressionString="^[a-z]+$"/>
                <attribute name="flag" optional="YES" attributeType="Boolean" defaultValueString="YES" usesScalarValueType="YES"/>
                <attribute name="born" optional="YES" attributeType="Date" minDateTimeInterval="100" maxDateTimeInterval="86400" defaultDateTimeInterval="0"/>
                <attribute name="blob" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
                <attribute name="uid" attributeType="UUID" usesScalarValueType="NO" preserveAfterDeletion="YES" defaultValueString="E621E1F8-C36C-495A-93FC-0C247A3E6E5F"/>
                <attribute name="link" optional="YES" attributeType="URI" defaultValueString="https://example.com/a"/>
                <attribute name="tags" optional="YES" attributeType="Transformable" valueTransformerName="NSSecureUnarchiveFromDataTransformerName" customClassName="[String]"/>
                <attribute name="count" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="children.@count" usesScalarValueType="YES"/>
                <attribute name="address" optional="YES" attributeType="Composite" composite="Address"/>
                <attribute name="scratch" optional="YES" transient="YES" attributeType="Binary" indexed="YES" spotlightIndexingEnabled="YES" versionHashModifier="foo" elementID="bar" allowsCloudEncryption="YES">
                    <userInfo><entry key="key" value="value"/></userInfo>
                </attribute>
                <attribute name="loose" optional="YES" transient="YES"/>
                <relationship name="children" optional="YES" toMany="YES" ordered="YES" minCount="1" maxCount="10" deletionRule="Cascade" destinationEntity="Item" inverseName="parent" inverseEntity="Item"/>
                <relationship name="parent" optional="YES" maxCount="1" deletionRule="Deny" destinationEntity="Item" inverseName="children" inverseEntity="Item"/>
                <relationship name="buddy" optional="YES" maxCount="1" deletionRule="No Action" destinationEntity="Item"/>
                <fetchedProperty name="bigChildren" optional="YES">
                    <fetchRequest name="fetchedPropertyFetchRequest" entity="Item" predicateString="i64 &gt; 5 AND parent == $FETCH_SOURCE"/>
                </fetchedProperty>
                <fetchIndex name="byI16">
                    <fetchIndexElement property="i16" type="Binary" order="ascending"/>
                    <fetchIndexElement property="str" type="Binary" order="descending"/>
                </fetchIndex>
                <fetchIndex name="byExpr">
                    <fetchIndexElement expression="1" expressionType="String" type="RTree" order="ascending"/>
                </fetchIndex>
                <uniquenessConstraints>
                    <uniquenessConstraint><constraint value="uid"/></uniquenessConstraint>
                    <uniquenessConstraint><constraint value="i16"/><constraint value="str"/></uniquenessConstraint>
                </uniquenessConstraints>
                <compoundIndexes><compoundIndex><index value="i32"/><index value="i64"/></compoundIndex></compoundIndexes>
                <userInfo><entry key="owner" value="tests"/></userInfo>
            </entity>
            <composite name="Address">
                <attribute name="street" optional="YES" attributeType="String"/>
                <attribute name="zip" optional="YES" attributeType="Integer 32" defaultValueString="0"/>
            </composite>
            <fetchRequest name="Adults" entity="Item" predicateString="i16 &gt;= 18" fetchLimit="10" fetchBatchSize="50" resultType="2" includeSubentities="YES" returnDistinctResults="YES"/>
            <configuration name="Cloud" usedWithCloudKit="YES"><memberEntity name="Item"/></configuration>
            <elements><element name="Item" positionX="-236" positionY="-27" width="128" height="103"/></elements>
            """))
        let model = try ManagedObjectModel(contentsOf: url)
        let item = try #require(model.entitiesByName["Item"])
        #expect(item.managedObjectClassName == "App.Item")
        #expect(item.renamingIdentifier == "OldItem")
        #expect(item.versionHashModifier == "v2")
        #expect(item.userInfo == ["owner": "tests"])
        #expect(model.versionIdentifiers == ["v7"])
        let a = item.attributesByName
        #expect(a["i16"]?.attributeType == .integer16 && a["i16"]?.defaultValue == .int(-3))
        #expect(a["i16"]?.minValue == .int(-10) && a["i16"]?.maxValue == .int(10))
        #expect(a["i32"]?.defaultValue == .int(70000) && a["i32"]?.isOptional == false)
        #expect(a["i64"]?.defaultValue == .int(9_000_000_000))
        #expect(a["dec"]?.defaultValue == .decimal(Decimal(string: "1.25")!))
        #expect(a["dbl"]?.defaultValue == .double(2.5) && a["dbl"]?.maxValue == .double(100.5))
        #expect(a["flt"]?.attributeType == .float && a["flt"]?.defaultValue == .double(0.5))
        #expect(a["str"]?.defaultValue == "hello" && a["str"]?.minValue == .int(1) && a["str"]?.maxValue == .int(64))
        #expect(a["str"]?.regularExpression == "^[a-z]+$")
        #expect(a["flag"]?.defaultValue == .bool(true))
        #expect(a["born"]?.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 0)))
        #expect(a["born"]?.minValue == .date(Date(timeIntervalSinceReferenceDate: 100)))
        #expect(a["born"]?.maxValue == .date(Date(timeIntervalSinceReferenceDate: 86400)))
        #expect(a["blob"]?.allowsExternalBinaryDataStorage == true)
        #expect(a["uid"]?.preservesValueInHistoryOnDeletion == true)
        #expect(a["uid"]?.defaultValue == .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!))
        #expect(a["link"]?.defaultValue == .uri(URL(string: "https://example.com/a")!))
        #expect(a["tags"]?.valueTransformerName == "NSSecureUnarchiveFromDataTransformerName")
        #expect(a["tags"]?.attributeValueClassName == "[String]")
        let derived = try #require(a["count"] as? DerivedAttributeDescription)
        #expect(derived.derivationExpression == "children.@count")
        let composite = try #require(a["address"] as? CompositeAttributeDescription)
        #expect(composite.compositeName == "Address")
        #expect(composite.elements.map(\.name) == ["street", "zip"])
        let scratch = try #require(a["scratch"])
        #expect(scratch.isTransient && scratch.isIndexed && scratch.isIndexedBySpotlight && scratch.allowsCloudEncryption)
        #expect(scratch.versionHashModifier == "foo" && scratch.renamingIdentifier == "bar")
        #expect(scratch.userInfo == ["key": "value"])
        #expect(a["loose"]?.attributeType == .undefined)

        let r = item.relationshipsByName
        let children = try #require(r["children"])
        #expect(children.isToMany && children.isOrdered && children.minCount == 1 && children.maxCount == 10)
        #expect(children.deleteRule == .cascade)
        #expect(children.inverseRelationship === r["parent"])
        #expect(r["parent"]?.deleteRule == .deny && r["parent"]?.maxCount == 1)
        #expect(r["buddy"]?.deleteRule == .noAction && r["buddy"]?.inverseRelationship == nil)
        let fetched = try #require(item.propertiesByName["bigChildren"] as? FetchedPropertyDescription)
        #expect(fetched.fetchRequest?.entityName == "Item")
        #expect(fetched.fetchRequest?.predicateFormat == "i64 > 5 AND parent == $FETCH_SOURCE")
        #expect(item.indexes.count == 2)
        #expect(item.indexes[0].elements.map(\.propertyName) == ["i16", "str"])
        #expect(item.indexes[0].elements.map(\.isAscending) == [true, false])
        #expect(item.indexes[1].elements[0].expression == "1" && item.indexes[1].elements[0].collationType == .rTree)
        #expect(item.uniquenessConstraints == [["uid"], ["i16", "str"]])
        #expect(item.compoundIndexes == [["i32", "i64"]])
        let template = try #require(model.fetchRequestTemplate(forName: "Adults"))
        #expect(template.entityName == "Item" && template.predicateFormat == "i16 >= 18")
        #expect(template.fetchLimit == 10 && template.fetchBatchSize == 50 && template.resultType == 2)
        #expect(template.returnsDistinctResults && template.includesSubentities)
        #expect(model.configurations == ["Cloud"])
        #expect(model.entities(forConfigurationName: "Cloud")?.map(\.name) == ["Item"])
        #expect(model.cloudKitConfigurations == ["Cloud"])
        #expect(model.entities(forConfigurationName: nil)?.count == 1)
        #expect(model.entities(forConfigurationName: "Nope") == nil)
        // Every Core Data attribute type has its Xcode name and raw value.
        for type in AttributeType.allCases {
            #expect(AttributeType(xcodeName: type.xcodeName) == type)
        }
        #expect(AttributeType.integer64.rawValue == 300 && AttributeType.composite.rawValue == 2100)
    }

    @Test("Malformed and hostile files are errors naming the file, the element and the problem",
          arguments: [
            ("<model><entity name=\"A\"><attribute name=\"x\" attributeType=\"Integer 99\"/></entity></model>", "unknown attributeType 'Integer 99'"),
            ("<model><entity name=\"A\"><attribute name=\"x\"/></entity></model>", "missing attributeType"),
            ("<model><entity name=\"A\"><attribute name=\"x\" attributeType=\"String\" optional=\"maybe\"/></entity></model>", "'optional' is 'maybe'"),
            ("<model><entity name=\"A\" parentEntity=\"Nope\"/></model>", "unknown parentEntity 'Nope'"),
            ("<model><entity name=\"A\" parentEntity=\"B\"/><entity name=\"B\" parentEntity=\"A\"/></model>", "loops back"),
            ("<model><entity name=\"A\"/><entity name=\"A\"/></model>", "a second entity with the same name"),
            ("<model><entity name=\"A\"><relationship name=\"r\" maxCount=\"1\" destinationEntity=\"Nope\"/></entity></model>", "unknown destination entity 'Nope'"),
            ("<model><entity name=\"A\"><relationship name=\"r\" maxCount=\"1\" destinationEntity=\"B\" inverseName=\"back\"/></entity><entity name=\"B\"/></model>", "inverse 'back'"),
            ("<model><entity name=\"A\"><relationship name=\"r\" maxCount=\"1\" destinationEntity=\"B\" inverseName=\"s\"/><relationship name=\"t\" maxCount=\"1\" destinationEntity=\"B\" inverseName=\"s\"/></entity><entity name=\"B\"><relationship name=\"s\" maxCount=\"1\" destinationEntity=\"A\" inverseName=\"t\"/></entity></model>", "Inverse mismatch"),
            ("<model><entity name=\"A\"><attribute name=\"x\" attributeType=\"String\"/><attribute name=\"x\" attributeType=\"Date\"/></entity></model>", "two properties named 'x'"),
            ("<model><entity name=\"P\"><attribute name=\"x\" attributeType=\"String\"/></entity><entity name=\"C\" parentEntity=\"P\"><attribute name=\"x\" attributeType=\"String\"/></entity></model>", "shadows"),
            ("<model><entity name=\"A\"><relationship name=\"r\" deletionRule=\"Explode\" maxCount=\"1\" destinationEntity=\"A\"/></entity></model>", "unknown deletionRule 'Explode'"),
            ("<model><entity name=\"A\"><uniquenessConstraints><uniquenessConstraint><constraint value=\"ghost\"/></uniquenessConstraint></uniquenessConstraints></entity></model>", "unknown property 'ghost'"),
            ("<model><entity name=\"A\"/><configuration name=\"C\"><memberEntity name=\"Ghost\"/></configuration></model>", "unknown memberEntity 'Ghost'"),
            ("<model><entity><attribute name=\"x\" attributeType=\"String\"/></entity></model>", "missing its 'name'"),
            ("<model><entity name=\"A\"><attribute name=\"x\" attributeType=\"String\"></entity></model>", "line"),
            ("", "line"),
            ("<plist/>", "expected <model>"),
            ("<?xml version=\"1.0\"?><!DOCTYPE model [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]><model><entity name=\"&xxe;\"/></model>", "not allowed"),
            (String(repeating: "<model>", count: 200) + String(repeating: "</model>", count: 200), "nested deeper"),
          ])
    func malformed(xml: String, expected: String) throws {
        // (Default values that are not of their type are not here: Xcode compiles
        // them, so they load, without a default when unreadable: RealStoreTests.)
        let url = try writeModel(xml)
        do {
            _ = try ManagedObjectModel(contentsOf: url)
            Issue.record("expected an error containing \(expected)")
        } catch let error as CoreDataError {
            #expect(error.message.contains(expected) || error.description.contains(expected), "\(error)")
            #expect(error.message.contains(url.path), "the message names the file: \(error.message)")
            #expect(error.code == .fileReadCorruptFile || error.code == .coreData)
        }
    }

    @Test("Entity expansion in a hostile file is refused or stays bounded")
    func entityExpansion() throws {
        var laughs = "<!ENTITY l0 \"lol\">"
        for level in 1...9 { laughs += "<!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">" }
        let url = try writeModel("<?xml version=\"1.0\"?><!DOCTYPE model [\(laughs)]><model><entity name=\"&l9;\"/></model>")
        do {
            let model = try ManagedObjectModel(contentsOf: url)
            #expect(model.entities.allSatisfy { $0.name.utf8.count < 100_000 })
        } catch let error as CoreDataError {
            #expect(error.message.contains(url.path))
        }
    }

    @Test("A missing file is NSFileReadNoSuchFileError")
    func missing() {
        #expect {
            try ManagedObjectModel(contentsOf: URL(fileURLWithPath: "/nonexistent/X.xcdatamodeld"))
        } throws: { ($0 as? CoreDataError)?.code == .fileReadNoSuchFile }
    }
}
