import Foundation

/// The implementations of the predefined functions.
///
/// `nil` arguments give `nil` (so a comparison with the result is false) rather than
/// an error; arguments of the wrong type throw. Integer arithmetic that would overflow
/// continues in `Double`; division by zero gives an infinity or NaN as `Double`
/// division does, except the integer `modulus:by:` zero, which throws.
enum PredicateFunctions {

    static func apply(_ function: PredicateFunction, _ arguments: [EvaluatedValue]) throws -> EvaluatedValue {
        guard arguments.count == function.argumentCount else {
            throw PredicateEvaluationError.typeMismatch(
                "'\(function.rawValue)' takes \(function.argumentCount) argument(s), not \(arguments.count)")
        }
        switch function {
        case .sum, .count, .min, .max, .average, .median, .mode, .stddev:
            return try statistic(function, arguments[0])
        case .sqrt, .log, .ln, .exp, .floor, .ceiling, .abs, .trunc:
            return try mathematics(function, arguments[0])
        case .add, .subtract, .multiply, .divide, .modulus, .raise:
            return try arithmetic(function, arguments[0], arguments[1])
        case .bitwiseAnd, .bitwiseOr, .bitwiseXor, .leftShift, .rightShift:
            guard let a = try integer(arguments[0], function), let b = try integer(arguments[1], function) else {
                return .null
            }
            switch function {
            case .bitwiseAnd: return .value(.int(a & b))
            case .bitwiseOr: return .value(.int(a | b))
            case .bitwiseXor: return .value(.int(a ^ b))
            case .leftShift: return .value(.int(a << b))
            default: return .value(.int(a >> b))
            }
        case .onesComplement:
            guard let a = try integer(arguments[0], function) else { return .null }
            return .value(.int(~a))
        case .random:
            return .value(.double(Double.random(in: 0..<1)))
        case .randomElement:
            return try arguments[0].members(for: function.rawValue).randomElement() ?? .null
        case .randomn:
            guard let n = try integer(arguments[0], function) else { return .null }
            guard n > 0 else {
                throw PredicateEvaluationError.arithmetic("randomn: needs a positive bound, not \(n)")
            }
            return .value(.int(Int64.random(in: 0..<n)))
        case .now:
            return .value(.date(Date()))
        case .uppercase, .lowercase, .length:
            switch arguments[0] {
            case .null:
                return .null
            case .value(.string(let s)):
                switch function {
                case .uppercase: return .value(.string(s.uppercased()))
                case .lowercase: return .value(.string(s.lowercased()))
                default: return .value(.int(Int64(s.utf16.count)))
                }
            default:
                throw PredicateEvaluationError.typeMismatch(
                    "'\(function.rawValue)' needs a string, not \(arguments[0].shortDescription)")
            }
        case .noindex:
            return arguments[0]
        case .castObjectToType:
            guard case .value(.string(let type)) = arguments[1] else {
                throw PredicateEvaluationError.typeMismatch("castObject:toType: needs a type name string")
            }
            return try cast(arguments[0], to: type)
        }
    }

    // MARK: Numbers

    private static func number(_ value: EvaluatedValue, _ function: PredicateFunction) throws -> NumericValue? {
        switch value {
        case .null: return nil
        case .value(let v):
            if let n = v.numericValue { return n }
        default: break
        }
        throw PredicateEvaluationError.typeMismatch(
            "'\(function.rawValue)' needs numbers, not \(value.shortDescription)")
    }

    private static func integer(_ value: EvaluatedValue, _ function: PredicateFunction) throws -> Int64? {
        guard let n = try number(value, function) else { return nil }
        switch n {
        case .int(let i): return i
        case .double, .decimal:
            guard let i = n.attributeValue.int64Value else {
                throw PredicateEvaluationError.arithmetic("\(n.doubleValue) does not fit in a 64-bit integer")
            }
            return i
        }
    }

    static func sum(_ numbers: [NumericValue]) -> NumericValue {
        var hasDouble = false, hasDecimal = false
        for n in numbers {
            switch n {
            case .double: hasDouble = true
            case .decimal: hasDecimal = true
            case .int: break
            }
        }
        if !hasDouble && !hasDecimal {
            var total: Int64 = 0
            var overflow = false
            for case .int(let i) in numbers {
                let (r, o) = total.addingReportingOverflow(i)
                if o { overflow = true; break }
                total = r
            }
            if !overflow { return .int(total) }
        }
        if hasDecimal && !hasDouble {
            var total = Decimal(0)
            for n in numbers {
                switch n {
                case .int(let i): total += Decimal(i)
                case .decimal(let d): total += d
                case .double(let d): total += Decimal(d)
                }
            }
            return .decimal(total)
        }
        return .double(numbers.reduce(0) { $0 + $1.doubleValue })
    }

    private static func statistic(_ function: PredicateFunction, _ argument: EvaluatedValue) throws -> EvaluatedValue {
        let members: [EvaluatedValue]
        switch argument {
        case .collection, .dictionary, .null: members = try argument.members(for: function.rawValue)
        default: members = [argument]
        }
        switch function {
        case .count:
            return .value(.int(Int64(members.count)))
        case .min, .max:
            var best: EvaluatedValue?
            for member in members where !member.isNull {
                guard let current = best else {
                    best = member
                    continue
                }
                let order = try ValueComparison.order(member, current, options: [], operatorType: .lessThan)
                if function == .min ? order == .orderedAscending : order == .orderedDescending { best = member }
            }
            return best ?? .null
        case .mode:
            var counts: [(EvaluatedValue, Int)] = []
            for member in members {
                if let i = counts.firstIndex(where: { ValueComparison.equal($0.0, member, options: []) }) {
                    counts[i].1 += 1
                } else {
                    counts.append((member, 1))
                }
            }
            let top = counts.map(\.1).max() ?? 0
            return .collection(counts.filter { $0.1 == top }.map(\.0), isOrdered: true)
        default:
            break
        }
        let numbers = try members.compactMap { try number($0, function) }
        switch function {
        case .sum:
            return .value(sum(numbers).attributeValue)
        case .average:
            guard !numbers.isEmpty else { return .null }
            if case .decimal(let total) = sum(numbers) {
                return .value(.decimal(total / Decimal(numbers.count)))
            }
            return .value(.double(numbers.reduce(0) { $0 + $1.doubleValue } / Double(numbers.count)))
        case .median:
            guard !numbers.isEmpty else { return .null }
            let sorted = numbers.sorted { NumericValue.compare($0, $1) == .orderedAscending }
            if sorted.count % 2 == 1 { return .value(sorted[sorted.count / 2].attributeValue) }
            let a = sorted[sorted.count / 2 - 1].doubleValue, b = sorted[sorted.count / 2].doubleValue
            return .value(.double((a + b) / 2))
        case .stddev:
            guard !numbers.isEmpty else { return .null }
            let values = numbers.map(\.doubleValue)
            let mean = values.reduce(0, +) / Double(values.count)
            let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(values.count)
            return .value(.double(variance.squareRoot()))
        default:
            return .null
        }
    }

    private static func mathematics(_ function: PredicateFunction, _ argument: EvaluatedValue) throws -> EvaluatedValue {
        guard let n = try number(argument, function) else { return .null }
        if case .int(let i) = n {
            switch function {
            case .floor, .ceiling, .trunc: return .value(.int(i))
            case .abs: return i == .min ? .value(.double(-Double(i))) : .value(.int(Swift.abs(i)))
            default: break
            }
        }
        if case .decimal(let d) = n, function == .abs { return .value(.decimal(d < 0 ? -d : d)) }
        let d = n.doubleValue
        switch function {
        case .sqrt: return .value(.double(d.squareRoot()))
        case .log: return .value(.double(Foundation.log10(d)))
        case .ln: return .value(.double(Foundation.log(d)))
        case .exp: return .value(.double(Foundation.exp(d)))
        case .floor: return .value(.double(d.rounded(.down)))
        case .ceiling: return .value(.double(d.rounded(.up)))
        case .trunc: return .value(.double(d.rounded(.towardZero)))
        default: return .value(.double(Swift.abs(d)))
        }
    }

    private static func arithmetic(
        _ function: PredicateFunction, _ left: EvaluatedValue, _ right: EvaluatedValue
    ) throws -> EvaluatedValue {
        guard let a = try number(left, function), let b = try number(right, function) else { return .null }
        switch (a, b) {
        case let (.int(x), .int(y)):
            switch function {
            case .add:
                let (r, o) = x.addingReportingOverflow(y)
                return .value(o ? .double(Double(x) + Double(y)) : .int(r))
            case .subtract:
                let (r, o) = x.subtractingReportingOverflow(y)
                return .value(o ? .double(Double(x) - Double(y)) : .int(r))
            case .multiply:
                let (r, o) = x.multipliedReportingOverflow(by: y)
                return .value(o ? .double(Double(x) * Double(y)) : .int(r))
            case .modulus:
                guard y != 0 else { throw PredicateEvaluationError.arithmetic("modulus:by: \(x) by zero") }
                let (r, o) = x.remainderReportingOverflow(dividingBy: y)
                return .value(.int(o ? 0 : r))
            default:
                break
            }
        case (.decimal, .int), (.int, .decimal), (.decimal, .decimal):
            let x = a.decimalValue, y = b.decimalValue
            switch function {
            case .add: return .value(.decimal(x + y))
            case .subtract: return .value(.decimal(x - y))
            case .multiply: return .value(.decimal(x * y))
            case .divide where !y.isZero: return .value(.decimal(x / y))
            default: break
            }
        default:
            break
        }
        let x = a.doubleValue, y = b.doubleValue
        switch function {
        case .add: return .value(.double(x + y))
        case .subtract: return .value(.double(x - y))
        case .multiply: return .value(.double(x * y))
        case .divide: return .value(.double(x / y))
        case .modulus: return .value(.double(x.truncatingRemainder(dividingBy: y)))
        default: return .value(.double(Foundation.pow(x, y)))
        }
    }

    // MARK: CAST

    /// `CAST(value, 'type')` (`castObject:toType:`).
    static func cast(_ value: EvaluatedValue, to type: String) throws -> EvaluatedValue {
        if case .null = value { return .null }
        func mismatch() -> PredicateEvaluationError {
            .typeMismatch("cannot CAST \(value.shortDescription) to \(type)")
        }
        switch type {
        case "NSNumber":
            guard case .value(let v) = value else { throw mismatch() }
            switch v {
            case .int, .double, .decimal, .bool: return value
            case .date(let d): return .value(.double(d.timeIntervalSinceReferenceDate))
            case .string(let s):
                let text = s.trimmingCharacters(in: .whitespacesAndNewlines)
                if let i = Int64(text) { return .value(.int(i)) }
                return .value(.double(Double(text) ?? 0))
            default: throw mismatch()
            }
        case "NSDecimalNumber":
            guard case .value(let v) = value else { throw mismatch() }
            switch v {
            case .int(let i): return .value(.decimal(Decimal(i)))
            case .bool(let b): return .value(.decimal(b ? 1 : 0))
            case .double(let d):
                guard d.isFinite else { throw mismatch() }
                return .value(.decimal(Decimal(d)))
            case .decimal: return value
            case .string(let s): return .value(.decimal(Decimal(string: s) ?? 0))
            default: throw mismatch()
            }
        case "NSDate":
            guard case .value(let v) = value else { throw mismatch() }
            switch v {
            case .date: return value
            case .int, .double, .decimal, .bool:
                return .value(.date(Date(timeIntervalSinceReferenceDate: v.doubleValue ?? 0)))
            case .string(let s):
                if let date = parseDate(s) { return .value(.date(date)) }
                throw mismatch()
            default: throw mismatch()
            }
        case "NSString":
            switch value {
            case .value(let v): return .value(.string(v.displayDescription))
            default: return .value(.string(value.shortDescription))
            }
        case "NSUUID":
            if case .value(.uuid) = value { return value }
            if case .value(.string(let s)) = value, let uuid = UUID(uuidString: s) { return .value(.uuid(uuid)) }
            throw mismatch()
        case "NSURL":
            if case .value(.uri) = value { return value }
            if case .value(.string(let s)) = value, let url = URL(string: s) { return .value(.uri(url)) }
            throw mismatch()
        case "NSData":
            if case .value(.data) = value { return value }
            if case .value(.string(let s)) = value, let data = Data(base64Encoded: s) { return .value(.data(data)) }
            throw mismatch()
        case "NSDictionary":
            if case .dictionary = value { return value }
            if case .collection(let pairs, _) = value {
                var result: [String: EvaluatedValue] = [:]
                for pair in pairs {
                    guard case .collection(let kv, _) = pair, kv.count == 2, case .value(.string(let key)) = kv[0] else {
                        throw mismatch()
                    }
                    result[key] = kv[1]
                }
                return .dictionary(result)
            }
            throw mismatch()
        case "NSArray", "NSSet", "NSOrderedSet":
            if case .collection(let values, _) = value { return .collection(values, isOrdered: type != "NSSet") }
            throw mismatch()
        default:
            throw PredicateEvaluationError.unsupported("CAST to '\(type)'")
        }
    }

    private static func parseDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        return formatter.date(from: text)
    }
}

extension NumericValue {
    var decimalValue: Decimal {
        switch self {
        case .int(let i): return Decimal(i)
        case .double(let d): return d.isFinite ? Decimal(d) : .nan
        case .decimal(let d): return d
        }
    }
}
