// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "OpenCoreData",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "OpenCoreData", targets: ["OpenCoreData"]),
        .library(name: "OpenCoreDataPredicates", targets: ["OpenCoreDataPredicates"]),
        .executable(name: "ocd", targets: ["ocd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The NSPredicate/NSExpression format language, key-path sort descriptors and
        // the key-value protocol objects expose to them. Depends on nothing else.
        .target(name: "OpenCoreDataPredicates"),
        .target(
            name: "OpenCoreData",
            dependencies: [
                "OpenCoreDataPredicates",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The commands of `ocd`, in a library so tests can run them.
        .target(
            name: "OCDKit",
            dependencies: [
                "OpenCoreData",
                "OpenCoreDataPredicates",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "ocd", dependencies: ["OCDKit"]),
        .testTarget(
            name: "OpenCoreDataPredicatesTests",
            dependencies: ["OpenCoreDataPredicates"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "OCDKitTests",
            dependencies: ["OCDKit", "OpenCoreData"]
        ),
        .testTarget(
            name: "OpenCoreDataTests",
            dependencies: [
                "OpenCoreData",
                "OpenCoreDataPredicates",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
