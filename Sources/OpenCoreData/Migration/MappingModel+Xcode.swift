import Foundation
import OpenCoreDataPredicates

extension MappingModel {
    /// Reads a mapping model made in Xcode's mapping editor (a `.xcmappingmodel`
    /// folder, or its `xcmapping.xml`) and compiles it as Xcode's `mapc` does.
    ///
    /// The file is a Core Data XML store of the editor's objects: entity mappings
    /// with their source and destination entity names, position, policy class and
    /// user info, and property mappings with, when written by hand, an archived
    /// value expression. It names its two models by path
    /// (`Moody.xcdatamodeld/Moody 5.xcdatamodel`); they are looked up by version
    /// name in `versions`, and give the entity version hashes that decide which
    /// migration the mapping is for. What the compiler generates is generated
    /// here the same way:
    ///
    /// - mapping names `<Source>To<Destination>`, or the destination's name for an
    ///   added entity; type custom when a policy class is named, add when there is
    ///   no source, else copy (transform when the names differ);
    /// - an attribute without an expression reads `$source.<name>` when the source
    ///   entity has that attribute, else keeps its default;
    /// - a relationship with a source key path and mapping name (older Xcode) gets
    ///   `FUNCTION($manager, "destinationInstancesForEntityMappingNamed:sourceInstances:", "<mapping>", <key path>)`;
    ///   one without reads the source relationship of the same name through the
    ///   one mapping that makes its destination entity.
    ///
    /// ```swift
    /// let versions = try ModelVersionBundle(contentsOf: URL(fileURLWithPath: "Moody.xcdatamodeld"))
    /// let mapping = try MappingModel(contentsOf: URL(fileURLWithPath: "Moody 5-Moody 6.xcmappingmodel"), versions: versions)
    /// mapping.entityMappings.map(\.name)     // ["Continent", "CountryToCountry", "MoodToMood"]
    /// ```
    ///
    /// - Parameters:
    ///   - url: The `.xcmappingmodel` folder or its `xcmapping.xml`.
    ///   - versions: The model versions the mapping was made between.
    /// - Throws: ``CoreDataError``: ``CoreDataError/Code/fileReadNoSuchFile``
    ///   (260) for a missing file; ``CoreDataError/Code/fileReadCorruptFile`` (259)
    ///   for a malformed one, a value expression that cannot be read, or a model
    ///   path naming a version `versions` lacks.
    public init(contentsOf url: URL, versions: ModelVersionBundle) throws {
        let file = url.pathExtension == "xcmappingmodel" ? url.appendingPathComponent("xcmapping.xml") : url
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw CoreDataError(.fileReadNoSuchFile, "\(file.path): no mapping model file", url: file)
        }
        try self.init(xcmappingData: data, file: file, versions: versions)
    }

    /// Reads the contents of an `xcmapping.xml`; `file` names it in errors.
    init(xcmappingData data: Data, file: URL, versions: ModelVersionBundle) throws {
        let root = try XMLElementNode.parse(data, url: file)
        func corrupt(_ message: String) -> CoreDataError {
            CoreDataError(.fileReadCorruptFile, "\(file.path): \(message)", url: file)
        }
        guard root.name == "database" else { throw corrupt("not a mapping model (the root element is <\(root.name)>)") }
        struct Record {
            var type: String
            var attributes: [String: (type: String, text: String)]
            var relationships: [String: [String]]
        }
        var records: [String: Record] = [:]
        var order: [String] = []
        for object in root.children(named: "object") {
            guard let type = object["type"], let id = object["id"] else { throw corrupt("line \(object.line): an object without type or id") }
            var record = Record(type: type, attributes: [:], relationships: [:])
            for attribute in object.children(named: "attribute") {
                guard let name = attribute["name"] else { continue }
                record.attributes[name] = (attribute["type"] ?? "string", attribute.text.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            for relationship in object.children(named: "relationship") {
                guard let name = relationship["name"] else { continue }
                record.relationships[name] = (relationship["idrefs"] ?? "").split(separator: " ").map(String.init)
            }
            records[id] = record
            order.append(id)
        }
        guard let modelID = order.first(where: { records[$0]?.type == "XDDEVMAPPINGMODEL" }), let model = records[modelID] else {
            throw corrupt("no XDDEVMAPPINGMODEL object")
        }
        func versionModel(_ key: String) throws -> ManagedObjectModel {
            guard let path = model.attributes[key]?.text, !path.isEmpty else { throw corrupt("the mapping model has no \(key)") }
            var name = URL(fileURLWithPath: path).lastPathComponent
            if name.hasSuffix(".xcdatamodel") { name = String(name.dropLast(".xcdatamodel".count)) }
            guard versions.versionNames.contains(name) else {
                throw corrupt("\(key) '\(path)' names model version '\(name)', which \(versions.url.lastPathComponent) does not have (versions: \(versions.versionNames.joined(separator: ", ")))")
            }
            return try versions.model(forVersion: name)
        }
        let sourceModel = try versionModel("sourcemodelpath")
        let destinationModel = try versionModel("destinationmodelpath")
        try sourceModel.freeze()
        try destinationModel.freeze()
        let sourceEntities = sourceModel.entitiesByName
        let destinationEntities = destinationModel.entitiesByName

        func binary(_ record: Record, _ key: String) throws -> Data? {
            guard let text = record.attributes[key]?.text, !text.isEmpty else { return nil }
            guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else { throw corrupt("\(key) is not base64") }
            return data
        }
        func expression(_ record: Record, owner: String) throws -> CoreExpression? {
            guard let data = try binary(record, "valueexpressiondata") else { return nil }
            let name = record.attributes["name"]?.text ?? "?"
            do {
                let archive = try KeyedArchive(data: data)
                guard let format = ArchivedPredicate(archive: archive).expressionFormat(try archive.topReference()) else {
                    throw corrupt("the value expression of '\(name)' in mapping '\(owner)' is not an expression OpenCoreData can read")
                }
                return try CoreExpression(format: format)
            } catch let error as CoreDataError {
                throw error
            } catch {
                throw corrupt("the value expression of '\(name)' in mapping '\(owner)' cannot be read: \(error)")
            }
        }

        // Entity mappings, in their compiled order.
        var entityRecords = order.compactMap { id in records[id].map { (id, $0) } }.filter { $0.1.type == "XDDEVENTITYMAPPING" }
        if let listed = model.relationships["entitymappings"], !listed.isEmpty {
            entityRecords.sort { (listed.firstIndex(of: $0.0) ?? Int.max) < (listed.firstIndex(of: $1.0) ?? Int.max) }
        }
        entityRecords = entityRecords.enumerated().sorted { a, b in
            let na = Int(a.element.1.attributes["mappingnumber"]?.text ?? "") ?? Int.max
            let nb = Int(b.element.1.attributes["mappingnumber"]?.text ?? "") ?? Int.max
            return na != nb ? na < nb : a.offset < b.offset
        }.map(\.element)
        var mappings: [EntityMapping] = []
        for (_, record) in entityRecords {
            let source = record.attributes["sourcename"]?.text.nilIfEmpty
            let destination = record.attributes["destinationname"]?.text.nilIfEmpty
            if let source, sourceEntities[source] == nil { throw corrupt("source entity '\(source)' is not in the source model") }
            if let destination, destinationEntities[destination] == nil { throw corrupt("destination entity '\(destination)' is not in the destination model") }
            let policy = record.attributes["migrationpolicyclassname"]?.text.nilIfEmpty
            let name: String
            switch (source, destination) {
            case let (source?, destination?): name = "\(source)To\(destination)"
            case let (nil, destination?): name = destination
            case let (source?, nil): name = "\(source)To"
            case (nil, nil): throw corrupt("an entity mapping with neither source nor destination")
            }
            let type: EntityMappingType = policy != nil ? .custom
                : source == nil ? .add : destination == nil ? .remove : source == destination ? .copy : .transform
            var mapping = EntityMapping(name: name, mappingType: type, sourceEntityName: source, destinationEntityName: destination)
            mapping.entityMigrationPolicyClassName = policy
            mapping.sourceEntityVersionHash = source.flatMap { sourceEntities[$0]?.versionHash }
            mapping.destinationEntityVersionHash = destination.flatMap { destinationEntities[$0]?.versionHash }
            if let userInfo = try binary(record, "userinfodata") {
                if let archive = try? KeyedArchive(data: userInfo), let top = try? archive.topReference(),
                   case .dictionary(let values)? = archive.plainValue(top) {
                    mapping.userInfo = values
                } else {
                    throw corrupt("the user info of mapping '\(name)' is not a dictionary")
                }
            }
            mappings.append(mapping)
            // Properties, filled below once every mapping's name is known.
            _ = record
        }
        let sourceMappingsByDestination = Dictionary(grouping: mappings.filter { $0.destinationEntityName != nil }, by: { $0.destinationEntityName! })
        for (index, (_, record)) in entityRecords.enumerated() {
            var mapping = mappings[index]
            let source = mapping.sourceEntityName.flatMap { sourceEntities[$0] }
            let destination = mapping.destinationEntityName.flatMap { destinationEntities[$0] }
            let autogenerate = record.attributes["autogenerateexpression"]?.text != "0"
            for id in record.relationships["attributemappings"] ?? [] {
                guard let property = records[id], let name = property.attributes["name"]?.text else { continue }
                var value = try expression(property, owner: mapping.name)
                if value == nil, autogenerate, let attribute = source?.attributesByName[name], !attribute.isTransient {
                    value = .member(.variable("source"), keyPath: attribute.name)
                }
                mapping.attributeMappings.append(PropertyMapping(name: name, valueExpression: value))
            }
            for id in record.relationships["relationshipmappings"] ?? [] {
                guard let property = records[id], let name = property.attributes["name"]?.text else { continue }
                var value = try expression(property, owner: mapping.name)
                if value == nil, let keyPath = property.attributes["sourcekeypath"]?.text.nilIfEmpty,
                   let mappingName = property.attributes["sourcemappingname"]?.text.nilIfEmpty {
                    guard let path = try? CoreExpression(format: keyPath) else {
                        throw corrupt("the source key path '\(keyPath)' of '\(name)' in mapping '\(mapping.name)' cannot be read")
                    }
                    value = .customFunction(receiver: .variable("manager"), selector: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                                            arguments: [.constant(.string(mappingName)), path])
                }
                if value == nil, autogenerate, let old = source?.relationshipsByName[name],
                   let target = destination?.relationshipsByName[name]?.destinationEntityName {
                    let candidates = sourceMappingsByDestination[target] ?? []
                    if candidates.count == 1 {
                        value = PropertyMapping.destinationInstances(mappingName: candidates[0].name, sourceKeyPath: old.name)
                    } else if candidates.count > 1 {
                        value = .customFunction(receiver: .variable("manager"), selector: "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
                                                arguments: [.constant(.string(old.name)), .member(.variable("source"), keyPath: old.name)])
                    }
                }
                mapping.relationshipMappings.append(PropertyMapping(name: name, valueExpression: value))
            }
            mappings[index] = mapping
        }
        self.init(entityMappings: mappings)
    }
}

extension MappingModel {
    /// Every mapping model under `folder` (`.xcmappingmodel` folders, at any
    /// depth) made between versions of `versions`, by file name; mapping models of
    /// other bundles are skipped.
    ///
    /// - Parameters:
    ///   - folder: The folder to search.
    ///   - versions: The model versions.
    /// - Returns: The mapping models, by name (the file name without extension).
    /// - Throws: The reading errors of ``init(contentsOf:versions:)`` for a
    ///   mapping model of this bundle that cannot be read.
    public static func mappingModels(in folder: URL, versions: ModelVersionBundle) throws -> [(name: String, model: MappingModel)] {
        var found: [URL] = []
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            if url.pathExtension == "xcmappingmodel" {
                found.append(url)
                enumerator?.skipDescendants()
            }
        }
        var result: [(name: String, model: MappingModel)] = []
        for url in found.sorted(by: { $0.path < $1.path }) {
            do {
                result.append((url.deletingPathExtension().lastPathComponent, try MappingModel(contentsOf: url, versions: versions)))
            } catch let error as CoreDataError where error.namesVersionMissing(from: versions) {
                continue
            }
        }
        return result
    }

    /// Reads the contents of an `xcmapping.xml` against the first of `bundles`
    /// that has both versions it names; nil when none has them. `file` names it
    /// in errors.
    static func read(xcmappingData data: Data, file: URL, fromFirstOf bundles: [ModelVersionBundle]) throws -> MappingModel? {
        for versions in bundles {
            do {
                return try MappingModel(xcmappingData: data, file: file, versions: versions)
            } catch let error as CoreDataError where error.namesVersionMissing(from: versions) {
                continue
            }
        }
        return nil
    }
}

extension CoreDataError {
    /// Whether this is the error of a mapping model that names a model version
    /// `versions` does not have (a mapping model of another bundle).
    func namesVersionMissing(from versions: ModelVersionBundle) -> Bool {
        code == .fileReadCorruptFile && message.contains("which \(versions.url.lastPathComponent) does not have")
    }
}

extension String {
    var nilIfEmpty: String? { isEmpty ? nil : self }
}
