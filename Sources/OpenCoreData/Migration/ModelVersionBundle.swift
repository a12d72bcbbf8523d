import Foundation

/// The versions of a model, in order: an Xcode `.xcdatamodeld` bundle or a
/// compiled `.momd` folder, whichever was given.
///
/// Versions are ordered by name the way Finder sorts them, numbers compared as
/// numbers ("Moody" < "Moody 2" < "Moody 10", "v1.1.2" < "v1.2.0"): the order a
/// progressive migration walks them in. The current version is the one the
/// bundle names.
///
/// ```swift
/// let versions = try ModelVersionBundle(contentsOf: URL(fileURLWithPath: "Moody.xcdatamodeld"))
/// versions.versionNames                 // ["Moody", "Moody 2", ..., "Moody 6"]
/// let storeVersion = try versions.versionName(compatibleWithStoreMetadata: SQLiteStoreMetadata.read(at: storeURL))
/// ```
public struct ModelVersionBundle: Sendable {
    /// The bundle or folder.
    public let url: URL
    /// The version names, in order.
    public let versionNames: [String]
    /// The current version's name.
    public let currentVersionName: String
    private let load: @Sendable (String) throws -> ManagedObjectModel

    /// Opens a `.xcdatamodeld` or `.momd` bundle (a single `.xcdatamodel` or
    /// `.mom` is a bundle of one version).
    ///
    /// - Parameter url: The bundle.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) when it does not exist, ``CoreDataError/Code/fileReadCorruptFile``
    ///   (259) when it is not a model bundle.
    public init(contentsOf url: URL) throws {
        self.url = url
        let ext = url.pathExtension.lowercased()
        if ext == "momd" || ext == "mom" {
            let bundle = try CompiledModelBundle(contentsOf: url)
            versionNames = bundle.versionNames
            currentVersionName = bundle.currentVersionName
            load = { try bundle.model(forVersion: $0) }
        } else {
            let bundle = try XcodeDataModel(contentsOf: url)
            versionNames = bundle.versionNames
            currentVersionName = bundle.currentVersionName
            load = { try bundle.model(forVersion: $0) }
        }
    }

    /// Loads one version's model.
    ///
    /// - Parameter name: A name of ``versionNames``.
    /// - Returns: A new, editable model.
    /// - Throws: The bundle's reading errors (260 for an unknown version).
    public func model(forVersion name: String) throws -> ManagedObjectModel {
        try load(name)
    }

    /// The version whose entity version hashes are those of a store's metadata
    /// (Core Data's `isConfiguration(withName:compatibleWithStoreMetadata:)`), the
    /// newest first when several are.
    ///
    /// - Parameters:
    ///   - metadata: The store's metadata (``SQLiteStoreMetadata/read(at:)``).
    ///   - configurationName: The configuration the store holds; nil for all entities.
    /// - Returns: The version's name, or nil when no version matches.
    /// - Throws: The first error loading a version's model.
    public func versionName(compatibleWithStoreMetadata metadata: [String: Any], configurationName: String? = nil) throws -> String? {
        for name in versionNames.reversed() {
            if try model(forVersion: name).isConfiguration(withName: configurationName, compatibleWithStoreMetadata: metadata) {
                return name
            }
        }
        return nil
    }
}
