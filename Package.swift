// swift-tools-version: 6.1
import CompilerPluginSupport
import Foundation
import PackageDescription

// OCD_WITHOUT_POSTGRESQL=1 leaves out the PostgreSQL store, its dependencies and its
// tests (CI's AddressSanitizer run does: building postgres-nio, swift-nio-ssl and
// swift-crypto under a sanitizer costs a quarter of an hour).
let withPostgreSQL = ProcessInfo.processInfo.environment["OCD_WITHOUT_POSTGRESQL"] != "1"

let package = Package(
    name: "OpenCoreData",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "OpenCoreData", targets: ["OpenCoreData"]),
        .library(name: "OpenCoreDataPredicates", targets: ["OpenCoreDataPredicates"]),
        .executable(name: "ocd", targets: ["ocd"]),
        .executable(name: "OpenCoreDataBenchmarks", targets: ["OpenCoreDataBenchmarks"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
        // `swift package generate-documentation` (DocC); nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The NSPredicate/NSExpression format language, key-path sort descriptors and
        // the key-value protocol objects expose to them. Depends on nothing else.
        .target(name: "OpenCoreDataPredicates"),
        // The compiler plugin behind `@Managed` and `@ManagedEntity` (typed managed
        // object subclasses, the counterpart of `@NSManaged`).
        .macro(
            name: "OpenCoreDataMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]
        ),
        // Processor hints Swift has no spelling for (cache prefetching), as inline C.
        .target(name: "OpenCoreDataCSupport"),
        .target(
            name: "OpenCoreData",
            dependencies: [
                "OpenCoreDataPredicates",
                "OpenCoreDataMacros",
                "OpenCoreDataCSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The commands of `ocd`, in a library so tests can run them.
        .target(
            name: "OCDKit",
            dependencies: [
                "OpenCoreData",
                "OpenCoreDataPredicates",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ] + (withPostgreSQL ? ["OpenCoreDataPostgreSQL"] : []),
            // `ocd` reads PostgreSQL stores (postgres:// URLs) when built with them.
            swiftSettings: withPostgreSQL ? [.define("OCD_POSTGRESQL")] : []
        ),
        .executableTarget(name: "ocd", dependencies: ["OCDKit"]),
        // The benchmark suite (Benchmarks/run; not part of `swift test`): OpenCoreData
        // against raw SQLite through its C API (the system library GRDB links) and
        // GRDB records.
        .executableTarget(
            name: "OpenCoreDataBenchmarks",
            dependencies: [
                "OpenCoreData",
                "OpenCoreDataPredicates",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Benchmarks/Sources/OpenCoreDataBenchmarks"
        ),
        .testTarget(
            name: "OpenCoreDataPredicatesTests",
            dependencies: ["OpenCoreDataPredicates"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "OpenCoreDataMacrosTests",
            dependencies: [
                "OpenCoreDataMacros",
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
        .testTarget(
            name: "OCDKitTests",
            dependencies: ["OCDKit", "OpenCoreData", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "OpenCoreDataTests",
            dependencies: [
                "OpenCoreData",
                "OpenCoreDataPredicates",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ] + (withPostgreSQL ? ["OpenCoreDataPostgreSQL", "OCDKit", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                   .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "NIOCore", package: "swift-nio")] : []),
            exclude: ["Fixtures"],
            swiftSettings: withPostgreSQL ? [.define("OCD_POSTGRESQL")] : []
        ),
    ],
    swiftLanguageModes: [.v6]
)

if withPostgreSQL {
    // The PostgreSQL store: a product of its own, so apps on SQLite alone never
    // build postgres-nio.
    package.products.append(.library(name: "OpenCoreDataPostgreSQL", targets: ["OpenCoreDataPostgreSQL"]))
    package.dependencies += [
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ]
    // Core Data's layout on PostgreSQL, for many app servers on one database.
    package.targets.append(.target(
        name: "OpenCoreDataPostgreSQL",
        dependencies: [
            "OpenCoreData",
            "OpenCoreDataPredicates",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: [.swiftLanguageMode(.v6)]
    ))
}

// OCD_BENCHMARK_POSTGRESQL=1 (set by `Benchmarks/run --postgresql`, with a build
// folder of its own) adds the PostgreSQL workloads to the benchmark executable:
// OpenCoreData's PostgreSQL store against raw postgres-nio and Fluent. Neither
// `swift test` nor CI builds Fluent.
if withPostgreSQL && ProcessInfo.processInfo.environment["OCD_BENCHMARK_POSTGRESQL"] == "1" {
    package.dependencies += [
        .package(url: "https://github.com/vapor/fluent-kit", from: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", from: "2.14.0"),
    ]
    if let index = package.targets.firstIndex(where: { $0.name == "OpenCoreDataBenchmarks" }) {
        package.targets[index].dependencies += [
            "OpenCoreDataPostgreSQL",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "FluentKit", package: "fluent-kit"),
            .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver"),
        ]
        package.targets[index].swiftSettings = (package.targets[index].swiftSettings ?? []) + [.define("OCD_BENCHMARK_POSTGRESQL")]
    }
}
