import Foundation
import GRDB

/// A piece of SQL with the values bound to its `?` placeholders, in order.
///
/// Fragments are concatenated in the order they appear in the final statement, so
/// the arguments always line up with the placeholders. Values from a request
/// (strings, numbers, blobs) only ever enter SQL as arguments; the text holds
/// identifiers from the store layout, aliases, operators and small integers
/// computed by the translator.
///
/// ```swift
/// var where = SQLFragment("t0.ZNAME IS ", argument: "Zoë".databaseValue)
/// where += " AND t0.ZAGE > 3"
/// where.text        // t0.ZNAME IS ? AND t0.ZAGE > 3
/// where.arguments   // ["Zoë"]
/// ```
package struct SQLFragment: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The SQL text, with `?` for each argument.
    package var text: String
    /// The values bound to the placeholders, in order.
    package var arguments: [DatabaseValue]

    package init(_ text: String, arguments: [DatabaseValue] = []) {
        self.text = text
        self.arguments = arguments
    }

    /// A single placeholder bound to `value`.
    static func argument(_ value: DatabaseValue) -> SQLFragment {
        SQLFragment("?", arguments: [value])
    }

    package init(stringLiteral value: String) {
        self.init(value)
    }

    package var description: String { text }

    /// The fragments joined with a separator.
    package static func joined(_ parts: [SQLFragment], separator: String) -> SQLFragment {
        var result = SQLFragment("")
        for (i, part) in parts.enumerated() {
            if i > 0 { result.text += separator }
            result += part
        }
        return result
    }

    /// The fragment in parentheses (unless it already is entirely).
    var parenthesized: SQLFragment {
        isParenthesized ? self : "(" + self + ")"
    }

    /// Whether the text is one parenthesized group: `(a) OR (b)` is not.
    var isParenthesized: Bool {
        guard text.hasPrefix("("), text.hasSuffix(")") else { return false }
        var depth = 0
        var inString = false
        for (offset, character) in text.utf8.enumerated() {
            if character == UInt8(ascii: "'") { inString.toggle() }
            if inString { continue }
            if character == UInt8(ascii: "(") { depth += 1 }
            if character == UInt8(ascii: ")") {
                depth -= 1
                if depth == 0 && offset != text.utf8.count - 1 { return false }
            }
        }
        return depth == 0
    }

    package static func + (lhs: SQLFragment, rhs: SQLFragment) -> SQLFragment {
        SQLFragment(lhs.text + rhs.text, arguments: lhs.arguments + rhs.arguments)
    }

    package static func += (lhs: inout SQLFragment, rhs: SQLFragment) {
        lhs.text += rhs.text
        lhs.arguments += rhs.arguments
    }

    /// The always-true and always-false conditions.
    static let trueCondition: SQLFragment = "TRUE"
    static let falseCondition: SQLFragment = "FALSE"
}
