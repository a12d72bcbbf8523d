import Foundation
import OpenCoreDataPredicates

/// Turns archived `NSPredicate` and `NSExpression` objects (validation predicates,
/// fetch request predicates, derivation expressions) back into predicate format
/// text, the form the rest of OpenCoreData keeps them in.
///
/// Supported: `NSComparisonPredicate` (with `NSPredicateOperator` type, modifier and
/// string options), `NSCompoundPredicate`, `NSTruePredicate`/`NSFalsePredicate`,
/// and the expressions `NSConstantValueExpression`, `NSKeyPathExpression`,
/// `NSKeyPathSpecifierExpression`, `NSSelfExpression`, `NSVariableExpression`,
/// `NSFunctionExpression` and `NSAggregateExpression`. Anything else gives nil.
///
/// ```swift
/// let text = ArchivedPredicate(archive: archive).predicateFormat(field)   // "rating >= 0"
/// ```
struct ArchivedPredicate {
    let archive: KeyedArchive
    private static let maximumDepth = 64
    /// The most objects one decoding visits (shared subexpressions are visited
    /// each time they appear, so hostile archives could otherwise blow up).
    private static let maximumVisits = 10_000
    private let visits = Counter()

    init(archive: KeyedArchive) {
        self.archive = archive
    }

    private final class Counter {
        var count = 0
    }

    /// The format text of an archived predicate, or nil if it can't be decoded.
    func predicateFormat(_ reference: PropertyListValue) -> String? {
        visits.count = 0
        return predicate(reference, depth: 0)
    }

    /// The format text of an archived expression, or nil if it can't be decoded.
    func expressionFormat(_ reference: PropertyListValue) -> String? {
        visits.count = 0
        return expression(reference, depth: 0)
    }

    private func object(_ reference: PropertyListValue) -> KeyedArchive.Object? {
        visits.count += 1
        guard visits.count <= ArchivedPredicate.maximumVisits, case .object(let object)? = try? archive.resolve(reference) else { return nil }
        return object
    }

    private func predicate(_ reference: PropertyListValue, depth: Int) -> String? {
        guard depth < ArchivedPredicate.maximumDepth, let object = object(reference) else { return nil }
        if object.isKind(of: "NSTruePredicate") { return "TRUEPREDICATE" }
        if object.isKind(of: "NSFalsePredicate") { return "FALSEPREDICATE" }
        if object.isKind(of: "NSCompoundPredicate") {
            guard case .int(let type) = object["NSCompoundPredicateType"],
                  let elements = try? archive.elements(object["NSSubpredicates"], "subpredicates") else { return nil }
            var parts: [String] = []
            for element in elements {
                guard let text = predicate(element, depth: depth + 1) else { return nil }
                parts.append(elements.count > 1 || type == 0 ? "(\(text))" : text)
            }
            switch type {
            case 0: return parts.count == 1 ? "NOT \(parts[0])" : nil
            case 1: return parts.isEmpty ? "TRUEPREDICATE" : parts.joined(separator: " AND ")
            case 2: return parts.isEmpty ? "FALSEPREDICATE" : parts.joined(separator: " OR ")
            default: return nil
            }
        }
        if object.isKind(of: "NSComparisonPredicate") {
            guard let left = expression(object["NSLeftExpression"], depth: depth + 1),
                  let right = expression(object["NSRightExpression"], depth: depth + 1),
                  let operatorObject = self.object(object["NSPredicateOperator"]),
                  case .int(let type) = operatorObject["NSOperatorType"] else { return nil }
            var modifier = 0
            if case .int(let value) = operatorObject["NSModifier"] { modifier = Int(value) }
            var options = 0
            for key in ["NSOptions", "NSFlags"] {
                if case .int(let value) = operatorObject[key] { options = Int(value) }
            }
            guard var symbol = ArchivedPredicate.operatorSymbol(Int(type)) else { return nil }
            var flags = ""
            if options & 1 != 0 { flags += "c" }
            if options & 2 != 0 { flags += "d" }
            if options & 8 != 0 { flags += "n" }
            if !flags.isEmpty { symbol += "[\(flags)]" }
            let prefix = modifier == 1 ? "ANY " : modifier == 2 ? "ALL " : ""
            return "\(prefix)\(left) \(symbol) \(right)"
        }
        return nil
    }

    private static func operatorSymbol(_ type: Int) -> String? {
        switch type {
        case 0: return "<"
        case 1: return "<="
        case 2: return ">"
        case 3: return ">="
        case 4: return "=="
        case 5: return "!="
        case 6: return "MATCHES"
        case 7: return "LIKE"
        case 8: return "BEGINSWITH"
        case 9: return "ENDSWITH"
        case 10: return "IN"
        case 99: return "CONTAINS"
        case 100: return "BETWEEN"
        default: return nil
        }
    }

    private func expression(_ reference: PropertyListValue, depth: Int) -> String? {
        guard depth < ArchivedPredicate.maximumDepth, let object = object(reference) else { return nil }
        switch object.className {
        case "NSSelfExpression":
            return "SELF"
        case "NSVariableExpression":
            guard let name = try? archive.string(object["NSVariable"], "variable") else { return nil }
            return "$" + name
        case "NSKeyPathSpecifierExpression":
            guard let path = try? archive.string(object["NSKeyPath"], "key path") else { return nil }
            return path
        case "NSConstantValueExpression":
            guard let value = archive.plainValue(object["NSConstantValue"]) else { return nil }
            return ArchivedPredicate.literal(value)
        case "NSAggregateExpression":
            guard let elements = try? archive.elements(object["NSCollection"], "collection") else { return nil }
            var parts: [String] = []
            for element in elements {
                guard let text = expression(element, depth: depth + 1) else { return nil }
                parts.append(text)
            }
            return "{" + parts.joined(separator: ", ") + "}"
        default:
            break
        }
        guard object.isKind(of: "NSFunctionExpression") || object.className == "NSKeyPathExpression" else { return nil }
        guard let selector = try? archive.string(object["NSSelectorName"], "selector"),
              let arguments = try? archive.elements(object["NSArguments"], "arguments") else { return nil }
        var argumentTexts: [String] = []
        for argument in arguments {
            guard let text = expression(argument, depth: depth + 1) else { return nil }
            argumentTexts.append(text)
        }
        if selector == "valueForKeyPath:" || selector == "valueForKey:" {
            guard argumentTexts.count == 1, var path = argumentTexts.first else { return nil }
            if path.hasPrefix("\""), path.hasSuffix("\""), path.count >= 2 { path = String(path.dropFirst().dropLast()) }
            if let operand = self.object(object["NSOperand"]), operand.className != "NSSelfExpression",
               let operandText = expression(object["NSOperand"], depth: depth + 1) {
                return operandText + "." + path
            }
            return path
        }
        // A method called on an object (`FUNCTION($manager, "selector:", ...)`), as
        // migration mapping models write them.
        if let operand = self.object(object["NSOperand"]),
           ["NSVariableExpression", "NSKeyPathExpression", "NSFunctionExpression"].contains(operand.className),
           let operandText = expression(object["NSOperand"], depth: depth + 1) {
            let quoted = "\"" + selector.replacingOccurrences(of: "\"", with: "\\\"") + "\""
            return "FUNCTION(" + ([operandText, quoted] + argumentTexts).joined(separator: ", ") + ")"
        }
        let name = selector.hasSuffix(":") ? String(selector.dropLast()) : selector
        if argumentTexts.isEmpty { return name + "()" }
        return name + ":(" + argumentTexts.joined(separator: ", ") + ")"
    }

    /// A constant as format text.
    static func literal(_ value: AttributeValue) -> String {
        switch value {
        case .null: return "nil"
        case .bool(let flag): return flag ? "YES" : "NO"
        case .int(let number): return String(number)
        case .double(let number): return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .decimal(let number): return NSDecimalNumber(decimal: number).stringValue
        case .string(let string):
            return "\"" + string.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case .date(let date): return "CAST(\(date.timeIntervalSinceReferenceDate), \"NSDate\")"
        case .data(let data): return "\"\(data.base64EncodedString())\""
        case .uuid(let uuid): return "\"\(uuid.uuidString)\""
        case .uri(let url): return "\"\(url.absoluteString)\""
        case .array(let elements): return "{" + elements.map(literal).joined(separator: ", ") + "}"
        case .dictionary: return "nil"
        }
    }
}
