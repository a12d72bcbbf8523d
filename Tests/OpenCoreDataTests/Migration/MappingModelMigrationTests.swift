import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// The Moody version 6 policy, written for these tests from what the Core Data
/// book's `Country5ToCountry6Policy` does: the default copy of the country, then
/// its continent, found among the destination's continents by code or made, from
/// the version 5 attribute `isoContinent`.
final class MoodyCountry5To6Policy: EntityMigrationPolicy {
    override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
        try super.createDestinationInstances(forSource: source, in: mapping, manager: manager)
        guard case .int(let code) = source.attributeValue(forKey: "isoContinent"),
              let country = manager.destinationInstances(forEntityMappingName: mapping.name, sourceInstances: [source]).first else { return }
        let request = FetchRequest<ManagedObject>(entityName: "Continent")
        request.predicate = try CorePredicate(format: "numericISO3166Code == %lld", code)
        let continent = try manager.destinationContext.fetch(request).first ?? {
            let made = ManagedObject(entity: manager.destinationModel.entitiesByName["Continent"]!, insertInto: manager.destinationContext)
            made.setValue(code, forKey: "numericISO3166Code")
            return made
        }()
        country.setValue(continent, forKey: "continent")
    }
}

/// A policy that fails, and one that cancels: the store must stay as it was.
final class FailingPolicy: EntityMigrationPolicy {
    struct Failure: Error {}
    override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
        throw Failure()
    }
}

final class CancellingPolicy: EntityMigrationPolicy {
    override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
        try super.createDestinationInstances(forSource: source, in: mapping, manager: manager)
        manager.cancelMigrationWithError(CoreDataError(.migrationCancelled, "cancelled by the test"))
    }
}

/// The books example's book policy, written for these tests from what the
/// example's `MHWBookToBookPolicy` does, chosen by the mapping's user info
/// `modelVersion`: for version 2, a book's author name becomes an Author object,
/// one per name; for version 3, each of the book's users gets a File of the book
/// with its file URL.
final class BookAuthorsPolicy: EntityMigrationPolicy {
    override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
        try super.createDestinationInstances(forSource: source, in: mapping, manager: manager)
        guard let book = manager.destinationInstances(forEntityMappingName: mapping.name, sourceInstances: [source]).first else { return }
        switch mapping.userInfo["modelVersion"] {
        case .string("2"):
            guard case .string(let name) = source.attributeValue(forKey: "authorName") else { return }
            let request = FetchRequest<ManagedObject>(entityName: "Author")
            request.predicate = try CorePredicate(format: "name == %@", name)
            let author = try manager.destinationContext.fetch(request).first ?? {
                let made = ManagedObject(entity: manager.destinationModel.entitiesByName["Author"]!, insertInto: manager.destinationContext)
                made.setValue(name, forKey: "name")
                return made
            }()
            book.setValue(Set([author]), forKey: "authors")
        case .string("3"):
            let users = (source.value(forKey: "users") as? Set<ManagedObject>) ?? []
            for user in users.sorted(by: { ($0.objectID.primaryKey ?? 0) < ($1.objectID.primaryKey ?? 0) }) {
                let file = ManagedObject(entity: manager.destinationModel.entitiesByName["File"]!, insertInto: manager.destinationContext)
                file.setValue(source.value(forKey: "fileURL"), forKey: "fileURL")
                file.setValue(book, forKey: "book")
                file.setValue(manager.destinationInstances(forEntityMappingName: "UserToUser", sourceInstances: [user]).first, forKey: "user")
            }
        default:
            return
        }
    }
}

/// The example's user policy: in this design the book policy links files and
/// users, so the default copy is all it does.
final class UserCopyPolicy: EntityMigrationPolicy {}

@Suite(.serialized) struct MappingModelMigrationTests {
    static let moodyFolder = Fixtures.url("objcio+core-data/Migrations/Migrations")
    static let bookFolder = Fixtures.url("objcio+issue-4-core-data-migration/BookMigration")

    init() {
        EntityMigrationPolicy.register(MoodyCountry5To6Policy.self, forClassName: "Migrations.Country5ToCountry6Policy")
        EntityMigrationPolicy.register(BookAuthorsPolicy.self, forClassName: "MHWBookToBookPolicy")
        EntityMigrationPolicy.register(UserCopyPolicy.self, forClassName: "MHWUserToUserPolicy")
    }

    static func moodyVersions() throws -> ModelVersionBundle {
        try ModelVersionBundle(contentsOf: moodyFolder.appendingPathComponent("Moody.xcdatamodeld"))
    }

    @Test("Every mapping model Xcode wrote among the fixtures reads, compiled as mapc does")
    func readsXcodeMappingModels() throws {
        let moody = try MappingModel.mappingModels(in: Self.moodyFolder, versions: try Self.moodyVersions())
        #expect(moody.map(\.name) == ["Moody 2-Moody 3", "Moody 3-Moody 4", "Moody 4-Moody 5", "Moody 5-Moody 6"])
        let books = try MappingModel.mappingModels(in: Self.bookFolder, versions: try ModelVersionBundle(contentsOf: Self.bookFolder.appendingPathComponent("Model.xcdatamodeld")))
        #expect(books.count == 3)

        let six = try #require(moody.last?.model)
        #expect(six.entityMappings.map(\.name) == ["Continent", "CountryToCountry", "MoodToMood"])
        #expect(six.entityMappings.map(\.mappingType) == [.add, .custom, .copy])
        #expect(six.entityMapping(named: "CountryToCountry")?.entityMigrationPolicyClassName == "Migrations.Country5ToCountry6Policy")
        #expect(!six.isInferred && !six.isExpressibleInSQL)
        let versions = try Self.moodyVersions()
        #expect(six.matches(source: try versions.model(forVersion: "Moody 5"), destination: try versions.model(forVersion: "Moody 6")))
        #expect(!six.matches(source: try versions.model(forVersion: "Moody 4"), destination: try versions.model(forVersion: "Moody 6")))
        // A hand-written expression (archived NSExpression).
        let five = try #require(moody.first { $0.name == "Moody 4-Moody 5" }?.model)
        let iso = five.entityMapping(named: "CountryToCountry")?.attributeMappings.first { $0.name == "isoContinent" }?.valueExpression
        #expect(iso.map { "\($0)" } == "$source.continent.numericISO3166Code")
        // Older Xcode: a relationship's source key path and mapping name.
        let three = try #require(moody.first?.model)
        let continentMoods = three.entityMapping(named: "ContinentToContinent")?.relationshipMappings.first { $0.name == "moods" }?.valueExpression
        #expect(continentMoods.map { "\($0)" }?.contains("$source.countries.@distinctUnionOfSets.moods") == true)
        #expect(continentMoods.map { "\($0)" }?.contains("MoodToMood") == true)
        // User info.
        let oneToTwo = try #require(books.first { $0.name == "Model1_to_Model2" }?.model)
        #expect(oneToTwo.entityMapping(named: "BookToBook")?.userInfo["modelVersion"] == .string("2"))
        #expect(oneToTwo.entityMapping(named: "Author")?.mappingType == .add)
    }

    @Test("Moody 1 to 6, step by step with the book's mapping models and policy: the data the book's tests expect")
    func moodyProgressiveMigration() throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody.moody")
        let versions = try Self.moodyVersions()
        let plan = try MigrationPlan.progressive(storeAt: url, versions: versions,
                                                 mappingModels: try MappingModel.mappingModels(in: Self.moodyFolder, versions: versions))
        #expect(plan.steps.map(\.mappingSource) == [.inferred, .mappingModel("Moody 2-Moody 3"), .mappingModel("Moody 3-Moody 4"),
                                                     .mappingModel("Moody 4-Moody 5"), .mappingModel("Moody 5-Moody 6")])
        let uuid = try SQLiteStoreMetadata.read(at: url)[SQLiteStoreMetadata.storeUUIDKey] as? String
        var progressSeen: [Float] = []
        try StoreMigrator.migrateStore(at: url, plan: plan) { step, fraction in
            if step == 4 { progressSeen.append(fraction) }
        }
        #expect(progressSeen.last == 1)
        #expect(progressSeen == progressSeen.sorted())
        try Self.expectMoody6Data(at: url, model: try versions.model(forVersion: "Moody 6"))
        // Heavyweight output keeps the store's UUID and app key.
        let metadata = try SQLiteStoreMetadata.read(at: url)
        #expect(metadata[SQLiteStoreMetadata.storeUUIDKey] as? String == uuid)
        #expect(metadata["io.objc.Moody.CloudKitUserID"] != nil)
        #expect(try MigrationCheck.layout(at: url) == MigrationCheck.freshLayout(of: try versions.model(forVersion: "Moody 6")))
        #expect(try MigrationCheck.leftovers(beside: url).isEmpty)
    }

    /// What the Core Data book's tests expect of a Moody 6 store.
    static func expectMoody6Data(at url: URL, model: ManagedObjectModel) throws {
        let objects = try MigrationCheck.objects(at: url, model: model)
        let countries = try #require(objects["Country"])
        let continents = try #require(objects["Continent"])
        let moods = try #require(objects["Mood"])
        #expect(moods.count == 4)
        func code(_ state: MigrationCheck.ObjectState?) -> String { state?.attributes["numericISO3166Code"] ?? "?" }
        let byCode = Dictionary(uniqueKeysWithValues: countries.map { (code($0.value), $0) })
        let expected: [(Int64, Int64, Double, Int64)] = [(710, 2, 464687061.782827, 10004), (704, 1, 464687061.722586, 10005), (231, 1, 464687061.668211, 10004)]
        #expect(countries.count == 3)
        for (iso, numberOfMoods, updatedAt, continentCode) in expected {
            let country = try #require(byCode["\(AttributeValue.int(iso))"]?.value, "country \(iso)")
            #expect(country.attributes["numberOfMoods"] == "\(AttributeValue.int(numberOfMoods))")
            #expect(country.attributes["updatedAt"] == "\(AttributeValue.date(Date(timeIntervalSinceReferenceDate: updatedAt)))")
            let continent = continents[country.relationships["continent"]?.first ?? -1]
            #expect(code(continent) == "\(AttributeValue.int(continentCode))", "continent of \(iso)")
            #expect(country.relationships["moods"]?.count == Int(numberOfMoods))
        }
        #expect(Set(continents.values.map { code($0) }) == ["\(AttributeValue.int(10004))", "\(AttributeValue.int(10005))"])
        let moodsByID = Dictionary(uniqueKeysWithValues: moods.values.map { ($0.attributes["remoteID"] ?? "?", $0) })
        let expectedMoods: [(String, Double, Double, Double, String, Int64)] = [
            ("64C6E1D4-7C2E-4F04-B867-1A9E2941F9FF", 464441952.529884, 13.154376, 108.193359, "a2Va3d/kSEIxJyQLiIeGCwkDOSwLmJmd", 704),
            ("47300BAD-DE7D-4B54-B94C-04A3EE4CD0C5", 464369360.734390, -26.0, 28.0, "a2Va3d/kSEIxJyQLiIeGCwkDOSwLmJmd", 710),
            ("83922344-ED0B-4ABE-B8B0-E00F4E7E1D94", 464442000.641578, 7.013668, 41.308594, "8fP4YVtDZWU3usfgRT8gTE8cTTktfHlf", 231),
            ("3A9BAEFD-7716-41C0-9FFF-A7C4BCE32679", 464369352.554507, -26.0, 28.0, "XkUa493ZlI1/epW2MSIOFQ8HQSoOTUAs", 710),
        ]
        for (remoteID, date, latitude, longitude, colors, countryCode) in expectedMoods {
            let mood = try #require(moodsByID["\(AttributeValue.string(remoteID))"], "mood \(remoteID)")
            #expect(mood.attributes["date"] == "\(AttributeValue.date(Date(timeIntervalSinceReferenceDate: date)))")
            #expect(mood.attributes["latitude"] == "\(AttributeValue.double(latitude))", "latitude of \(remoteID)")
            #expect(mood.attributes["longitude"] == "\(AttributeValue.double(longitude))", "longitude of \(remoteID)")
            #expect(mood.attributes["colors"] == "\(AttributeValue.data(Data(base64Encoded: colors)!))")
            #expect(mood.attributes["creatorID"] == "\(AttributeValue.string("__defaultOwner__"))")
            #expect(mood.attributes["rating"] == "\(AttributeValue.int(0))")
            #expect(code(countries[mood.relationships["country"]?.first ?? -1]) == "\(AttributeValue.int(countryCode))")
        }
    }

    @Test("Each Moody store migrates to version 6 with the mapping models", arguments: ["Moody 2.moody", "Moody 3.moody", "Moody 4.moody", "Moody 5.moody"])
    func moodyStoresReachVersion6(store: String) throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/" + store)
        let versions = try Self.moodyVersions()
        let plan = try MigrationPlan.progressive(storeAt: url, versions: versions,
                                                 mappingModels: try MappingModel.mappingModels(in: Self.moodyFolder, versions: versions))
        try StoreMigrator.migrateStore(at: url, plan: plan)
        try Self.expectMoody6Data(at: url, model: try versions.model(forVersion: "Moody 6"))
    }

    @Test("Moody 2 to 3: each mood gets its country's continent, and each continent its countries' moods")
    func moodyTwoToThree() throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 2.moody")
        let versions = try Self.moodyVersions()
        let plan = try MigrationPlan.progressive(storeAt: url, versions: versions, to: "Moody 3",
                                                 mappingModels: try MappingModel.mappingModels(in: Self.moodyFolder, versions: versions))
        #expect(plan.steps.count == 1 && !plan.steps[0].runsInPlace)
        try StoreMigrator.migrateStore(at: url, plan: plan)
        let objects = try MigrationCheck.objects(at: url, model: try versions.model(forVersion: "Moody 3"))
        let continents = try #require(objects["Continent"])
        let countries = try #require(objects["Country"])
        for mood in try #require(objects["Mood"]).values {
            let country = try #require(countries[mood.relationships["country"]?.first ?? -1])
            #expect(mood.relationships["continent"] == country.relationships["continent"])
        }
        let counters = Dictionary(uniqueKeysWithValues: continents.values.map { ($0.attributes["numericISO3166Code"] ?? "", $0) })
        #expect(counters["\(AttributeValue.int(10005))"]?.attributes["numberOfCountries"] == "\(AttributeValue.int(6))")
        #expect(counters["\(AttributeValue.int(10004))"]?.relationships["moods"]?.count == 3)
        #expect(counters["\(AttributeValue.int(10005))"]?.relationships["moods"]?.count == 1)
    }

    @Test("Adding a store with automatic migration prefers a mapping model beside the model's bundle to inference")
    func automaticMigrationUsesBundledMappingModel() throws {
        let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody")
        let model = try ManagedObjectModel(contentsOf: Self.moodyFolder.appendingPathComponent("Moody.xcdatamodeld"))
        try PersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(
            type: .sqlite, at: url, options: [PersistentStoreDescription.OptionKey.migrateAutomatically: "1",
                                              PersistentStoreDescription.OptionKey.inferMappingModelAutomatically: "1"])
        // Inference would leave Moody 6 without continents; the mapping model's policy makes them.
        try Self.expectMoody6Data(at: url, model: try Self.moodyVersions().model(forVersion: "Moody 6"))
    }

    @Test("A policy class that is not registered (134170), a failing policy, a cancelled migration (134120): the store is untouched")
    func failuresLeaveTheStore() throws {
        let versions = try Self.moodyVersions()
        let source = try versions.model(forVersion: "Moody 5"), destination = try versions.model(forVersion: "Moody 6")
        let mapping = try #require(try MappingModel.mappingModels(in: Self.moodyFolder, versions: versions).last?.model)
        func attempt(_ policyName: String?) throws -> CoreDataError? {
            let url = try Fixtures.copyStore("objcio+core-data/Migrations/MigrationsTests/Moody 5.moody")
            let bytes = MigrationCheck.bytes(of: url)
            var changed = mapping
            if let policyName {
                for index in changed.entityMappings.indices where changed.entityMappings[index].name == "CountryToCountry" {
                    changed.entityMappings[index].entityMigrationPolicyClassName = policyName
                }
            }
            let step = MigrationPlan.Step(sourceVersion: "Moody 5", destinationVersion: "Moody 6", sourceModel: source,
                                          destinationModel: destination, mappingModel: changed, mappingSource: .mappingModel("test"))
            let error = #expect(throws: CoreDataError.self) { try StoreMigrator.migrateStore(at: url, plan: MigrationPlan(steps: [step])) }
            #expect(MigrationCheck.bytes(of: url) == bytes)
            #expect(try MigrationCheck.leftovers(beside: url).isEmpty)
            return error
        }
        let unregistered = try attempt("Migrations.NoSuchPolicy")
        #expect(unregistered?.code == .entityMigrationPolicy)
        #expect(unregistered?.message.contains("Migrations.NoSuchPolicy") == true)
        EntityMigrationPolicy.register(FailingPolicy.self, forClassName: "Tests.FailingPolicy")
        #expect(try attempt("Tests.FailingPolicy")?.code == .entityMigrationPolicy)
        EntityMigrationPolicy.register(CancellingPolicy.self, forClassName: "Tests.CancellingPolicy")
        #expect(try attempt("Tests.CancellingPolicy")?.code == .migrationCancelled)
    }

    @Test("The books example, 1 to 2: a book's author name becomes one Author per name")
    func booksOneToTwo() throws {
        let url = try Fixtures.copyStore("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite")
        let versions = try ModelVersionBundle(contentsOf: Self.bookFolder.appendingPathComponent("Model.xcdatamodeld"))
        let before = try MigrationCheck.objects(at: url, model: try versions.model(forVersion: "Model1"))
        let plan = try MigrationPlan.progressive(storeAt: url, versions: versions, to: "Model2",
                                                 mappingModels: try MappingModel.mappingModels(in: Self.bookFolder, versions: versions))
        #expect(plan.steps.map(\.mappingSource) == [.mappingModel("Model1_to_Model2")])
        try StoreMigrator.migrateStore(at: url, plan: plan)
        let after = try MigrationCheck.objects(at: url, model: try versions.model(forVersion: "Model2"))
        let names = Set((before["Book"] ?? [:]).values.compactMap { $0.attributes["authorName"] })
        #expect(!names.isEmpty)
        let authors = try #require(after["Author"])
        #expect(Set(authors.values.compactMap { $0.attributes["name"] }) == names)
        #expect(authors.count == names.count)
        let books = try #require(after["Book"])
        #expect(books.count == before["Book"]?.count)
        #expect(Set(books.values.compactMap { $0.attributes["title"] }) == Set((before["Book"] ?? [:]).values.compactMap { $0.attributes["title"] }))
        for book in books.values { #expect(book.relationships["authors"]?.count == 1) }
        #expect(after["User"]?.count == before["User"]?.count)
    }

    @Test("The books example, 1 to 3 with its mapping models: authors from names, one file per book and user")
    func booksOneToThree() throws {
        let url = try Fixtures.copyStore("objcio+issue-4-core-data-migration/BookMigration/Model1.sqlite")
        let versions = try ModelVersionBundle(contentsOf: Self.bookFolder.appendingPathComponent("Model.xcdatamodeld"))
        let before = try MigrationCheck.objects(at: url, model: try versions.model(forVersion: "Model1"))
        let mappings = try MappingModel.mappingModels(in: Self.bookFolder, versions: versions).filter { $0.name != "Model2_to_Model3_User" }
        let plan = try MigrationPlan.progressive(storeAt: url, versions: versions, mappingModels: mappings)
        #expect(plan.steps.map(\.mappingSource) == [.mappingModel("Model1_to_Model2"), .mappingModel("Model2_to_Model3")])
        try StoreMigrator.migrateStore(at: url, plan: plan)
        let after = try MigrationCheck.objects(at: url, model: try versions.model(forVersion: "Model3"))
        let books = try #require(after["Book"]), users = try #require(after["User"]), files = try #require(after["File"])
        #expect(books.count == before["Book"]?.count && users.count == before["User"]?.count)
        let links = (before["Book"] ?? [:]).values.map { $0.relationships["user"]?.count ?? 0 }.reduce(0, +)
        #expect(files.count == links)
        for file in files.values {
            #expect(file.relationships["book"]?.count == 1)
            #expect(file.relationships["user"]?.count == 1)
        }
        #expect(Set(users.values.compactMap { $0.attributes["userId"] }) == Set((before["User"] ?? [:]).values.compactMap { $0.attributes["userId"] }))
        #expect(after["Author"]?.count == Set((before["Book"] ?? [:]).values.compactMap { $0.attributes["authorName"] }).count)
    }

    @Test("The migration manager reports monotonic progress and runs the six hooks in Core Data's order")
    func hooksInOrder() throws {
        final class Recording: EntityMigrationPolicy {
            nonisolated(unsafe) static var calls: [String] = []   // the test is serialized
            override func begin(_ mapping: EntityMapping, with manager: MigrationManager) throws { Self.calls.append("begin \(mapping.name)") }
            override func createDestinationInstances(forSource source: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
                Self.calls.append("create \(mapping.name)")
                try super.createDestinationInstances(forSource: source, in: mapping, manager: manager)
            }
            override func endInstanceCreation(forMapping mapping: EntityMapping, manager: MigrationManager) throws { Self.calls.append("endCreate \(mapping.name)") }
            override func createRelationships(forDestination destination: ManagedObject, in mapping: EntityMapping, manager: MigrationManager) throws {
                Self.calls.append("relate \(mapping.name)")
                try super.createRelationships(forDestination: destination, in: mapping, manager: manager)
            }
            override func endRelationshipCreation(forMapping mapping: EntityMapping, manager: MigrationManager) throws { Self.calls.append("endRelate \(mapping.name)") }
            override func performCustomValidation(forMapping mapping: EntityMapping, manager: MigrationManager) throws { Self.calls.append("validate \(mapping.name)") }
            override func end(_ mapping: EntityMapping, manager: MigrationManager) throws { Self.calls.append("end \(mapping.name)") }
        }
        EntityMigrationPolicy.register(Recording.self, forClassName: "Tests.Recording")
        let v1 = try LightweightMigrationTests.version1(), v2 = try LightweightMigrationTests.version2()
        let url = try LightweightMigrationTests.makeVersion1Store(history: false)
        var mapping = try MappingModel.inferredMappingModel(forSourceModel: v1, destinationModel: v2)
        for index in mapping.entityMappings.indices where mapping.entityMappings[index].name == "IEM_Copy_Tag" {
            mapping.entityMappings[index].entityMigrationPolicyClassName = "Tests.Recording"
            mapping.entityMappings[index].mappingType = .custom
        }
        let destination = try Fixtures.temporaryDirectory().appendingPathComponent("Out.sqlite")
        let manager = MigrationManager(sourceModel: v1, destinationModel: v2)
        manager.batchSize = 1
        var progress: [Float] = []
        manager.progressHandler = { progress.append($0) }
        Recording.calls = []
        try manager.migrateStore(from: url, with: mapping, to: destination)
        #expect(Recording.calls == ["begin IEM_Copy_Tag", "create IEM_Copy_Tag", "create IEM_Copy_Tag", "endCreate IEM_Copy_Tag",
                                    "relate IEM_Copy_Tag", "relate IEM_Copy_Tag", "endRelate IEM_Copy_Tag", "validate IEM_Copy_Tag", "end IEM_Copy_Tag"])
        #expect(progress == progress.sorted() && progress.last == 1)
        // Through objects, the data is the same as in place.
        let step = try LightweightMigrationTests.step(v1, v2)
        let before = try MigrationCheck.objects(at: url, model: v1)
        let after = try MigrationCheck.objects(at: destination, model: v2)
        #expect(after["Person"]?.count == 3 && after["Animal"]?.count == 5 && after["Tag"]?.count == 2)
        _ = (step, before)
    }
}
