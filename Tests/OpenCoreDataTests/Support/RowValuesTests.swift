import Foundation
@testable import OpenCoreData
import OpenCoreDataPredicates
import Synchronization
import Testing

/// Counts the `Data` values whose storage has been freed (see `tracked(_:)`).
private final class Releases: Sendable {
    let count = Atomic<Int>(0)

    /// A value whose bytes are freed through this counter: it counts once the
    /// last copy of the value is destroyed.
    func tracked(_ byte: UInt8) -> SnapshotValue {
        // Larger than what `Data` keeps inline (which would copy the bytes).
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 1)
        bytes.initializeMemory(as: UInt8.self, repeating: byte, count: 64)
        let data = Data(bytesNoCopy: bytes, count: 64, deallocator: .custom { [self] pointer, _ in
            pointer.deallocate()
            count.add(1, ordering: .relaxed)
        })
        return .attribute(.data(data))
    }

    var released: Int { count.load(ordering: .relaxed) }
}

/// Row values live in pages shared by the rows of one read (`RowPage`), with
/// the value semantics of an array: these tests hold them to it.
@Suite("Row values: shared pages, copy on write")
struct RowValuesTests {
    private static func int(_ n: Int64) -> SnapshotValue { .attribute(.int(n)) }

    /// Three rows of `width` values appended through one writer, as a store's read does.
    private static func read(rows: Int, width: Int, first: Int64 = 0) -> [RowValues] {
        var pages = RowPageWriter()
        return (0..<rows).map { row in
            let (page, start) = pages.beginRow(width: width)
            for column in 0..<width { page.append(int(first + Int64(row * width + column))) }
            return RowValues(page: page, start: start, count: width)
        }
    }

    private static func address(_ values: RowValues) -> UnsafeRawPointer? {
        values.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }

    @Test("Rows of one read lie side by side in a page; each reads its own values")
    func rowsShareAPage() {
        let rows = Self.read(rows: 5, width: 3)
        for (row, values) in rows.enumerated() {
            #expect(values.count == 3)
            #expect(Array(values) == (0..<3).map { Self.int(Int64(row * 3 + $0)) })
        }
        // Pages hold 1, then 4 rows: rows 1...4 are consecutive in the second page.
        let stride = MemoryLayout<SnapshotValue>.stride
        for row in 2...4 {
            #expect(Self.address(rows[row]) == Self.address(rows[row - 1])! + 3 * stride)
        }
        #expect(Self.address(rows[1]) != Self.address(rows[0])! + 3 * stride)
    }

    @Test("A write to a row in a shared page copies that row only; its neighbours keep their values")
    func writeCopiesSharedRow() {
        var rows = Self.read(rows: 5, width: 3)
        let before = Self.address(rows[2])
        rows[2][1] = Self.int(-1)
        #expect(Self.address(rows[2]) != before)
        #expect(Array(rows[2]) == [Self.int(6), Self.int(-1), Self.int(8)])
        #expect(Array(rows[1]) == [Self.int(3), Self.int(4), Self.int(5)])
        #expect(Array(rows[3]) == [Self.int(9), Self.int(10), Self.int(11)])
        // The copy is the row's own: the next write goes in place.
        let copied = Self.address(rows[2])
        rows[2][0] = Self.int(-2)
        #expect(Self.address(rows[2]) == copied)
        #expect(Array(rows[2]) == [Self.int(-2), Self.int(-1), Self.int(8)])
    }

    @Test("A copy of row values shares them until either is written; a unique page is written in place")
    func copyOnWrite() {
        var values = RowValues([Self.int(1), Self.int(2)])
        let own = Self.address(values)
        values[0] = Self.int(10)
        #expect(Self.address(values) == own)
        let copy = values
        values[1] = Self.int(20)
        #expect(Self.address(values) != own)
        #expect(Array(copy) == [Self.int(10), Self.int(2)])
        #expect(Array(values) == [Self.int(10), Self.int(20)])
        #expect(copy != values)
        #expect(values == RowValues([Self.int(10), Self.int(20)]))
        #expect(RowValues().isEmpty && RowValues() == RowValues([]))
    }

    @Test("A page's values are destroyed once, when the last row using the page goes")
    func pageDestroysItsValuesOnce() {
        let releases = Releases()
        var rows: [RowValues]? = {
            var pages = RowPageWriter()
            return (0..<5).map { row in
                let (page, start) = pages.beginRow(width: 2)
                page.append(releases.tracked(UInt8(row)))
                page.append(Self.int(Int64(row)))
                return RowValues(page: page, start: start, count: 2)
            }
        }()
        // Rows 1...4 share a page: dropping three of them frees nothing.
        var kept: RowValues? = rows![4]
        rows!.removeSubrange(1...3)
        #expect(releases.released == 0)
        // Writing a copy of the kept row copies its values (the data is shared).
        var written: RowValues? = kept
        written![1] = Self.int(-1)
        #expect(releases.released == 0)
        rows = nil
        // Row 0's page went; rows 1...4's page lives while `kept` does.
        #expect(releases.released == 1)
        kept = nil
        // Rows 1...3's data went with their page; row 4's is still the copy's.
        #expect(releases.released == 4)
        #expect(written?[0] == .attribute(.data(Data(repeating: 4, count: 64))) && written?[1] == Self.int(-1))
        written = nil
        #expect(releases.released == 5)
    }

    @Test("mapValues and init(repeating:count:) make rows of their own")
    func mappedRows() {
        let rows = Self.read(rows: 2, width: 4)
        let doubled = rows[1].mapValues { value -> SnapshotValue in
            guard case .attribute(.int(let n)) = value else { return value }
            return .attribute(.int(n * 2))
        }
        #expect(Array(doubled) == [8, 10, 12, 14].map { Self.int($0) })
        #expect(Array(rows[1]) == [4, 5, 6, 7].map { Self.int($0) })
        let nulls = RowValues(repeating: .toOne(nil), count: 3)
        #expect(Array(nulls) == [.toOne(nil), .toOne(nil), .toOne(nil)])
        #expect(RowValues(repeating: .toOne(nil), count: 0).isEmpty)
    }

    @Test("A row wider than the largest page gets a page of its own; pages stop growing at the largest")
    func pageSizes() {
        var pages = RowPageWriter()
        let wide = RowPageWriter.largestPage + 10
        let (widePage, wideStart) = pages.beginRow(width: wide)
        #expect(wideStart == 0 && widePage.room == wide)
        for _ in 0..<wide { widePage.append(.attribute(.null)) }
        var capacities: [Int] = []
        for _ in 0..<2000 {
            let (page, start) = pages.beginRow(width: 6)
            if start == 0 { capacities.append(page.room) }
            for _ in 0..<6 { page.append(.attribute(.null)) }
        }
        let largest = RowPageWriter.largestPage / 6 * 6
        // After the wide row, growth starts again: 1, 4, 16, then 64 rows of 6.
        #expect(Array(capacities.prefix(4)) == [6, 24, 96, largest])
        #expect(capacities.allSatisfy { $0 <= largest })
    }

    @Test("The layout prefetching reads matches the types'")
    func prefetchLayout() {
        let page = RowPage.make(capacity: 2)
        let offset = withExtendedLifetime(page) {
            UnsafeRawPointer(page.base) - UnsafeRawPointer(Unmanaged.passUnretained(page).toOpaque())
        }
        #expect(offset == RowPage.valuesOffset)
        #expect(MemoryLayout<RowValues>.offset(of: \RowValues.startOffset) == RowValues.startOffsetOffset)
        #expect(MemoryLayout<RowSnapshot>.offset(of: \RowSnapshot.rowValues) == Prefetching.pageOffset)
    }

    @Test("Objects of one fetch share pages; changing one leaves the others and its committed row as they were",
          arguments: allStoreTypes)
    func fetchedObjectsSharePages(storeType: PersistentStoreType) throws {
        try ObjectRegistryTests.withItems(storeType) { context, entity in
            for n in 0..<50 {
                ManagedObject(entity: entity, insertInto: context).setValue(Int64(n), forKey: "number")
            }
            try context.save()
            context.reset()
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.sortDescriptors = [CoreSortDescriptor(key: "number")]
            request.returnsObjectsAsFaults = false
            let items = try context.fetch(request)
            #expect(items.map { $0.value(forKey: "number") as? Int } == (0..<50).map { Optional($0) })
            items[7].setValue(Int64(700), forKey: "number")
            #expect(items[6].value(forKey: "number") as? Int == 6)
            #expect(items[8].value(forKey: "number") as? Int == 8)
            #expect(items[7].committedValues(forKeys: ["number"])["number"] as? Int == 7)
            #expect(items[7].changedValues()["number"] as? Int == 700)
            #expect(items.filter(\.hasChanges).count == 1)
            try context.save()
            context.reset()
            let numbers = try context.fetch(request).map { $0.value(forKey: "number") as? Int }
            #expect(numbers == ((0..<50).filter { $0 != 7 } + [700]).map { Optional($0) })
        }
    }

    @Test("A fault keeps its fetched row where an object keeps its committed row: neither shows as the other",
          arguments: allStoreTypes)
    func faultRowAndCommittedRow(storeType: PersistentStoreType) throws {
        try ObjectRegistryTests.withItems(storeType) { context, entity in
            for n in 0..<3 { ManagedObject(entity: entity, insertInto: context).setValue(Int64(n), forKey: "number") }
            try context.save()
            context.reset()
            let request = FetchRequest<ManagedObject>(entityName: "Item")
            request.sortDescriptors = [CoreSortDescriptor(key: "number")]
            let items = try context.fetch(request)
            let item = items[1]
            // A fault with its row: no committed row, no changes.
            #expect(item.isFault && item.faultRow != nil)
            #expect(item.committedRow == nil && item.committedVersion == nil)
            #expect(!item.hasChanges && item.changedValues().isEmpty)
            // Fired from its row: the row is now its committed row.
            #expect(item.value(forKey: "number") as? Int == 1)
            #expect(item.committedValues(forKeys: ["number"])["number"] as? Int == 1)
            #expect(item.faultRow == nil && item.committedVersion == 1)
            #expect(!item.hasChanges)
            // Turned back into a fault: its committed row goes, and it fires from
            // the store (which another context changed), not from an old row.
            context.refresh(item, mergeChanges: false)
            #expect(item.isFault && item.faultRow == nil && item.committedRow == nil)
            let other = ManagedObjectContext(concurrencyType: .privateQueue)
            other.persistentStoreCoordinator = context.persistentStoreCoordinator
            try other.performAndWait {
                let same = try other.existingObject(with: item.objectID)
                same.setValue(Int64(100), forKey: "number")
                try other.save()
            }
            #expect(item.value(forKey: "number") as? Int == 100)
            #expect(item.committedValues(forKeys: ["number"])["number"] as? Int == 100)
            // A fault whose row is older than a save fires from the store too.
            #expect(items[2].isFault)
            try other.performAndWait {
                let same = try other.existingObject(with: items[2].objectID)
                same.setValue(Int64(200), forKey: "number")
                try other.save()
            }
            #expect(items[2].value(forKey: "number") as? Int == 200)
            #expect(!items[2].hasChanges)
        }
    }
}
