import Foundation

// MARK: - Key-value coding on evaluated values

extension EvaluatedValue {
    /// The value for one key, as `valueForKey:` answers it: a dictionary's entry, an
    /// object's value, the members' values of a collection (an array keeps `nil`
    /// members as `nil`, a set drops them), and for strings `length`, `description`
    /// and `self`.
    ///
    /// - throws: ``PredicateEvaluationError/undefinedKey(_:)`` for a scalar or an
    ///   object without that key.
    public func value(forKey key: String) throws -> EvaluatedValue {
        switch self {
        case .null:
            return .null
        case .dictionary(let values):
            return values[key] ?? .null
        case .object(let object):
            return EvaluatedValue(any: try object.checkedValue(forKey: key))
        case .collection(let values, let isOrdered):
            var result: [EvaluatedValue] = []
            result.reserveCapacity(values.count)
            for value in values {
                let member = try value.value(forKey: key)
                if !isOrdered, member.isNull { continue }
                result.append(member)
            }
            return .collection(result, isOrdered: isOrdered)
        case .value(let value):
            return try EvaluatedValue.scalarValue(value, forKey: key)
        }
    }

    private static func scalarValue(_ value: AttributeValue, forKey key: String) throws -> EvaluatedValue {
        switch key {
        case "self":
            return .value(value)
        case "description":
            return .value(.string(value.displayDescription))
        default:
            break
        }
        switch value {
        case .string(let s):
            switch key {
            case "length": return .value(.int(Int64(s.utf16.count)))
            case "uppercaseString": return .value(.string(s.uppercased()))
            case "lowercaseString": return .value(.string(s.lowercased()))
            case "intValue", "integerValue", "longLongValue":
                return .value(.int(Int64(s.trimmingCharacters(in: .whitespaces)) ?? 0))
            case "doubleValue", "floatValue":
                return .value(.double(Double(s.trimmingCharacters(in: .whitespaces)) ?? 0))
            default: break
            }
        case .int, .double, .decimal, .bool:
            switch key {
            case "intValue", "integerValue", "longLongValue":
                return value.int64Value.map { .value(.int($0)) } ?? .null
            case "doubleValue", "floatValue":
                return value.doubleValue.map { .value(.double($0)) } ?? .null
            case "boolValue":
                return value.boolValue.map { .value(.bool($0)) } ?? .null
            case "stringValue":
                return .value(.string(value.displayDescription))
            default: break
            }
        case .date(let date):
            if key == "timeIntervalSinceReferenceDate" {
                return .value(.double(date.timeIntervalSinceReferenceDate))
            }
            if key == "timeIntervalSince1970" { return .value(.double(date.timeIntervalSince1970)) }
        case .data(let data):
            if key == "length" { return .value(.int(Int64(data.count))) }
        case .uuid(let uuid):
            if key == "UUIDString" { return .value(.string(uuid.uuidString)) }
        case .uri(let url):
            if key == "absoluteString" { return .value(.string(url.absoluteString)) }
        default:
            break
        }
        throw PredicateEvaluationError.undefinedKey("\(CoreExpression.constant(value)) has no value for the key '\(key)'")
    }

    /// The value at the end of a key path (`valueForKeyPath:`), with the collection
    /// operators (`@count`, `@sum`, `@avg`, `@min`, `@max`, `@distinctUnionOfObjects`,
    /// `@unionOfObjects`, `@distinctUnionOfArrays`, `@unionOfArrays`,
    /// `@distinctUnionOfSets`).
    ///
    /// ```swift
    /// let order = EvaluatedValue(any: ["items": [["price": 2], ["price": 3]]])
    /// try order.value(forKeyPath: "items.@sum.price")   // .value(.int(5))
    /// try order.value(forKeyPath: "items.@count")       // .value(.int(2))
    /// ```
    public func value(forKeyPath keyPath: String) throws -> EvaluatedValue {
        var current = self
        var remaining = Substring(keyPath)
        while true {
            let key: Substring
            if let dot = remaining.firstIndex(of: ".") {
                key = remaining[..<dot]
                remaining = remaining[remaining.index(after: dot)...]
            } else {
                key = remaining
                remaining = ""
                if key.first == "@" {
                    return try current.applyCollectionOperator(String(key), rest: "")
                }
                return try current.value(forKey: String(key))
            }
            if key.first == "@" {
                return try current.applyCollectionOperator(String(key), rest: String(remaining))
            }
            current = try current.value(forKey: String(key))
        }
    }

    /// The members of a collection (or a dictionary's values); `nil` is empty.
    func members(for purpose: @autoclosure () -> String) throws -> [EvaluatedValue] {
        switch self {
        case .collection(let values, _): return values
        case .dictionary(let values): return Array(values.values)
        case .null: return []
        default:
            throw PredicateEvaluationError.notACollection("\(purpose()) needs a collection, not \(shortDescription)")
        }
    }

    private func applyCollectionOperator(_ name: String, rest: String) throws -> EvaluatedValue {
        if case .null = self { return .null }
        let elements = try members(for: name)
        func valuesAtRest(_ members: [EvaluatedValue]) throws -> [EvaluatedValue] {
            guard !rest.isEmpty else { return members }
            return try members.map { try $0.value(forKeyPath: rest) }
        }
        switch name {
        case "@count":
            return .value(.int(Int64(elements.count)))
        case "@sum":
            return try PredicateFunctions.apply(.sum, [.collection(valuesAtRest(elements), isOrdered: true)])
        case "@avg":
            return try PredicateFunctions.apply(.average, [.collection(valuesAtRest(elements), isOrdered: true)])
        case "@min":
            return try PredicateFunctions.apply(.min, [.collection(valuesAtRest(elements), isOrdered: true)])
        case "@max":
            return try PredicateFunctions.apply(.max, [.collection(valuesAtRest(elements), isOrdered: true)])
        case "@unionOfObjects":
            return .collection(try valuesAtRest(elements).filter { !$0.isNull }, isOrdered: true)
        case "@distinctUnionOfObjects":
            return .collection(EvaluatedValue.distinct(try valuesAtRest(elements).filter { !$0.isNull }), isOrdered: true)
        case "@unionOfArrays", "@distinctUnionOfArrays", "@distinctUnionOfSets":
            var flattened: [EvaluatedValue] = []
            // As Foundation: the rest of the key path is read from each element
            // (an inner collection maps it over its members), and the collections
            // it gives are flattened (`countries.@distinctUnionOfSets.moods`).
            for element in elements {
                let inner = rest.isEmpty ? element : try element.value(forKeyPath: rest)
                flattened += try inner.members(for: name).filter { !$0.isNull }
            }
            if name == "@unionOfArrays" { return .collection(flattened, isOrdered: true) }
            return .collection(EvaluatedValue.distinct(flattened), isOrdered: name != "@distinctUnionOfSets")
        default:
            throw PredicateEvaluationError.undefinedKey("unknown collection operator '\(name)'")
        }
    }

    /// The values without repeats (by ``ValueComparison`` equality), in order.
    static func distinct(_ values: [EvaluatedValue]) -> [EvaluatedValue] {
        var seen = Set<EquivalenceKey>()
        var result: [EvaluatedValue] = []
        for value in values {
            if let key = EquivalenceKey(value) {
                if seen.insert(key).inserted { result.append(value) }
            } else if !result.contains(where: { ValueComparison.equal($0, value, options: []) }) {
                result.append(value)
            }
        }
        return result
    }

    /// A short description for error messages.
    var shortDescription: String {
        switch self {
        case .null: return "nil"
        case .value(let value): return CoreExpression.constant(value).description
        case .collection(let values, _): return "a collection of \(values.count)"
        case .dictionary: return "a dictionary"
        case .object(let object): return "an object of type \(type(of: object))"
        }
    }
}

/// A hashable stand-in for values compared by equality (numbers across kinds).
private struct EquivalenceKey: Hashable {
    let value: AttributeValue

    init?(_ evaluated: EvaluatedValue) {
        guard case .value(let value) = evaluated else { return nil }
        if case .string = value { return nil }  // strings compare literally: use ==
        self.value = value
    }

    static func == (a: EquivalenceKey, b: EquivalenceKey) -> Bool { a.value.isEquivalent(to: b.value) }
    func hash(into hasher: inout Hasher) { value.hashEquivalent(into: &hasher) }
}

extension AttributeValue {
    /// The value as `-description` prints it: strings as they are, numbers as
    /// `NSNumber` prints them, dates as `2001-01-01 00:00:00 +0000`.
    var displayDescription: String {
        switch self {
        case .null: return "<null>"
        case .string(let s): return s
        case .bool(let b): return b ? "1" : "0"
        case .int(let i): return String(i)
        case .double(let d):
            if d.isNaN { return "nan" }
            if d.isInfinite { return d < 0 ? "-inf" : "inf" }
            return PredicateWriter.formatDouble(d)
        case .decimal(let d): return d.description
        case .date(let date):
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
            return formatter.string(from: date)
        case .data(let data): return "<" + data.map { String(format: "%02x", $0) }.joined() + ">"
        case .uuid(let uuid): return uuid.uuidString
        case .uri(let url): return url.absoluteString
        case .array, .dictionary: return CoreExpression.constant(self).description
        }
    }
}
