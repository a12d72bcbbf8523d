import Foundation

// Expressions are equal when their trees are equal, with constants compared as
// `-[NSObject isEqual:]` compares them (numbers by value across kinds: see
// `AttributeValue.isEquivalent(to:)`). That is what makes a predicate read back from
// its printed form equal to the original even though `YES` prints as `1` and `2.0`
// as `2`.

extension CoreExpression: Equatable {
    public static func == (lhs: CoreExpression, rhs: CoreExpression) -> Bool {
        switch (lhs, rhs) {
        case let (.constant(a), .constant(b)):
            return a.isEquivalent(to: b)
        case (.evaluatedObject, .evaluatedObject), (.anyKey, .anyKey):
            return true
        case let (.keyPath(a), .keyPath(b)):
            return a == b
        case let (.variable(a), .variable(b)):
            return a == b
        case let (.member(a, p), .member(b, q)):
            return p == q && a == b
        case let (.aggregate(a), .aggregate(b)):
            return a == b
        case let (.function(f, a), .function(g, b)):
            return f == g && a == b
        case let (.customFunction(r, s, a), .customFunction(q, t, b)):
            return s == t && r == q && a == b
        case let (.subquery(c, v, p), .subquery(d, w, q)):
            return v == w && c == d && p == q
        case let (.conditional(p, a, b), .conditional(q, c, d)):
            return p == q && a == c && b == d
        case let (.index(a, i), .index(b, j)):
            return i == j && a == b
        case let (.cast(a, t), .cast(b, u)):
            return t == u && a == b
        case let (.setOperation(o, a, b), .setOperation(p, c, d)):
            return o == p && a == c && b == d
        case let (.assignment(v, a), .assignment(w, b)):
            return v == w && a == b
        default:
            return false
        }
    }
}

extension CoreExpression: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .constant(let value):
            hasher.combine(0 as UInt8)
            value.hashEquivalent(into: &hasher)
        case .evaluatedObject:
            hasher.combine(1 as UInt8)
        case .keyPath(let path):
            hasher.combine(2 as UInt8)
            hasher.combine(path)
        case .variable(let name):
            hasher.combine(3 as UInt8)
            hasher.combine(name)
        case let .member(base, path):
            hasher.combine(4 as UInt8)
            hasher.combine(base)
            hasher.combine(path)
        case .aggregate(let list):
            hasher.combine(5 as UInt8)
            hasher.combine(list)
        case let .function(name, arguments):
            hasher.combine(6 as UInt8)
            hasher.combine(name)
            hasher.combine(arguments)
        case let .customFunction(receiver, selector, arguments):
            hasher.combine(7 as UInt8)
            hasher.combine(receiver)
            hasher.combine(selector)
            hasher.combine(arguments)
        case let .subquery(collection, variable, predicate):
            hasher.combine(8 as UInt8)
            hasher.combine(collection)
            hasher.combine(variable)
            hasher.combine(predicate)
        case let .conditional(predicate, a, b):
            hasher.combine(9 as UInt8)
            hasher.combine(predicate)
            hasher.combine(a)
            hasher.combine(b)
        case let .index(base, subscription):
            hasher.combine(10 as UInt8)
            hasher.combine(base)
            hasher.combine(subscription)
        case let .cast(value, type):
            hasher.combine(11 as UInt8)
            hasher.combine(value)
            hasher.combine(type)
        case let .setOperation(operation, a, b):
            hasher.combine(12 as UInt8)
            hasher.combine(operation)
            hasher.combine(a)
            hasher.combine(b)
        case let .assignment(variable, value):
            hasher.combine(13 as UInt8)
            hasher.combine(variable)
            hasher.combine(value)
        case .anyKey:
            hasher.combine(14 as UInt8)
        }
    }
}
