/// A block of row values shared by the rows of one read: one allocation for many
/// rows, and their values destroyed together when the last row using the page goes.
///
/// A store's reader appends each row's values to its current page (see
/// ``RowPageWriter``) and hands out ``RowValues`` that point into it. An object
/// made from such a row reads its values in place until its first change, which
/// copies them into a page of its own (copy on write, as an array would).
///
/// The values of a row whose object has gone stay in the page until every row of
/// the page has gone: a page is small (at most ``RowPageWriter/largestPage``
/// values), so what an object kept alive holds on to is bounded.
package final class RowPage: ManagedBuffer<RowPage.Header, SnapshotValue> {
    package struct Header {
        /// The values initialized so far (the page's first `count` elements).
        var count: Int
        /// The values the page has room for.
        let capacity: Int
    }

    /// A new, empty page with room for `capacity` values.
    static func make(capacity: Int) -> RowPage {
        let buffer = RowPage.create(minimumCapacity: capacity) { _ in Header(count: 0, capacity: capacity) }
        return unsafeDowncast(buffer, to: RowPage.self)
    }

    /// Where a page's values start, from the page's address: after the object's
    /// header (two words) and the page's `Header` (a constant the optimizer folds;
    /// RowValuesTests checks it against a page).
    @inline(__always)
    static var valuesOffset: Int {
        let headerEnd = 2 * MemoryLayout<Int>.size + MemoryLayout<Header>.size
        let alignment = MemoryLayout<SnapshotValue>.alignment
        return (headerEnd + alignment - 1) & ~(alignment - 1)
    }

    /// The page's header, through a pointer: `header` is a stored property of the
    /// class, and each access to it would pay a dynamic exclusivity check.
    @inline(__always)
    var head: UnsafeMutablePointer<Header> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The page's first value.
    @inline(__always)
    package var base: UnsafeMutablePointer<SnapshotValue> {
        withUnsafeMutablePointerToElements { $0 }
    }

    /// Room left for values.
    @inline(__always)
    var room: Int { head.pointee.capacity - head.pointee.count }

    /// Appends a value (the caller checked there is room).
    @inline(__always)
    package func append(_ value: consuming SnapshotValue) {
        let head = self.head
        let count = head.pointee.count
        (base + count).initialize(to: value)
        head.pointee.count = count + 1
    }

    /// Copies `count` values into uninitialized memory, one at a time: each copied
    /// by the enum's own code (`initialize(from:count:)` goes through the
    /// runtime's generic array copy, an indirect call per value).
    @inline(__always)
    static func copy(_ count: Int, from source: UnsafePointer<SnapshotValue>, to target: UnsafeMutablePointer<SnapshotValue>) {
        for index in 0..<count {
            (target + index).initialize(to: source[index])
        }
    }

    deinit {
        // One value at a time, each destroyed by the enum's own code (a count of
        // values at once goes through the runtime's generic array destruction,
        // an indirect call per value).
        let base = self.base
        for index in 0..<head.pointee.count {
            _ = (base + index).move()
        }
    }
}

/// The values of one row, indexed like its entity's `allProperties`: a slice of a
/// ``RowPage``, with value semantics (a write to values whose page something else
/// also uses first copies them into a page of their own).
///
/// It stands where an array of values would: a managed object's current values,
/// its committed row and its fault row, and a ``RowSnapshot``'s values.
///
/// ```swift
/// var values = RowValues([.attribute(.string("Ann")), .toOne(nil)])
/// values[0] = .attribute(.string("Bob"))    // in place: nothing shares the page
/// let copy = values                          // shares it
/// values[0] = .attribute(.null)              // copies, then writes
/// ```
// @unchecked Sendable: a page shared by copies is never written (a write to a
// shared page copies it first), so copies on other threads see immutable values.
struct RowValues: RandomAccessCollection, MutableCollection, @unchecked Sendable {
    /// Nil for no values.
    private var page: RowPage?
    private(set) var startOffset: Int32
    private var storedCount: Int32

    /// Where a `RowValues` keeps its place in its page, after the page's reference
    /// (for `Prefetching`; RowValuesTests checks it).
    @inline(__always)
    static var startOffsetOffset: Int { MemoryLayout<RowPage?>.size }

    /// No values.
    init() {
        page = nil
        startOffset = 0
        storedCount = 0
    }

    /// The `count` values at `start` in `page`.
    init(page: RowPage, start: Int, count: Int) {
        self.page = count == 0 ? nil : page
        startOffset = Int32(truncatingIfNeeded: start)
        storedCount = Int32(truncatingIfNeeded: count)
    }

    /// A copy of `values`, in a page of their own.
    init(_ values: [SnapshotValue]) {
        self.init()
        guard !values.isEmpty else { return }
        let page = RowPage.make(capacity: values.count)
        values.withUnsafeBufferPointer { source in
            RowPage.copy(source.count, from: source.baseAddress!, to: page.base)
        }
        page.head.pointee.count = values.count
        self.page = page
        storedCount = Int32(truncatingIfNeeded: values.count)
    }

    /// `count` copies of `value`, in a page of their own.
    init(repeating value: SnapshotValue, count: Int) {
        self.init()
        guard count > 0 else { return }
        let page = RowPage.make(capacity: count)
        page.base.initialize(repeating: value, count: count)
        page.head.pointee.count = count
        self.page = page
        storedCount = Int32(truncatingIfNeeded: count)
    }

    @inline(__always) var startIndex: Int { 0 }
    @inline(__always) var endIndex: Int { Int(storedCount) }
    @inline(__always) var count: Int { Int(storedCount) }
    @inline(__always) var isEmpty: Bool { storedCount == 0 }

    /// The first value (undefined when there is none).
    @inline(__always)
    private var base: UnsafeMutablePointer<SnapshotValue> {
        page.unsafelyUnwrapped.base + Int(startOffset)
    }

    subscript(index: Int) -> SnapshotValue {
        @inline(__always) get {
            precondition(index >= 0 && index < count, "RowValues index out of range")
            return base[index]
        }
        @inline(__always) _modify {
            precondition(index >= 0 && index < count, "RowValues index out of range")
            makeUnique()
            yield &base[index]
        }
    }

    /// Makes the page the values' own before a write.
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&page) { copyToOwnPage() }
    }

    @inline(never)
    private mutating func copyToOwnPage() {
        guard page != nil else { return }
        self = copied()
    }

    /// A copy of the values in a page of their own (made now: no write pending).
    func copied() -> RowValues {
        guard page != nil else { return RowValues() }
        let copy = RowPage.make(capacity: count)
        withUnsafeBufferPointer { RowPage.copy(count, from: $0.baseAddress!, to: copy.base) }
        copy.head.pointee.count = count
        return RowValues(page: copy, start: 0, count: count)
    }

    /// Calls `body` with the values in place.
    @inline(__always)
    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<SnapshotValue>) throws -> R) rethrows -> R {
        guard page != nil else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try withExtendedLifetime(page) { try body(UnsafeBufferPointer(start: base, count: count)) }
    }

    func withContiguousStorageIfAvailable<R>(_ body: (UnsafeBufferPointer<SnapshotValue>) throws -> R) rethrows -> R? {
        try withUnsafeBufferPointer(body)
    }

    /// The values transformed one by one, in a page of their own.
    func mapValues(_ transform: (SnapshotValue) throws -> SnapshotValue) rethrows -> RowValues {
        guard page != nil else { return RowValues() }
        let mapped = RowPage.make(capacity: count)
        try withUnsafeBufferPointer { values in
            for value in values { mapped.append(try transform(value)) }
        }
        return RowValues(page: mapped, start: 0, count: count)
    }

    /// The values as an array.
    var array: [SnapshotValue] { withUnsafeBufferPointer { $0.map { $0 } } }
}

extension RowValues: Equatable {
    static func == (lhs: RowValues, rhs: RowValues) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.page === rhs.page && lhs.startOffset == rhs.startOffset { return true }
        return lhs.elementsEqual(rhs)
    }
}

extension RowValues: ExpressibleByArrayLiteral {
    init(arrayLiteral elements: SnapshotValue...) {
        self.init(elements)
    }
}

/// Appends rows to pages for one read, a new page whenever a row does not fit in
/// the current one. Pages grow with the read (a read of one row gets a page of
/// one row) up to ``largestPage`` values.
package struct RowPageWriter {
    /// The largest page, in values (a page of that many values is about 12 KB).
    static let largestPage = 384
    private var page: RowPage?
    /// The rows the next page is sized for.
    private var nextRows = 1

    package init() {}

    /// Makes room for a row of `width` values and returns the page and where the
    /// row starts; append its values with ``RowPage/append(_:)``.
    @inline(__always)
    package mutating func beginRow(width: Int) -> (page: RowPage, start: Int) {
        if let page, page.room >= width { return (page, page.head.pointee.count) }
        return beginRowInNewPage(width: width)
    }

    @inline(never)
    private mutating func beginRowInNewPage(width: Int) -> (page: RowPage, start: Int) {
        let rows = nextRows
        nextRows = Swift.min(nextRows * 4, Swift.max(1, RowPageWriter.largestPage / Swift.max(width, 1)))
        let page = RowPage.make(capacity: Swift.max(width, rows * width))
        self.page = page
        return (page, 0)
    }
}
