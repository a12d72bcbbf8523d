import Foundation
import OpenCoreDataPredicates

/// An attribute of an entity: a named value of one ``AttributeType``
/// (`NSAttributeDescription`).
///
/// ```swift
/// let date = AttributeDescription(name: "date", type: .date)
/// date.isOptional = false
///
/// let rating = AttributeDescription(name: "rating", type: .integer16, defaultValue: 0)
/// rating.minValue = 0
/// rating.maxValue = 5
///
/// let colors = AttributeDescription(name: "colors", type: .transformable)
/// colors.valueTransformerName = "ColorsTransformer"
/// ```
///
/// Xcode's validation options are kept as they appear in the model editor:
/// ``minValue`` and ``maxValue`` bound numbers and dates, and bound the *length* of
/// strings and binary data; ``regularExpression`` must match a whole string.
/// Further rules can be added as predicates in ``PropertyDescription/validationRules``.
public class AttributeDescription: PropertyDescription, @unchecked Sendable {
    // Exclusivity: public properties keep Swift's dynamic checks. Only the caches
    // a model builds as it freezes (read on every object's hot paths) are
    // `@exclusivity(unchecked)`: written once by `freeze()`, read-only afterwards
    // (`checkEditable`), so no access overlaps another (docs/performance.md).

    /// The attribute's type.
    public var attributeType: AttributeType { willSet { checkEditable("attributeType") } }
    /// The name of the class of the attribute's values (`attributeValueClassName`):
    /// Xcode's "Custom Class" for transformable attributes, e.g. `[String]`.
    public var attributeValueClassName: String? { willSet { checkEditable("attributeValueClassName") } }
    /// The value a new object starts with.
    public var defaultValue: AttributeValue? { willSet { checkEditable("defaultValue") } }
    /// The name of the value transformer of a transformable attribute, e.g.
    /// `NSSecureUnarchiveFromDataTransformerName`.
    public var valueTransformerName: String? { willSet { checkEditable("valueTransformerName") } }
    /// Whether large binary values may be stored in files beside the store.
    public var allowsExternalBinaryDataStorage: Bool = false { willSet { checkEditable("allowsExternalBinaryDataStorage") } }
    /// Whether the value is kept in persistent history when the object is deleted
    /// (a tombstone).
    public var preservesValueInHistoryOnDeletion: Bool = false { willSet { checkEditable("preservesValueInHistoryOnDeletion") } }
    /// Whether CloudKit encrypts the value (kept for fidelity).
    public var allowsCloudEncryption: Bool = false { willSet { checkEditable("allowsCloudEncryption") } }
    /// Whether the attribute is indexed (the legacy per-attribute index; newer
    /// models use ``EntityDescription/indexes``).
    public var isIndexed: Bool = false { willSet { checkEditable("isIndexed") } }
    /// The smallest valid value (numbers, dates) or length (strings, binary data).
    public var minValue: AttributeValue? { willSet { checkEditable("minValue") } }
    /// The largest valid value (numbers, dates) or length (strings, binary data).
    public var maxValue: AttributeValue? { willSet { checkEditable("maxValue") } }
    /// A regular expression (ICU syntax) a string value must match as a whole.
    public var regularExpression: String? { willSet { checkEditable("regularExpression") } }

    /// Creates an attribute.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The attribute's type.
    ///   - optional: Whether nil is a valid value.
    ///   - defaultValue: The value of new objects.
    public init(name: String, type: AttributeType, optional: Bool = true, defaultValue: AttributeValue? = nil) {
        self.attributeType = type
        self.defaultValue = defaultValue
        super.init(name: name)
        self.isOptional = optional
    }

    override public func copy() -> PropertyDescription {
        let copy = AttributeDescription(name: name, type: attributeType)
        copyAttribute(to: copy)
        return copy
    }

    func copyAttribute(to copy: AttributeDescription) {
        copyCommon(to: copy)
        copy.attributeValueClassName = attributeValueClassName
        copy.defaultValue = defaultValue
        copy.valueTransformerName = valueTransformerName
        copy.allowsExternalBinaryDataStorage = allowsExternalBinaryDataStorage
        copy.preservesValueInHistoryOnDeletion = preservesValueInHistoryOnDeletion
        copy.allowsCloudEncryption = allowsCloudEncryption
        copy.isIndexed = isIndexed
        copy.minValue = minValue
        copy.maxValue = maxValue
        copy.regularExpression = regularExpression
    }
}

/// An attribute whose value the store computes from other values
/// (`NSDerivedAttributeDescription`): Xcode's "Derived" option.
///
/// ```swift
/// let count = DerivedAttributeDescription(name: "moodCount", type: .integer64,
///                                         derivationExpression: "moods.@count")
/// ```
public final class DerivedAttributeDescription: AttributeDescription, @unchecked Sendable {
    /// The expression that computes the value, in the predicate format language
    /// (e.g. `moods.@count`, `now()`, `lowercase:(name)`).
    public var derivationExpression: String { willSet { checkEditable("derivationExpression") } }
    /// An optional predicate that filters what the derivation sees.
    public var filteringPredicate: String? { willSet { checkEditable("filteringPredicate") } }

    /// Creates a derived attribute.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The attribute's type.
    ///   - derivationExpression: The derivation (`moods.@count`, `now()`,
    ///     `lowercase:(name)`).
    public init(name: String, type: AttributeType, derivationExpression: String) {
        self.derivationExpression = derivationExpression
        super.init(name: name, type: type)
    }

    override public func copy() -> PropertyDescription {
        let copy = DerivedAttributeDescription(name: name, type: attributeType, derivationExpression: derivationExpression)
        copyAttribute(to: copy)
        copy.filteringPredicate = filteringPredicate
        return copy
    }
}

/// An attribute made of named elements (`NSCompositeAttributeDescription`, iOS 17):
/// its value is a dictionary, and each element is stored in a column of its own.
///
/// ```swift
/// let address = CompositeAttributeDescription(name: "address", elements: [
///     AttributeDescription(name: "street", type: .string),
///     AttributeDescription(name: "zip", type: .string),
/// ])
/// ```
public final class CompositeAttributeDescription: AttributeDescription, @unchecked Sendable {
    /// The elements: attributes, or nested composite attributes.
    public var elements: [AttributeDescription] { willSet { checkEditable("elements") } }
    /// The name of the model-level composite this attribute uses, if it came from a
    /// model file.
    public var compositeName: String?

    /// Creates a composite attribute.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - elements: The elements: attributes, or nested composite attributes.
    public init(name: String, elements: [AttributeDescription]) {
        self.elements = elements
        super.init(name: name, type: .composite)
    }

    override public func copy() -> PropertyDescription {
        let copy = CompositeAttributeDescription(name: name, elements: elements.compactMap { $0.copy() as? AttributeDescription })
        copyAttribute(to: copy)
        copy.compositeName = compositeName
        return copy
    }

    override var isFrozen: Bool {
        didSet { for element in elements { element.isFrozen = isFrozen } }
    }
}
