import OpenCoreDataCSupport

/// Cache hints for walking many objects or rows in order.
///
/// A large save or fetch touches each of its objects several times, in passes over
/// all of them: by the next pass, an object made 100,000 objects ago (and the array
/// holding its values) is long out of the cache, and each first read waits for
/// memory. Asking for the objects or rows a few places ahead lets those misses
/// overlap with the work on the current one. A hint only: the processor may ignore
/// it, and it never faults.
///
/// ```swift
/// rows.withUnsafeBufferPointer { rows in
///     for index in rows.indices {
///         Prefetching.values(of: rows, at: index + Prefetching.distance)
///         write(rows[index])
///     }
/// }
/// ```
enum Prefetching {
    /// How many places ahead to ask for (the work on one object or row takes
    /// about as long as a miss to memory).
    static let distance = 8

    /// Where a row keeps the reference to its values' page, and their place in it.
    static let pageOffset = MemoryLayout<RowSnapshot>.offset(of: \RowSnapshot.rowValues) ?? 0

    /// Asks for the values of the row at `index` (nothing when out of range).
    /// Reads the page reference's bits, without retaining the page.
    @inline(__always)
    static func values(of rows: UnsafeBufferPointer<RowSnapshot>, at index: Int) {
        guard index < rows.count, let base = rows.baseAddress else { return }
        let row = UnsafeRawPointer(base + index)
        guard let page = row.load(fromByteOffset: pageOffset, as: UnsafeRawPointer?.self) else { return }
        let start = Int(row.load(fromByteOffset: pageOffset + RowValues.startOffsetOffset, as: Int32.self))
        // The row's first values, three cache lines (five values of 32 bytes; a
        // saved row's page holds that row alone, after a 32-byte header).
        let values = page + RowPage.valuesOffset + start * MemoryLayout<SnapshotValue>.stride
        ocd_prefetch(values)
        ocd_prefetch(values + 64)
        ocd_prefetch(values + 128)
    }

    /// Asks for the object at `index` (nothing when out of range), without
    /// retaining it: its first three cache lines, which hold its ID, state flags
    /// and the reference to its values.
    @inline(__always)
    static func object(of objects: UnsafeBufferPointer<ManagedObject>, at index: Int) {
        guard index < objects.count, let base = objects.baseAddress else { return }
        guard let object = UnsafeRawPointer(base + index).load(as: UnsafeRawPointer?.self) else { return }
        ocd_prefetch(object)
        ocd_prefetch(object + 64)
        ocd_prefetch(object + 128)
    }
}
