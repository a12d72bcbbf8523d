import Foundation

/// A raw DEFLATE compressor (RFC 1951, no zlib or gzip header), the counterpart of
/// ``Inflate``: what a store's `Z_MODELCACHE.Z_CONTENT` holds.
///
/// The input is matched with LZ77 over a 32 KiB window (hash chains on 3-byte
/// prefixes, a bounded chain walk, greedy matching) and written as fixed-Huffman
/// blocks; a stretch that would not shrink (random data) is written as stored
/// blocks instead, so the output is never more than a few bytes per 64 KiB larger
/// than the input. Dynamic Huffman blocks are not produced: the output is larger
/// than zlib's, but every inflater reads it.
///
/// ```swift
/// let blob = Deflate.compress(archive)
/// try Inflate.decompress(blob) == archive   // true
/// ```
enum Deflate {
    /// Compresses `data` as a raw DEFLATE stream.
    static func compress(_ data: Data) -> Data {
        let input = [UInt8](data)
        var writer = BitWriter()
        if input.isEmpty {
            // One final fixed block holding only the end-of-block code.
            writer.write(1, count: 1)
            writer.write(1, count: 2)
            writeFixedLiteral(256, &writer)
            return Data(writer.finish())
        }
        let tokens = tokenize(input)
        // Split the tokens into groups of at most ~60 KiB of input; each group becomes
        // one fixed block or stored blocks, whichever is smaller.
        var groupStart = 0
        var inputStart = 0
        while groupStart < tokens.count {
            var index = groupStart
            var covered = 0
            var fixedBits = 7  // the end-of-block code
            while index < tokens.count, covered < 60_000 {
                let token = tokens[index]
                if token.distance == 0 {
                    fixedBits += token.length < 144 ? 8 : 9
                    covered += 1
                } else {
                    let (code, _, lengthExtra) = lengthCode(Int(token.length))
                    let (_, _, distanceExtra) = distanceCode(Int(token.distance))
                    fixedBits += (code < 280 ? 7 : 8) + lengthExtra + 5 + distanceExtra
                    covered += Int(token.length)
                }
                index += 1
            }
            let isLast = index == tokens.count
            let storedBits = covered * 8 + 40
            if fixedBits + 3 <= storedBits {
                writer.write(isLast ? 1 : 0, count: 1)
                writer.write(1, count: 2)
                for token in tokens[groupStart..<index] {
                    if token.distance == 0 {
                        writeFixedLiteral(Int(token.length), &writer)
                    } else {
                        let (code, base, extra) = lengthCode(Int(token.length))
                        writeFixedLiteral(code, &writer)
                        if extra > 0 { writer.write(UInt32(Int(token.length) - base), count: extra) }
                        let (distance, distanceBase, distanceExtra) = distanceCode(Int(token.distance))
                        writer.writeReversed(UInt32(distance), count: 5)
                        if distanceExtra > 0 { writer.write(UInt32(Int(token.distance) - distanceBase), count: distanceExtra) }
                    }
                }
                writeFixedLiteral(256, &writer)
            } else {
                // Stored blocks of at most 65,535 bytes each.
                var position = inputStart
                let end = inputStart + covered
                while position < end {
                    let size = min(65_535, end - position)
                    writer.write(isLast && position + size == end ? 1 : 0, count: 1)
                    writer.write(0, count: 2)
                    writer.alignToByte()
                    writer.appendByte(UInt8(size & 0xff)); writer.appendByte(UInt8(size >> 8))
                    let complement = ~UInt16(size)
                    writer.appendByte(UInt8(complement & 0xff)); writer.appendByte(UInt8(complement >> 8))
                    writer.appendBytes(input[position..<(position + size)])
                    position += size
                }
            }
            groupStart = index
            inputStart += covered
        }
        return Data(writer.finish())
    }

    /// A literal (`distance` 0, the byte in `length`) or a back reference.
    struct Token {
        var length: UInt16
        var distance: UInt16
    }

    static let windowSize = 32_768
    static let minimumMatch = 3
    static let maximumMatch = 258
    static let maximumChain = 64
    private static let hashBits = 15

    /// Greedy LZ77 over hash chains.
    static func tokenize(_ input: [UInt8]) -> [Token] {
        var tokens: [Token] = []
        tokens.reserveCapacity(input.count / 2)
        let hashSize = 1 << hashBits
        var head = [Int32](repeating: -1, count: hashSize)
        var previous = [Int32](repeating: -1, count: windowSize)
        let count = input.count
        @inline(__always) func hash(_ position: Int) -> Int {
            let value = Int(input[position]) << 16 | Int(input[position + 1]) << 8 | Int(input[position + 2])
            return (value &* 2_654_435_761) >> (32 - hashBits) & (hashSize - 1)
        }
        @inline(__always) func insert(_ position: Int) {
            guard position + 2 < count else { return }
            let key = hash(position)
            previous[position & (windowSize - 1)] = head[key]
            head[key] = Int32(position)
        }
        var position = 0
        while position < count {
            var bestLength = 0
            var bestDistance = 0
            if position + 2 < count {
                var candidate = Int(head[hash(position)])
                var chain = 0
                let limit = min(maximumMatch, count - position)
                while candidate >= 0, position - candidate <= windowSize, chain < maximumChain {
                    if input[candidate + bestLength] == input[position + bestLength] || bestLength == 0 {
                        var length = 0
                        while length < limit, input[candidate + length] == input[position + length] { length += 1 }
                        if length > bestLength {
                            bestLength = length
                            bestDistance = position - candidate
                            if length == limit { break }
                        }
                    }
                    let next = Int(previous[candidate & (windowSize - 1)])
                    if next >= candidate { break }
                    candidate = next
                    chain += 1
                }
            }
            if bestLength >= minimumMatch {
                tokens.append(Token(length: UInt16(bestLength), distance: UInt16(bestDistance)))
                for offset in 0..<bestLength { insert(position + offset) }
                position += bestLength
            } else {
                tokens.append(Token(length: UInt16(input[position]), distance: 0))
                insert(position)
                position += 1
            }
        }
        return tokens
    }

    // MARK: Codes

    private static let lengthBases: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                             35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    private static let lengthExtras: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                              3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    private static let distanceBases: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                               257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                               8193, 12_289, 16_385, 24_577]
    private static let distanceExtras: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                                7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// The literal/length code (257...285), its base length and extra bit count.
    static func lengthCode(_ length: Int) -> (code: Int, base: Int, extra: Int) {
        var index = lengthBases.count - 1
        while lengthBases[index] > length { index -= 1 }
        return (257 + index, lengthBases[index], lengthExtras[index])
    }

    /// The distance code (0...29), its base distance and extra bit count.
    static func distanceCode(_ distance: Int) -> (code: Int, base: Int, extra: Int) {
        var index = distanceBases.count - 1
        while distanceBases[index] > distance { index -= 1 }
        return (index, distanceBases[index], distanceExtras[index])
    }

    /// Writes a literal/length symbol with the fixed Huffman code (RFC 1951 3.2.6).
    private static func writeFixedLiteral(_ symbol: Int, _ writer: inout BitWriter) {
        switch symbol {
        case 0...143: writer.writeReversed(UInt32(0x30 + symbol), count: 8)
        case 144...255: writer.writeReversed(UInt32(0x190 + symbol - 144), count: 9)
        case 256...279: writer.writeReversed(UInt32(symbol - 256), count: 7)
        default: writer.writeReversed(UInt32(0xC0 + symbol - 280), count: 8)
        }
    }

    /// Least-significant-bit-first output.
    struct BitWriter {
        private(set) var bytes: [UInt8] = []
        private var buffer: UInt64 = 0
        private var bitCount = 0

        /// Appends the low `count` bits of `value`, least significant first.
        mutating func write(_ value: UInt32, count: Int) {
            buffer |= UInt64(value & UInt32(truncatingIfNeeded: (1 << count) - 1)) << UInt64(bitCount)
            bitCount += count
            while bitCount >= 8 {
                bytes.append(UInt8(truncatingIfNeeded: buffer))
                buffer >>= 8
                bitCount -= 8
            }
        }

        /// Appends a Huffman code, most significant bit first.
        mutating func writeReversed(_ code: UInt32, count: Int) {
            var reversed: UInt32 = 0
            for bit in 0..<count where code & (1 << UInt32(count - 1 - bit)) != 0 { reversed |= 1 << UInt32(bit) }
            write(reversed, count: count)
        }

        mutating func alignToByte() {
            if bitCount > 0 { write(0, count: 8 - bitCount) }
        }

        /// Appends a byte; the writer must be byte-aligned.
        mutating func appendByte(_ byte: UInt8) { bytes.append(byte) }

        mutating func appendBytes(_ slice: ArraySlice<UInt8>) { bytes.append(contentsOf: slice) }

        mutating func finish() -> [UInt8] {
            alignToByte()
            return bytes
        }
    }
}
