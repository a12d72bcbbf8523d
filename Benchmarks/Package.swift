// swift-tools-version: 6.1
import PackageDescription

// The benchmark suite (Benchmarks/run), a package of its own so that OpenCoreData's
// package ships no benchmark executable and builds none of the peers: OpenCoreData
// against raw SQLite through its C API (the system library GRDB links) and GRDB
// records; with the PostgreSQL trait (`Benchmarks/run --postgresql`), OpenCoreData's
// PostgreSQL store against raw postgres-nio and Fluent.
let package = Package(
    name: "OpenCoreDataBenchmarks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    traits: [
        .trait(name: "PostgreSQL", description: "The PostgreSQL workloads: OpenCoreData's PostgreSQL store, raw postgres-nio and Fluent."),
    ],
    dependencies: [
        .package(name: "OpenCoreData", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/vapor/fluent-kit", from: "1.57.0"),
        .package(url: "https://github.com/vapor/fluent-postgres-driver", from: "2.14.0"),
    ],
    targets: [
        .executableTarget(
            name: "OpenCoreDataBenchmarks",
            dependencies: [
                .product(name: "OpenCoreData", package: "OpenCoreData"),
                .product(name: "OpenCoreDataPredicates", package: "OpenCoreData"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "OpenCoreDataPostgreSQL", package: "OpenCoreData", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "FluentKit", package: "fluent-kit", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "FluentPostgresDriver", package: "fluent-postgres-driver", condition: .when(traits: ["PostgreSQL"])),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
