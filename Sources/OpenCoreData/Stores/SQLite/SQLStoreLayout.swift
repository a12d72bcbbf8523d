import Foundation

/// Where a SQLite store in Core Data's format keeps each entity and property: what
/// the SQL translator needs to turn fetch requests into statements.
///
/// The schema of a store (created from a model, or read from an existing file)
/// provides it; the translator never guesses a table or column name.
protocol SQLStoreLayout: Sendable {
    /// The table holding the rows of `entity` and of every entity sharing its root
    /// (`Z<ROOTNAME>`).
    func tableName(for entity: EntityDescription) -> String?
    /// The `Z_ENT` number of `entity` in this store.
    func entityNumber(for entity: EntityDescription) -> Int?
    /// The column of an attribute or of a to-one relationship's foreign key.
    func columnName(for property: PropertyDescription, in entity: EntityDescription) -> String?
    /// The column holding the destination's `Z_ENT` for a to-one relationship whose
    /// destination has subentities (`Z<destEnt#>_<REL>`), if the store has one.
    func entityColumnName(for relationship: RelationshipDescription, in entity: EntityDescription) -> String?
    /// How a to-many relationship is stored.
    func toManyStorage(for relationship: RelationshipDescription, in entity: EntityDescription) -> ToManyStorage?
}

/// How a to-many relationship is stored in Core Data's SQLite layout.
enum ToManyStorage: Sendable, Hashable {
    /// One-to-many with a to-one inverse, or a to-many without inverse: the
    /// destination table has a foreign key column pointing at the source row
    /// (`ZCOUNTRY` in `ZMOOD`, or the hidden `Z<ent#><REL>`), and for an ordered
    /// relationship an order column (`Z_FOK_<INVERSE>`).
    case foreignKey(table: String, column: String, orderColumn: String?)
    /// Many-to-many: a join table `Z_<ent#><REL>` with the source's and the
    /// destination's primary keys, and for an ordered relationship an order column.
    case joinTable(table: String, sourceColumn: String, destinationColumn: String, orderColumn: String?)
}
