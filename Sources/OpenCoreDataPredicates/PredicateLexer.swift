import Foundation

/// A `%` format specifier: `%@`, `%K`, `%d`, `%ld`, `%f`, `%s`...
struct FormatSpecifier: Equatable {
    /// The conversion character: `@`, `K`, `d`, `f`...
    var conversion: Unicode.Scalar
    /// The length modifier: `""`, `"l"`, `"ll"`, `"h"`, `"q"`...
    var length: String

    var text: String { "%" + length + String(conversion) }

    enum Kind { case object, keyPath, integer, floatingPoint, cString, unsupported }

    var kind: Kind {
        switch conversion {
        case "@": return .object
        case "K": return .keyPath
        case "d", "i", "o", "u", "x", "X", "D", "O", "U", "c", "C": return .integer
        case "e", "E", "f", "F", "g", "G", "a", "A": return .floatingPoint
        case "s", "S": return .cString
        default: return .unsupported
        }
    }
}

enum TokenKind: Equatable {
    /// A bare word: an identifier, or a keyword (the parser decides).
    case identifier(String)
    /// `#word`: an identifier even if it is a keyword.
    case escapedIdentifier(String)
    /// `$name`
    case variable(String)
    /// `@count`, `@sum`...
    case atIdentifier(String)
    /// `sum:`, `add:to:`: a function name written as a selector.
    case selector(String)
    case integer(UInt64)
    case double(Double)
    case string(String)
    case format(FormatSpecifier)
    /// Operators and punctuation.
    case symbol(String)
    case end
}

struct Token {
    var kind: TokenKind
    /// Offset of the first scalar of the token in the format string.
    var offset: Int
}

/// Splits a format string into tokens.
struct PredicateLexer {
    let scalars: [Unicode.Scalar]
    let format: String

    init(_ format: String) {
        self.format = format
        self.scalars = Array(format.unicodeScalars)
    }

    /// Words the parser always treats as keywords (case-insensitively); a key path
    /// with one of these names must be written with `#`.
    static let reservedWords: Set<String> = [
        "AND", "OR", "IN", "NOT", "ALL", "ANY", "SOME", "NONE", "LIKE", "MATCHES",
        "CONTAINS", "BEGINSWITH", "ENDSWITH", "BETWEEN", "NULL", "NIL", "SELF", "TRUE",
        "YES", "FALSE", "NO", "ANYKEY", "SUBQUERY", "FETCH", "CAST", "TRUEPREDICATE",
        "FALSEPREDICATE", "UTI-CONFORMS-TO", "UTI-EQUALS", "FUNCTION", "TERNARY", "UNION",
        "INTERSECT", "MINUS",
    ]

    /// The operator or punctuation at `i`, longest first.
    private func symbol(at i: Int) -> String? {
        let c = scalars[i]
        let d: Unicode.Scalar = i + 1 < scalars.count ? scalars[i + 1] : " "
        switch c {
        case "*": return d == "*" ? "**" : "*"
        case "=": return d == "=" ? "==" : d == ">" ? "=>" : d == "<" ? "=<" : "="
        case "!": return d == "=" ? "!=" : "!"
        case "<": return d == ">" ? "<>" : d == "=" ? "<=" : d == "<" ? "<<" : "<"
        case ">": return d == "=" ? ">=" : d == ">" ? ">>" : ">"
        case "&": return d == "&" ? "&&" : "&"
        case "|": return d == "|" ? "||" : "|"
        case ":": return d == "=" ? ":=" : nil
        case "(", ")", "{", "}", "[", "]", ",", ".", "+", "-", "/", "^", "~", "%": return String(c)
        default: return nil
        }
    }

    func error(at offset: Int, expected: String, found: String) -> PredicateParseError {
        PredicateParseError(
            offset: characterOffset(offset), expected: expected, found: found, format: format)
    }

    /// Converts an offset in scalars to an offset in characters.
    func characterOffset(_ scalarOffset: Int) -> Int {
        let end = Swift.min(Swift.max(scalarOffset, 0), scalars.count)
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[0..<end])
        return String(view).count
    }

    static func isIdentifierStart(_ s: Unicode.Scalar) -> Bool {
        s == "_" || s.properties.isAlphabetic
    }

    static func isIdentifierContinuation(_ s: Unicode.Scalar) -> Bool {
        if s == "_" || ("0"..."9").contains(s) || s.properties.isAlphabetic { return true }
        switch s.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .decimalNumber: return true
        default: return false
        }
    }

    static func isDigit(_ s: Unicode.Scalar) -> Bool { ("0"..."9").contains(s) }

    func tokenize() throws -> [Token] {
        var tokens: [Token] = []
        var i = 0
        let n = scalars.count
        while true {
            while i < n, scalars[i].properties.isWhitespace { i += 1 }
            guard i < n else {
                tokens.append(Token(kind: .end, offset: n))
                return tokens
            }
            let start = i
            let c = scalars[i]
            if PredicateLexer.isDigit(c)
                || (c == "." && i + 1 < n && PredicateLexer.isDigit(scalars[i + 1])
                    && !PredicateLexer.endsValue(tokens.last)) {
                let (kind, next) = try lexNumber(at: i)
                tokens.append(Token(kind: kind, offset: start))
                i = next
                continue
            }
            if PredicateLexer.isIdentifierStart(c) {
                var (word, next) = readIdentifier(at: i)
                if word.uppercased() == "UTI" {
                    for suffix in ["-CONFORMS-TO", "-EQUALS"] where matchesCaseInsensitive(suffix, at: next) {
                        word += String(String.UnicodeScalarView(scalars[next..<(next + suffix.unicodeScalars.count)]))
                        next += suffix.unicodeScalars.count
                        break
                    }
                }
                if next < n, scalars[next] == ":", !(next + 1 < n && scalars[next + 1] == "=") {
                    // A selector: sum: / add:to:
                    var selector = word + ":"
                    var j = next + 1
                    while j < n, PredicateLexer.isIdentifierStart(scalars[j]) {
                        let (part, after) = readIdentifier(at: j)
                        guard after < n, scalars[after] == ":",
                              !(after + 1 < n && scalars[after + 1] == "=") else { break }
                        selector += part + ":"
                        j = after + 1
                    }
                    tokens.append(Token(kind: .selector(selector), offset: start))
                    i = j
                } else {
                    tokens.append(Token(kind: .identifier(word), offset: start))
                    i = next
                }
                continue
            }
            switch c {
            case "\"", "'":
                let (text, next) = try lexString(at: i)
                tokens.append(Token(kind: .string(text), offset: start))
                i = next
                continue
            case "$", "#", "@":
                guard i + 1 < n, PredicateLexer.isIdentifierStart(scalars[i + 1]) else {
                    throw error(at: i + 1, expected: "an identifier after '\(c)'", found: describe(at: i + 1))
                }
                let (word, next) = readIdentifier(at: i + 1)
                let kind: TokenKind
                switch c {
                case "$": kind = .variable(word)
                case "#": kind = .escapedIdentifier(word)
                default: kind = .atIdentifier(word)
                }
                tokens.append(Token(kind: kind, offset: start))
                i = next
                continue
            case "%":
                if let (specifier, next) = try lexFormatSpecifier(at: i) {
                    tokens.append(Token(kind: .format(specifier), offset: start))
                    i = next
                    continue
                }
            default:
                break
            }
            guard let symbol = symbol(at: i) else {
                throw error(at: i, expected: "a valid token", found: describe(at: i))
            }
            tokens.append(Token(kind: .symbol(symbol), offset: start))
            i += symbol.unicodeScalars.count
        }
    }

    /// Whether the token ends an operand (so that a following `.` is a key path dot,
    /// not the start of a number like `.5`).
    static func endsValue(_ token: Token?) -> Bool {
        guard let token else { return false }
        switch token.kind {
        case .identifier(let word):
            return !reservedWords.contains(word.uppercased())
        case .escapedIdentifier, .variable, .atIdentifier, .integer, .double, .string, .format:
            return true
        case .symbol(let s):
            return s == ")" || s == "]" || s == "}"
        case .selector, .end:
            return false
        }
    }

    func describe(at i: Int) -> String {
        guard i < scalars.count else { return "end of format" }
        return "'\(String(Character(scalars[i])))'"
    }

    private func matchesCaseInsensitive(_ text: String, at i: Int) -> Bool {
        let t = Array(text.unicodeScalars)
        guard i + t.count <= scalars.count else { return false }
        for k in 0..<t.count where String(scalars[i + k]).uppercased() != String(t[k]) { return false }
        // The keyword must end there.
        if i + t.count < scalars.count, PredicateLexer.isIdentifierContinuation(scalars[i + t.count]) {
            return false
        }
        return true
    }

    private func readIdentifier(at i: Int) -> (String, Int) {
        var j = i + 1
        while j < scalars.count, PredicateLexer.isIdentifierContinuation(scalars[j]) { j += 1 }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[i..<j])
        return (String(view), j)
    }

    private func lexNumber(at start: Int) throws -> (TokenKind, Int) {
        let n = scalars.count
        var i = start
        func digitValue(_ s: Unicode.Scalar) -> UInt64? {
            switch s {
            case "0"..."9": return UInt64(s.value - 48)
            case "a"..."f": return UInt64(s.value - 87)
            case "A"..."F": return UInt64(s.value - 55)
            default: return nil
            }
        }
        if scalars[i] == "0", i + 1 < n {
            let radix: UInt64?
            switch scalars[i + 1] {
            case "x", "X": radix = 16
            case "o", "O": radix = 8
            case "b", "B": radix = 2
            default: radix = nil
            }
            if let radix {
                i += 2
                var value: UInt64 = 0
                var digits = 0
                while i < n, let d = digitValue(scalars[i]), d < radix {
                    let (m, o1) = value.multipliedReportingOverflow(by: radix)
                    let (a, o2) = m.addingReportingOverflow(d)
                    if o1 || o2 {
                        throw error(at: start, expected: "an integer that fits in 64 bits", found: "a larger integer")
                    }
                    value = a
                    digits += 1
                    i += 1
                }
                guard digits > 0 else {
                    throw error(at: i, expected: "digits of the number", found: describe(at: i))
                }
                if i < n, PredicateLexer.isIdentifierContinuation(scalars[i]) {
                    throw error(at: i, expected: "the end of the number", found: describe(at: i))
                }
                return (.integer(value), i)
            }
        }
        var isInteger = true
        while i < n, PredicateLexer.isDigit(scalars[i]) { i += 1 }
        if i + 1 < n, scalars[i] == ".", PredicateLexer.isDigit(scalars[i + 1]) {
            isInteger = false
            i += 1
            while i < n, PredicateLexer.isDigit(scalars[i]) { i += 1 }
        }
        if i < n, scalars[i] == "e" || scalars[i] == "E" {
            var j = i + 1
            if j < n, scalars[j] == "+" || scalars[j] == "-" { j += 1 }
            guard j < n, PredicateLexer.isDigit(scalars[j]) else {
                throw error(at: j, expected: "the digits of an exponent", found: describe(at: j))
            }
            while j < n, PredicateLexer.isDigit(scalars[j]) { j += 1 }
            isInteger = false
            i = j
        }
        if i < n, PredicateLexer.isIdentifierContinuation(scalars[i]) {
            throw error(at: i, expected: "the end of the number", found: describe(at: i))
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[start..<i])
        let text = String(view)
        if isInteger, let value = UInt64(text) {
            return (.integer(value), i)
        }
        guard let value = Double(text) else {
            throw error(at: start, expected: "a number", found: "'\(text)'")
        }
        return (.double(value), i)
    }

    private func lexString(at start: Int) throws -> (String, Int) {
        let quote = scalars[start]
        let n = scalars.count
        var i = start + 1
        var result = String.UnicodeScalarView()
        func hexValue(_ count: Int, at j: Int) throws -> UInt32 {
            guard j + count <= n else {
                throw error(at: j, expected: "\(count) hexadecimal digits", found: "end of format")
            }
            var value: UInt32 = 0
            for k in j..<(j + count) {
                guard let d = UInt32(String(scalars[k]), radix: 16) else {
                    throw error(at: k, expected: "a hexadecimal digit", found: describe(at: k))
                }
                value = value * 16 + d
            }
            return value
        }
        while true {
            guard i < n else {
                throw error(at: start, expected: "the closing \(quote == "'" ? "'" : "\"") of the string", found: "end of format")
            }
            let c = scalars[i]
            if c == quote { return (String(result), i + 1) }
            if c != "\\" {
                result.append(c)
                i += 1
                continue
            }
            guard i + 1 < n else {
                throw error(at: start, expected: "the closing \(quote == "'" ? "'" : "\"") of the string", found: "end of format")
            }
            let e = scalars[i + 1]
            switch e {
            case "n": result.append("\n"); i += 2
            case "t": result.append("\t"); i += 2
            case "r": result.append("\r"); i += 2
            case "a": result.append("\u{07}"); i += 2
            case "b": result.append("\u{08}"); i += 2
            case "f": result.append("\u{0C}"); i += 2
            case "v": result.append("\u{0B}"); i += 2
            case "\\", "\"", "'": result.append(e); i += 2
            case "0"..."7":
                var value: UInt32 = 0
                var j = i + 1
                while j < n, j < i + 4, ("0"..."7").contains(scalars[j]) {
                    value = value * 8 + (scalars[j].value - 48)
                    j += 1
                }
                guard let scalar = Unicode.Scalar(value) else {
                    throw error(at: i, expected: "a valid character code", found: "\\\(value)")
                }
                result.append(scalar)
                i = j
            case "x":
                let value = try hexValue(2, at: i + 2)
                // Two hex digits are always a valid scalar.
                result.append(Unicode.Scalar(UInt8(value)))
                i += 4
            case "u":
                var value = try hexValue(4, at: i + 2)
                var next = i + 6
                // A UTF-16 surrogate pair written as two escapes.
                if (0xD800...0xDBFF).contains(value), next + 6 <= n, scalars[next] == "\\", scalars[next + 1] == "u",
                   let low = try? hexValue(4, at: next + 2), (0xDC00...0xDFFF).contains(low) {
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    next += 6
                }
                guard let scalar = Unicode.Scalar(value) else {
                    throw error(at: i, expected: "a valid Unicode character", found: "a lone surrogate")
                }
                result.append(scalar)
                i = next
            default:
                // Unknown escapes keep their backslash, so that regular expressions
                // (MATCHES '\\d+') and LIKE patterns survive.
                result.append("\\")
                result.append(e)
                i += 2
            }
        }
    }

    private func lexFormatSpecifier(at start: Int) throws -> (FormatSpecifier, Int)? {
        let n = scalars.count
        var i = start + 1
        guard i < n else {
            throw error(at: start, expected: "a format specifier (%@, %K, %d, %f, %s...)", found: "end of format")
        }
        if scalars[i] == "%" { return nil }  // "%%": a literal percent sign
        if scalars[i] == "@" || scalars[i] == "K" {
            return (FormatSpecifier(conversion: scalars[i], length: ""), i + 1)
        }
        // Width and precision are accepted and ignored.
        while i < n, PredicateLexer.isDigit(scalars[i]) || scalars[i] == "." { i += 1 }
        var length = ""
        for candidate in ["hh", "ll", "h", "l", "q", "L", "z", "t", "j"] {
            let cs = Array(candidate.unicodeScalars)
            if i + cs.count <= n, Array(scalars[i..<(i + cs.count)]) == cs {
                length = candidate
                i += cs.count
                break
            }
        }
        guard i < n else {
            throw error(at: start, expected: "a format specifier (%@, %K, %d, %f, %s...)", found: "end of format")
        }
        let specifier = FormatSpecifier(conversion: scalars[i], length: length)
        guard specifier.kind != .unsupported else {
            throw error(at: start, expected: "a format specifier (%@, %K, %d, %f, %s...)", found: describe(at: i))
        }
        return (specifier, i + 1)
    }
}
