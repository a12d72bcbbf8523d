import Foundation

/// What `.xcdatamodeld` bundles and `.momd` folders share: a folder of model
/// versions (`<name>.<versionExtension>`) and a property list naming the current one.
///
/// Without the property list, or with no current version in it, the current version
/// is the only one, else the one named like the folder, else the last.
struct ModelVersionFolder {
    /// The folder.
    let url: URL
    /// The versions, sorted the way Finder sorts them ("Moody 2" before "Moody 10").
    let versionNames: [String]
    /// The current version.
    let currentVersionName: String

    /// Reads the folder at `url`: versions are its items ending in
    /// `.<versionExtension>`; `markerFile` is the property list whose `markerKey`
    /// names the current version (with or without the extension).
    init(url: URL, versionExtension: String, markerFile: String, markerKey: String, kind: String) throws {
        let items: [String]
        do {
            items = try FileManager.default.contentsOfDirectory(atPath: url.path)
        } catch {
            throw CoreDataError(.fileReadUnknown, "\(url.path): can't list the \(kind): \(error.localizedDescription)", url: url)
        }
        let suffix = "." + versionExtension
        let versions = items.filter { $0.hasSuffix(suffix) }
            .map { String($0.dropLast(suffix.count)) }
            .sorted { $0.compare($1, options: [.numeric]) == .orderedAscending }
        guard let last = versions.last else {
            throw CoreDataError(.fileReadCorruptFile, "\(url.path): the \(kind) contains no \(suffix) version", url: url)
        }
        let base = url.deletingPathExtension().lastPathComponent
        let fallback = versions.count == 1 ? last : (versions.first { $0 == base } ?? last)
        self.url = url
        self.versionNames = versions
        self.currentVersionName = try ModelVersionFolder.currentVersion(
            marker: url.appendingPathComponent(markerFile), key: markerKey, suffix: suffix,
            versions: versions, kind: kind, fallback: fallback)
    }

    private static func currentVersion(marker: URL, key: String, suffix: String, versions: [String],
                                       kind: String, fallback: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: marker.path) else { return fallback }
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: data, format: nil)
        } catch {
            throw CoreDataError(.fileReadCorruptFile, "\(marker.path): not a property list: \(error.localizedDescription)", url: marker)
        }
        guard let dictionary = plist as? [String: Any] else {
            throw CoreDataError(.fileReadCorruptFile, "\(marker.path): not a dictionary", url: marker)
        }
        guard let name = dictionary[key] as? String, !name.isEmpty else { return fallback }
        let version = name.hasSuffix(suffix) ? String(name.dropLast(suffix.count)) : name
        guard versions.contains(version) else {
            throw CoreDataError(.fileReadCorruptFile, "\(marker.path): current version '\(version)' is not in the \(kind) (versions: \(versions.joined(separator: ", ")))", url: marker)
        }
        return version
    }
}
