import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plugin that provides OpenCoreData's macros.
@main
struct OpenCoreDataMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [
        ManagedMacro.self,
        ManagedEntityMacro.self,
    ]
}
