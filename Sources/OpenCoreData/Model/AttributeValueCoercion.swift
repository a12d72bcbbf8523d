import Foundation
import OpenCoreDataPredicates

/// Converts values to the representation an attribute type keeps, the way Core
/// Data accepts an `NSNumber` of any kind for a numeric attribute.
enum AttributeValueCoercion {
    /// Whether `value` is an acceptable value for an attribute of `type`.
    static func fits(_ value: AttributeValue, _ type: AttributeType) -> Bool {
        coerce(value, to: type) != nil
    }

    /// `value` in the representation `type` keeps, or nil when it is not a value of
    /// that type (a string for a number, an integer out of the type's range, ...).
    /// Whether `value` is already what ``coerce(_:to:)`` would make of it for
    /// `type` (a cheap test for validation's common case; false when unsure).
    static func isStoredAsIs(_ value: AttributeValue, for type: AttributeType) -> Bool {
        switch (value, type) {
        case (.string, .string), (.double, .double), (.bool, .boolean), (.date, .date), (.data, .binaryData),
             (.uuid, .uuid), (.decimal, .decimal):
            return true
        case (.int, .integer64):
            return true
        case (.int(let i), .integer32):
            return i >= Int64(Int32.min) && i <= Int64(Int32.max)
        case (.int(let i), .integer16):
            return i >= Int64(Int16.min) && i <= Int64(Int16.max)
        default:
            return false
        }
    }

    static func coerce(_ value: AttributeValue, to type: AttributeType) -> AttributeValue? {
        if case .null = value { return .null }
        switch type {
        case .integer16, .integer32, .integer64:
            switch value {
            case .int(let i):
                return type.integerRange?.contains(i) == true ? value : nil
            case .bool(let b):
                return .int(b ? 1 : 0)
            case .double(let d):
                guard d.isFinite, d.rounded(.towardZero) == d, let i = Int64(exactly: d),
                      type.integerRange?.contains(i) == true else { return nil }
                return .int(i)
            case .decimal(let d):
                guard let i = Int64(exactly: NSDecimalNumber(decimal: d).doubleValue), Decimal(i) == d,
                      type.integerRange?.contains(i) == true else { return nil }
                return .int(i)
            default: return nil
            }
        case .double, .float:
            switch value {
            case .double: return value
            case .int, .bool, .decimal: return value.doubleValue.map { .double($0) }
            default: return nil
            }
        case .decimal:
            switch value {
            case .decimal: return value
            case .int(let i): return .decimal(Decimal(i))
            case .bool(let b): return .decimal(b ? 1 : 0)
            case .double(let d): return d.isFinite ? .decimal(Decimal(d)) : nil
            default: return nil
            }
        case .boolean:
            switch value {
            case .bool: return value
            case .int(let i): return .bool(i != 0)
            case .double(let d): return .bool(d != 0)
            case .decimal(let d): return .bool(!d.isZero)
            default: return nil
            }
        case .string:
            if case .string = value { return value }
            return nil
        case .date:
            if case .date = value { return value }
            return nil
        case .binaryData:
            if case .data = value { return value }
            return nil
        case .uuid:
            switch value {
            case .uuid: return value
            case .string(let s): return UUID(uuidString: s).map { .uuid($0) }
            default: return nil
            }
        case .uri:
            switch value {
            case .uri: return value
            case .string(let s): return URL(string: s).map { .uri($0) }
            default: return nil
            }
        case .composite:
            if case .dictionary = value { return value }
            return nil
        case .transformable, .undefined, .objectID:
            return value
        }
    }

    /// How Xcode's `defaultValueString` reads for an attribute of `type`, never
    /// refusing: the plain form of the type first (``parseDefault(_:type:)``); then,
    /// for numeric types, the words `YES`/`NO`/`true`/`false` as 1/0 (the boolean
    /// `NSNumber` Core Data would hold, which a numeric attribute reads as 1 or 0),
    /// and a leading number followed by other characters (`"12px"`: 12, as
    /// `NSString`'s numeric readings do). `exact` is false when the value is one
    /// of those lenient readings (a guess: log it); `value` is nil when nothing
    /// could be read (no default).
    static func readDefault(_ text: String, type: AttributeType) -> (value: AttributeValue?, exact: Bool) {
        if let value = parseDefault(text, type: type) { return (value, true) }
        guard type.isNumeric || type == .boolean else { return (nil, false) }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        switch trimmed.uppercased() {
        case "YES", "TRUE": return (coerce(.bool(true), to: type), false)
        case "NO", "FALSE": return (coerce(.bool(false), to: type), false)
        default: break
        }
        // The longest leading number: sign, digits, one decimal point, exponent.
        var prefix = ""
        var seenDigit = false, seenPoint = false
        for character in trimmed {
            if character.isASCII, character.isNumber { prefix.append(character); seenDigit = true; continue }
            if (character == "-" || character == "+"), prefix.isEmpty { prefix.append(character); continue }
            if character == ".", !seenPoint { prefix.append(character); seenPoint = true; continue }
            break
        }
        guard seenDigit, let number = Double(prefix), number.isFinite else { return (nil, false) }
        if type == .boolean { return (.bool(number != 0), false) }
        if let integerRange = type.integerRange {
            let truncated = number.rounded(.towardZero)
            guard let integer = Int64(exactly: truncated), integerRange.contains(integer) else { return (nil, false) }
            return (.int(integer), false)
        }
        return (coerce(.double(number), to: type), false)
    }

    /// Parses Xcode's `defaultValueString` for an attribute of `type`.
    static func parseDefault(_ text: String, type: AttributeType) -> AttributeValue? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        switch type {
        case .integer16, .integer32, .integer64:
            if let i = Int64(trimmed) { return coerce(.int(i), to: type) }
            if let d = Double(trimmed) { return coerce(.double(d), to: type) }
            return nil
        case .double, .float:
            return Double(trimmed).map { .double($0) }
        case .decimal:
            return Decimal(string: trimmed, locale: Locale(identifier: "en_US_POSIX")).map { .decimal($0) }
        case .boolean:
            switch trimmed.uppercased() {
            case "YES", "TRUE", "1": return .bool(true)
            case "NO", "FALSE", "0": return .bool(false)
            default: return nil
            }
        case .string:
            return .string(text)
        case .date:
            return Double(trimmed).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .uuid:
            return UUID(uuidString: trimmed).map { .uuid($0) }
        case .uri:
            return URL(string: trimmed).map { .uri($0) }
        case .binaryData, .transformable, .composite, .undefined, .objectID:
            return nil
        }
    }
}
