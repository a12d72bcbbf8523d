import Foundation
import OpenCoreDataPredicates

/// Replaces `$FETCH_SOURCE.<key path>` in a fetched property's predicate by the
/// value the source object has there, so that the predicate is constant for the
/// store (`author == $FETCH_SOURCE.author`, `stars >= $FETCH_SOURCE.minimum`).
enum FetchSourceResolution {
    static func resolve(_ predicate: CorePredicate, source: ManagedObject) -> CorePredicate {
        switch predicate {
        case .constant: return predicate
        case .and(let list): return .and(list.map { resolve($0, source: source) })
        case .or(let list): return .or(list.map { resolve($0, source: source) })
        case .not(let sub): return .not(resolve(sub, source: source))
        case .comparison(var comparison):
            comparison.leftExpression = resolve(comparison.leftExpression, source: source)
            comparison.rightExpression = resolve(comparison.rightExpression, source: source)
            return .comparison(comparison)
        }
    }

    static func resolve(_ expression: CoreExpression, source: ManagedObject) -> CoreExpression {
        func sub(_ e: CoreExpression) -> CoreExpression { resolve(e, source: source) }
        switch expression {
        case .constant, .evaluatedObject, .keyPath, .variable, .anyKey:
            return expression
        case let .member(base, path):
            if case .variable("FETCH_SOURCE") = base { return .constant(value(of: source, at: path)) }
            return .member(sub(base), keyPath: path)
        case .aggregate(let list):
            return .aggregate(list.map(sub))
        case let .function(name, arguments):
            return .function(name, arguments: arguments.map(sub))
        case let .customFunction(receiver, selector, arguments):
            return .customFunction(receiver: sub(receiver), selector: selector, arguments: arguments.map(sub))
        case let .subquery(collection, variable, predicate):
            return .subquery(collection: sub(collection), variable: variable, predicate: resolve(predicate, source: source))
        case let .conditional(predicate, a, b):
            return .conditional(resolve(predicate, source: source), trueExpression: sub(a), falseExpression: sub(b))
        case let .index(base, subscription):
            if case .expression(let e) = subscription { return .index(sub(base), .expression(sub(e))) }
            return .index(sub(base), subscription)
        case let .cast(e, type):
            return .cast(sub(e), toType: type)
        case let .setOperation(operation, a, b):
            return .setOperation(operation, sub(a), sub(b))
        case let .assignment(variable, e):
            return .assignment(variable: variable, sub(e))
        }
    }

    /// The value at a key path of an object, as a predicate constant: attributes
    /// as themselves, objects as their ID URIs, to-many relationships as arrays.
    static func value(of object: ManagedObject, at path: String) -> AttributeValue {
        var current: Any? = object
        for key in path.split(separator: ".").map(String.init) {
            guard let here = current as? ManagedObject else { return .null }
            current = here.value(forKey: key)
        }
        switch current {
        case let object as ManagedObject: return object.formatArgumentValue
        case let objects as Set<ManagedObject>: return .array(objects.map(\.formatArgumentValue))
        case let objects as [ManagedObject]: return .array(objects.map(\.formatArgumentValue))
        default: return AttributeValue(anyValue: current)
        }
    }
}
