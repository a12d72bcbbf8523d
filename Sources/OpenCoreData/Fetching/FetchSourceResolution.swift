import Foundation
import OpenCoreDataPredicates

/// Replaces `$FETCH_SOURCE.<key path>` in a fetched property's predicate by the
/// value the source object has there, so that the predicate is constant for the
/// store (`author == $FETCH_SOURCE.author`, `stars >= $FETCH_SOURCE.minimum`).
enum FetchSourceResolution {
    static func resolve(_ predicate: CorePredicate, source: ManagedObject) -> CorePredicate {
        predicate.rewritingExpressions { expression, _ in
            guard case let .member(.variable("FETCH_SOURCE"), path) = expression else { return nil }
            return .constant(value(of: source, at: path))
        }
    }

    /// The value at a key path of an object, as a predicate constant: attributes
    /// as themselves, objects as their ID URIs, to-many relationships as arrays.
    static func value(of object: ManagedObject, at path: String) -> AttributeValue {
        var current: Any? = object
        for key in path.split(separator: ".").map(String.init) {
            guard let here = current as? ManagedObject else { return .null }
            current = try? here.checkedValue(forKey: key)  // keys from a model file
        }
        switch current {
        case let object as ManagedObject: return object.formatArgumentValue
        case let objects as Set<ManagedObject>: return .array(objects.map(\.formatArgumentValue))
        case let objects as [ManagedObject]: return .array(objects.map(\.formatArgumentValue))
        default: return AttributeValue(anyValue: current)
        }
    }
}
