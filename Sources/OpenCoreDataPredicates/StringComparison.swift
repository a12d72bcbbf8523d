import Foundation

/// String comparisons as Foundation performs them for predicates: literal equality,
/// case and diacritic folding (`[c]`, `[d]`), prefix/suffix/substring tests, `LIKE`
/// wildcards and `MATCHES` regular expressions.
enum StringComparison {

    // MARK: Folding

    /// The string as `[c]`/`[d]` compare it: case folded (full Unicode folding, so
    /// `ß` is `ss`), canonically decomposed (so precomposed and decomposed `É` are the
    /// same), and with non-spacing marks removed when diacritics are ignored.
    static func fold(_ string: String, options: ComparisonOptions) -> String {
        var result = string
        if options.contains(.caseInsensitive) {
            // Lowercasing the uppercase form is Unicode full case folding for all but a
            // handful of characters (Cherokee): "ß" -> "SS" -> "ss", "ς" -> "Σ" -> "σ".
            result = result.uppercased().lowercased()
        }
        result = result.decomposedStringWithCanonicalMapping
        if options.contains(.diacriticInsensitive) {
            var scalars = String.UnicodeScalarView()
            for scalar in result.unicodeScalars
            where scalar.properties.generalCategory != .nonspacingMark {
                scalars.append(scalar)
            }
            result = String(scalars)
        }
        return result
    }

    static func folds(_ options: ComparisonOptions) -> Bool {
        options.contains(.caseInsensitive) || options.contains(.diacriticInsensitive)
    }

    // MARK: Equality and order

    /// `==`: a literal comparison (`-[NSString isEqual:]` compares UTF-16 code units),
    /// unless `[c]` or `[d]` ask for folding.
    static func equals(_ a: String, _ b: String, options: ComparisonOptions) -> Bool {
        if folds(options) {
            return fold(a, options: options).unicodeScalars
                .elementsEqual(fold(b, options: options).unicodeScalars)
        }
        return a.utf16.elementsEqual(b.utf16)
    }

    /// `<`, `>`...: `-[NSString compare:options:]` without the literal option, so
    /// canonically equivalent strings are the same; otherwise the order of their
    /// UTF-16 code units in decomposed form.
    static func compare(_ a: String, _ b: String, options: ComparisonOptions) -> ComparisonResult {
        if let result = asciiCompare(a, b, caseInsensitive: options.contains(.caseInsensitive)) {
            return result
        }
        let x = fold(a, options: options)
        let y = fold(b, options: options)
        if x.utf16.elementsEqual(y.utf16) { return .orderedSame }
        return x.utf16.lexicographicallyPrecedes(y.utf16) ? .orderedAscending : .orderedDescending
    }

    /// The order of two strings when it is decided by ASCII characters alone (no
    /// normalization or folding beyond ASCII case can change it); `nil` otherwise.
    private static func asciiCompare(_ a: String, _ b: String, caseInsensitive: Bool) -> ComparisonResult? {
        var i = a.utf8.makeIterator(), j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil):
                return .orderedSame
            case (nil, _):
                return .orderedAscending
            case (_, nil):
                return .orderedDescending
            case (var x?, var y?):
                guard x < 0x80, y < 0x80 else { return nil }
                if caseInsensitive {
                    if (0x41...0x5A).contains(x) { x += 0x20 }
                    if (0x41...0x5A).contains(y) { y += 0x20 }
                }
                if x != y { return x < y ? .orderedAscending : .orderedDescending }
            }
        }
    }

    // MARK: Substrings

    /// `BEGINSWITH`. As `-[NSString hasPrefix:]`, nothing begins with the empty string.
    static func hasPrefix(_ s: String, _ prefix: String, options: ComparisonOptions) -> Bool {
        guard !prefix.isEmpty else { return false }
        if folds(options) {
            return fold(s, options: options).hasPrefix(fold(prefix, options: options))
        }
        return s.hasPrefix(prefix)
    }

    /// `ENDSWITH`. As `-[NSString hasSuffix:]`, nothing ends with the empty string.
    static func hasSuffix(_ s: String, _ suffix: String, options: ComparisonOptions) -> Bool {
        guard !suffix.isEmpty else { return false }
        if folds(options) {
            return fold(s, options: options).hasSuffix(fold(suffix, options: options))
        }
        return s.hasSuffix(suffix)
    }

    /// `CONTAINS` and `IN` on strings. As `-[NSString containsString:]`, no string
    /// contains the empty string.
    static func contains(_ s: String, _ part: String, options: ComparisonOptions) -> Bool {
        guard !part.isEmpty else { return false }
        if folds(options) {
            return fold(s, options: options).firstRange(of: fold(part, options: options)) != nil
        }
        return s.firstRange(of: part) != nil
    }

    // MARK: LIKE

    private enum LikeToken: Equatable {
        case character(Character)
        case one
        case many
    }

    /// `LIKE`: the whole string must match the pattern, where `*` matches any run of
    /// characters (line breaks included), `?` exactly one character, and a backslash
    /// makes the next character literal. Nothing else is special.
    static func like(_ s: String, pattern: String, options: ComparisonOptions) -> Bool {
        // Split the pattern into literal runs and wildcards, fold the runs.
        var tokens: [LikeToken] = []
        var literal = ""
        func flush() {
            guard !literal.isEmpty else { return }
            let text = folds(options) ? fold(literal, options: options) : literal
            for character in text { tokens.append(.character(character)) }
            literal = ""
        }
        var iterator = pattern.makeIterator()
        while let c = iterator.next() {
            switch c {
            case "\\":
                if let next = iterator.next() { literal.append(next) } else { literal.append(c) }
            case "*":
                flush()
                if tokens.last != .many { tokens.append(.many) }
            case "?":
                flush()
                tokens.append(.one)
            default:
                literal.append(c)
            }
        }
        flush()
        let subject = Array(folds(options) ? fold(s, options: options) : s)
        return wildcardMatch(subject, tokens)
    }

    /// Greedy wildcard matching that backtracks to the last `*` only: O(n * m).
    private static func wildcardMatch(_ s: [Character], _ p: [LikeToken]) -> Bool {
        var si = 0, pi = 0
        var starP = -1, starS = 0
        while si < s.count {
            if pi < p.count {
                switch p[pi] {
                case .many:
                    starP = pi
                    starS = si
                    pi += 1
                    continue
                case .one:
                    si += 1
                    pi += 1
                    continue
                case .character(let c):
                    if c == s[si] {
                        si += 1
                        pi += 1
                        continue
                    }
                }
            }
            guard starP >= 0 else { return false }
            pi = starP + 1
            starS += 1
            si = starS
        }
        while pi < p.count, p[pi] == .many { pi += 1 }
        return pi == p.count
    }

    // MARK: MATCHES

    /// `MATCHES`: the whole string must match the ICU regular expression. As on Apple
    /// platforms, `.` matches line breaks and `^`/`$` match at line boundaries. `[c]`
    /// makes the expression case-insensitive; `[d]` ignores diacritics in both the
    /// string and the expression.
    static func matches(_ s: String, pattern: String, options: ComparisonOptions) throws -> Bool {
        var subject = s
        var expression = pattern
        if options.contains(.diacriticInsensitive) {
            subject = fold(s, options: [.diacriticInsensitive])
            expression = fold(pattern, options: [.diacriticInsensitive])
        }
        let compiled = try RegexCache.shared.regex(
            for: expression, caseInsensitive: options.contains(.caseInsensitive))
        let range = NSRange(location: 0, length: subject.utf16.count)
        if compiled.isWrapped {
            return compiled.regex.firstMatch(in: subject, options: [], range: range) != nil
        }
        guard let match = compiled.regex.firstMatch(in: subject, options: [.anchored], range: range) else {
            return false
        }
        return match.range.length == range.length
    }
}

/// Compiled regular expressions, shared and bounded, so that evaluating one predicate
/// over many objects compiles its expression once.
// @unchecked Sendable: its table is read and written under its lock only.
final class RegexCache: @unchecked Sendable {
    static let shared = RegexCache()

    struct Compiled {
        /// The expression compiled as `\A(?:pattern)\z` (whole-string match), or as is
        /// when that wrapping does not compile (then an anchored match must span the
        /// whole string).
        var regex: NSRegularExpression
        var isWrapped: Bool
    }

    private struct Key: Hashable {
        var pattern: String
        var caseInsensitive: Bool
    }

    private let lock = NSLock()
    private var storage: [Key: Compiled] = [:]
    private let limit = 256

    func regex(for pattern: String, caseInsensitive: Bool) throws -> Compiled {
        let key = Key(pattern: pattern, caseInsensitive: caseInsensitive)
        lock.lock()
        let cached = storage[key]
        lock.unlock()
        if let cached { return cached }

        var options: NSRegularExpression.Options = [.dotMatchesLineSeparators, .anchorsMatchLines]
        if caseInsensitive { options.insert(.caseInsensitive) }
        let raw: NSRegularExpression
        do {
            raw = try NSRegularExpression(pattern: pattern, options: options)
        } catch {
            throw PredicateEvaluationError.invalidRegularExpression(pattern)
        }
        // A "\Q" quote the pattern leaves open must be closed before the wrapping.
        let closing = RegexCache.endsInsideQuote(pattern) ? "\\E" : ""
        let compiled: Compiled
        if let wrapped = try? NSRegularExpression(pattern: "\\A(?:" + pattern + closing + ")\\z", options: options) {
            compiled = Compiled(regex: wrapped, isWrapped: true)
        } else {
            compiled = Compiled(regex: raw, isWrapped: false)
        }
        lock.lock()
        if storage.count >= limit { storage.removeAll(keepingCapacity: true) }
        storage[key] = compiled
        lock.unlock()
        return compiled
    }

    /// Whether the pattern ends inside a `\Q...\E` quotation.
    static func endsInsideQuote(_ pattern: String) -> Bool {
        let scalars = Array(pattern.unicodeScalars)
        var inQuote = false
        var i = 0
        while i < scalars.count {
            if scalars[i] == "\\", i + 1 < scalars.count {
                if inQuote {
                    if scalars[i + 1] == "E" {
                        inQuote = false
                        i += 2
                        continue
                    }
                } else {
                    if scalars[i + 1] == "Q" { inQuote = true }
                    i += 2
                    continue
                }
            }
            i += 1
        }
        return inQuote
    }
}
