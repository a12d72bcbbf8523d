import Foundation

/// A model file as Xcode's model editor saves it: a versioned `.xcdatamodeld`
/// bundle, or a single-version `.xcdatamodel` folder.
///
/// A `.xcdatamodeld` holds one `.xcdatamodel` per model version and names the
/// current one in `.xccurrentversion`. Each version loads into its own
/// ``ManagedObjectModel``.
///
/// ```swift
/// let bundle = try XcodeDataModel(contentsOf: URL(fileURLWithPath: "Moody.xcdatamodeld"))
/// bundle.versionNames          // ["Moody", "Moody 2", ..., "Moody 6"]
/// bundle.currentVersionName    // "Moody 6"
/// let current = try bundle.currentModel()
/// let second = try bundle.model(forVersion: "Moody 2")
/// ```
public struct XcodeDataModel: Sendable {
    /// The bundle or folder.
    public let url: URL
    /// The names of the model versions (without `.xcdatamodel`), sorted the way
    /// Finder sorts them ("Moody 2" before "Moody 10").
    public let versionNames: [String]
    /// The current version's name.
    public let currentVersionName: String

    /// Opens a `.xcdatamodeld` bundle, a `.xcdatamodel` folder, or a `contents` file.
    ///
    /// - Parameter url: The bundle, folder or file. Only the version names are
    ///   read; the models load with ``model(forVersion:)``.
    /// - Throws: ``CoreDataError`` with code
    ///   ``CoreDataError/Code/fileReadNoSuchFile`` (260) when there is no such
    ///   file; a file error (256, 259) when the bundle's versions cannot be read.
    public init(contentsOf url: URL) throws {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CoreDataError(.fileReadNoSuchFile, "\(url.path): no such model file", url: url)
        }
        self.url = url
        if !isDirectory.boolValue {
            // A bare `contents` file.
            let name = url.deletingLastPathComponent().deletingPathExtension().lastPathComponent
            versionNames = [name]
            currentVersionName = name
            return
        }
        if url.pathExtension == "xcdatamodeld" {
            let folder = try ModelVersionFolder(url: url, versionExtension: "xcdatamodel", markerFile: ".xccurrentversion",
                                                markerKey: "_XCCurrentVersionName", kind: "bundle")
            versionNames = folder.versionNames
            currentVersionName = folder.currentVersionName
        } else {
            let name = url.deletingPathExtension().lastPathComponent
            versionNames = [name]
            currentVersionName = name
        }
    }

    /// The `contents` file of a version.
    ///
    /// - Parameter name: A name of ``versionNames``.
    /// - Returns: The URL of the version's `contents` XML file (which may not
    ///   exist).
    public func contentsURL(forVersion name: String) -> URL {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue { return url }
        if url.pathExtension == "xcdatamodeld" {
            return url.appendingPathComponent(name + ".xcdatamodel").appendingPathComponent("contents")
        }
        return url.appendingPathComponent("contents")
    }

    /// Loads one version's model.
    ///
    /// - Parameter name: A name of ``versionNames``.
    /// - Returns: A new, editable model.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) for an unknown version or a missing `contents` file;
    ///   ``CoreDataError/Code/fileReadCorruptFile`` (259) for a malformed file;
    ///   ``CoreDataError/Code/coreData`` (134060) for an invalid model.
    public func model(forVersion name: String) throws -> ManagedObjectModel {
        guard versionNames.contains(name) else {
            throw CoreDataError(.fileReadNoSuchFile, "\(url.path): no model version named '\(name)' (versions: \(versionNames.joined(separator: ", ")))", url: url)
        }
        let contents = contentsURL(forVersion: name)
        guard let data = FileManager.default.contents(atPath: contents.path) else {
            let folder = contents.deletingLastPathComponent()
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("elements").path) {
                throw CoreDataError(.fileReadCorruptFile, "\(folder.path): this model uses Xcode 3's binary 'elements' format, which is not supported; open and save it with a current Xcode", url: folder)
            }
            throw CoreDataError(.fileReadNoSuchFile, "\(contents.path): the model version has no contents file", url: contents)
        }
        return try XcodeModelReader(url: contents).read(data)
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

extension ManagedObjectModel {
    /// Loads a model from a file: an Xcode `.xcdatamodeld` bundle (its current
    /// version), a `.xcdatamodel` folder, its `contents` XML file, a compiled
    /// `.momd` folder (its current version, from `VersionInfo.plist`) or a compiled
    /// `.mom` file.
    ///
    /// ```swift
    /// let model = try ManagedObjectModel(contentsOf: URL(fileURLWithPath: "Moody.xcdatamodeld"))
    /// ```
    ///
    /// - Parameter url: The model file or folder; its extension says which kind
    ///   it is.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) for a missing file; ``CoreDataError/Code/fileReadCorruptFile`` (259)
    ///   for a malformed one, or one of another kind, with the file, line,
    ///   element and problem in its message; ``CoreDataError/Code/coreData``
    ///   (134060) for an invalid model.
    public convenience init(contentsOf url: URL) throws {
        let ext = url.pathExtension.lowercased()
        if ext == "mom" || ext == "momd" {
            let loaded = try CompiledModelBundle(contentsOf: url).currentModel()
            self.init()
            adopt(loaded)
            if ext == "momd" { versionBundleURL = url }
            return
        }
        guard ext == "xcdatamodeld" || ext == "xcdatamodel" || url.lastPathComponent == "contents" else {
            if ext == "omo" {
                throw CoreDataError(.fileReadCorruptFile, "\(url.path): optimized models (.omo) are not readable; use the .mom beside it", url: url)
            }
            throw CoreDataError(.fileReadCorruptFile, "\(url.path): not a model file (expected .xcdatamodeld or .xcdatamodel)", url: url)
        }
        let loaded = try XcodeDataModel(contentsOf: url).currentModel()
        self.init()
        adopt(loaded)
        if ext == "xcdatamodeld" { versionBundleURL = url }
    }

    /// Takes over the content of a freshly loaded model that nothing else uses.
    func adopt(_ other: ManagedObjectModel) {
        entities = other.entities
        versionIdentifiers = other.versionIdentifiers
        composites = other.composites
        configurationMembers = other.configurationMembers
        cloudKitConfigurations = other.cloudKitConfigurations
        fetchRequestTemplatesByName = other.fetchRequestTemplatesByName
    }
}
