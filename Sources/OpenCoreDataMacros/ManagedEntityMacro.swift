import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@ManagedEntity`: describes a managed object subclass as an entity, from its
/// `@Managed` properties, so that a model can be built from classes alone.
///
/// ```swift
/// @ManagedEntity
/// final class Mood: ManagedObject {
///     @Managed var date: Date
///     @Managed(inverse: "moods") var country: Country?
/// }
/// // adds
/// public class var managedEntitySchema: ManagedEntitySchema {
///     ManagedEntitySchema(
///         Mood.self,
///         name: nil,
///         parent: nil,
///         abstract: false,
///         properties: [
///             ManagedPropertySchema(\Mood.date, propertyName: "date"),
///             ManagedPropertySchema(\Mood.country, propertyName: "country", inverse: "moods"),
///         ]
///     )
/// }
/// // and
/// extension Mood: ManagedEntityType {}
/// ```
///
/// A class whose superclass is not `ManagedObject` is taken to be a subentity of
/// its superclass (which must be a `@ManagedEntity` class too): its schema
/// overrides the superclass's and names it as parent.
public struct ManagedEntityMacro: MemberMacro, ExtensionMacro {
    static let rootClassNames: Set<String> = ["ManagedObject", "OpenCoreData.ManagedObject", "NSManagedObject"]

    struct EntitySyntax {
        var className: String
        var superclassName: String
        var nameExpression: ExprSyntax
        var abstractExpression: ExprSyntax
        var isRoot: Bool { ManagedEntityMacro.rootClassNames.contains(superclassName) }
    }

    /// The class `@ManagedEntity` is attached to, or the problem that prevents
    /// describing it.
    static func parse(_ node: AttributeSyntax, _ declaration: some DeclGroupSyntax) -> Result<EntitySyntax, ManagedPropertySyntax.Failure> {
        guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
            return .failure(.init(node: Syntax(node), message: .entityNotAClass))
        }
        if let generics = classDecl.genericParameterClause {
            return .failure(.init(node: Syntax(generics), message: .entityGeneric))
        }
        guard let superclass = classDecl.inheritanceClause?.inheritedTypes.first?.type.trimmedDescription else {
            return .failure(.init(node: Syntax(classDecl.name), message: .entityWithoutSuperclass))
        }
        var entity = EntitySyntax(className: classDecl.name.trimmedDescription, superclassName: superclass,
                                  nameExpression: "nil", abstractExpression: "false")
        for argument in node.arguments?.as(LabeledExprListSyntax.self) ?? [] {
            switch argument.label?.text {
            case nil:
                guard let literal = argument.expression.as(StringLiteralExprSyntax.self),
                      literal.segments.allSatisfy({ $0.is(StringSegmentSyntax.self) }) else {
                    return .failure(.init(node: Syntax(argument.expression), message: .entityNameNotLiteral))
                }
                entity.nameExpression = argument.expression.trimmed
            case "abstract":
                entity.abstractExpression = argument.expression.trimmed
            default:
                continue
            }
        }
        return .success(entity)
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        let entity: EntitySyntax
        switch parse(node, declaration) {
        case .success(let parsed): entity = parsed
        case .failure(let failure):
            context.diagnose(Diagnostic(node: failure.node, message: failure.message))
            return []
        }
        var properties: [String] = []
        var keyPaths: [String] = []
        for member in declaration.memberBlock.members {
            guard let variable = member.decl.as(VariableDeclSyntax.self) else { continue }
            for element in variable.attributes {
                guard let attribute = element.as(AttributeSyntax.self),
                      ManagedPropertySyntax.isManagedAttribute(attribute),
                      case .success(let property) = ManagedPropertySyntax.parse(variable, attribute: attribute) else { continue }
                var arguments = "\\\(entity.className).\(backticked(property.name)), propertyName: \(StringLiteralExprSyntax(content: property.name))"
                for argument in property.arguments {
                    let label = argument.label.map { "\($0.text): " } ?? ""
                    arguments += ", \(label)\(argument.expression.trimmedDescription)"
                }
                properties.append("ManagedPropertySchema(\(arguments))")
                keyPaths.append("\\Root.\(backticked(property.name)): \(property.keyExpression.trimmedDescription)")
            }
        }
        let parent = entity.isRoot ? "nil" : "\(entity.superclassName).self"
        let list = properties.isEmpty ? "[]" : "[\n" + properties.map { "            \($0),\n" }.joined() + "        ]"
        let override = entity.isRoot ? "" : "override "
        let decl: DeclSyntax = """
            /// The entity this class describes, derived from its `@Managed` properties
            /// (generated by `@ManagedEntity`).
            public \(raw: override)class var managedEntitySchema: ManagedEntitySchema {
                ManagedEntitySchema(
                    \(raw: entity.className).self,
                    name: \(entity.nameExpression),
                    parent: \(raw: parent),
                    abstract: \(entity.abstractExpression),
                    properties: \(raw: list)
                )
            }
            """
        let table = keyPaths.isEmpty ? "[:]" : "[\n" + keyPaths.map { "            \($0),\n" }.joined() + "        ]"
        let keyPathsDecl: DeclSyntax = """
            /// The model key of each `@Managed` property's key path, rooted at the
            /// class asked (generated by `@ManagedEntity`).
            public override class var managedPropertyKeyPaths: [AnyKeyPath: String] {
                func declared<Root: \(raw: entity.className)>(_: Root.Type) -> [AnyKeyPath: String] {
                    \(raw: table)
                }
                return super.managedPropertyKeyPaths.merging(declared(Self.self)) { _, declared in
                    declared
                }
            }
            """
        return [decl, keyPathsDecl]
    }

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingExtensionsOf type: some TypeSyntaxProtocol,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [ExtensionDeclSyntax] {
        // Problems are diagnosed once, by the member role. A subentity inherits the
        // conformance of its superclass.
        guard case .success(let entity) = parse(node, declaration), entity.isRoot, !protocols.isEmpty else { return [] }
        let conformances = protocols.map(\.trimmedDescription).joined(separator: ", ")
        let decl: DeclSyntax = "extension \(type.trimmed): \(raw: conformances) {}"
        guard let ext = decl.as(ExtensionDeclSyntax.self) else { return [] }
        return [ext]
    }

    /// `name` as an identifier, in backticks when it is a keyword.
    static func backticked(_ name: String) -> String {
        let keywords: Set<String> = [
            "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
            "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows",
            "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default",
            "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch",
            "where", "while", "Any", "as", "false", "is", "nil", "self", "Self", "super", "throws", "true", "try",
        ]
        return keywords.contains(name) ? "`\(name)`" : name
    }
}
