import Foundation
import OpenCoreDataPredicates

/// Every parser of input that comes from a file or a user, each reached from raw
/// bytes in one call: the entry points of the fuzz targets (the `Fuzz` package)
/// and of the test that replays every input a fuzzer ever found crashing.
///
/// A parser's contract is the one the fuzzer checks: any bytes give a value or a
/// thrown error, never a crash, a hang or unbounded memory. Each entry point
/// also runs the cheap uses of what it parsed (printing a predicate, hashing a
/// model), so a value that parses but is broken inside is found too.
///
/// This is SPI, not API: `@_spi(Fuzzing) import OpenCoreData`.
///
/// ```swift
/// @_spi(Fuzzing) import OpenCoreData
///
/// UntrustedInput.parse(Data("name BEGINSWITH[cd] 'a'".utf8), as: .predicateFormat)
/// ```
@_spi(Fuzzing)
public enum UntrustedInput {
    /// A parser of untrusted input.
    public enum Parser: String, CaseIterable, Sendable {
        /// An `NSPredicate` format string (UTF-8).
        case predicateFormat
        /// The `contents` XML of an Xcode `.xcdatamodel`.
        case xcodeModel
        /// A compiled model (`.mom`): a binary property list holding a keyed archive.
        case compiledModel
        /// A store's model cache (`Z_MODELCACHE.Z_CONTENT`): DEFLATE around a compiled model.
        case modelCache
        /// A keyed archive of a transformable value (`NSSecureUnarchiveFromData`).
        case keyedArchive
        /// A binary property list (a store's `Z_METADATA.Z_PLIST`).
        case propertyList
        /// The `xcmapping.xml` of an Xcode mapping model.
        case mappingModel
    }

    /// Parses `data` with `parser`. Returns whether it parsed: an error is an
    /// answer, not a failure.
    ///
    /// - Parameter mappingVersions: The model version bundles a mapping model is
    ///   read against (it names its two models by version): the first bundle that
    ///   has both reads it. Without them only its XML is read.
    @discardableResult
    public static func parse(_ data: Data, as parser: Parser, mappingVersions: [ModelVersionBundle] = []) -> Bool {
        do {
            switch parser {
            case .predicateFormat:
                guard let text = String(data: data, encoding: .utf8) else { return false }
                // Arguments for the first placeholders (`%K`, `%@`, `%d`, `%f`, `%@`),
                // so a format with some gets past them.
                let predicate = try CorePredicate(format: text, arguments: formatArguments)
                // What it prints is read again, as a fetch request's description is.
                _ = try? CorePredicate(format: predicate.predicateFormat)
            case .xcodeModel:
                try use(try XcodeModelReader(url: URL(fileURLWithPath: "contents")).read(data))
            case .compiledModel:
                try use(try ManagedObjectModel(compiledModelData: data))
            case .modelCache:
                try use(try ManagedObjectModel(modelCacheData: data))
            case .keyedArchive:
                _ = try AttributeValueArchiver.unarchivedValue(from: data)
            case .propertyList:
                _ = try BinaryPropertyList.parse(data)
            case .mappingModel:
                let file = URL(fileURLWithPath: "xcmapping.xml")
                if mappingVersions.isEmpty {
                    _ = try XMLElementNode.parse(data, url: file)
                } else if try MappingModel.read(xcmappingData: data, file: file, fromFirstOf: mappingVersions) == nil {
                    return false
                }
            }
            return true
        } catch {
            return false
        }
    }

    private static var formatArguments: [any FormatArgument] {
        ["name", "abc", 42, 2.5, AttributeValue.array([.string("a"), .int(1)]), true, "key.path"]
    }

    /// What a loaded model goes through before a store opens with it: its
    /// version hashes, then validation and freezing (an invalid model throws).
    private static func use(_ model: ManagedObjectModel) throws {
        _ = model.entityVersionHashesByName
        try model.freeze()
    }
}
