import Foundation
import OpenCoreDataPredicates

extension ManagedObject {
    /// Validates one property's current value against the model's rules and
    /// ``validateValue(_:forKey:)``, throwing the first failure.
    public func validateValue(forKey key: String) throws {
        guard let index = entity.propertyIndex(named: key) else { return }
        if let error = validationErrors(at: index).first { throw error }
    }

    /// Checks every property, throwing one error (or 1560 gathering several).
    func validatePropertyValues() throws {
        if storage == nil { fireFaultInContext() }
        let properties = entity.allProperties
        // Plain attributes of a frozen entity, when no subclass can have rules in
        // `validateValue(_:forKey:)`: a value of the attribute's own type, or nil
        // for an optional one, is valid without looking further.
        let plain = type(of: self) == ManagedObject.self ? entity.frozenPlainAttributes : nil
        var errors: [CoreDataError] = []
        for index in properties.indices {
            guard let storage, index < storage.count else { break }
            if let plain, index < plain.count, let attribute = plain[index], case .attribute(let value) = storage[index],
               value.isNull ? attribute.isOptional : AttributeValueCoercion.isStoredAsIs(value, for: attribute.attributeType) {
                continue
            }
            let found = validationErrors(of: properties[index], at: index, storage[index])
            if !found.isEmpty { errors += found }
        }
        if errors.count == 1 { throw errors[0] }
        if errors.count > 1 {
            throw CoreDataError(.validationMultipleErrors, "Multiple validation errors occurred for \(objectID)",
                                entityName: entity.name, objectDescription: objectID.description, underlyingErrors: errors)
        }
    }

    /// Deny delete rules: a deleted object must not have destinations through a
    /// relationship whose rule is deny.
    func validateDeleteRules() throws {
        for (index, property) in entity.allProperties.enumerated() {
            guard let relationship = property as? RelationshipDescription, relationship.deleteRule == .deny else { continue }
            let destinations = relatedObjects(index).filter { !$0.isDeleted }
            if !destinations.isEmpty {
                throw CoreDataError(.validationRelationshipDeniedDelete,
                                    "Can't delete \(objectID): its relationship '\(relationship.name)' has a deny delete rule and still holds \(destinations.count) object(s)",
                                    entityName: entity.name, objectDescription: objectID.description, key: relationship.name,
                                    valueDescription: destinations.map(\.objectID.description).joined(separator: ", "))
            }
        }
    }

    private func failure(_ code: CoreDataError.Code, _ key: String, _ value: String, _ reason: String) -> CoreDataError {
        CoreDataError(code, "\(entity.name).\(key) of \(objectID) \(reason)", entityName: entity.name,
                      objectDescription: objectID.description, key: key, valueDescription: value)
    }

    func validationErrors(at index: Int) -> [CoreDataError] {
        guard let slot = slot(index) else { return [] }
        return validationErrors(of: entity.allProperties[index], at: index, slot)
    }

    /// The failures of `slot`, the value of `property` (at `index` of the entity's properties).
    private func validationErrors(of property: PropertyDescription, at index: Int, _ slot: SnapshotValue) -> [CoreDataError] {
        var errors: [CoreDataError] = []
        let key = property.name
        switch (property, slot) {
        case (let attribute as AttributeDescription, .attribute(let value)):
            // Described only for an error message: formatting every valid value is costly.
            var text: String { ManagedObject.describe(value) }
            if value.isNull {
                if !attribute.isOptional {
                    errors.append(failure(.validationMissingMandatoryProperty, key, text, "is required but has no value"))
                }
            } else if attribute.minValue == nil && attribute.maxValue == nil && attribute.regularExpression == nil
                        && AttributeValueCoercion.isStoredAsIs(value, for: attribute.attributeType) {
                // The common case: a value of the attribute's own type and no range or pattern to check.
            } else if AttributeValueCoercion.coerce(value, to: attribute.attributeType) == nil {
                errors.append(failure(.managedObjectValidation, key, text, "has a value that is not a \(attribute.attributeType.xcodeName)"))
            } else {
                errors += rangeErrors(attribute, value, key)
            }
            for rule in attribute.validationRules where !value.isNull {
                let passes = (try? CorePredicate(format: rule.predicateFormat).evaluate(with: value)) ?? false
                if !passes {
                    let code = Int(rule.warning).map(CoreDataError.Code.init(rawValue:)) ?? .managedObjectValidation
                    errors.append(failure(code, key, text, "fails \(rule.predicateFormat): \(rule.warning)"))
                }
            }
            // ManagedObject's own `validateValue(_:forKey:)` accepts everything: only
            // a subclass can have a rule there.
            if type(of: self) != ManagedObject.self {
                var any: Any? = value.nativeValue
                do { try validateValue(&any, forKey: key) } catch let error as CoreDataError { errors.append(error) } catch {
                    errors.append(failure(.managedObjectValidation, key, text, "is invalid: \(error)"))
                }
            }
        case (let relationship as RelationshipDescription, .toOne(let id)):
            if id == nil && !relationship.isOptional {
                errors.append(failure(.validationMissingMandatoryProperty, key, "nil", "is a required relationship but has no object"))
            }
        case (let relationship as RelationshipDescription, .toMany):
            let count = relatedObjects(index).count
            if count == 0 && !relationship.isOptional && relationship.minCount == 0 {
                errors.append(failure(.validationRelationshipLacksMinimumCount, key, "0 objects", "is a required relationship but is empty"))
            } else if count < relationship.minCount && (count > 0 || !relationship.isOptional) {
                errors.append(failure(.validationRelationshipLacksMinimumCount, key, "\(count) objects", "has \(count) objects, fewer than its minimum \(relationship.minCount)"))
            }
            if relationship.maxCount > 0 && count > relationship.maxCount {
                errors.append(failure(.validationRelationshipExceedsMaximumCount, key, "\(count) objects", "has \(count) objects, more than its maximum \(relationship.maxCount)"))
            }
        default:
            break
        }
        return errors
    }

    private func rangeErrors(_ attribute: AttributeDescription, _ value: AttributeValue, _ key: String) -> [CoreDataError] {
        var text: String { ManagedObject.describe(value) }
        var errors: [CoreDataError] = []
        switch attribute.attributeType {
        case .integer16, .integer32, .integer64, .decimal, .double, .float:
            if let min = attribute.minValue?.doubleValue, let v = value.doubleValue, v < min {
                errors.append(failure(.validationNumberTooSmall, key, text, "is \(text), less than the minimum \(ManagedObject.describe(attribute.minValue ?? .null))"))
            }
            if let max = attribute.maxValue?.doubleValue, let v = value.doubleValue, v > max {
                errors.append(failure(.validationNumberTooLarge, key, text, "is \(text), more than the maximum \(ManagedObject.describe(attribute.maxValue ?? .null))"))
            }
        case .date:
            if let min = attribute.minValue?.dateValue, let v = value.dateValue, v < min {
                errors.append(failure(.validationDateTooSoon, key, text, "is \(text), earlier than \(min)"))
            }
            if let max = attribute.maxValue?.dateValue, let v = value.dateValue, v > max {
                errors.append(failure(.validationDateTooLate, key, text, "is \(text), later than \(max)"))
            }
        case .string, .binaryData:
            let length: Int
            if case .string(let s) = value { length = s.utf16.count } else { length = value.dataValue?.count ?? 0 }
            if let min = attribute.minValue?.int64Value, length < min {
                errors.append(failure(.validationStringTooShort, key, text, "is \(length) long, shorter than the minimum \(min)"))
            }
            if let max = attribute.maxValue?.int64Value, length > max {
                errors.append(failure(.validationStringTooLong, key, text, "is \(length) long, longer than the maximum \(max)"))
            }
            if let pattern = attribute.regularExpression, case .string(let s) = value {
                let matches = (try? NSRegularExpression(pattern: "^(?:" + pattern + ")$"))
                    .map { $0.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil }
                if matches != true {
                    errors.append(failure(.validationStringPatternMatching, key, text, "does not match the pattern \(pattern)"))
                }
            }
        default:
            break
        }
        return errors
    }
}

extension ManagedObjectContext {
    /// Validates the objects of a save; throws one error, or 1560 gathering all.
    ///
    /// `afterInsertValidated` is called with each inserted object right after its
    /// own validation (a save takes its row then, while the object is at hand).
    func validate(inserted: [ManagedObject], updated: [ManagedObject], deleted: [ManagedObject],
                  afterInsertValidated: (ManagedObject) -> Void = { _ in }) throws {
        if !validatesOnSave {
            for object in inserted { afterInsertValidated(object) }
            return
        }
        var errors: [CoreDataError] = []
        func run(_ body: () throws -> Void) {
            do { try body() } catch let error as CoreDataError {
                if error.code == .validationMultipleErrors { errors += error.underlyingErrors } else { errors.append(error) }
            } catch {
                errors.append(CoreDataError(.managedObjectValidation, "\(error)"))
            }
        }
        inserted.withUnsafeBufferPointer { objects in
            for index in objects.indices {
                Prefetching.object(of: objects, at: index + Prefetching.distance)
                let object = objects[index]
                run { try object.validateForInsert() }
                afterInsertValidated(object)
            }
        }
        for object in updated { run { try object.validateForUpdate() } }
        for object in deleted { run { try object.validateForDelete() } }
        if errors.count == 1 { throw errors[0] }
        if errors.count > 1 {
            throw CoreDataError(.validationMultipleErrors, "Multiple validation errors occurred (\(errors.count))", underlyingErrors: errors)
        }
    }
}
