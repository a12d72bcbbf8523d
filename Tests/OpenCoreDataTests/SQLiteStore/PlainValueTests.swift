import Foundation
import GRDB
@testable import OpenCoreData
import OpenCoreDataPredicates
import Testing

/// Plain attributes (numbers, strings, dates, Booleans) are bound to SQLite straight
/// from their values and read back through the C API; validation takes a short path
/// for them. These tests pin down that the short paths keep every value and every
/// validation failure of the general ones.
@Suite("SQLite: plain attribute values round-trip; their validation")
struct PlainValueTests {
    static func model() throws -> ManagedObjectModel {
        try ManagedObjectModel {
            Entity("Sample", className: "ManagedObject") {
                Attribute("small", .integer16)
                Attribute("medium", .integer32)
                Attribute("large", .integer64)
                Attribute("flag", .boolean)
                Attribute("real", .double)
                Attribute("single", .float)
                Attribute("text", .string)
                Attribute("when", .date)
                Attribute("required", .string, optional: false)
            }
        }
    }

    static func stack(_ directory: URL) throws -> (PersistentStoreCoordinator, ManagedObjectContext) {
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try model())
        _ = try coordinator.addPersistentStore(type: .sqlite, at: directory.appendingPathComponent("Samples.sqlite"))
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return (coordinator, context)
    }

    /// Runs `body` on the queue of a new context on the store in `directory`, with a
    /// new (inserted) sample.
    static func withNewSample(in directory: URL, _ body: (ManagedObjectContext, ManagedObject, PersistentStoreCoordinator) throws -> Void) throws {
        let (coordinator, context) = try stack(directory)
        try context.performAndWait {
            let entity = try #require(coordinator.managedObjectModel.entitiesByName["Sample"])
            try body(context, ManagedObject(entity: entity, insertInto: context), coordinator)
        }
    }

    @Test("Edge values of every plain type are read back as saved, in another coordinator")
    func roundTrip() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let texts = ["", "a\u{0}b", "naïve 🦊 日本", String(repeating: "x", count: 1000)]
        let dates = [Date(timeIntervalSinceReferenceDate: -1e9), Date(timeIntervalSinceReferenceDate: 0.125)]
        do {
            let (coordinator, context) = try Self.stack(directory)
            try context.performAndWait {
                let entity = coordinator.managedObjectModel.entitiesByName["Sample"]!
                for (i, text) in texts.enumerated() {
                    let sample = ManagedObject(entity: entity, insertInto: context)
                    sample.setValue(i, forKey: "small")
                    sample.setValue(i == 0 ? Int(Int32.min) : i, forKey: "medium")
                    sample.setValue(i == 0 ? Int(Int64.max) : -i, forKey: "large")
                    sample.setValue(i % 2 == 0, forKey: "flag")
                    sample.setValue(i == 1 ? nil : Double(i) / 3, forKey: "real")
                    sample.setValue(Double(i) * 0.5, forKey: "single")
                    sample.setValue(text, forKey: "text")
                    sample.setValue(i < dates.count ? dates[i] : nil, forKey: "when")
                    sample.setValue("r\(i)", forKey: "required")
                }
                try context.save()
            }
        }
        let (_, context) = try Self.stack(directory)
        try context.performAndWait {
            let request = FetchRequest<ManagedObject>(entityName: "Sample")
            request.sortDescriptors = [CoreSortDescriptor(key: "small", ascending: true)]
            let samples = try context.fetch(request)
            #expect(samples.count == texts.count)
            for (i, sample) in samples.enumerated() {
                #expect(sample.attributeValue(forKey: "small") == .int(Int64(i)))
                #expect(sample.attributeValue(forKey: "medium") == .int(i == 0 ? Int64(Int32.min) : Int64(i)))
                #expect(sample.attributeValue(forKey: "large") == .int(i == 0 ? Int64.max : Int64(-i)))
                #expect(sample.attributeValue(forKey: "flag") == .bool(i % 2 == 0))
                #expect(sample.attributeValue(forKey: "real") == (i == 1 ? .null : .double(Double(i) / 3)))
                #expect(sample.attributeValue(forKey: "single") == .double(Double(i) * 0.5))
                #expect(sample.attributeValue(forKey: "text") == .string(texts[i]))
                #expect(sample.attributeValue(forKey: "when") == (i < dates.count ? .date(dates[i]) : .null))
            }
        }
    }

    @Test("Values stored in another storage class than the attribute's read as the general conversion reads them")
    func foreignStorageClasses() throws {
        // A hand-edited or damaged store: SQLite keeps whatever was written. The
        // fetch's short path decodes the common pairs of storage class and type
        // itself; every value must come back exactly as the general conversion
        // (`SQLiteValueEncoding`) gives it for the same column.
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let columns: [(key: String, column: String, type: AttributeType, values: [String])] = [
            ("small", "ZSMALL", .integer16, ["3.9", "'42'", "'x'", "NULL", "-7"]),
            ("flag", "ZFLAG", .boolean, ["0.0", "'1'", "2.5", "NULL", "2"]),
            ("real", "ZREAL", .double, ["7", "'2.5'", "X'00'", "NULL", "0.25"]),
            ("single", "ZSINGLE", .float, ["-3", "'1e3'", "'y'", "1.5", "NULL"]),
            ("text", "ZTEXT", .string, ["12", "1.5", "X'6869'", "NULL", "'t'"]),
            ("when", "ZWHEN", .date, ["100", "'5'", "X'01'", "NULL", "0.5"]),
        ]
        let rows = columns[0].values.count
        do {
            let (coordinator, context) = try Self.stack(directory)
            try context.performAndWait {
                let entity = try #require(coordinator.managedObjectModel.entitiesByName["Sample"])
                for i in 0..<rows {
                    let sample = ManagedObject(entity: entity, insertInto: context)
                    sample.setValue(1000 + i, forKey: "medium")
                    sample.setValue("r\(i)", forKey: "required")
                }
                try context.save()
            }
        }
        let path = directory.appendingPathComponent("Samples.sqlite").path
        /// Replaces the table's declaration (a new connection reads it).
        func declare(_ sql: String) throws {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA writable_schema = ON")
                try db.execute(sql: "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'ZSAMPLE'", arguments: [sql])
                let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
                try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
                try db.execute(sql: "PRAGMA writable_schema = OFF")
            }
            try queue.close()
        }
        // The attribute columns lose their declared types while the values are
        // written (no affinity, as in a store another tool wrote): SQLite then keeps
        // each value's own storage class, where Core Data's declared types would
        // convert most of them. The declaration is put back for the store to open.
        let declared = try DatabaseQueue(path: path).read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'ZSAMPLE'")
        }
        let typed = try #require(declared)
        let names = try DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info('ZSAMPLE') ORDER BY cid")
        }
        try declare("CREATE TABLE ZSAMPLE (" + names.map { $0 == "Z_PK" ? "Z_PK INTEGER PRIMARY KEY" : $0 }.joined(separator: ", ") + ")")
        var expected: [Int64: [String: AttributeValue]] = [:]
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            for i in 0..<rows {
                let assignments = columns.map { "\($0.column) = \($0.values[i])" }.joined(separator: ", ")
                try db.execute(sql: "UPDATE ZSAMPLE SET \(assignments) WHERE ZMEDIUM = \(1000 + i)")
            }
            for row in try Row.fetchAll(db, sql: "SELECT ZMEDIUM, \(columns.map(\.column).joined(separator: ", ")) FROM ZSAMPLE") {
                var values: [String: AttributeValue] = [:]
                for (index, column) in columns.enumerated() {
                    values[column.key] = SQLiteValueEncoding.attributeValue(row[index + 1] as DatabaseValue, as: column.type)
                }
                expected[row[0]] = values
            }
            // Each value kept its storage class.
            #expect(try String.fetchOne(db, sql: "SELECT typeof(ZREAL) FROM ZSAMPLE WHERE ZMEDIUM = 1000") == "integer")
            #expect(try String.fetchOne(db, sql: "SELECT typeof(ZTEXT) FROM ZSAMPLE WHERE ZMEDIUM = 1001") == "real")
        }
        try queue.close()
        try declare(typed)
        #expect(expected.count == rows)
        // The general conversion's answers, spot-checked.
        #expect(expected[1000]?["small"] == .int(3))
        #expect(expected[1001]?["small"] == .int(42))
        #expect(expected[1000]?["real"] == .double(7))
        #expect(expected[1002]?["flag"] == .bool(true))
        #expect(expected[1000]?["text"] == .string("12"))
        #expect(expected[1002]?["text"] == .string("hi"))
        #expect(expected[1001]?["when"] == .date(Date(timeIntervalSinceReferenceDate: 5)))
        let (_, context) = try Self.stack(directory)
        try context.performAndWait {
            let samples = try context.fetch(FetchRequest<ManagedObject>(entityName: "Sample"))
            #expect(samples.count == rows)
            for sample in samples {
                guard case .int(let medium) = sample.attributeValue(forKey: "medium") else {
                    Issue.record("a sample without its number"); continue
                }
                for column in columns {
                    // Equal values of the same kind (`.int(7)` equals `.double(7)`).
                    let value = sample.attributeValue(forKey: column.key)
                    let wanted = expected[medium]?[column.key]
                    #expect(value == wanted && Mirror(reflecting: value).children.first?.label == wanted.flatMap { Mirror(reflecting: $0).children.first?.label },
                            "\(column.key) of sample \(medium): \(value), expected \(String(describing: wanted))")
                }
            }
        }
    }

    @Test("A missing mandatory value and a value of the wrong type still fail validation, and nothing is saved")
    func validation() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.withNewSample(in: directory) { context, sample, coordinator in
            sample.setValue(1, forKey: "small")
            func expectSaveFails(_ code: CoreDataError.Code, key: String) {
                let error = #expect(throws: CoreDataError.self) { try context.save() }
                #expect(error?.code == code)
                #expect(error?.key == key)
            }
            expectSaveFails(.validationMissingMandatoryProperty, key: "required")
            sample.setValue("present", forKey: "required")
            // A string where an integer belongs (set raw, as a bad import would).
            sample.setPrimitiveValue("not a number", forKey: "medium")
            expectSaveFails(.managedObjectValidation, key: "medium")
            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.persistentStoreCoordinator = coordinator
            let stored = try other.performAndWait { try other.count(for: FetchRequest<ManagedObject>(entityName: "Sample")) }
            #expect(stored == 0)
        }
    }
    @Test("Updates bind plain values as inserts do: every type changed and saved is read back, unchanged ones stay")
    func updates() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let when = Date(timeIntervalSinceReferenceDate: 12_345.5)
        do {
            try Self.withNewSample(in: directory) { context, sample, _ in
                sample.setValue(1, forKey: "small")
                sample.setValue("before", forKey: "text")
                sample.setValue(2.5, forKey: "real")
                sample.setValue("r", forKey: "required")
                try context.save()
                sample.setValue(Int(Int16.max), forKey: "small")
                sample.setValue(Int(Int32.max), forKey: "medium")
                sample.setValue(Int(Int64.min), forKey: "large")
                sample.setValue(true, forKey: "flag")
                sample.setValue(nil, forKey: "real")
                sample.setValue(Float(0.25), forKey: "single")
                sample.setValue("after 🦊\u{0}end", forKey: "text")
                sample.setValue(when, forKey: "when")
                #expect(sample.isUpdated)
                try context.save()
                #expect(!sample.hasChanges)
            }
        }
        let (_, context) = try Self.stack(directory)
        try context.performAndWait {
            let sample = try #require(try context.fetch(FetchRequest<ManagedObject>(entityName: "Sample")).first)
            #expect(sample.attributeValue(forKey: "small") == .int(Int64(Int16.max)))
            #expect(sample.attributeValue(forKey: "medium") == .int(Int64(Int32.max)))
            #expect(sample.attributeValue(forKey: "large") == .int(Int64.min))
            #expect(sample.attributeValue(forKey: "flag") == .bool(true))
            #expect(sample.attributeValue(forKey: "real") == .null)
            #expect(sample.attributeValue(forKey: "single") == .double(0.25))
            #expect(sample.attributeValue(forKey: "text") == .string("after 🦊\u{0}end"))
            #expect(sample.attributeValue(forKey: "when") == .date(when))
            #expect(sample.attributeValue(forKey: "required") == .string("r"))
        }
    }

    @Test("setValue converts values of the common exact types as the general conversion does")
    func setValueConversions() throws {
        let entity = try #require(try Self.model().entitiesByName["Sample"])
        let values: [(Any?, String)] = [
            ("text", "text"), (String(repeating: "long ", count: 10), "text"), (42, "large"), (42, "real"), (1.5, "real"),
            (1.5, "large"), (Date(timeIntervalSinceReferenceDate: 7), "when"), (Int32(7), "medium"), (Float(0.5), "single"),
            (true, "flag"), (1, "flag"), (Optional("wrapped") as Any, "text"), ("12", "large"), (nil, "text"),
            (NSNumber(value: 3), "small"),
        ]
        for (value, key) in values {
            let attribute = try #require(entity.attributesByName[key])
            let general = AttributeValue(anyValue: value)
            let expected = AttributeValueCoercion.coerce(general, to: attribute.attributeType) ?? general
            #expect(ManagedObject.attributeValue(from: value, for: attribute) == expected, "\(String(describing: value)) for \(key)")
        }
    }

    @Test("Setting a value equal to the saved one is no change; NaN set again is no change; a new value is")
    func unchangedValues() throws {
        let directory = try Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.withNewSample(in: directory) { context, sample, _ in
            let text = String(repeating: "same ", count: 8)
            sample.setValue(text, forKey: "text")
            sample.setValue(Double.nan, forKey: "real")
            sample.setValue(0.0, forKey: "single")
            sample.setValue("r", forKey: "required")
            try context.save()
            // An equal string in other storage, the same NaN, and -0.0 == 0.0.
            sample.setValue(String(repeating: "same ", count: 4) + String(repeating: "same ", count: 4), forKey: "text")
            sample.setValue(Double.nan, forKey: "real")
            sample.setValue(-0.0, forKey: "single")
            #expect(sample.changedValues().isEmpty)
            #expect(!sample.isUpdated)
            sample.setValue(text + "!", forKey: "text")
            #expect(Set(sample.changedValues().keys) == ["text"])
            #expect(sample.isUpdated)
        }
    }
}
