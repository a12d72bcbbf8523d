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
        let items: [String]
        do {
            items = try fileManager.contentsOfDirectory(atPath: url.path)
        } catch {
            throw CoreDataError(.fileReadUnknown, "\(url.path): can't list the compiled model folder: \(error.localizedDescription)", url: url)
        }
        let versions = items.filter { $0.hasSuffix(".mom") }
            .map { String($0.dropLast(".mom".count)) }
            .sorted { $0.compare($1, options: [.numeric]) == .orderedAscending }
        guard !versions.isEmpty else {
            throw CoreDataError(.fileReadCorruptFile, "\(url.path): the folder contains no .mom model version", url: url)
        }
        versionNames = versions
        currentVersionName = try CompiledModelBundle.currentVersion(in: url, versions: versions)
    }

    private static func currentVersion(in url: URL, versions: [String]) throws -> String {
        let infoURL = url.appendingPathComponent("VersionInfo.plist")
        let base = url.deletingPathExtension().lastPathComponent
        let fallback = versions.count == 1 ? versions[0] : (versions.first { $0 == base } ?? versions[versions.count - 1])
        guard let data = FileManager.default.contents(atPath: infoURL.path) else { return fallback }
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw CoreDataError(.fileReadCorruptFile, "\(infoURL.path): not a property list: \(error.localizedDescription)", url: infoURL)
        }
        guard let info = plist as? [String: Any] else {
            throw CoreDataError(.fileReadCorruptFile, "\(infoURL.path): not a dictionary", url: infoURL)
        }
        guard let name = info["NSManagedObjectModel_CurrentVersionName"] as? String, !name.isEmpty else { return fallback }
        let version = name.hasSuffix(".mom") ? String(name.dropLast(".mom".count)) : name
        guard versions.contains(version) else {
            throw CoreDataError(.fileReadCorruptFile, "\(infoURL.path): current version '\(version)' is not in the folder (versions: \(versions.joined(separator: ", ")))", url: infoURL)
        }
        return version
    }

    /// The `.mom` file of a version.
    public func fileURL(forVersion name: String) -> URL {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue { return url }
        return url.appendingPathComponent(name + ".mom")
    }

    /// Loads one version's model.
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
    public func currentModel() throws -> ManagedObjectModel {
        try model(forVersion: currentVersionName)
    }

    /// Loads every version's model, by version name.
    public func allModels() throws -> [String: ManagedObjectModel] {
        var models: [String: ManagedObjectModel] = [:]
        for name in versionNames { models[name] = try model(forVersion: name) }
        return models
    }
}
