import Foundation
import OpenCoreData
import OpenCoreDataPredicates
import Testing

// The examples of the DocC catalog Sources/OpenCoreData/OpenCoreData.docc that no
// other test in this folder runs, copied as written. Each test names the article
// (and section) it comes from:
//
// - landingPage                 OpenCoreData.md (the landing page's example)
// - gettingStartedManifest      GettingStarted.md, "Add the package" (the manifest
//                               fragment can't compile in a test: its product names
//                               are checked against Package.swift)
// - gettingStarted              GettingStarted.md, every other block, in order
// - parentAndChildContexts      ContextsAndConcurrency.md, "A first program" then
//                               "Parent and child contexts"
// - retryLoop                   ContextsAndConcurrency.md, "Merge policies" (the
//                               retry loop)
// - fetchingInDepth             FetchingInDepth.md, every block, in order
// - predicateLanguage           Predicates.md, "The predicate language"
// - predicatesInFetchRequests   Predicates.md, "In fetch requests"
// - fetchedResultsSnapshots     FetchedResultsControllerGuide.md, "Snapshots"
// - persistentHistory           HistoryAndGenerations.md, "Persistent history"
// - dataAccessLayer             DataAccess.md, every block, in order
// - sqliteFormat                SQLiteFormat.md, both blocks
//
// Already run elsewhere: ObjectsAndContexts.md's first program
// (GuideExampleTests), ContextsAndConcurrency.md's first program
// (ConcurrencyGuideTests), FetchedResultsControllerGuide.md's first list
// (FetchedResultsGuideTests), HistoryAndGenerations.md's query generations
// (HistoryGuideTests). TheModel.md has no Swift example.
//
// The changes, as in the other tests of this folder: the classes are prefixed
// `DocC` (managed object classes are registered by name, and this module has a
// `Mood`, a `Country`, a `Note`...), so `Mood` in an article is `DocCMood` here;
// stores go to a scratch folder rather than ~/.local/share, /var/lib or the working
// directory; an expression statement whose value the article gives in a comment
// (`moods.count`, `predicate.predicateFormat`) is an `#expect` of that value; and
// where an article uses something the reader supplies (`context`, `people`,
// `lastWeek`, `show`), the test supplies it first.

// OpenCoreData.md, GettingStarted.md and SQLiteFormat.md: `Mood`.
@ManagedEntity final class DocCMood: ManagedObject {
    @Managed var date: Date
    @Managed(default: Int16(0)) var rating: Int16
}

// ContextsAndConcurrency.md: `Entry`.
@ManagedEntity final class DocCEntry: ManagedObject {
    @Managed var title: String
    @Managed(default: Int64(0)) var views: Int64
}

// ContextsAndConcurrency.md's retry loop: the class of its `counter`.
@ManagedEntity final class DocCCounter: ManagedObject {
    @Managed(default: Int64(0)) var count: Int64
}

// FetchingInDepth.md and Predicates.md: the entities "Mood", "Country" and
// "Continent" their fetch requests and key paths name (objc.io's Moody model).
@ManagedEntity("Mood") final class DocCFetchedMood: ManagedObject {
    @Managed var date: Date
    @Managed(default: Int16(0)) var rating: Int16
    @Managed var creatorID: String?
    @Managed(inverse: "moods") var country: DocCCountry?
}

@ManagedEntity("Country") final class DocCCountry: ManagedObject {
    @Managed var numericISO3166Code: Int16
    @Managed(inverse: "country") var moods: Set<DocCFetchedMood>
    @Managed(inverse: "countries") var continent: DocCContinent?
}

@ManagedEntity("Continent") final class DocCContinent: ManagedObject {
    @Managed var numericISO3166Code: Int16
    @Managed(inverse: "continent") var countries: Set<DocCCountry>
}

// FetchedResultsControllerGuide.md: `Note`.
@ManagedEntity final class DocCNote: ManagedObject {
    @Managed var title: String
    @Managed var day: String        // the section
    @Managed var position: Int64    // the order within a day
}

// HistoryAndGenerations.md: something to save.
@ManagedEntity final class DocCBook: ManagedObject {
    @Managed var title: String
}

// DataAccess.md: `User`, its `Managed` conformance, and `SkopelosClient`.
@ManagedEntity final class DocCUser: ManagedObject {
    @Managed var firstname: String
    @Managed var lastname: String?
}

extension DocCUser: Managed {
    static var defaultSortDescriptors: [CoreSortDescriptor] { [CoreSortDescriptor(key: "firstname")] }
}

// @unchecked Sendable: as DataAccessLayer itself (its contexts keep to their queues);
// the subclass adds no stored state.
final class DocCSkopelosClient: DataAccessLayer, @unchecked Sendable {
    static let shared = try! DocCSkopelosClient(sqliteStack: "DataModel")
    override func handleError(_ error: any Error) {
        print(error)            // report it, show it, count it...
    }
}

@Suite("DocC articles' examples run as written")
struct DocCArticleTests {
    struct Failure: Error {}

    /// An integer of a dictionary result, whatever its width.
    static func integer(_ value: Any?) -> Int? {
        switch value {
        case let value as Int: value
        case let value as Int16: Int(value)
        case let value as Int32: Int(value)
        case let value as Int64: Int(value)
        default: nil
        }
    }

    // MARK: OpenCoreData.md

    @Test("OpenCoreData.md: a container, a background write, a fetch on the view context")
    func landingPage() async throws {
        let folder = try TestScratch.folder("docc-landing")
        let model = try ManagedObjectModel(classes: [DocCMood.self])
        let container = PersistentContainer(name: "Moody", managedObjectModel: model)
        // (not in the article: the store goes to the scratch folder)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("Moody.sqlite"))]
        try await container.loadPersistentStores()        // Moody.sqlite in ~/.local/share (XDG_DATA_HOME)
        container.viewContext.automaticallyMergesChangesFromParent = true

        // Write in the background...
        try await container.performBackgroundTask { context in
            let mood = DocCMood(context: context)
            mood.date = Date()
            mood.rating = 4
            try context.save()
        }

        // ...and read on the main context, which merged the save.
        let ratings = try await container.viewContext.perform {
            let request = DocCMood.fetchRequest()
            request.predicate = try CorePredicate(format: "rating >= %d", 3)
            request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
            return try container.viewContext.fetch(request).map(\.rating)
        }

        #expect(ratings == [4])
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("Moody.sqlite").path))
    }

    // MARK: GettingStarted.md

    @Test("GettingStarted.md, Add the package: the products the manifest fragment names exist")
    func gettingStartedManifest() throws {
        // The fragment, which only compiles in a package manifest:
        //     .target(name: "Moody", dependencies: [
        //         .product(name: "OpenCoreData", package: "OpenCoreData"),
        //         .product(name: "OpenCoreDataPredicates", package: "OpenCoreData"),
        //     ])
        let manifestURL = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()   // Docs
            .deletingLastPathComponent()   // OpenCoreDataTests
            .deletingLastPathComponent()   // Tests
            .deletingLastPathComponent()   // the package
            .appendingPathComponent("Package.swift")
        let manifest = try String(contentsOf: manifestURL, encoding: .utf8)
        #expect(manifest.contains(#"name: "OpenCoreData","#))
        #expect(manifest.contains(#".library(name: "OpenCoreData", targets: ["OpenCoreData"])"#))
        #expect(manifest.contains(#".library(name: "OpenCoreDataPredicates", targets: ["OpenCoreDataPredicates"])"#))
        // "OpenCoreData needs Swift 6.1 or later"
        #expect(manifest.hasPrefix("// swift-tools-version: 6.1"))
    }

    @Test("GettingStarted.md: describe the model, open a store, insert, fetch, work in the background")
    func gettingStarted() async throws {
        let folder = try TestScratch.folder("docc-getting-started")

        // Describe the model
        let model = try ManagedObjectModel(classes: [DocCMood.self])

        // Or load the model an app already has (the fixture's Moody.xcdatamodeld,
        // rather than one in the working directory)
        do {
            let model = try ManagedObjectModel(contentsOf: Fixtures.moodyModel)
            #expect(model.entitiesByName["Mood"] != nil)
            #expect(Fixtures.moodyModel.lastPathComponent == "Moody.xcdatamodeld")
        }

        // Open a store
        let container = PersistentContainer(name: "Moody", managedObjectModel: model)
        #expect(container.persistentStoreDescriptions.count == 1)
        #expect(container.persistentStoreDescriptions.first?.url
                == PersistentContainer.defaultDirectoryURL().appendingPathComponent("Moody.sqlite"))

        // "To put the file elsewhere, change the store descriptions before loading"
        container.persistentStoreDescriptions = [
            PersistentStoreDescription(url: URL(fileURLWithPath: "/var/lib/moody/Moody.sqlite")),
        ]
        #expect(container.persistentStoreDescriptions.first?.url?.path == "/var/lib/moody/Moody.sqlite")
        // (not in the article: the test's store goes to the scratch folder)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("Moody.sqlite"))]

        try await container.loadPersistentStores()   // Moody.sqlite in ~/.local/share (XDG_DATA_HOME)

        // Insert and save
        let context = container.viewContext
        try await context.perform {
            let mood = DocCMood(context: context)
            mood.date = Date()
            mood.rating = 4
            try context.save()
        }

        // Fetch with a predicate and a sort
        let ratings = try await context.perform {
            let request = DocCMood.fetchRequest()
            request.predicate = try CorePredicate(format: "rating >= %d", 3)
            request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
            return try context.fetch(request).map(\.rating)
        }
        #expect(ratings == [4])

        // Work on a background context
        container.viewContext.automaticallyMergesChangesFromParent = true

        let id = try await container.performBackgroundTask { context in
            let mood = DocCMood(context: context)
            mood.date = Date()
            mood.rating = 5
            try context.save()
            return mood.objectID
        }

        let rating = await container.viewContext.perform {
            (container.viewContext.object(with: id) as? DocCMood)?.rating
        }
        #expect(rating == 5)

        // Both moods are in the store, the newest first.
        let stored = try await container.performBackgroundTask { context in
            let request = DocCMood.fetchRequest()
            request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
            return try context.fetch(request).map(\.rating)
        }
        #expect(stored == [5, 4])
    }

    // MARK: ContextsAndConcurrency.md

    @Test("ContextsAndConcurrency.md: the first program, then a child context saved into the view context")
    func parentAndChildContexts() async throws {
        let folder = try TestScratch.folder("docc-journal")

        // A first program
        let model = try ManagedObjectModel(classes: [DocCEntry.self])
        let container = PersistentContainer(name: "Journal", managedObjectModel: model)
        // (not in the article: the store goes to the scratch folder)
        container.persistentStoreDescriptions = [PersistentStoreDescription(url: folder.appendingPathComponent("Journal.sqlite"))]
        try await container.loadPersistentStores()            // ~/.local/share/Journal.sqlite on Linux
        let viewContext = container.viewContext                // main queue, for the interface
        viewContext.automaticallyMergesChangesFromParent = true

        // Write on a background queue; hand back the object ID, not the object.
        let id = try await container.performBackgroundTask { context in
            let entry = DocCEntry(context: context)
            entry.title = "Hello"
            try context.save()
            return entry.objectID
        }

        // Read on the main queue: the same record, as this context's own object.
        let title = await viewContext.perform {
            (viewContext.object(with: id) as? DocCEntry)?.title
        }

        // Another background save; the view context merges it on its own.
        try await container.performBackgroundTask { context in
            (try context.existingObject(with: id) as? DocCEntry)?.views += 1
            try context.save()
        }

        #expect(title == "Hello")
        // (not in the article: wait for the merge, enqueued on the view context's queue)
        let views = await viewContext.perform(schedule: .enqueued) {
            (viewContext.object(with: id) as? DocCEntry)?.views
        }
        #expect(views == 1)

        // Parent and child contexts
        let editing = ManagedObjectContext(concurrencyType: .privateQueue)
        editing.parent = container.viewContext      // also sets persistentStoreCoordinator
        #expect(editing.persistentStoreCoordinator === container.persistentStoreCoordinator)
        try editing.performAndWait {
            let entry = try editing.existingObject(with: id)
            entry.setValue("Edited", forKey: "title")
            try editing.save()                      // into viewContext only
        }

        // The view context has the change, unsaved; the store still has "Hello".
        let inParent = await viewContext.perform {
            ((viewContext.object(with: id) as? DocCEntry)?.title, viewContext.hasChanges)
        }
        #expect(inParent.0 == "Edited" && inParent.1)
        let beforeParentSave = try await container.performBackgroundTask { context in
            (try context.existingObject(with: id) as? DocCEntry)?.title
        }
        #expect(beforeParentSave == "Hello")

        try await container.viewContext.perform { try container.viewContext.save() }   // to the store

        let afterParentSave = try await container.performBackgroundTask { context in
            let entry = try context.existingObject(with: id) as? DocCEntry
            return entry.map { ($0.title, $0.views) }
        }
        #expect(afterParentSave?.0 == "Edited")
        #expect(afterParentSave?.1 == 1)
    }

    @Test("ContextsAndConcurrency.md, Merge policies: the retry loop that keeps counters exact")
    func retryLoop() throws {
        let model = try ManagedObjectModel(classes: [DocCCounter.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: try TestScratch.folder("docc-counter").appendingPathComponent("Counter.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        let counter = DocCCounter(context: context)
        try context.save()
        let id = counter.objectID
        #expect(counter.count == 0)

        // Another context moves the stored counter on after `context` read it.
        let other = ManagedObjectContext(concurrencyType: .privateQueue)
        other.persistentStoreCoordinator = coordinator
        try other.performAndWait {
            let theirs = try #require(try other.existingObject(with: id) as? DocCCounter)
            theirs.count += 1
            try other.save()
        }

        // The article's loop: the first save meets the conflict, the refresh reads
        // the stored 1, the second save writes 2.
        while true {
            counter.count += 1
            do { try context.save(); break }
            catch let error as CoreDataError where error.code == .managedObjectMerge {
                context.refresh(counter, mergeChanges: false)
            }
        }

        #expect(counter.count == 2)
        let stored = try other.performAndWait {
            let theirs = try other.existingObject(with: id)
            other.refresh(theirs, mergeChanges: false)
            return (theirs as? DocCCounter)?.count
        }
        #expect(stored == 2)
    }

    // MARK: FetchingInDepth.md

    @Test("FetchingInDepth.md: objects, batches, dictionaries, templates, asynchronous fetches, batch requests")
    func fetchingInDepth() throws {
        let model = try ManagedObjectModel(classes: [DocCFetchedMood.self, DocCCountry.self, DocCContinent.self])
        // In the model: template "GoodMoods", entity Mood, predicate "rating >= $MIN"
        model.setFetchRequestTemplate(FetchRequestTemplate(entityName: "Mood", predicateFormat: "rating >= $MIN"), forName: "GoodMoods")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: try TestScratch.folder("docc-fetching").appendingPathComponent("Moody.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        // 200 moods, an hour apart: ratings 0...4 in turn, creators a, b, c in
        // turn, in Germany and South Africa in turn.
        let germany = DocCCountry(context: context)
        germany.numericISO3166Code = 276
        let southAfrica = DocCCountry(context: context)
        southAfrica.numericISO3166Code = 710
        let start = Date(timeIntervalSinceReferenceDate: 700_000_000)
        func date(_ i: Int) -> Date { start.addingTimeInterval(Double(i) * 3600) }
        func rating(_ i: Int) -> Int16 { Int16(i % 5) }
        func creator(_ i: Int) -> String { ["a", "b", "c"][i % 3] }
        func code(_ i: Int) -> Int { i % 2 == 0 ? 276 : 710 }
        for i in 0..<200 {
            let mood = DocCFetchedMood(context: context)
            mood.date = date(i)
            mood.rating = rating(i)
            mood.creatorID = creator(i)
            mood.country = i % 2 == 0 ? germany : southAfrica
        }
        try context.save()
        let matching = (0..<200).filter { rating($0) >= 3 }.sorted(by: >)
        let expectedDates = matching[40..<60].map(date)

        // Objects
        let request = FetchRequest<DocCFetchedMood>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "rating >= %d", 3)
        request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
        request.fetchLimit = 20
        request.fetchOffset = 40
        let moods = try context.fetch(request)
        #expect(moods.map(\.date) == expectedDates)

        // Batches: fetchInBatches
        do {
            request.fetchBatchSize = 50
            let moods = try context.fetchInBatches(request)   // BatchedFetchResults<Mood>
            #expect(moods.count == 20)      // moods.count: one query for the IDs of every match
            #expect(moods.loadedBatchCount == 0)
            #expect(moods[0].date == expectedDates[0])         // moods[0]: loads moods[0..<50] with one query
            #expect(moods.loadedBatchCount == 1)
            let ratings = moods.map(\.rating)                  // 50 at a time
            #expect(ratings == matching[40..<60].map(rating))
        }

        // Dictionaries, counts and aggregates
        do {
            let request = FetchRequest<[String: Any]>(entityName: "Mood")   // resultType == .dictionary
            #expect(request.resultType == .dictionary)
            request.propertiesToFetch = [
                "creatorID",                                 // an attribute
                "country",                                   // a to-one: its ManagedObjectID
                "country.numericISO3166Code",                // a key path through to-ones
                .expression(ExpressionDescription(name: "average",
                    expression: .function("average:", arguments: [.keyPath("rating")]), resultType: .double)),
            ]
            request.propertiesToGroupBy = ["creatorID", "country", "country.numericISO3166Code"]
            request.havingPredicate = try CorePredicate(format: "average > 2")
            let rows = try context.fetch(request)            // [[String: Any]]

            let count = try context.fetch(FetchRequest<Int>(entityName: "Mood"))   // [n]
            #expect(count == [200])

            // The groups (creator, country) whose average rating is above 2,
            // computed from the data.
            var ratingsByGroup: [String: [Int16]] = [:]
            for i in 0..<200 { ratingsByGroup["\(creator(i)) \(code(i))", default: []].append(rating(i)) }
            let averages = ratingsByGroup.mapValues { Double($0.reduce(0) { $0 + Int($1) }) / Double($0.count) }
            let expected = averages.filter { $0.value > 2 }
            #expect(!expected.isEmpty && expected.count < averages.count, "the having predicate keeps some groups")
            var found: [String: Double] = [:]
            for row in rows {
                #expect(row["country"] is ManagedObjectID)
                let key = "\(row["creatorID"] as? String ?? "?") \(Self.integer(row["country.numericISO3166Code"]) ?? -1)"
                found[key] = row["average"] as? Double
            }
            #expect(rows.count == expected.count)
            #expect(Set(found.keys) == Set(expected.keys))
            for (key, average) in expected {
                #expect(abs((found[key] ?? -1) - average) < 1e-9, "average of \(key)")
            }
        }

        // Templates and fetched properties
        do {
            // In the model: template "GoodMoods", entity Mood, predicate "rating >= $MIN"
            let request = try model.fetchRequestFromTemplate(withName: "GoodMoods", substitutionVariables: ["MIN": 4])
            let typed = try FetchRequest<DocCFetchedMood>(template: model.fetchRequestTemplate(forName: "GoodMoods")!,
                                                          substitutionVariables: ["MIN": 4])
            let good = try context.fetch(try #require(request))
            #expect(good.count == 40)
            let typedGood = try context.fetch(typed)
            #expect(typedGood.count == 40 && typedGood.allSatisfy { $0.rating == 4 })
        }

        // Asynchronous fetches (`show` and `cancelled` are the reader's)
        var shown: [DocCFetchedMood] = []
        func show(_ moods: [DocCFetchedMood]) { shown = moods }
        let cancelled = false

        let asynchronous = AsynchronousFetchRequest(fetchRequest: request) { result in
            if let moods = result.finalResult { show(moods) }
        }
        asynchronous.progressHandler = { progress in if cancelled { progress.cancel() } }
        let result = try context.execute(asynchronous)

        #expect(result.operationError == nil)
        #expect(result.finalResult?.map(\.date) == expectedDates)
        #expect(shown.map(\.date) == expectedDates)

        // Batch requests
        let insert = BatchInsertRequest(entityName: "Mood", objects: [["rating": 3, "date": Date()]])
        let update = BatchUpdateRequest(entityName: "Mood")
        update.predicate = try CorePredicate(format: "rating < 2")
        update.propertiesToUpdate = ["rating": try CoreExpression(format: "rating + 1")]
        let delete = BatchDeleteRequest(entityName: "Mood", predicate: try CorePredicate(format: "rating == 0"))
        delete.resultType = .objectIDs
        let deleted = try context.execute(delete).objectIDs ?? []
        ManagedObjectContext.mergeChanges(fromRemoteContextSave: [RemoteChangeKey.deleted: deleted], into: [context])

        #expect(deleted.count == 40)
        let all = FetchRequest<DocCFetchedMood>(entityName: "Mood")
        #expect(try context.count(for: all) == 160)
        // (not in the article, which builds the other two requests without running them)
        try context.execute(insert)
        try context.execute(update)
        #expect(try context.count(for: all) == 161)
        let ratingCounts = try (0...4).map { value in
            let counted = FetchRequest<DocCFetchedMood>(entityName: "Mood")
            counted.predicate = try CorePredicate(format: "rating == %d", value)
            return try context.count(for: counted)
        }
        #expect(ratingCounts == [0, 0, 80, 41, 40])
    }

    // MARK: Predicates.md

    @Test("Predicates.md, The predicate language: parse, print, evaluate, walk the tree, sort")
    func predicateLanguage() throws {
        // The reader's `people`.
        let people: [[String: Any]] = [
            ["name": "Zoë", "age": 30],
            ["name": "file10", "age": 41],
            ["name": "file2", "age": 41],
        ]

        // Read a predicate, with arguments for its format specifiers.
        let predicate = try CorePredicate(format: "name BEGINSWITH[cd] %@ AND age > %d", "jo", 30)

        // Print it as Apple does.
        #expect(predicate.predicateFormat == #"name BEGINSWITH[cd] "jo" AND age > 30"#)   // name BEGINSWITH[cd] "jo" AND age > 30

        // Evaluate it: dictionaries, arrays, AttributeValue, or any KeyValueCoding object.
        let matches = try predicate.evaluate(with: ["name": "Joël", "age": 34])      // true
        #expect(matches)

        // Walk the tree (to translate it to SQL, say).
        var walked = false
        if case .and(let parts) = predicate, case .comparison(let c) = parts[0] {
            #expect(c.leftExpression == .keyPath("name"))    // .keyPath("name")
            #expect(c.operatorType == .beginsWith)           // .beginsWith
            let options: ComparisonOptions = [.caseInsensitive, .diacriticInsensitive]
            #expect(c.options == options)                    // [.caseInsensitive, .diacriticInsensitive]
            walked = true
        }
        #expect(walked)

        // Sort by key paths with Foundation's comparison methods.
        let sorted = people.sorted(using: [
            CoreSortDescriptor(key: "age", ascending: false),
            CoreSortDescriptor(key: "name", selector: .localizedStandardCompare),
        ])
        #expect(sorted.map { $0["name"] as? String } == ["file2", "file10", "Zoë"])
    }

    @Test("Predicates.md, In fetch requests: a key path through two to-ones and a date, sorted")
    func predicatesInFetchRequests() throws {
        let model = try ManagedObjectModel(classes: [DocCFetchedMood.self, DocCCountry.self, DocCContinent.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: try TestScratch.folder("docc-predicates").appendingPathComponent("Moody.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        // The reader's data: Germany in Europe (150), South Africa in Africa (2).
        let now = Date()
        let lastWeek = now.addingTimeInterval(-7 * 86_400)
        let europe = DocCContinent(context: context)
        europe.numericISO3166Code = 150
        let africa = DocCContinent(context: context)
        africa.numericISO3166Code = 2
        let germany = DocCCountry(context: context)
        germany.numericISO3166Code = 276
        germany.continent = europe
        let southAfrica = DocCCountry(context: context)
        southAfrica.numericISO3166Code = 710
        southAfrica.continent = africa
        for (rating, daysAgo, country) in [(1, 1.0, germany), (2, 2.0, germany), (3, 10.0, germany), (4, 1.0, southAfrica)] {
            let mood = DocCFetchedMood(context: context)
            mood.rating = Int16(rating)
            mood.date = now.addingTimeInterval(-daysAgo * 86_400)
            mood.country = country
        }
        try context.save()

        let request = FetchRequest<DocCFetchedMood>(entityName: "Mood")
        request.predicate = try CorePredicate(format: "country.continent.numericISO3166Code == %d AND date > %@", 150, lastWeek)
        request.sortDescriptors = [CoreSortDescriptor(key: "date", ascending: false)]
        let moods = try context.fetch(request)

        // Germany's moods of the last week, the newest first.
        #expect(moods.map(\.rating) == [1, 2])
    }

    // MARK: FetchedResultsControllerGuide.md

    @Test("FetchedResultsControllerGuide.md, Snapshots: the asynchronous sequence of snapshots")
    func fetchedResultsSnapshots() async throws {
        // The article's first list, up to its fetch.
        let model = try ManagedObjectModel(classes: [DocCNote.self])
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .inMemory)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator

        for (title, day, position) in [("Milk", "Monday", 1), ("Bread", "Monday", 2), ("Call Ann", "Tuesday", 1)] {
            let note = DocCNote(context: context)
            note.title = title
            note.day = day
            note.position = Int64(position)
        }
        try context.save()

        let request = DocCNote.fetchRequest()
        request.sortDescriptors = [CoreSortDescriptor(key: "day"), CoreSortDescriptor(key: "position")]
        request.fetchBatchSize = 20
        let notes = FetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                             sectionNameKeyPath: "day", cacheName: nil)
        try notes.performFetch()
        // (the test's own reader of the same sequence)
        let stream = notes.snapshots

        // Snapshots
        let watching = Task {
            for await snapshot in notes.snapshots {
                print(snapshot.numberOfSections, snapshot.numberOfItems)
            }
        }

        var first: FetchedResultsSnapshot?
        for await snapshot in stream {
            first = snapshot
            break
        }
        #expect(first?.numberOfSections == 2)
        #expect(first?.numberOfItems == 3)
        #expect(first?.sectionIdentifiers == ["Monday", "Tuesday"])
        // ... and when the list goes away:
        watching.cancel()
        await watching.value   // the loop ends: the task lets go of the controller
    }

    // MARK: HistoryAndGenerations.md

    @Test("HistoryAndGenerations.md, Persistent history: another writer's changes after a token, then deleted")
    func persistentHistory() throws {
        // The reader's stack.
        let model = try ManagedObjectModel(classes: [DocCBook.self])
        let storeURL = try TestScratch.folder("docc-history").appendingPathComponent("Books.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        let context = ManagedObjectContext(concurrencyType: .mainQueue)
        context.persistentStoreCoordinator = coordinator
        var lastToken: PersistentHistoryToken? = nil

        let options = [NSPersistentHistoryTrackingKey: "1",
                       NSPersistentStoreRemoteChangeNotificationPostOptionKey: "1"]
        try coordinator.addPersistentStore(type: .sqlite, at: storeURL, options: options)

        context.name = "main"
        context.transactionAuthor = "app"          // recorded with each save
        DocCBook(context: context).title = "Ours"  // (not in the article: something to save)
        try context.save()

        // (not in the article: another writer, say an extension, saves to the same file)
        let other = PersistentStoreCoordinator(managedObjectModel: model)
        try other.addPersistentStore(type: .sqlite, at: storeURL, options: [NSPersistentHistoryTrackingKey: "1"])
        let extensionContext = ManagedObjectContext(concurrencyType: .privateQueue)
        extensionContext.persistentStoreCoordinator = other
        extensionContext.transactionAuthor = "extension"
        try extensionContext.performAndWait {
            DocCBook(context: extensionContext).title = "Theirs"
            try extensionContext.save()
        }

        // Later, or in another process: what happened since the last token we processed?
        let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken))
        for transaction in result.transactions ?? [] where transaction.author != "app" {
            for change in transaction.changes ?? [] {
                print(change.changeType, change.changedObjectID, change.updatedProperties?.map(\.name) ?? [])
            }
            lastToken = transaction.token                   // Codable: keep it on disk
        }
        try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: lastToken))

        #expect(result.transactions?.map(\.author) == ["app", "extension"])
        #expect(result.transactions?.last?.changes?.map(\.changeType) == [PersistentHistoryChangeType.insert])
        #expect(lastToken != nil && lastToken == result.transactions?.last?.token)
        let remaining = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken))
        #expect(remaining.transactions?.isEmpty == true)
    }

    // MARK: DataAccess.md

    @Test("DataAccess.md: setting it up, a subclass, reading and writing, Swift concurrency, the Managed helpers")
    func dataAccessLayer() async throws {
        // The reader's store file.
        let url = try TestScratch.folder("docc-data-access").appendingPathComponent("Users.sqlite")

        // Setting it up
        // From a model file found by name (DataModel.momd / DataModel.xcdatamodeld next
        // to the executable, in a bundle, or on a search path): there is none here,
        // so the initializer throws, naming the folders searched.
        do {
            let dataAccess = try DataAccessLayer(sqliteStack: "DataModel")
            Issue.record("a model named DataModel was found: \(dataAccess.container.managedObjectModel.entities.map(\.name))")
        } catch let error as CoreDataError {
            #expect(error.code == .fileReadNoSuchFile)
        }
        // ... or from a model in code, on a given file, or in memory for tests:
        let model = try ManagedObjectModel(classes: [DocCUser.self])
        let onDisk = try DataAccessLayer(sqliteStack: model, storeURL: url)
        let scratch = try DataAccessLayer(inMemoryStack: model)
        #expect(scratch.container.persistentStoreCoordinator.persistentStores.first?.type == .inMemory)

        // The subclass (its `shared` would need the "DataModel" model file): errors
        // go to its handleError, and the failed write leaves nothing behind.
        let client = try DocCSkopelosClient(inMemoryStack: model)
        client.writeSync { context in
            DocCUser.create(in: context).firstname = "Nobody"
            throw Failure()
        }
        let clientCount = try await client.reading { context in try DocCUser.count(in: context) }
        #expect(clientCount == 0)

        // The article's `dataAccess` is the one on disk from here on.
        let dataAccess = onDisk

        // Reading and writing
        // Write and wait until it is in the store.
        dataAccess.writeSync { context in
            let user = DocCUser.create(in: context)
            user.firstname = "John"
            user.lastname = "Doe"
        }

        // Write without waiting; the completion runs on the main queue once the main
        // context shows the change.
        dataAccess.writeAsync({ context in
            DocCUser.create(in: context).firstname = "Jane"
        }, completion: { error in
            if let error { print("not saved:", error) }
        })

        // Read on the main context.
        dataAccess.read { context in
            let users = try DocCUser.all(in: context)
            print(users.map(\.firstname))
        }

        // Chain: each step runs after the previous one's save.
        var user: DocCUser!
        dataAccess.write { context in
            user = DocCUser.create(in: context)
            user.firstname = "Ada"
        }.write { context in
            try user.inContext(context)?.remove(in: context)
        }.read { context in
            print(try DocCUser.count(in: context))
        }

        // From Swift concurrency
        let id = try await dataAccess.writing { context in
            let user = DocCUser.create(in: context)
            user.firstname = "Grace"
            return user.objectID                 // permanent once saved
        }
        let name = try await dataAccess.reading { context in
            (try context.existingObject(with: id) as? DocCUser)?.firstname
        }
        #expect(name == "Grace")
        #expect(!id.isTemporaryID)

        // The book's Managed protocol
        dataAccess.writeSync { context in
            let john = try DocCUser.findOrCreate(in: context, matching: CorePredicate(format: "firstname == %@", "John")) {
                $0.firstname = "John"
            }
            john.lastname = "Appleseed"
        }

        // Ada came and went; John was found, not made again.
        let users = try await dataAccess.reading { context in
            try DocCUser.all(in: context).map { "\($0.firstname) \($0.lastname ?? "-")" }.sorted()
        }
        #expect(users == ["Grace -", "Jane -", "John Appleseed"])
    }

    // MARK: SQLiteFormat.md

    @Test("SQLiteFormat.md: a store in Core Data's format, reopened with the manual vacuum option")
    func sqliteFormat() throws {
        let folder = try TestScratch.folder("docc-sqlite")
        let model = try ManagedObjectModel(classes: [DocCMood.self])

        do {
            let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
            // (the file in the scratch folder rather than the working directory)
            try coordinator.addPersistentStore(type: .sqlite, at: folder.appendingPathComponent("Moody.sqlite"))

            let context = ManagedObjectContext(concurrencyType: .privateQueue)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                let mood = DocCMood(context: context)
                mood.date = Date()
                mood.rating = 3
                try context.save()
            }
            for store in coordinator.persistentStores { coordinator.remove(store) }
        }

        let storeURL = folder.appendingPathComponent("Moody.sqlite")
        let coordinator = PersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(type: .sqlite, at: storeURL,
                                           options: [SQLiteStore.Option.manualVacuum: "1"])

        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        let ratings = try context.performAndWait {
            try context.fetch(DocCMood.fetchRequest()).map(\.rating)
        }
        #expect(ratings == [3])
    }
}
