import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Managed`: turns a stored `var` of a managed object subclass into a computed
/// property that reads and writes the object's storage through the generic
/// runtime accessors `managedValue(forKey:)` and `setManagedValue(_:forKey:)`.
///
/// ```swift
/// @Managed var date: Date
/// // becomes
/// var date: Date {
///     get { managedValue(forKey: "date") }
///     set { setManagedValue(newValue, forKey: "date") }
/// }
/// ```
///
/// The arguments (`key:`, `inverse:`, `deleteRule:`, options, `default:`) are
/// checked by the compiler against the macro declaration; only `key:` and
/// `default:` matter to the accessors, the others are read by `@ManagedEntity`.
public struct ManagedMacro: AccessorMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        if let enclosing = context.lexicalContext.first, !isAllowedContext(enclosing) {
            context.diagnose(Diagnostic(node: node, message: ManagedDiagnostic.notInClass))
            return []
        }
        let property: ManagedPropertySyntax
        switch ManagedPropertySyntax.parse(declaration, attribute: node) {
        case .success(let parsed): property = parsed
        case .failure(let failure):
            context.diagnose(Diagnostic(node: failure.node, message: failure.message))
            return []
        }
        let key = property.keyExpression
        let read: ExprSyntax
        if let defaultValue = property.defaultExpression {
            read = "managedValue(forKey: \(key), default: \(defaultValue))"
        } else {
            read = "managedValue(forKey: \(key))"
        }
        return [
            """
            get {
                \(read)
            }
            """,
            """
            set {
                setManagedValue(newValue, forKey: \(key))
            }
            """,
        ]
    }

    /// Whether `@Managed` may appear in this declaration context: a class, or an
    /// extension (of a class, which the compiler checks when the accessors call
    /// the runtime).
    static func isAllowedContext(_ syntax: Syntax) -> Bool {
        syntax.is(ClassDeclSyntax.self) || syntax.is(ExtensionDeclSyntax.self)
    }
}

/// A `@Managed` property, as written.
struct ManagedPropertySyntax {
    /// The Swift name of the property (without backticks).
    var name: String
    /// The arguments of the `@Managed` attribute, to forward to the schema.
    var arguments: LabeledExprListSyntax
    /// The `key:` argument, if any.
    var keyArgument: ExprSyntax?
    /// The `default:` argument, if any.
    var defaultExpression: ExprSyntax?

    /// The storage key: the `key:` argument, else the property's name.
    var keyExpression: ExprSyntax {
        keyArgument ?? ExprSyntax(StringLiteralExprSyntax(content: name))
    }

    struct Failure: Error {
        var node: Syntax
        var message: ManagedDiagnostic
    }

    /// Parses and checks a declaration carrying `@Managed`.
    static func parse(_ declaration: some DeclSyntaxProtocol, attribute: AttributeSyntax) -> Result<ManagedPropertySyntax, Failure> {
        guard let variable = declaration.as(VariableDeclSyntax.self) else {
            return .failure(Failure(node: Syntax(attribute), message: .notAVariable))
        }
        guard variable.bindingSpecifier.tokenKind == .keyword(.var) else {
            return .failure(Failure(node: Syntax(variable.bindingSpecifier), message: .letProperty))
        }
        for modifier in variable.modifiers {
            switch modifier.name.tokenKind {
            case .keyword(.static), .keyword(.class):
                return .failure(Failure(node: Syntax(modifier), message: .staticProperty))
            case .keyword(.lazy), .keyword(.weak), .keyword(.unowned):
                return .failure(Failure(node: Syntax(modifier), message: .unsupportedModifier(modifier.name.text)))
            default:
                continue
            }
        }
        guard variable.bindings.count == 1, let binding = variable.bindings.first else {
            return .failure(Failure(node: Syntax(variable.bindings), message: .multipleBindings))
        }
        guard let identifier = binding.pattern.as(IdentifierPatternSyntax.self) else {
            return .failure(Failure(node: Syntax(binding.pattern), message: .notAnIdentifier))
        }
        guard binding.typeAnnotation != nil else {
            return .failure(Failure(node: Syntax(binding.pattern), message: .missingType))
        }
        if let initializer = binding.initializer {
            return .failure(Failure(node: Syntax(initializer), message: .initialValue))
        }
        if let accessors = binding.accessorBlock {
            return .failure(Failure(node: Syntax(accessors), message: .hasAccessors))
        }
        var name = identifier.identifier.text
        if name.hasPrefix("`"), name.hasSuffix("`"), name.count > 1 {
            name = String(name.dropFirst().dropLast())
        }
        let arguments = attribute.arguments?.as(LabeledExprListSyntax.self) ?? LabeledExprListSyntax([])
        var property = ManagedPropertySyntax(name: name, arguments: arguments)
        for argument in arguments {
            switch argument.label?.text {
            case "key": property.keyArgument = argument.expression.trimmed
            case "default": property.defaultExpression = argument.expression.trimmed
            default: break
            }
        }
        return .success(property)
    }

    /// Whether `attribute` is `@Managed` (or `@OpenCoreData.Managed`).
    static func isManagedAttribute(_ attribute: AttributeSyntax) -> Bool {
        let name = attribute.attributeName.trimmedDescription
        return name == "Managed" || name == "OpenCoreData.Managed"
    }
}

/// The problems `@Managed` and `@ManagedEntity` report.
enum ManagedDiagnostic: DiagnosticMessage, Equatable {
    case notInClass
    case notAVariable
    case letProperty
    case staticProperty
    case unsupportedModifier(String)
    case multipleBindings
    case notAnIdentifier
    case missingType
    case initialValue
    case hasAccessors
    case entityNotAClass
    case entityWithoutSuperclass
    case entityGeneric
    case entityNameNotLiteral

    var message: String {
        switch self {
        case .notInClass:
            return "@Managed can only be used on properties of a ManagedObject subclass"
        case .notAVariable:
            return "@Managed can only be attached to a 'var' property"
        case .letProperty:
            return "@Managed properties must be declared with 'var'"
        case .staticProperty:
            return "@Managed can't be used on a static or class property"
        case .unsupportedModifier(let modifier):
            return "@Managed properties can't be '\(modifier)'"
        case .multipleBindings:
            return "@Managed applies to a single property; declare each property on its own line"
        case .notAnIdentifier:
            return "@Managed requires a simple property name"
        case .missingType:
            return "@Managed requires an explicit type annotation, e.g. '@Managed var date: Date'"
        case .initialValue:
            return "@Managed properties live in the object's storage and can't have an initial value; use '@Managed(default: …)' or set the value in awakeFromInsert()"
        case .hasAccessors:
            return "@Managed can't be attached to a property that already has accessors"
        case .entityNotAClass:
            return "@ManagedEntity can only be attached to a class that inherits from ManagedObject"
        case .entityWithoutSuperclass:
            return "@ManagedEntity requires a superclass: ManagedObject, or another @ManagedEntity class"
        case .entityGeneric:
            return "@ManagedEntity can't be attached to a generic class"
        case .entityNameNotLiteral:
            return "The entity name of @ManagedEntity must be a string literal"
        }
    }

    var diagnosticID: MessageID {
        let id: String
        switch self {
        case .notInClass: id = "notInClass"
        case .notAVariable: id = "notAVariable"
        case .letProperty: id = "letProperty"
        case .staticProperty: id = "staticProperty"
        case .unsupportedModifier: id = "unsupportedModifier"
        case .multipleBindings: id = "multipleBindings"
        case .notAnIdentifier: id = "notAnIdentifier"
        case .missingType: id = "missingType"
        case .initialValue: id = "initialValue"
        case .hasAccessors: id = "hasAccessors"
        case .entityNotAClass: id = "entityNotAClass"
        case .entityWithoutSuperclass: id = "entityWithoutSuperclass"
        case .entityGeneric: id = "entityGeneric"
        case .entityNameNotLiteral: id = "entityNameNotLiteral"
        }
        return MessageID(domain: "OpenCoreDataMacros", id: id)
    }

    var severity: DiagnosticSeverity { .error }
}
