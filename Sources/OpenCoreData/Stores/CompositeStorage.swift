import Foundation
import OpenCoreDataPredicates

extension CompositeAttributeDescription {
    /// The value of the element at `path` (`"street"`, or `"address.zip"` in a
    /// nested composite) of a composite value: what the store writes in that
    /// element's column. `.null` when the value has no such element.
    package func element(of value: AttributeValue, path: String) -> AttributeValue {
        var current = value
        for part in path.split(separator: ".") {
            guard case .dictionary(let dictionary) = current else { return .null }
            current = dictionary[String(part)] ?? .null
        }
        return current
    }

    /// The attribute type of the element at `path`, or nil when there is none.
    package func elementType(path: String) -> AttributeType? {
        var elements = self.elements
        var type: AttributeType?
        for part in path.split(separator: ".") {
            guard let element = elements.first(where: { $0.name == part }) else { return nil }
            type = element.attributeType
            elements = (element as? CompositeAttributeDescription)?.elements ?? []
        }
        return type
    }
}
