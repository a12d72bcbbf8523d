import Foundation
import OpenCoreDataPredicates

/// Computes version hashes exactly as Core Data does (hash style 0, recorded in
/// store metadata with `NSStoreModelVersionHashesVersion` 3).
///
/// Every digest is SHA-256; integers are little-endian; strings are UTF-8 bytes
/// without terminator or length; optional parts are skipped when absent or empty.
///
/// ```text
/// property base  = SHA256(name ‖ u16(optional | transient<<1 | readOnly<<2) ‖ modifier?)
/// attribute      = SHA256(base ‖ i32(type) ‖ 0x01 if external storage ‖ 0x01 if preserved)
/// relationship   = SHA256(base ‖ destination? ‖ inverse? ‖ i32(maxCount) ‖ i32(minCount) ‖ u16(1) if ordered)
/// entity         = SHA256(name ‖ u8(abstract) ‖ superentity hash? ‖ hashes of stored properties,
///                         inherited included, by name ‖ modifier? ‖ uniqueness constraints, sorted)
/// ```
///
/// Delete rules, class names, default values, validation, user info, indexes and
/// renaming identifiers do not enter the hash. See "Version hashes" in
/// OpenCoreData.docc/TheModel.md.
enum VersionHasher {
    static func hash(of entity: EntityDescription) -> [UInt8] {
        var bytes: [UInt8] = Array(entity.name.utf8)
        bytes.append(entity.isAbstract ? 1 : 0)
        if let parent = entity.superentity {
            bytes += hash(of: parent)
        }
        let all = (entity.superentity?.allProperties ?? []) + entity.properties
        let stored = all.filter { !$0.isTransient && ($0 is AttributeDescription || $0 is RelationshipDescription) }
        for property in stored.sorted(by: { ManagedObjectModel.compareNames($0.name, $1.name) }) {
            bytes += hash(of: property)
        }
        if let modifier = entity.versionHashModifier, !modifier.isEmpty {
            bytes += Array(modifier.utf8)
        }
        let constraints = entity.uniquenessConstraints.map { $0.joined(separator: ".") }
            .filter { !$0.isEmpty }
            .sorted(by: ManagedObjectModel.compareNames)
        for constraint in constraints { bytes += Array(constraint.utf8) }
        return SHA2.sha256(bytes)
    }

    static func hash(of property: PropertyDescription) -> [UInt8] {
        switch property {
        case let derived as DerivedAttributeDescription:
            // Core Data computes the attribute hash into a scratch buffer but digests
            // only the derivation text (and the filtering predicate's).
            var bytes: [UInt8] = []
            bytes += Array(canonicalExpressionText(derived.derivationExpression).utf8)
            if let filter = derived.filteringPredicate, !filter.isEmpty {
                bytes += Array(canonicalPredicateText(filter).utf8)
            }
            return SHA2.sha256(bytes)
        case let composite as CompositeAttributeDescription:
            var bytes: [UInt8] = []
            for element in flattened(composite.elements).sorted(by: { ManagedObjectModel.compareNames($0.name, $1.name) })
            where !element.isTransient {
                bytes += hash(of: element)
            }
            return SHA2.sha256(bytes)
        case let attribute as AttributeDescription:
            var bytes = base(property)
            bytes += int32LE(Int32(attribute.attributeType.rawValue))
            if attribute.allowsExternalBinaryDataStorage { bytes.append(1) }
            if attribute.preservesValueInHistoryOnDeletion { bytes.append(1) }
            return SHA2.sha256(bytes)
        case let relationship as RelationshipDescription:
            var bytes = base(property)
            if let destination = relationship.destinationEntityName, !destination.isEmpty {
                bytes += Array(destination.utf8)
            }
            if let inverse = relationship.inverseRelationshipName, !inverse.isEmpty, includesInverse(relationship) {
                bytes += Array(inverse.utf8)
            }
            bytes += int32LE(Int32(clamping: relationship.maxCount))
            bytes += int32LE(Int32(clamping: relationship.minCount))
            if relationship.isOrdered { bytes += [1, 0] }
            return SHA2.sha256(bytes)
        default:
            return SHA2.sha256(base(property))
        }
    }

    /// The inverse name is hashed unless the relationship is its own inverse.
    private static func includesInverse(_ relationship: RelationshipDescription) -> Bool {
        guard let owner = relationship.entity else { return true }
        let selfInverse = relationship.inverseRelationshipName == relationship.name
            && relationship.destinationEntityName.map { name in
                var entity: EntityDescription? = owner
                while let candidate = entity {
                    if candidate.name == name { return true }
                    entity = candidate.superentity
                }
                return false
            } == true
        return !selfInverse
    }

    private static func flattened(_ elements: [AttributeDescription]) -> [AttributeDescription] {
        elements.flatMap { element -> [AttributeDescription] in
            if let nested = element as? CompositeAttributeDescription { return flattened(nested.elements) }
            return [element]
        }
    }

    private static func base(_ property: PropertyDescription) -> [UInt8] {
        var bytes = Array(property.name.utf8)
        var flags: UInt16 = 0
        if property.isOptional { flags |= 1 }
        if property.isTransient { flags |= 2 }
        if property.isReadOnly { flags |= 4 }
        bytes.append(UInt8(flags & 0xff))
        bytes.append(UInt8(flags >> 8))
        if let modifier = property.versionHashModifier, !modifier.isEmpty {
            bytes += Array(modifier.utf8)
        }
        return SHA2.sha256(bytes)
    }

    private static func int32LE(_ value: Int32) -> [UInt8] {
        let bits = UInt32(bitPattern: value)
        return [UInt8(bits & 0xff), UInt8((bits >> 8) & 0xff), UInt8((bits >> 16) & 0xff), UInt8(bits >> 24)]
    }

    /// The derivation text as Core Data prints the parsed expression (the hash is
    /// over Apple's canonical form, not over what the model file says).
    static func canonicalExpressionText(_ text: String) -> String {
        (try? CoreExpression(format: text))?.description ?? text
    }

    /// The filtering predicate text as Core Data's `predicateFormat` prints it.
    static func canonicalPredicateText(_ text: String) -> String {
        (try? CorePredicate(format: text))?.predicateFormat ?? text
    }
}
