import Foundation
import OpenCoreDataPredicates

/// The forms a derived attribute's expression takes in Core Data (Apple's
/// `NSDerivedAttributeDescription`): a copy of an attribute of the same object, a
/// string function of one (`lowercase:`, `uppercase:`, `canonical:`), the time of
/// the save (`now()`), an attribute of a to-one related object (`rel.attr`), or an
/// aggregate over a to-many relationship (`rel.@count`, `rel.attr.@sum`).
///
/// Forms of the object's own row are computed as a context saves, for every store;
/// forms that follow relationships are kept up to date by the store (SQLite:
/// Core Data's triggers; in memory: after each save).
///
/// ```swift
/// DerivationForm("canonical:(name)")   // .transform(.canonical, "name")
/// DerivationForm("tags.@count")        // .aggregate("tags", nil, .count)
/// DerivationForm("place.name")         // .toOne("place", "name")
/// ```
enum DerivationForm: Equatable, Sendable {
    enum Transform: String, Sendable { case lowercase, uppercase, canonical }
    enum Aggregate: String, Sendable { case count = "@count", sum = "@sum" }

    case copy(String)
    case transform(Transform, String)
    case now
    case toOne(String, String)
    case aggregate(String, String?, Aggregate)

    /// The form of `expression`, or nil for one Core Data does not compute.
    init?(_ expression: String) {
        let text = expression.trimmingCharacters(in: .whitespacesAndNewlines)
        if text == "now()" || text == "now:()" || text == "FUNCTION(now)" { self = .now; return }
        for transform in [Transform.lowercase, .uppercase, .canonical] {
            let prefix = transform.rawValue + ":("
            if text.hasPrefix(prefix), text.hasSuffix(")") {
                let key = String(text.dropFirst(prefix.count).dropLast()).trimmingCharacters(in: .whitespaces)
                guard Self.isKey(key) else { return nil }
                self = .transform(transform, key)
                return
            }
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        if let last = parts.last, last.hasPrefix("@") {
            guard let aggregate = Aggregate(rawValue: last) else { return nil }
            switch (aggregate, parts.count) {
            case (.count, 2) where Self.isKey(parts[0]): self = .aggregate(parts[0], nil, .count)
            case (.sum, 3) where Self.isKey(parts[0]) && Self.isKey(parts[1]): self = .aggregate(parts[0], parts[1], .sum)
            default: return nil
            }
            return
        }
        guard parts.allSatisfy(Self.isKey) else { return nil }
        switch parts.count {
        case 1: self = .copy(parts[0])
        case 2: self = .toOne(parts[0], parts[1])
        default: return nil
        }
    }

    private static func isKey(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, first == "_" || CharacterSet.letters.contains(first) else { return false }
        return text.unicodeScalars.allSatisfy { $0 == "_" || CharacterSet.alphanumerics.contains($0) }
    }

    /// Whether the value depends on the object's own row alone.
    var isOwnRow: Bool {
        switch self {
        case .copy, .transform, .now: return true
        case .toOne, .aggregate: return false
        }
    }

    /// The value of an own-row form, from the value of its source attribute.
    func ownRowValue(source: AttributeValue, now: Date) -> AttributeValue {
        switch self {
        case .copy: return source
        case .now: return .date(now)
        case .transform(let transform, _):
            guard case .string(let text) = source else { return source }
            switch transform {
            case .lowercase: return .string(text.lowercased())
            case .uppercase: return .string(text.uppercased())
            // Case and diacritics removed, as Core Data's canonical form for comparisons.
            case .canonical: return .string(text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive],
                                                         locale: nil))
            }
        case .toOne, .aggregate: return source
        }
    }

    /// The attribute of the same object an own-row form reads.
    var sourceKey: String? {
        switch self {
        case .copy(let key), .transform(_, let key): return key
        default: return nil
        }
    }
}

extension EntityDescription {
    /// A derived attribute of the entity (inherited included) and its form.
    struct Derivation {
        var index: Int
        var attribute: DerivedAttributeDescription
        var form: DerivationForm
        /// For own-row forms, the index of the attribute it reads.
        var sourceIndex: Int?
    }

    /// The entity's derived attributes whose form Core Data computes (a form it
    /// does not compute is left alone: the attribute keeps what is stored).
    var derivations: [Derivation] { Self.derivations(of: allProperties) }

    static func derivations(of properties: [PropertyDescription]) -> [Derivation] {
        var result: [Derivation] = []
        for (index, property) in properties.enumerated() {
            guard let derived = property as? DerivedAttributeDescription, !derived.isTransient,
                  let form = DerivationForm(derived.derivationExpression) else { continue }
            let source = form.sourceKey.flatMap { key in properties.firstIndex { $0.name == key && $0 is AttributeDescription } }
            if form.sourceKey != nil && source == nil { continue }
            result.append(Derivation(index: index, attribute: derived, form: form, sourceIndex: source))
        }
        return result
    }

    /// The derived attributes computed from the object's own row as a context saves.
    var ownRowDerivations: [Derivation] { frozenOwnRowDerivations ?? derivations.filter { $0.form.isOwnRow } }
}
