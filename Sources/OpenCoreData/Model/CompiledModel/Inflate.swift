import Foundation

/// A raw DEFLATE (RFC 1951) decoder: what Core Data uses to compress the model kept
/// in a store's `Z_MODELCACHE` table (no zlib header, no checksum).
///
/// Stored, fixed-Huffman and dynamic-Huffman blocks are supported. The decoder is
/// written for hostile input: every read is bounds-checked, the output is capped
/// (``defaultOutputLimit`` unless told otherwise), and any malformed stream throws an
/// ``Inflate/Failure`` instead of trapping.
///
/// ```swift
/// let archive = try Inflate.decompress(blob)                 // raw DEFLATE
/// let small = try Inflate.decompress(blob, outputLimit: 1 << 20)
/// ```
enum Inflate {
    /// The largest output accepted by default: 256 MB.
    static let defaultOutputLimit = 256 << 20

    /// Why a stream could not be decompressed.
    struct Failure: Error, CustomStringConvertible, Sendable {
        /// What was wrong, with the byte offset where it was found.
        var description: String
    }

    /// Decompresses a raw DEFLATE stream. A stream with a zlib header (RFC 1950) is
    /// accepted too, for robustness: its two header bytes are skipped.
    static func decompress(_ data: Data, outputLimit: Int = defaultOutputLimit) throws -> Data {
        let bytes = [UInt8](data)
        do {
            return Data(try decode(bytes, start: 0, outputLimit: outputLimit))
        } catch let rawError {
            // A zlib wrapper: CMF (deflate, window <= 32K) + FLG with a valid check.
            if bytes.count >= 2, bytes[0] & 0x0f == 8, bytes[0] >> 4 <= 7,
               (Int(bytes[0]) << 8 | Int(bytes[1])) % 31 == 0, bytes[1] & 0x20 == 0,
               let wrapped = try? decode(bytes, start: 2, outputLimit: outputLimit) {
                return Data(wrapped)
            }
            throw rawError
        }
    }

    private static func decode(_ input: [UInt8], start: Int, outputLimit: Int) throws -> [UInt8] {
        var reader = BitReader(bytes: input, position: start)
        var output: [UInt8] = []
        output.reserveCapacity(min(max(input.count * 4, 1024), outputLimit))
        var isFinal = false
        while !isFinal {
            isFinal = try reader.bits(1) == 1
            let type = try reader.bits(2)
            switch type {
            case 0:
                try storedBlock(&reader, &output, outputLimit)
            case 1:
                try huffmanBlock(&reader, &output, outputLimit, literals: fixedTables.literals, distances: fixedTables.distances)
            case 2:
                let (literals, distances) = try dynamicTables(&reader)
                try huffmanBlock(&reader, &output, outputLimit, literals: literals, distances: distances)
            default:
                throw Failure(description: "invalid block type 3 at byte \(reader.position)")
            }
        }
        return output
    }

    // MARK: Blocks

    private static func storedBlock(_ reader: inout BitReader, _ output: inout [UInt8], _ limit: Int) throws {
        reader.alignToByte()
        let length = try reader.byteAlignedUInt16()
        let complement = try reader.byteAlignedUInt16()
        guard length == ~complement & 0xffff else {
            throw Failure(description: "stored block length \(length) does not match its complement at byte \(reader.position)")
        }
        guard output.count <= limit - length else {
            throw Failure(description: "the output exceeds the limit of \(limit) bytes")
        }
        guard let bytes = reader.byteAlignedBytes(length) else {
            throw Failure(description: "stored block of \(length) bytes runs past the end of the input")
        }
        output.append(contentsOf: bytes)
    }

    private static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                            35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                             3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                              257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                              8193, 12289, 16385, 24577]
    private static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                               7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    private static func huffmanBlock(_ reader: inout BitReader, _ output: inout [UInt8], _ limit: Int,
                                     literals: Huffman, distances: Huffman) throws {
        while true {
            let symbol = try literals.decode(&reader)
            if symbol < 256 {
                guard output.count < limit else { throw Failure(description: "the output exceeds the limit of \(limit) bytes") }
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index >= 0, index < lengthBase.count else {
                    throw Failure(description: "invalid length symbol \(symbol) at byte \(reader.position)")
                }
                let length = lengthBase[index] + (try reader.bits(lengthExtra[index]))
                let distanceSymbol = try distances.decode(&reader)
                guard distanceSymbol >= 0, distanceSymbol < distanceBase.count else {
                    throw Failure(description: "invalid distance symbol \(distanceSymbol) at byte \(reader.position)")
                }
                let distance = distanceBase[distanceSymbol] + (try reader.bits(distanceExtra[distanceSymbol]))
                guard distance <= output.count else {
                    throw Failure(description: "distance \(distance) reaches before the start of the output at byte \(reader.position)")
                }
                guard output.count <= limit - length else {
                    throw Failure(description: "the output exceeds the limit of \(limit) bytes")
                }
                var from = output.count - distance
                for _ in 0..<length {
                    output.append(output[from])
                    from += 1
                }
            }
        }
    }

    private static let codeLengthOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    private static func dynamicTables(_ reader: inout BitReader) throws -> (Huffman, Huffman) {
        let literalCount = try reader.bits(5) + 257
        let distanceCount = try reader.bits(5) + 1
        let codeLengthCount = try reader.bits(4) + 4
        guard literalCount <= 286, distanceCount <= 30 else {
            throw Failure(description: "too many literal (\(literalCount)) or distance (\(distanceCount)) codes at byte \(reader.position)")
        }
        var codeLengthLengths = [Int](repeating: 0, count: 19)
        for index in 0..<codeLengthCount {
            codeLengthLengths[codeLengthOrder[index]] = try reader.bits(3)
        }
        let codeLengthCode = try Huffman(lengths: codeLengthLengths, allowIncomplete: false, what: "code length")
        var lengths: [Int] = []
        let total = literalCount + distanceCount
        lengths.reserveCapacity(total)
        while lengths.count < total {
            let symbol = try codeLengthCode.decode(&reader)
            switch symbol {
            case 0...15:
                lengths.append(symbol)
            case 16:
                guard let previous = lengths.last else {
                    throw Failure(description: "repeat code with no previous length at byte \(reader.position)")
                }
                let repeatCount = 3 + (try reader.bits(2))
                guard lengths.count + repeatCount <= total else { throw Failure(description: "code lengths overflow at byte \(reader.position)") }
                lengths.append(contentsOf: repeatElement(previous, count: repeatCount))
            case 17, 18:
                let repeatCount = symbol == 17 ? 3 + (try reader.bits(3)) : 11 + (try reader.bits(7))
                guard lengths.count + repeatCount <= total else { throw Failure(description: "code lengths overflow at byte \(reader.position)") }
                lengths.append(contentsOf: repeatElement(0, count: repeatCount))
            default:
                throw Failure(description: "invalid code length symbol \(symbol) at byte \(reader.position)")
            }
        }
        guard lengths[256] != 0 else {
            throw Failure(description: "the block has no end-of-block code at byte \(reader.position)")
        }
        let literals = try Huffman(lengths: Array(lengths[0..<literalCount]), allowIncomplete: false, what: "literal/length")
        let distances = try Huffman(lengths: Array(lengths[literalCount..<total]), allowIncomplete: true, what: "distance")
        return (literals, distances)
    }

    private static let fixedTables: (literals: Huffman, distances: Huffman) = {
        var lengths = [Int](repeating: 8, count: 288)
        for index in 144..<256 { lengths[index] = 9 }
        for index in 256..<280 { lengths[index] = 7 }
        // The fixed codes are valid by construction; fall back to empty tables
        // rather than trapping if that ever changed.
        let literals = (try? Huffman(lengths: lengths, allowIncomplete: false, what: "fixed literal")) ?? Huffman.empty
        let distances = (try? Huffman(lengths: [Int](repeating: 5, count: 30), allowIncomplete: true, what: "fixed distance")) ?? Huffman.empty
        return (literals, distances)
    }()

    // MARK: Bits and codes

    /// Reads bits least-significant first, as DEFLATE packs them.
    private struct BitReader {
        let bytes: [UInt8]
        var position: Int
        var bitBuffer: Int = 0
        var bitCount: Int = 0

        init(bytes: [UInt8], position: Int) {
            self.bytes = bytes
            self.position = position
        }

        mutating func bits(_ count: Int) throws -> Int {
            while bitCount < count {
                guard position < bytes.count else {
                    throw Failure(description: "unexpected end of the compressed data at byte \(position)")
                }
                bitBuffer |= Int(bytes[position]) << bitCount
                position += 1
                bitCount += 8
            }
            let value = bitBuffer & ((1 << count) - 1)
            bitBuffer >>= count
            bitCount -= count
            return value
        }

        mutating func alignToByte() {
            bitBuffer = 0
            bitCount = 0
        }

        mutating func byteAlignedUInt16() throws -> Int {
            guard position <= bytes.count - 2 else {
                throw Failure(description: "unexpected end of the compressed data at byte \(position)")
            }
            let value = Int(bytes[position]) | Int(bytes[position + 1]) << 8
            position += 2
            return value
        }

        mutating func byteAlignedBytes(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, position <= bytes.count - count else { return nil }
            defer { position += count }
            return bytes[position..<(position + count)]
        }
    }

    /// A canonical Huffman code, decoded bit by bit from code-length counts
    /// (the approach of zlib's `puff.c`).
    private struct Huffman {
        var counts: [Int]
        var symbols: [Int]

        static let empty = Huffman(counts: [Int](repeating: 0, count: 16), symbols: [])

        private init(counts: [Int], symbols: [Int]) {
            self.counts = counts
            self.symbols = symbols
        }

        init(lengths: [Int], allowIncomplete: Bool, what: String) throws {
            var counts = [Int](repeating: 0, count: 16)
            for length in lengths {
                guard length >= 0, length < 16 else { throw Failure(description: "invalid \(what) code length \(length)") }
                counts[length] += 1
            }
            var left = 1
            for length in 1..<16 {
                left <<= 1
                left -= counts[length]
                guard left >= 0 else { throw Failure(description: "over-subscribed \(what) code") }
            }
            let used = lengths.count - counts[0]
            // An incomplete code is only acceptable for distances (or a single code).
            if left > 0, !allowIncomplete, used > 1 {
                throw Failure(description: "incomplete \(what) code")
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            var symbols = [Int](repeating: 0, count: lengths.count)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
            counts[0] = 0
            self.counts = counts
            self.symbols = symbols
        }

        func decode(_ reader: inout BitReader) throws -> Int {
            var code = 0
            var first = 0
            var index = 0
            for length in 1..<16 {
                code |= try reader.bits(1)
                let count = counts[length]
                if code - count < first {
                    let position = index + (code - first)
                    guard position >= 0, position < symbols.count else { break }
                    return symbols[position]
                }
                index += count
                first += count
                first <<= 1
                code <<= 1
            }
            throw Failure(description: "invalid Huffman code at byte \(reader.position)")
        }
    }
}
