import Logging
import OpenCoreDataPredicates

/// Warnings about model files read with a guess: a value Core Data's tools accept
/// that we read leniently or drop (a default value that is not of its attribute's
/// type, ...). Through swift-log, label `OpenCoreData.Model`; a warning never stops
/// a model from loading.
enum ModelLoadingLog {
    static let logger = Logger(label: "OpenCoreData.Model")

    /// Logs `message` as a warning, with the entity and attribute it is about.
    static func warning(_ message: String, entity: String?, property: String?) {
        var metadata: Logger.Metadata = [:]
        if let entity { metadata["entity"] = .string(entity) }
        if let property { metadata["property"] = .string(property) }
        logger.warning("\(message)", metadata: metadata)
    }

    /// The default value of `entity.attribute` read from `text` (Xcode's
    /// `defaultValueString`), never refusing: a lenient reading or no default,
    /// with a warning naming entity, attribute and string.
    /// `label` names the attribute in the message when the entity's name is not
    /// at hand (a compiled model's reader passes its own description).
    static func defaultValue(_ text: String, type: AttributeType, entity: String?, attribute: String,
                             label: String? = nil) -> AttributeValue? {
        let (value, exact) = AttributeValueCoercion.readDefault(text, type: type)
        let name = label ?? "'\(entity ?? "?").\(attribute)'"
        if let value, !exact {
            warning("Default value '\(text)' of \(name) is not a \(type.xcodeName); read as \(value)",
                    entity: entity, property: attribute)
        } else if value == nil {
            warning("Default value '\(text)' of \(name) is not a \(type.xcodeName); the attribute has no default",
                    entity: entity, property: attribute)
        }
        return value
    }
}
