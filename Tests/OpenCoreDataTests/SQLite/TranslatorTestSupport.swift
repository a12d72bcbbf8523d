import Foundation
import GRDB
import OpenCoreDataPredicates
@testable import OpenCoreData

/// A hand-written layout in Core Data's naming, for the translator tests: tables
/// `Z<ROOT>`, columns `Z<NAME>`, entity numbers in root-name pre-order, a
/// `Z<n>_<REL>` entity column for to-ones whose destination has subentities, join
/// tables `Z_<E1#><REL1>` named by the entity whose name sorts first.
struct TranslatorTestLayout: SQLStoreLayout {
    let model: ManagedObjectModel
    let numbers: [String: Int]

    init(model: ManagedObjectModel) {
        self.model = model
        var numbers: [String: Int] = [:]
        var next = 1
        func visit(_ entity: EntityDescription) {
            numbers[entity.name] = next
            next += 1
            for sub in entity.subentities.sorted(by: { $0.name < $1.name }) { visit(sub) }
        }
        for root in model.entities.filter({ $0.superentity == nil }).sorted(by: { $0.name < $1.name }) { visit(root) }
        self.numbers = numbers
    }

    func tableName(for entity: EntityDescription) -> String? { "Z" + entity.rootEntity.name.uppercased() }
    func entityNumber(for entity: EntityDescription) -> Int? { numbers[entity.name] }

    func columnName(for property: PropertyDescription, in entity: EntityDescription) -> String? {
        if property.isTransient { return nil }
        if let relationship = property as? RelationshipDescription, relationship.isToMany { return nil }
        return "Z" + property.name.uppercased()
    }

    func entityColumnName(for relationship: RelationshipDescription, in entity: EntityDescription) -> String? {
        guard !relationship.isToMany, let destination = relationship.destinationEntity,
              !destination.subentities.isEmpty, let number = numbers[destination.name] else { return nil }
        return "Z\(number)_" + relationship.name.uppercased()
    }

    func toManyStorage(for relationship: RelationshipDescription, in entity: EntityDescription) -> ToManyStorage? {
        guard relationship.isToMany, let destination = relationship.destinationEntity,
              let inverse = relationship.inverseRelationship else { return nil }
        if !inverse.isToMany {
            return .foreignKey(table: "Z" + destination.rootEntity.name.uppercased(),
                               column: "Z" + inverse.name.uppercased(),
                               orderColumn: relationship.isOrdered ? "Z_FOK_" + inverse.name.uppercased() : nil)
        }
        guard let source = relationship.entity, let s = numbers[source.name], let d = numbers[destination.name] else { return nil }
        // The table is named from the side whose entity name sorts first.
        let table = source.name < destination.name
            ? "Z_\(s)" + relationship.name.uppercased()
            : "Z_\(d)" + inverse.name.uppercased()
        // A column is named after the relationship pointing to the entity whose keys it holds.
        return .joinTable(table: table, sourceColumn: "Z_\(s)" + inverse.name.uppercased(),
                          destinationColumn: "Z_\(d)" + relationship.name.uppercased(), orderColumn: nil)
    }
}

/// A row of the test data: an entity, a primary key, attribute values, to-one
/// destinations (by primary key) and many-to-many destinations.
struct TestRow {
    var entity: String
    var pk: Int64
    var values: [String: AttributeValue] = [:]
    var toOne: [String: Int64] = [:]
    var manyToMany: [String: [Int64]] = [:]
}

/// The same rows in an in-memory SQLite database (Core Data's layout) and in an
/// ``InMemoryStore``: fetches run on both must give the same objects in the same
/// order.
final class TranslatorFixture: @unchecked Sendable {
    static let storeIdentifier = "6F0A1C1E-1D55-4F7E-9A44-0D6B2B3A9C11"

    let model: ManagedObjectModel
    let layout: TranslatorTestLayout
    let queue: DatabaseQueue
    let memory: InMemoryStore
    let translator: SQLFetchTranslator

    init(rows: [TestRow]) throws {
        model = try TranslatorFixture.makeModel()
        try model.freeze()  // as a coordinator does: entities know their model
        layout = TranslatorTestLayout(model: model)
        translator = SQLFetchTranslator(layout: layout, storeIdentifier: TranslatorFixture.storeIdentifier)
        var configuration = Configuration()
        configuration.prepareDatabase { db in SQLiteFunctions.registerFunctions(db) }
        queue = try DatabaseQueue(configuration: configuration)
        memory = InMemoryStore(model: model, identifier: TranslatorFixture.storeIdentifier)
        try createTables()
        try insert(rows)
    }

    /// Continent -< Country -< Mood (Celebration a subentity), Country >-< Tag,
    /// Country -< City (ordered), Country.favoriteMood (to-one, no inverse).
    static func makeModel() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Continent") {
                Attribute("name", .string)
                Relationship("countries", to: "Country", inverse: "continent", toMany: true)
            }
            Entity("Country") {
                Attribute("name", .string)
                Attribute("population", .integer64)
                Attribute("area", .double)
                Attribute("code", .integer16)
                Attribute("founded", .date)
                Attribute("isMember", .boolean)
                Attribute("identifier", .uuid)
                Attribute("website", .uri)
                Attribute("flag", .binaryData)
                Attribute("gdp", .decimal)
                Attribute("scratch", .string, transient: true)
                Relationship("continent", to: "Continent", inverse: "countries")
                Relationship("moods", to: "Mood", inverse: "country", toMany: true)
                Relationship("tags", to: "Tag", inverse: "countries", toMany: true)
                Relationship("cities", to: "City", inverse: "country", toMany: true, ordered: true)
                Relationship("favoriteMood", to: "Mood")
            }
            Entity("Mood") {
                Attribute("name", .string)
                Attribute("score", .double)
                Attribute("date", .date)
                Relationship("country", to: "Country", inverse: "moods")
            }
            Entity("Celebration", parent: "Mood") {
                Attribute("guests", .integer32)
            }
            Entity("Tag") {
                Attribute("name", .string)
                Relationship("countries", to: "Country", inverse: "tags", toMany: true)
            }
            Entity("City") {
                Attribute("name", .string)
                Relationship("country", to: "Country", inverse: "cities")
            }
        }
    }

    func entity(_ name: String) -> EntityDescription {
        guard let entity = model.entitiesByName[name] else { fatalError("no entity \(name)") }
        return entity
    }

    // MARK: Schema and rows

    private func createTables() throws {
        try queue.write { db in
            for root in model.entities where root.superentity == nil {
                guard let table = layout.tableName(for: root) else { continue }
                var columns = ["Z_PK INTEGER PRIMARY KEY", "Z_ENT INTEGER", "Z_OPT INTEGER"]
                var seen = Set<String>()
                for entity in root.selfAndDescendants {
                    for property in entity.properties {
                        var names: [(String, String)] = []
                        if let attribute = property as? AttributeDescription, let column = layout.columnName(for: attribute, in: entity) {
                            names.append((column, TranslatorFixture.declaredType(attribute.attributeType)))
                        } else if let relationship = property as? RelationshipDescription, !relationship.isToMany {
                            if let column = layout.columnName(for: relationship, in: entity) { names.append((column, "INTEGER")) }
                            if let column = layout.entityColumnName(for: relationship, in: entity) { names.append((column, "INTEGER")) }
                        } else if let relationship = property as? RelationshipDescription, relationship.isToMany,
                                  case .foreignKey(_, _, let order?) = layout.toManyStorage(for: relationship, in: entity) {
                            _ = order  // the order column lives in the destination table (created below)
                        }
                        for (name, type) in names where seen.insert(name).inserted { columns.append("\(name) \(type)") }
                    }
                    // Order columns of ordered to-many relationships pointing here.
                    for other in model.entities {
                        for case let relationship as RelationshipDescription in other.properties where relationship.isToMany {
                            if case .foreignKey(let t, _, let order?) = layout.toManyStorage(for: relationship, in: other),
                               t == table, seen.insert(order).inserted {
                                columns.append("\(order) INTEGER")
                            }
                        }
                    }
                }
                try db.execute(sql: "CREATE TABLE \(table) (\(columns.joined(separator: ", ")))")
            }
            var joinTables = Set<String>()
            for entity in model.entities {
                for case let relationship as RelationshipDescription in entity.properties where relationship.isToMany {
                    if case let .joinTable(table, a, b, _) = layout.toManyStorage(for: relationship, in: entity),
                       joinTables.insert(table).inserted {
                        let pair = [a, b].sorted()
                        try db.execute(sql: "CREATE TABLE \(table) (\(pair[0]) INTEGER, \(pair[1]) INTEGER, PRIMARY KEY (\(pair[0]), \(pair[1])))")
                    }
                }
            }
        }
    }

    static func declaredType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: return "INTEGER"
        case .double, .float: return "FLOAT"
        case .decimal: return "DECIMAL"
        case .string, .uri: return "VARCHAR"
        case .date: return "TIMESTAMP"
        default: return "BLOB"
        }
    }

    private func insert(_ rows: [TestRow]) throws {
        var entityOfKey: [String: [Int64: EntityDescription]] = [:]  // root name → pk → entity
        for row in rows {
            let entity = self.entity(row.entity)
            entityOfKey[entity.rootEntity.name, default: [:]][row.pk] = entity
        }
        func objectID(_ destination: EntityDescription, _ pk: Int64) -> ManagedObjectID {
            let concrete = entityOfKey[destination.rootEntity.name]?[pk] ?? destination
            return ManagedObjectID(entity: concrete, storeIdentifier: TranslatorFixture.storeIdentifier, primaryKey: pk)
        }
        // SQLite rows.
        try queue.write { db in
            for row in rows {
                let entity = self.entity(row.entity)
                var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
                var values: [DatabaseValue] = [row.pk.databaseValue, (layout.entityNumber(for: entity) ?? 0).databaseValue, 1.databaseValue]
                for (name, value) in row.values {
                    guard let attribute = entity.attributesByName[name], let column = layout.columnName(for: attribute, in: entity) else { continue }
                    columns.append(column)
                    values.append(SQLiteValueEncoding.databaseValue(value, as: attribute.attributeType) ?? .null)
                }
                for (name, pk) in row.toOne {
                    guard let relationship = entity.relationshipsByName[name], let destination = relationship.destinationEntity,
                          let column = layout.columnName(for: relationship, in: entity) else { continue }
                    columns.append(column)
                    values.append(pk.databaseValue)
                    if let entityColumn = layout.entityColumnName(for: relationship, in: entity) {
                        columns.append(entityColumn)
                        values.append((layout.entityNumber(for: objectID(destination, pk).entity) ?? 0).databaseValue)
                    }
                }
                // Order column of an ordered to-many pointing here: the position among siblings.
                for (name, pk) in row.toOne {
                    guard let relationship = entity.relationshipsByName[name], let inverse = relationship.inverseRelationship,
                          inverse.isOrdered, let destination = relationship.destinationEntity,
                          case .foreignKey(_, _, let order?) = layout.toManyStorage(for: inverse, in: destination) else { continue }
                    let position = rows.filter { $0.entity == row.entity && $0.toOne[name] == pk }.firstIndex { $0.pk == row.pk } ?? 0
                    columns.append(order)
                    values.append((position + 1).databaseValue)
                }
                let table = layout.tableName(for: entity) ?? ""
                try db.execute(sql: "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
                               arguments: StatementArguments(values))
                for (name, pks) in row.manyToMany {
                    guard let relationship = entity.relationshipsByName[name],
                          case let .joinTable(table, source, destination, _) = layout.toManyStorage(for: relationship, in: entity) else { continue }
                    for pk in pks {
                        try db.execute(sql: "INSERT INTO \(table) (\(source), \(destination)) VALUES (?, ?)", arguments: [row.pk, pk])
                    }
                }
            }
        }
        // In-memory rows: the same values, to-many lists derived from the inverse
        // foreign keys (in row order) and the many-to-many pairs (both directions).
        var changes = SaveChanges()
        for row in rows {
            let entity = self.entity(row.entity)
            var values: [SnapshotValue] = []
            for property in entity.allProperties {
                if property is AttributeDescription {
                    values.append(.attribute(row.values[property.name] ?? .null))
                } else if let relationship = property as? RelationshipDescription, let destination = relationship.destinationEntity {
                    if !relationship.isToMany {
                        values.append(.toOne(row.toOne[property.name].map { objectID(destination, $0) }))
                    } else if let inverse = relationship.inverseRelationship, !inverse.isToMany {
                        let members = rows.filter { other in
                            self.entity(other.entity).isKindOf(entity: destination) && other.toOne[inverse.name] == row.pk
                        }
                        values.append(.toMany(members.map { objectID(destination, $0.pk) }))
                    } else if let inverse = relationship.inverseRelationship {
                        var keys = row.manyToMany[property.name] ?? []
                        for other in rows where self.entity(other.entity).isKindOf(entity: destination)
                            && (other.manyToMany[inverse.name] ?? []).contains(row.pk) && !keys.contains(other.pk) {
                            keys.append(other.pk)
                        }
                        values.append(.toMany(keys.map { objectID(destination, $0) }))
                    } else {
                        values.append(.toMany([]))
                    }
                } else {
                    values.append(.attribute(.null))
                }
            }
            changes.inserted.append(RowSnapshot(objectID: objectID(entity, row.pk), version: 1, values: values))
        }
        try memory.save(changes)
    }

    // MARK: Running fetches

    /// The primary keys SQL gives for a fetch, in order.
    func sqlKeys(_ fetch: StoreFetch) throws -> [Int64] {
        let statement = try translator.selectStatement(for: fetch)
        return try queue.read { db in
            try statement.prepare(db)
            return try Int64.fetchAll(db, sql: statement.sql, arguments: statement.statementArguments)
        }
    }

    /// The number of rows SQL counts for a fetch.
    func sqlCount(_ fetch: StoreFetch) throws -> Int {
        let statement = try translator.countStatement(for: fetch)
        return try queue.read { db in
            try Int.fetchOne(db, sql: statement.sql, arguments: statement.statementArguments) ?? -1
        }
    }

    /// The primary keys the in-memory store gives for a fetch, in order.
    func memoryKeys(_ fetch: StoreFetch) throws -> [Int64] {
        try memory.fetchRows(fetch).map { $0.objectID.primaryKey ?? 0 }
    }

    func fetch(_ entity: String, _ predicate: CorePredicate? = nil, sort: [CoreSortDescriptor] = [],
               includesSubentities: Bool = true, offset: Int = 0, limit: Int = 0) -> StoreFetch {
        var fetch = StoreFetch(entity: self.entity(entity))
        fetch.predicate = predicate
        fetch.sortDescriptors = sort
        fetch.includesSubentities = includesSubentities
        fetch.fetchOffset = offset
        fetch.fetchLimit = limit
        return fetch
    }

    /// An object ID URI of this store.
    func uri(_ entity: String, _ pk: Int64) -> AttributeValue {
        .uri(ManagedObjectID(entity: self.entity(entity), storeIdentifier: TranslatorFixture.storeIdentifier, primaryKey: pk)
            .uriRepresentation())
    }
}

// MARK: - The data

extension TranslatorFixture {
    static func date(_ year: Int, _ month: Int = 1, _ day: Int = 1) -> AttributeValue {
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = day
        components.timeZone = TimeZone(identifier: "UTC")
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return .date(calendar.date(from: components) ?? Date(timeIntervalSinceReferenceDate: 0))
    }

    static func uuid(_ n: Int) -> AttributeValue {
        .uuid(UUID(uuidString: String(format: "%08X-0000-4000-8000-000000000000", n)) ?? UUID())
    }

    /// Countries with accents, case, decomposed and precomposed letters, `ß`,
    /// characters outside the BMP and in the high BMP, `nil`s everywhere; moods
    /// (some celebrations), tags, ordered cities.
    static let rows: [TestRow] = {
        var rows: [TestRow] = [
            TestRow(entity: "Continent", pk: 1, values: ["name": "Europe"]),
            TestRow(entity: "Continent", pk: 2, values: ["name": "Asia"]),
            TestRow(entity: "Continent", pk: 3, values: ["name": "Amérique"]),
            TestRow(entity: "Continent", pk: 4, values: [:]),
        ]
        func country(_ pk: Int64, _ name: AttributeValue, population: AttributeValue = .null, area: AttributeValue = .null,
                     code: AttributeValue = .null, founded: AttributeValue = .null, isMember: AttributeValue = .null,
                     continent: Int64? = nil, tags: [Int64] = [], favorite: Int64? = nil, gdp: AttributeValue = .null,
                     flag: AttributeValue = .null, website: AttributeValue = .null) {
            var values: [String: AttributeValue] = ["name": name, "population": population, "area": area, "code": code,
                                                    "founded": founded, "isMember": isMember, "gdp": gdp, "flag": flag,
                                                    "website": website, "identifier": uuid(Int(pk))]
            values = values.filter { !$0.value.isNull }
            var toOne: [String: Int64] = [:]
            if let continent { toOne["continent"] = continent }
            if let favorite { toOne["favoriteMood"] = favorite }
            rows.append(TestRow(entity: "Country", pk: pk, values: values, toOne: toOne,
                                manyToMany: tags.isEmpty ? [:] : ["tags": tags]))
        }
        country(1, "Deutschland", population: 83_000_000, area: 357_022.5, code: 276, founded: date(1949, 5, 23),
                isMember: true, continent: 1, tags: [1], favorite: 5, gdp: .decimal(Decimal(string: "4.2")!),
                flag: .data(Data([0, 0, 0])), website: .uri(URL(string: "https://de.example")!))
        country(2, "Österreich", population: 9_000_000, area: 83_879, code: 40, founded: date(1955, 7, 27),
                isMember: true, continent: 1, tags: [1, 3], favorite: 3, gdp: .decimal(Decimal(string: "0.5")!),
                flag: .data(Data([1, 2])), website: .uri(URL(string: "https://at.example")!))
        country(3, "Sverige", population: 10_400_000, area: 450_295, code: 752, isMember: true, continent: 1, tags: [1, 2],
                gdp: .decimal(Decimal(string: "0.6")!), flag: .data(Data([1])))
        country(4, "Åland", population: 30_000, area: 1_580, code: 248, founded: date(1921, 6, 24), isMember: false,
                continent: 1, tags: [2, 4])
        country(5, "schweiz", population: 8_700_000, area: 41_285, code: 756, founded: date(1848, 9, 12), isMember: false,
                continent: 1, tags: [3])
        country(6, "Japan", population: 125_000_000, area: 377_975.25, code: 392, founded: date(1947, 5, 3),
                isMember: false, continent: 2, tags: [4], gdp: .decimal(Decimal(string: "4.2")!))
        country(7, "ÉTATS-UNIS", population: 333_000_000, area: 9_833_520, code: 840, founded: date(1776, 7, 4),
                isMember: false, continent: 3)
        country(8, .null)
        country(9, "Côte d’Ivoire", population: 28_000_000, code: 384, continent: 4)
        country(10, "Straßenland", population: 1, area: 1, code: 1, isMember: true, continent: 1, tags: [5])
        country(11, "😀land", population: 2, area: 0.5, code: -2)
        country(12, "\u{FF21}land", population: 3, area: -1.5, code: 3)
        country(13, "e\u{301}cole", population: 4, code: 4, continent: 1)
        country(14, "\u{E9}cole", population: 4, code: 5, continent: 1)
        country(15, "ZOË", population: 9_000_000, area: 83_879, isMember: false, continent: 2)
        country(16, "zoe", area: 9_000_000)
        rows += [
            TestRow(entity: "Mood", pk: 1, values: ["name": "happy", "score": 0.9, "date": date(2020)], toOne: ["country": 1]),
            TestRow(entity: "Mood", pk: 2, values: ["name": "Sad", "score": 0.1, "date": date(2021)], toOne: ["country": 1]),
            TestRow(entity: "Mood", pk: 3, values: ["name": "Zoë", "score": 0.5], toOne: ["country": 2]),
            TestRow(entity: "Mood", pk: 4, values: ["score": 0.3], toOne: ["country": 3]),
            TestRow(entity: "Celebration", pk: 5, values: ["name": "happy", "score": 1.0, "guests": 100, "date": date(2019)],
                    toOne: ["country": 6]),
            TestRow(entity: "Mood", pk: 6, values: ["name": "ÉLAN"]),
            TestRow(entity: "Celebration", pk: 7, values: ["name": "fröhlich", "score": 0.7, "guests": 5], toOne: ["country": 4]),
            TestRow(entity: "Mood", pk: 8, values: ["name": "calm", "score": 0.2], toOne: ["country": 6]),
            TestRow(entity: "Tag", pk: 1, values: ["name": "eu"]),
            TestRow(entity: "Tag", pk: 2, values: ["name": "Nordic"]),
            TestRow(entity: "Tag", pk: 3, values: ["name": "alps"]),
            TestRow(entity: "Tag", pk: 4, values: ["name": "Island"]),
            TestRow(entity: "Tag", pk: 5, values: [:]),
            TestRow(entity: "City", pk: 1, values: ["name": "Berlin"], toOne: ["country": 1]),
            TestRow(entity: "City", pk: 2, values: [:], toOne: ["country": 1]),
            TestRow(entity: "City", pk: 3, values: ["name": "München"], toOne: ["country": 1]),
            TestRow(entity: "City", pk: 4, values: ["name": "Stockholm"], toOne: ["country": 3]),
            TestRow(entity: "City", pk: 5, values: [:], toOne: ["country": 2]),
        ]
        return rows
    }()

    /// One fixture for all tests: the data is read only.
    static let shared: Result<TranslatorFixture, any Error> = Result { try TranslatorFixture(rows: rows) }

    static func make() throws -> TranslatorFixture { try shared.get() }
}
