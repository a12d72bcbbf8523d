import Foundation

/// The section information of a fetched results controller kept on disk under a
/// name, so a later fetch of the same request on the same unchanged store splits
/// its objects into sections without reading a section key.
///
/// Where Core Data keeps it: the caches directory — `Library/Caches/.CoreDataCaches/
/// SectionInfoCaches/<name>` on Apple platforms; `$XDG_CACHE_HOME/OpenCoreData/
/// SectionInfoCaches/<name>` (or `~/.cache/...`) elsewhere. A cache is used only
/// when everything it was made from is unchanged: the entity (its version hash),
/// the predicate, the sort descriptors, the section key path, and each store's
/// file (identifier, size and modification date of the file and its write-ahead
/// log). Stores without a file (in-memory) are never cached.
struct SectionInfoCache {
    let name: String

    /// What a cache was made from.
    struct Key: Codable, Equatable {
        var entityName: String
        var entityVersionHash: String
        var predicate: String
        var sortDescriptors: [String]
        var sectionNameKeyPath: String?
        var includesSubentities: Bool
        var stores: [String]
    }

    struct Entry: Codable, Equatable {
        var name: String
        var indexTitle: String?
        var count: Int
    }

    struct Contents: Codable {
        var key: Key
        var sections: [Entry]
        var total: Int { sections.reduce(0) { $0 + $1.count } }
    }

    /// The folder holding every cache.
    static var rootDirectory: URL {
        #if canImport(Darwin)
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent(".CoreDataCaches/SectionInfoCaches", isDirectory: true)
        #else
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        }
        return base.appendingPathComponent("OpenCoreData/SectionInfoCaches", isDirectory: true)
        #endif
    }

    /// The cache's folder: its name, made safe as one path component.
    var directory: URL {
        let safe = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "cache"
        return Self.rootDirectory.appendingPathComponent(safe.isEmpty ? "%" : safe, isDirectory: true)
    }

    var file: URL { directory.appendingPathComponent("sectionInfo.json") }

    /// The cached sections, if the cache exists, reads, and was made from `key`.
    func read(matching key: Key) -> Contents? {
        guard let data = try? Data(contentsOf: file),
              let contents = try? JSONDecoder().decode(Contents.self, from: data),
              contents.key == key, contents.sections.allSatisfy({ $0.count >= 0 }) else { return nil }
        return contents
    }

    /// Writes the cache (failures only mean there is no cache).
    func write(_ contents: Contents) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try encoder.encode(contents).write(to: file, options: .atomic)
        } catch {
            delete()
        }
    }

    func delete() {
        try? FileManager.default.removeItem(at: directory)
    }
}

extension FetchedResultsController {
    /// Deletes the section information cache named `name`, or every cache when
    /// `name` is nil (`deleteCache(withName:)`). Do it before changing the fetch
    /// request of a controller that uses a cache.
    ///
    /// ```swift
    /// FetchedResultsController<Mood>.deleteCache(withName: "Moods")
    /// request.predicate = try CorePredicate(format: "rating > 3")
    /// try controller.performFetch()
    /// ```
    ///
    /// - Parameter name: The cache's name (a controller's `cacheName`), or nil
    ///   for every cache.
    public static func deleteCache(withName name: String?) {
        if let name {
            SectionInfoCache(name: name).delete()
        } else {
            try? FileManager.default.removeItem(at: SectionInfoCache.rootDirectory)
        }
    }

    /// What a cache of this controller's sections depends on; nil when it cannot
    /// be cached (a store without a file).
    func cacheKey(entity: EntityDescription) -> SectionInfoCache.Key? {
        guard let coordinator = managedObjectContext.persistentStoreCoordinator else { return nil }
        let stores = coordinator.storesHolding(entity)
        guard !stores.isEmpty else { return nil }
        var fingerprints: [String] = []
        for store in stores {
            guard let url = store.url else { return nil }
            var parts = [store.identifier]
            for file in [url.path, url.path + "-wal"] {
                let attributes = try? FileManager.default.attributesOfItem(atPath: file)
                let size = (attributes?[.size] as? NSNumber)?.int64Value ?? -1
                let date = (attributes?[.modificationDate] as? Date)?.timeIntervalSinceReferenceDate ?? 0
                parts.append("\(size)@\(date)")
            }
            fingerprints.append(parts.joined(separator: " "))
        }
        return SectionInfoCache.Key(
            entityName: entity.name, entityVersionHash: entity.versionHash.base64EncodedString(),
            predicate: fetchRequest.predicate?.description ?? "",
            sortDescriptors: fetchRequest.sortDescriptors.map(\.description),
            sectionNameKeyPath: sectionNameKeyPath, includesSubentities: fetchRequest.includesSubentities,
            stores: fingerprints)
    }

    /// The cached sections for this request and store, if valid.
    func cachedSections(entity: EntityDescription, objectCount: Int) -> [SectionInfoCache.Entry]? {
        guard let cacheName, let key = cacheKey(entity: entity),
              let contents = SectionInfoCache(name: cacheName).read(matching: key),
              contents.total == objectCount else { return nil }
        return contents.sections
    }

    /// Writes the cache when the sections are those of the stored objects (no
    /// unsaved change of the entity), else deletes it.
    func writeCache() {
        guard let cacheName, let entity, let state else { return }
        let cache = SectionInfoCache(name: cacheName)
        guard !managedObjectContext.hasPendingChanges(for: entity), let key = cacheKey(entity: entity) else {
            cache.delete()
            return
        }
        cache.write(SectionInfoCache.Contents(key: key, sections: state.map {
            SectionInfoCache.Entry(name: $0.name, indexTitle: $0.indexTitle, count: $0.objects.count)
        }))
    }
}
