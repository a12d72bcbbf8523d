// swift-tools-version: 6.1
import PackageDescription

// The fuzz target (Fuzz/run): libFuzzer, with AddressSanitizer, feeds generated
// inputs to each parser of untrusted input in OpenCoreData and `ocd` (predicate
// format strings, Xcode model XML, compiled models and model caches, keyed
// archives, property lists, mapping models, dump files). A package of its own, built
// only by Fuzz/run: with AddressSanitizer and libFuzzer's coverage instrumentation,
// linked with libFuzzer's driver (`libclang_rt.fuzzer_no_main`; the program keeps
// its own `main`, since the build's macro plugin, which the same flags reach, has
// one too).
let package = Package(
    name: "OpenCoreDataFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "OpenCoreData", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(name: "FuzzerDriver"),
        .executableTarget(
            name: "ocd-fuzz",
            dependencies: [
                "FuzzerDriver",
                .product(name: "OpenCoreData", package: "OpenCoreData"),
                .product(name: "OCDKit", package: "OpenCoreData"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
