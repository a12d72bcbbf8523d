import GRDBSQLite

/// The bytes of the strings and blobs a save binds to the statement of one row,
/// kept until that row has run, so that SQLite reads them in place.
///
/// Bound with `SQLITE_TRANSIENT`, SQLite copies every string into memory of its
/// own (an allocation, a copy and a free, a noticeable part of saving a row);
/// bound with `SQLITE_STATIC`, it reads the caller's bytes, which must then
/// stay put until the statement has run. A Swift string's bytes
/// are only lent for the length of a closure (and a small string's are a copy on
/// the stack), so the save copies them here, one row at a time:
///
/// ```swift
/// sqlite3_reset(handle)              // the previous row has run
/// bytes.beginRow()                   // its bytes can be written over
/// bytes.bindText(name, at: 4, handle)
/// bytes.bindText(email, at: 7, handle)
/// sqlite3_step(handle)               // SQLite reads them here
/// ```
///
/// Within a row, bytes that do not fit move the buffer to a larger allocation; the
/// old one stays until the next row begins, since parameters already bound point
/// into it. Values longer than ``largestCopied`` are bound with
/// `SQLITE_TRANSIENT` (for them the copy costs nothing extra), so the buffer stays
/// small. Every statement a save runs has all its parameters bound again before it
/// runs, so no statement ever reads a row's bytes after the next row began.
///
/// `@unchecked Sendable`: used only inside the store's write blocks, which its
/// database queue runs one at a time (like ``SQLiteSavePlans``, which owns it).
final class SQLiteBoundBytes: @unchecked Sendable {
    /// Values longer than this are copied by SQLite rather than kept here.
    static let largestCopied = 64 * 1024

    /// A buffer a row grew beyond this is given back when the next row begins.
    static let largestKept = 1024 * 1024
    static let initialCapacity = 1024

    private var buffer: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Buffers the current row outgrew: its bound parameters may point into them.
    private var outgrown: [UnsafeMutableRawBufferPointer] = []

    init() {
        buffer = .allocate(byteCount: Self.initialCapacity, alignment: 8)
    }

    deinit {
        buffer.deallocate()
        for old in outgrown { old.deallocate() }
    }

    /// Starts a row: the statements bound from the previous row have run.
    @inline(__always)
    func beginRow() {
        used = 0
        if !outgrown.isEmpty || buffer.count > Self.largestKept { releaseOutgrown() }
    }

    /// Binds `string` (UTF-8) to parameter `index` of `statement`; SQLite's result
    /// code.
    func bindText(_ string: String, at index: Int32, _ statement: OpaquePointer) -> Int32 {
        var string = string
        return string.withUTF8 { bytes in
            let count = sqlite3_uint64(bytes.count)
            guard bytes.count <= Self.largestCopied else {
                let start = UnsafeRawPointer(bytes.baseAddress.unsafelyUnwrapped).assumingMemoryBound(to: CChar.self)
                return sqlite3_bind_text64(statement, index, start, count, SQLiteBoundBytes.transient, UInt8(SQLITE_UTF8))
            }
            let start = keep(UnsafeRawBufferPointer(bytes)).assumingMemoryBound(to: CChar.self)
            return sqlite3_bind_text64(statement, index, start, count, nil, UInt8(SQLITE_UTF8))
        }
    }

    /// Binds `bytes` as a blob to parameter `index` of `statement` (an empty blob
    /// is a zero-length blob, not NULL); SQLite's result code.
    func bindBlob(_ bytes: UnsafeRawBufferPointer, at index: Int32, _ statement: OpaquePointer) -> Int32 {
        if bytes.isEmpty { return sqlite3_bind_zeroblob(statement, index, 0) }
        guard bytes.count <= Self.largestCopied else {
            return sqlite3_bind_blob64(statement, index, bytes.baseAddress, sqlite3_uint64(bytes.count), SQLiteBoundBytes.transient)
        }
        return sqlite3_bind_blob64(statement, index, keep(bytes), sqlite3_uint64(bytes.count), nil)
    }

    /// A copy of `bytes` that stays put until the next row begins (for no bytes, a
    /// valid address all the same: SQLite then binds an empty value, not NULL).
    private func keep(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer {
        let count = bytes.count
        if count > buffer.count - used { grow(toFit: count) }
        let start = buffer.baseAddress.unsafelyUnwrapped + used
        if let source = bytes.baseAddress, count > 0 { start.copyMemory(from: source, byteCount: count) }
        used += count
        return UnsafeRawPointer(start)
    }

    private func grow(toFit count: Int) {
        outgrown.append(buffer)
        buffer = .allocate(byteCount: Swift.max(buffer.count * 2, count), alignment: 8)
        used = 0
    }

    @inline(never)
    private func releaseOutgrown() {
        for old in outgrown { old.deallocate() }
        outgrown.removeAll(keepingCapacity: true)
        if buffer.count > Self.largestKept {
            buffer.deallocate()
            buffer = .allocate(byteCount: Self.initialCapacity, alignment: 8)
        }
    }

    /// `SQLITE_TRANSIENT`: SQLite copies the bytes before the bind returns.
    static var transient: sqlite3_destructor_type {
        unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
    }
}
