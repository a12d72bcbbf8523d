import Foundation

/// The tables, columns and indexes of a Core Data SQLite store, and where each
/// entity and property of a model lives in them.
///
/// Core Data's SQLite layout, which OpenCoreData reproduces exactly so that stores
/// move freely between Apple platforms and Linux:
///
/// * every entity has a number (`Z_ENT`), listed in `Z_PRIMARYKEY`;
/// * every inheritance hierarchy shares one table, named after its root entity
///   (`ZMOOD` for `Mood`), with `Z_PK` (the object's primary key), `Z_ENT` (its
///   entity number) and `Z_OPT` (its version), then one column per stored
///   attribute and to-one relationship;
/// * many-to-many relationships use join tables (`Z_1BOOKS`);
/// * `Z_METADATA` holds the store's UUID and metadata, `Z_MODELCACHE` the model.
///
/// A schema comes either from a model, for a new store, or from an existing
/// store, whose real entity numbers and columns always win:
///
/// ```swift
/// let model = try XcodeDataModel(contentsOf: modelURL).model(forVersion: "Moody 2")
/// let schema = try SQLiteSchema(model: model)
/// schema.entityNumber(forEntityNamed: "Country")          // 3
/// schema.table(forEntityNamed: "Country")                 // "ZGEOGRAPHICREGION"
/// schema.column(forProperty: "numberOfMoods", ofEntityNamed: "Country")   // "ZNUMBEROFMOODS"
/// schema.creationStatements                               // the CREATE TABLE / INDEX statements
///
/// // An existing store (the database is only read):
/// let existing = try queue.read { db in try SQLiteSchema(reading: db, model: model) }
/// ```
///
/// See ``SQLiteStoreFile/createStore(at:model:configurationName:metadata:)`` to
/// write a new, empty store and ``SQLiteStoreMetadata`` for the metadata.
public struct SQLiteSchema: Sendable {
    /// A column of a table, with the type it is declared with (`INTEGER`,
    /// `FLOAT`, `DECIMAL`, `TIMESTAMP`, `VARCHAR`, `BLOB`).
    public struct Column: Sendable, Hashable, CustomStringConvertible {
        /// The column's name, e.g. `ZNUMBEROFMOODS`.
        public var name: String
        /// The declared type, e.g. `INTEGER`; `INTEGER PRIMARY KEY` is reported as
        /// `INTEGER`, as `PRAGMA table_info` does.
        public var declaredType: String

        /// A column.
        public init(name: String, declaredType: String) {
            self.name = name
            self.declaredType = declaredType
        }

        public var description: String { "\(name) \(declaredType)" }
    }

    /// What a table holds.
    public enum TableKind: Sendable, Hashable {
        /// The rows of an inheritance hierarchy, named by its root entity.
        case entity(rootEntityName: String)
        /// A many-to-many join table.
        case join
        /// `Z_PRIMARYKEY`, `Z_METADATA` or `Z_MODELCACHE`.
        case bookkeeping
    }

    /// A table of the store.
    public struct Table: Sendable, Hashable {
        /// The table's name, e.g. `ZMOOD`.
        public var name: String
        /// What the table holds.
        public var kind: TableKind
        /// The columns, in declaration order.
        public var columns: [Column]
        /// Uniqueness constraints declared inside `CREATE TABLE`, as column lists.
        public var uniqueConstraints: [[String]]
        /// The composite primary key of a join table (empty for other tables).
        public var primaryKey: [String]

        /// The column named `name` (compared as SQLite does, ignoring ASCII case).
        public func column(named name: String) -> Column? {
            let key = SQLiteIdentifier.key(name)
            return columns.first { SQLiteIdentifier.key($0.name) == key }
        }
    }

    /// One column of an index.
    public struct IndexColumn: Sendable, Hashable {
        /// The column's name.
        public var name: String
        /// The collation written in the index (`BINARY` for fetch indexes), or nil.
        public var collation: String?
        /// `true` for `ASC`, `false` for `DESC`, nil when the index says neither.
        public var ascending: Bool?
    }

    /// An index of the store.
    public struct Index: Sendable, Hashable {
        /// The index's name, e.g. `ZMOOD_ZCOUNTRY_INDEX`.
        public var name: String
        /// The indexed table.
        public var tableName: String
        /// The indexed columns, in order.
        public var columns: [IndexColumn]
        /// Whether the index is `UNIQUE`.
        public var isUnique: Bool
    }

    /// Where an entity's objects are stored.
    public struct EntityMapping: Sendable, Hashable {
        /// The entity's name.
        public var entityName: String
        /// The entity's number: the `Z_ENT` of its rows and of its `Z_PRIMARYKEY` row.
        public var entityNumber: Int
        /// The superentity's number (`Z_SUPER`), 0 for a root entity.
        public var superentityNumber: Int
        /// The root entity of its inheritance hierarchy.
        public var rootEntityName: String
        /// The table of the hierarchy: `Z` + the root entity's name in upper case.
        public var tableName: String
        /// The numbers of the entity and all its subentities, at any depth: the
        /// `Z_ENT` values a fetch of this entity with subentities matches.
        public var entityNumbersIncludingSubentities: [Int]
    }

    /// A many-to-many join table, as seen from one of its two relationships.
    public struct JoinTable: Sendable, Hashable {
        /// The table's name, e.g. `Z_1BOOKS`.
        public var tableName: String
        /// The column holding the primary keys of the relationship's source objects.
        public var sourceColumn: String
        /// The column holding the primary keys of the destination objects.
        public var destinationColumn: String
        /// For an ordered relationship, the column holding each destination's
        /// position (`Z_FOK_...`).
        public var orderColumn: String?
    }

    /// Where a property's value is stored.
    public enum PropertyStorage: Sendable, Hashable {
        /// An attribute: one column of the entity's table.
        case column(String)
        /// A composite attribute: one column per element, by element path
        /// (`"street"`, or `"address.zip"` for nested composites).
        case composite([String: String])
        /// A to-one relationship: the destination's `Z_PK` in `column`; when the
        /// destination has subentities, its `Z_ENT` in `entityColumn`; when the
        /// inverse is an ordered to-many, this object's position in it in `orderColumn`.
        case toOne(column: String, entityColumn: String?, orderColumn: String?)
        /// A to-many relationship kept by a foreign key in the destination's table:
        /// its inverse to-one, or a hidden one when the relationship has no inverse.
        case toMany(tableName: String, foreignKeyColumn: String, orderColumn: String?)
        /// A many-to-many relationship, kept in a join table.
        case joinTable(JoinTable)
        /// Not stored: transient properties and fetched properties.
        case notStored
    }

    /// The store's tables, in the order Core Data creates them.
    public internal(set) var tables: [Table]
    /// The store's indexes, in the order Core Data creates them.
    public internal(set) var indexes: [Index]
    /// Every entity of the schema, by entity number.
    public internal(set) var entities: [EntityMapping]
    var entitiesByName: [String: EntityMapping]
    /// Entity name → property name (inherited properties included) → storage.
    var propertyStorage: [String: [String: PropertyStorage]]
    /// The SQL that creates the tables and indexes (new stores only; empty for a
    /// schema read from a store).
    public internal(set) var creationStatements: [String]

    // MARK: Lookups

    /// The mapping of the entity named `name`.
    public func mapping(forEntityNamed name: String) -> EntityMapping? { entitiesByName[name] }

    /// The mapping of `entity`.
    public func mapping(for entity: EntityDescription) -> EntityMapping? { entitiesByName[entity.name] }

    /// The entity number (`Z_ENT`) of `entity`.
    public func entityNumber(_ entity: EntityDescription) -> Int? { entitiesByName[entity.name]?.entityNumber }

    /// The entity number (`Z_ENT`) of the entity named `name`.
    public func entityNumber(forEntityNamed name: String) -> Int? { entitiesByName[name]?.entityNumber }

    /// The name of the entity numbered `number`.
    public func entityName(forEntityNumber number: Int) -> String? {
        entities.first { $0.entityNumber == number }?.entityName
    }

    /// The table holding the rows of `entity`.
    public func table(for entity: EntityDescription) -> String? { entitiesByName[entity.name]?.tableName }

    /// The table holding the rows of the entity named `name`.
    public func table(forEntityNamed name: String) -> String? { entitiesByName[name]?.tableName }

    /// The description of the table named `name`.
    public func tableDescription(named name: String) -> Table? {
        let key = SQLiteIdentifier.key(name)
        return tables.first { SQLiteIdentifier.key($0.name) == key }
    }

    /// Where `property` of `entity` (its own or inherited) is stored.
    public func storage(for property: PropertyDescription, in entity: EntityDescription) -> PropertyStorage? {
        propertyStorage[entity.name]?[property.name]
    }

    /// Where the property named `property` of the entity named `entity` is stored.
    public func storage(forProperty property: String, ofEntityNamed entity: String) -> PropertyStorage? {
        propertyStorage[entity]?[property]
    }

    /// The column of an attribute, or the foreign-key column of a to-one
    /// relationship; nil for other properties.
    public func column(for property: PropertyDescription, in entity: EntityDescription) -> String? {
        column(forProperty: property.name, ofEntityNamed: entity.name)
    }

    /// The column of the attribute or to-one relationship named `property`.
    public func column(forProperty property: String, ofEntityNamed entity: String) -> String? {
        switch propertyStorage[entity]?[property] {
        case .column(let name): return name
        case .toOne(let name, _, _): return name
        default: return nil
        }
    }

    /// The join table of a many-to-many relationship, seen from that relationship.
    public func joinTable(for relationship: RelationshipDescription) -> JoinTable? {
        guard let entity = relationship.entity else { return nil }
        if case .joinTable(let table) = propertyStorage[entity.name]?[relationship.name] { return table }
        return nil
    }
}
