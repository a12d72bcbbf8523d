// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "OpenCoreData",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "OpenCoreData", targets: ["OpenCoreData"]),
        .library(name: "OpenCoreDataPredicates", targets: ["OpenCoreDataPredicates"]),
        // The PostgreSQL store: a product of its own, so apps on SQLite alone never
        // build postgres-nio.
        .library(name: "OpenCoreDataPostgreSQL", targets: ["OpenCoreDataPostgreSQL"]),
        .executable(name: "ocd", targets: ["ocd"]),
        // `ocd`'s commands as a library, for tools that embed them (the fuzz
        // targets of Fuzz/ read dump files through it).
        .library(name: "OCDKit", targets: ["OCDKit"]),
    ],
    traits: [
        .trait(
            name: "PostgreSQL",
            description: "`ocd` opens PostgreSQL stores (postgres:// URLs): `swift run --traits PostgreSQL ocd …`. "
                + "Builds postgres-nio, swift-nio, swift-nio-ssl and BoringSSL, which `ocd` on SQLite alone never needs."
        ),
        .trait(
            name: "PostgreSQLTests",
            description: "`swift test` builds and runs the PostgreSQL store's tests (on by default; "
                + "`--disable-default-traits` leaves them and postgres-nio out, as CI's AddressSanitizer run does)."
        ),
        .default(enabledTraits: ["PostgreSQLTests"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.1"),
        // `swift package generate-documentation` (DocC); nothing links it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The PostgreSQL store's (built only for what depends on it).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
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
        // Core Data's layout on PostgreSQL, for many app servers on one database.
        .target(
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
            ]
        ),
        // The commands of `ocd`, in a library so tests can run them. It links no
        // server store: those come as openers the executable installs.
        .target(
            name: "OCDKit",
            dependencies: [
                "OpenCoreData",
                "OpenCoreDataPredicates",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `ocd`'s opener of PostgreSQL stores.
        .target(name: "OCDPostgreSQL", dependencies: ["OCDKit", "OpenCoreData", "OpenCoreDataPostgreSQL"]),
        .executableTarget(
            name: "ocd",
            dependencies: ["OCDKit", .target(name: "OCDPostgreSQL", condition: .when(traits: ["PostgreSQL"]))]
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
                // The PostgreSQL store's tests (trait PostgreSQLTests, on by default).
                .target(name: "OpenCoreDataPostgreSQL", condition: .when(traits: ["PostgreSQLTests"])),
                .target(name: "OCDKit", condition: .when(traits: ["PostgreSQLTests"])),
                .target(name: "OCDPostgreSQL", condition: .when(traits: ["PostgreSQLTests"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .when(traits: ["PostgreSQLTests"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQLTests"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["PostgreSQLTests"])),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
