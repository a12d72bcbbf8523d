#if PostgreSQLTests
import Foundation
import NIOCore
@testable import OpenCoreData
@testable import OpenCoreDataPostgreSQL
import PostgresNIO
import Testing

/// Rows packed in one array per column (`array_agg`), read back from PostgreSQL's
/// binary array format: what a server sends, and bytes no server sends, which
/// must be an error and never a trap.
@Suite struct PostgreSQLPackedRowsTests {
    /// A one-dimensional array of `elements` (nil: NULL) of `type`, as the
    /// server writes it.
    static func array(_ elements: [ByteBuffer?], type: PostgresDataType) -> ByteBuffer {
        var bytes = ByteBuffer()
        bytes.writeInteger(Int32(1))
        bytes.writeInteger(Int32(elements.contains { $0 == nil } ? 1 : 0))
        bytes.writeInteger(type.rawValue)
        bytes.writeInteger(Int32(elements.count))
        bytes.writeInteger(Int32(1))
        for element in elements {
            if var element {
                bytes.writeInteger(Int32(element.readableBytes))
                bytes.writeBuffer(&element)
            } else {
                bytes.writeInteger(Int32(-1))
            }
        }
        return bytes
    }

    static func int8(_ value: Int64) -> ByteBuffer {
        var bytes = ByteBuffer()
        bytes.writeInteger(value)
        return bytes
    }

    static func cell(_ bytes: ByteBuffer?, type: PostgresDataType) -> PostgresCell {
        PostgresCell(bytes: bytes, dataType: type, format: .binary, columnName: "", columnIndex: 0)
    }

    /// Every row's cells, decoded as integers or text (nil: NULL).
    static func read(_ cells: [PostgresCell]) throws -> [[String?]] {
        var rows = try PostgreSQLPackedRows(cells)
        var result: [[String?]] = []
        while var row = rows.next() {
            var values: [String?] = []
            while let cell = row.next() {
                switch PostgreSQLValues.databaseValue(cell).storage {
                case .null: values.append(nil)
                case .int64(let value): values.append(String(value))
                case .string(let text): values.append(text)
                default: values.append("?")
                }
            }
            if row.isMalformed { throw PostgreSQLPackedRows.malformed("row") }
            result.append(values)
        }
        return result
    }

    @Test("Columns of keys and text come back row by row, NULLs included")
    func columnsLineUp() throws {
        let keys = Self.array([Self.int8(7), Self.int8(-3), nil], type: .int8)
        let names = Self.array([ByteBuffer(string: "seven"), nil, ByteBuffer(string: "")], type: .text)
        let rows = try Self.read([Self.cell(keys, type: .int8Array), Self.cell(names, type: .textArray)])
        #expect(rows == [["7", "seven"], ["-3", nil], [nil, ""]])
        // A reader taking only the first cell of a row, then finishing the row,
        // still meets the next row's own cells.
        var packed = try PostgreSQLPackedRows([Self.cell(names, type: .textArray), Self.cell(keys, type: .int8Array)])
        var read: [[String?]] = []
        while var row = packed.next() {
            let name = row.next().flatMap { $0.bytes.map { String(buffer: $0) } }
            if read.count == 1, let key = row.next() {
                read.append([name, key.bytes.map { String(PostgreSQLValues.int64(PostgresCell(bytes: $0, dataType: .int8, format: .binary, columnName: "", columnIndex: 0))) }])
            } else {
                read.append([name])
            }
            row.finish()
        }
        #expect(read == [["seven"], [nil, "-3"], [""]])
    }

    @Test("A column of keys alone is read straight from the array; anything else is left to the cells")
    func keyColumn() throws {
        let keys = Self.array([Self.int8(7), Self.int8(-3), Self.int8(.max)], type: .int8)
        var packed = try PostgreSQLPackedRows([Self.cell(keys, type: .int8Array)])
        #expect(packed.int64Column() == [7, -3, .max])
        #expect(packed.count == 0 && packed.next() == nil)
        var none = try PostgreSQLPackedRows([Self.cell(nil, type: .int8Array)])
        #expect(none.int64Column() == [])
        // A NULL key, a second column, another type, a truncated element: nil,
        // and the cells still read every row (or throw).
        let withNull = Self.array([Self.int8(1), nil], type: .int8)
        var nulls = try PostgreSQLPackedRows([Self.cell(withNull, type: .int8Array)])
        #expect(nulls.int64Column() == nil)
        #expect(nulls.count == 2)
        #expect(try Self.read([Self.cell(withNull, type: .int8Array)]) == [["1"], [nil]])
        let names = Self.array([ByteBuffer(string: "a"), ByteBuffer(string: "b")], type: .text)
        var two = try PostgreSQLPackedRows([Self.cell(withNull, type: .int8Array), Self.cell(names, type: .textArray)])
        #expect(two.int64Column() == nil && two.count == 2)
        var text = try PostgreSQLPackedRows([Self.cell(names, type: .textArray)])
        #expect(text.int64Column() == nil && text.count == 2)
        for length in 20..<keys.readableBytes {
            var cut = try PostgreSQLPackedRows([Self.cell(keys.getSlice(at: keys.readerIndex, length: length)!, type: .int8Array)])
            #expect(cut.int64Column() == nil, "\(length) bytes")
        }
    }

    @Test("No matching row: every aggregate is NULL (or an empty array), and there is no row")
    func noRows() throws {
        #expect(try Self.read([Self.cell(nil, type: .int8Array), Self.cell(nil, type: .int4Array)]).isEmpty)
        var empty = ByteBuffer()
        empty.writeInteger(Int32(0))
        empty.writeInteger(Int32(0))
        empty.writeInteger(PostgresDataType.int8.rawValue)
        #expect(try Self.read([Self.cell(empty, type: .int8Array)]).isEmpty)
    }

    @Test("Bytes no server sends are an error: columns of different lengths, a NULL among arrays, two dimensions, a short header")
    func malformedArrays() throws {
        let two = Self.array([Self.int8(1), Self.int8(2)], type: .int8)
        let three = Self.array([Self.int8(1), Self.int8(2), Self.int8(3)], type: .int8)
        #expect(throws: CoreDataError.self) { try Self.read([Self.cell(two, type: .int8Array), Self.cell(three, type: .int8Array)]) }
        #expect(throws: CoreDataError.self) { try Self.read([Self.cell(two, type: .int8Array), Self.cell(nil, type: .int8Array)]) }
        var twoDimensional = ByteBuffer()
        for value in [Int32(2), 0, Int32(bitPattern: PostgresDataType.int8.rawValue), 1, 1, 1, 1] { twoDimensional.writeInteger(value) }
        #expect(throws: CoreDataError.self) { try Self.read([Self.cell(twoDimensional, type: .int8Array)]) }
        #expect(throws: CoreDataError.self) { try Self.read([Self.cell(ByteBuffer(bytes: [0, 0, 0, 1]), type: .int8Array)]) }
        #expect(throws: CoreDataError.self) {
            try Self.read([PostgresCell(bytes: two, dataType: .int8Array, format: .text, columnName: "", columnIndex: 0)])
        }
    }

    @Test("Every truncation of a valid array, and an element longer than what follows, is an error or fewer rows, never a trap")
    func truncatedArrays() throws {
        let keys = Self.array([Self.int8(1), nil, Self.int8(3)], type: .int8)
        let names = Self.array([ByteBuffer(string: "one"), ByteBuffer(string: "two"), nil], type: .text)
        let whole = try Self.read([Self.cell(keys, type: .int8Array), Self.cell(names, type: .textArray)])
        #expect(whole.count == 3)
        for length in 0..<names.readableBytes {
            let cut = names.getSlice(at: names.readerIndex, length: length)!
            #expect(throws: CoreDataError.self) { try Self.read([Self.cell(keys, type: .int8Array), Self.cell(cut, type: .textArray)]) }
        }
        // The first element claims 1,000 bytes.
        var long = Self.array([Self.int8(1)], type: .int8)
        long.setInteger(Int32(1_000), at: long.readerIndex + 20)
        #expect(throws: CoreDataError.self) { try Self.read([Self.cell(long, type: .int8Array)]) }
        var negative = Self.array([Self.int8(1)], type: .int8)
        negative.setInteger(Int32(-2), at: negative.readerIndex + 20)
        #expect(throws: CoreDataError.self) { try Self.read([Self.cell(negative, type: .int8Array)]) }
    }
}
#endif
