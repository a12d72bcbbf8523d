import Foundation

/// A compiled model on disk: a `.momd` folder (one `.mom` per model version and a
/// `VersionInfo.plist` naming the current one) or a single `.mom` file.
///
/// ```swift
/// let bundle = try CompiledModelBundle(contentsOf: URL(fileURLWithPath: "Moody.momd"))
/// bundle.versionNames          // ["Moody", "Moody 2", ...]
/// bundle.currentVersionName    // from NSManagedObjectModel_CurrentVersionName
/// let model = try bundle.currentModel()
/// ```
///
/// `ManagedObjectModel(contentsOf:)` uses it for `.mom` and `.momd` URLs.
public struct CompiledModelBundle: Sendable {
    /// The `.momd` folder or `.mom` file.
    public let url: URL
    /// The versions (`.mom` file names without extension), sorted like Finder sorts.
    public let versionNames: [String]
    /// The current version's name.
    public let currentVersionName: String

    /// Opens a `.momd` folder or a `.mom` file.
    ///
    /// - Parameter url: The folder or file. Only the version names are read; the
    ///   models load with ``model(forVersion:)``.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/fileReadNoSuchFile`` (260) when there is no such
    ///   file; a file error (256, 259) when the folder's versions cannot be read.
    public init(contentsOf url: URL) throws {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CoreDataError(.fileReadNoSuchFile, "\(url.path): no such model file", url: url)
        }
        self.url = url
        guard isDirectory.boolValue else {
            let name = url.deletingPathExtension().lastPathComponent
            versionNames = [name]
            currentVersionName = name
            return
        }
        let folder = try ModelVersionFolder(url: url, versionExtension: "mom", markerFile: "VersionInfo.plist",
                                            markerKey: "NSManagedObjectModel_CurrentVersionName", kind: "compiled model folder")
        versionNames = folder.versionNames
        currentVersionName = folder.currentVersionName
    }

    /// The `.mom` file of a version.
    ///
    /// - Parameter name: A name of ``versionNames``.
    /// - Returns: The URL of the version's `.mom` file (which may not exist).
    public func fileURL(forVersion name: String) -> URL {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue { return url }
        return url.appendingPathComponent(name + ".mom")
    }

    /// Loads one version's model.
    ///
    /// - Parameter name: A name of ``versionNames``.
    /// - Returns: A new, editable model.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) for an unknown version or an unreadable file;
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) for a malformed archive.
    public func model(forVersion name: String) throws -> ManagedObjectModel {
        guard versionNames.contains(name) else {
            throw CoreDataError(.fileReadNoSuchFile, "\(url.path): no model version named '\(name)' (versions: \(versionNames.joined(separator: ", ")))", url: url)
        }
        let file = fileURL(forVersion: name)
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "\(file.path): can't read the compiled model", url: file)
        }
        return try CompiledModelReader(source: file.path, url: file).read(archiveData: data)
    }

    /// Loads the current version's model.
    ///
    /// - Returns: A new, editable model of ``currentVersionName``.
    /// - Throws: The errors of ``model(forVersion:)``.
    public func currentModel() throws -> ManagedObjectModel {
        try model(forVersion: currentVersionName)
    }

    /// Loads every version's model, by version name.
    ///
    /// - Returns: A new, editable model for each name of ``versionNames``.
    /// - Throws: The first error of ``model(forVersion:)``.
    public func allModels() throws -> [String: ManagedObjectModel] {
        var models: [String: ManagedObjectModel] = [:]
        for name in versionNames { models[name] = try model(forVersion: name) }
        return models
    }
}
