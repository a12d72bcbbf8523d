import OpenCoreDataMacros
import SwiftSyntax
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacrosGenericTestSupport
import Testing

private let macros: [String: MacroSpec] = [
    "Managed": MacroSpec(type: ManagedMacro.self),
    "ManagedEntity": MacroSpec(type: ManagedEntityMacro.self, conformances: ["ManagedEntityType"]),
]

/// Only `@ManagedEntity`, to see its expansion with the `@Managed` attributes in place.
private let entityMacros: [String: MacroSpec] = [
    "ManagedEntity": MacroSpec(type: ManagedEntityMacro.self, conformances: ["ManagedEntityType"]),
]

/// `assertMacroExpansion` reporting through Swift Testing.
private func assertExpansion(
    _ source: String,
    expandedSource: String,
    diagnostics: [DiagnosticSpec] = [],
    macros specs: [String: MacroSpec] = macros,
    sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    assertMacroExpansion(
        source, expandedSource: expandedSource, diagnostics: diagnostics, macroSpecs: specs,
        indentationWidth: .spaces(4),
        failureHandler: { failure in
            Issue.record(Comment(rawValue: failure.message), sourceLocation: sourceLocation)
        })
}

@Suite("@Managed expansion")
struct ManagedMacroTests {
    @Test("A scalar property becomes get/set through the generic accessors")
    func scalar() {
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed var date: Date
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var date: Date {
                    get {
                        managedValue(forKey: "date")
                    }
                    set {
                        setManagedValue(newValue, forKey: "date")
                    }
                }
            }
            """)
    }

    @Test("The book's fileprivate(set) properties keep their access")
    func bookProperties() {
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed fileprivate(set) var date: Date
                @Managed fileprivate(set) var colors: [Color]
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                fileprivate(set) var date: Date {
                    get {
                        managedValue(forKey: "date")
                    }
                    set {
                        setManagedValue(newValue, forKey: "date")
                    }
                }
                fileprivate(set) var colors: [Color] {
                    get {
                        managedValue(forKey: "colors")
                    }
                    set {
                        setManagedValue(newValue, forKey: "colors")
                    }
                }
            }
            """)
    }

    @Test("key: renames the stored property; relationship arguments don't change the accessors")
    func keyAndRelationshipArguments() {
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed(key: "creationDate") var date: Date?
                @Managed(inverse: "moods", deleteRule: .nullify) var country: Country?
                @Managed(.transient) var scratch: String?
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var date: Date? {
                    get {
                        managedValue(forKey: "creationDate")
                    }
                    set {
                        setManagedValue(newValue, forKey: "creationDate")
                    }
                }
                var country: Country? {
                    get {
                        managedValue(forKey: "country")
                    }
                    set {
                        setManagedValue(newValue, forKey: "country")
                    }
                }
                var scratch: String? {
                    get {
                        managedValue(forKey: "scratch")
                    }
                    set {
                        setManagedValue(newValue, forKey: "scratch")
                    }
                }
            }
            """)
    }

    @Test("default: becomes the value read when the stored value is nil")
    func defaultValue() {
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed(default: Kind.happy) var kind: Kind
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var kind: Kind {
                    get {
                        managedValue(forKey: "kind", default: Kind.happy)
                    }
                    set {
                        setManagedValue(newValue, forKey: "kind")
                    }
                }
            }
            """)
    }

    @Test("A property named with a keyword keeps its plain name as key")
    func backtickedName() {
        assertExpansion(
            """
            final class Item: ManagedObject {
                @Managed var `default`: Bool
            }
            """,
            expandedSource: """
            final class Item: ManagedObject {
                var `default`: Bool {
                    get {
                        managedValue(forKey: "default")
                    }
                    set {
                        setManagedValue(newValue, forKey: "default")
                    }
                }
            }
            """)
    }

    @Test("let, static, missing types, initial values and multiple bindings are diagnosed")
    func diagnostics() {
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed let date: Date
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                let date: Date
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Managed properties must be declared with 'var'", line: 2, column: 14)])
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed static var count: Int
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                static var count: Int
            }
            """,
            diagnostics: [DiagnosticSpec(message: "@Managed can't be used on a static or class property", line: 2, column: 14)])
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed var rating = 3
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var rating = 3
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "@Managed requires an explicit type annotation, e.g. '@Managed var date: Date'", line: 2, column: 18)])
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed var rating: Int = 3
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var rating: Int = 3
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "@Managed properties live in the object's storage and can't have an initial value; use '@Managed(default: …)' or set the value in awakeFromInsert()",
                line: 2, column: 30)])
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed var a: Int, b: Int
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var a: Int, b: Int
            }
            """,
            // swift-syntax rejects accessor macros on several bindings before @Managed runs.
            diagnostics: [DiagnosticSpec(message: "accessor macro can only be applied to a single variable", line: 2, column: 5)])
        assertExpansion(
            """
            final class Mood: ManagedObject {
                @Managed var date: Date { Date() }
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                var date: Date { Date() }
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "@Managed can't be attached to a property that already has accessors", line: 2, column: 29)])
    }

    @Test("@Managed outside a class is diagnosed")
    func notInClass() {
        assertExpansion(
            """
            struct Mood {
                @Managed var date: Date
            }
            """,
            expandedSource: """
            struct Mood {
                var date: Date
            }
            """,
            diagnostics: [DiagnosticSpec(
                message: "@Managed can only be used on properties of a ManagedObject subclass", line: 2, column: 5)])
    }
}

@Suite("@ManagedEntity expansion")
struct ManagedEntityMacroTests {
    @Test("A root entity gets a schema from its @Managed properties and the conformance")
    func rootEntity() {
        assertExpansion(
            """
            @ManagedEntity
            final class Mood: ManagedObject {
                @Managed var date: Date
                @Managed(inverse: "moods", deleteRule: .nullify) var country: Country?
                @Managed(.transient, key: "note") var scratch: String?
                var cache: [String: Int] = [:]
            }
            """,
            expandedSource: """
            final class Mood: ManagedObject {
                @Managed var date: Date
                @Managed(inverse: "moods", deleteRule: .nullify) var country: Country?
                @Managed(.transient, key: "note") var scratch: String?
                var cache: [String: Int] = [:]

                /// The entity this class describes, derived from its `@Managed` properties
                /// (generated by `@ManagedEntity`).
                public class var managedEntitySchema: ManagedEntitySchema {
                    ManagedEntitySchema(
                        Mood.self,
                        name: nil,
                        parent: nil,
                        abstract: false,
                        properties: [
                            ManagedPropertySchema(\\Mood.date, propertyName: "date"),
                            ManagedPropertySchema(\\Mood.country, propertyName: "country", inverse: "moods", deleteRule: .nullify),
                            ManagedPropertySchema(\\Mood.scratch, propertyName: "scratch", .transient, key: "note"),
                        ]
                    )
                }

                /// The model key of each `@Managed` property's key path, rooted at the
                /// class asked (generated by `@ManagedEntity`).
                public override class var managedPropertyKeyPaths: [AnyKeyPath: String] {
                    func declared<Root: Mood>(_: Root.Type) -> [AnyKeyPath: String] {
                        [
                            \\Root.date: "date",
                            \\Root.country: "country",
                            \\Root.scratch: "note",
                        ]
                    }
                    return super.managedPropertyKeyPaths.merging(declared(Self.self)) { _, declared in
                        declared
                    }
                }
            }

            extension Mood: ManagedEntityType {
            }
            """,
            macros: entityMacros)
    }

    @Test("A subclass of another entity class overrides the schema and names its parent")
    func subentity() {
        assertExpansion(
            """
            @ManagedEntity("Country")
            final class CountryObject: GeographicRegion {
                @Managed var moods: Set<Mood>
            }
            """,
            expandedSource: """
            final class CountryObject: GeographicRegion {
                @Managed var moods: Set<Mood>

                /// The entity this class describes, derived from its `@Managed` properties
                /// (generated by `@ManagedEntity`).
                public override class var managedEntitySchema: ManagedEntitySchema {
                    ManagedEntitySchema(
                        CountryObject.self,
                        name: "Country",
                        parent: GeographicRegion.self,
                        abstract: false,
                        properties: [
                            ManagedPropertySchema(\\CountryObject.moods, propertyName: "moods"),
                        ]
                    )
                }

                /// The model key of each `@Managed` property's key path, rooted at the
                /// class asked (generated by `@ManagedEntity`).
                public override class var managedPropertyKeyPaths: [AnyKeyPath: String] {
                    func declared<Root: CountryObject>(_: Root.Type) -> [AnyKeyPath: String] {
                        [
                            \\Root.moods: "moods",
                        ]
                    }
                    return super.managedPropertyKeyPaths.merging(declared(Self.self)) { _, declared in
                        declared
                    }
                }
            }
            """,
            macros: entityMacros)
    }

    @Test("An abstract entity with no properties")
    func abstractEntity() {
        assertExpansion(
            """
            @ManagedEntity(abstract: true)
            class GeographicRegion: ManagedObject {
            }
            """,
            expandedSource: """
            class GeographicRegion: ManagedObject {

                /// The entity this class describes, derived from its `@Managed` properties
                /// (generated by `@ManagedEntity`).
                public class var managedEntitySchema: ManagedEntitySchema {
                    ManagedEntitySchema(
                        GeographicRegion.self,
                        name: nil,
                        parent: nil,
                        abstract: true,
                        properties: []
                    )
                }

                /// The model key of each `@Managed` property's key path, rooted at the
                /// class asked (generated by `@ManagedEntity`).
                public override class var managedPropertyKeyPaths: [AnyKeyPath: String] {
                    func declared<Root: GeographicRegion>(_: Root.Type) -> [AnyKeyPath: String] {
                        [:]
                    }
                    return super.managedPropertyKeyPaths.merging(declared(Self.self)) { _, declared in
                        declared
                    }
                }
            }

            extension GeographicRegion: ManagedEntityType {
            }
            """)
    }

    @Test("@ManagedEntity on a struct, a generic class or a class without superclass is diagnosed")
    func entityDiagnostics() {
        assertExpansion(
            """
            @ManagedEntity
            struct Mood {}
            """,
            expandedSource: """
            struct Mood {}
            """,
            diagnostics: [DiagnosticSpec(
                message: "@ManagedEntity can only be attached to a class that inherits from ManagedObject", line: 1, column: 1)])
        assertExpansion(
            """
            @ManagedEntity
            final class Box<T>: ManagedObject {}
            """,
            expandedSource: """
            final class Box<T>: ManagedObject {}
            """,
            diagnostics: [DiagnosticSpec(message: "@ManagedEntity can't be attached to a generic class", line: 2, column: 16)])
        assertExpansion(
            """
            @ManagedEntity
            final class Mood {}
            """,
            expandedSource: """
            final class Mood {}
            """,
            diagnostics: [DiagnosticSpec(
                message: "@ManagedEntity requires a superclass: ManagedObject, or another @ManagedEntity class", line: 2, column: 13)])
        assertExpansion(
            """
            @ManagedEntity(name)
            final class Mood: ManagedObject {}
            """,
            expandedSource: """
            final class Mood: ManagedObject {}
            """,
            diagnostics: [DiagnosticSpec(message: "The entity name of @ManagedEntity must be a string literal", line: 1, column: 16)])
    }
}
