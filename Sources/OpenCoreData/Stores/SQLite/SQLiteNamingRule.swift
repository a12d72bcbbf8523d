import Foundation

/// Core Data's rule for the names it gives a new SQLite store: entity numbers and
/// many-to-many join tables with their columns.
///
/// The rule follows Core Data's own generation of its SQL model, and reproduces
/// every fixture store (the three sets of Apple's Photos libraries, Wire's 16
/// stores of 91 model versions, the Bookmarks, SyncMetadata and TestModel stores;
/// see OpenCoreData.docc/SQLiteFormat.md):
/// * Entities are numbered from 1 over the whole model: root entities sorted by
///   name ignoring case, each followed depth first by its subentities (same order).
/// * Every entity, roots and subentities mixed, is then visited in that name order;
///   each walks the keys of its stored properties (its own and inherited ones) in
///   the order of Core Data's private hash table of them. The first relationship
///   of a many-to-many pair met names the join table `Z_<E#><NAME>` (`E#` the
///   number of the entity declaring it), and the pair's columns are named
///   `Z_<E#><INVERSE>`, each made unique among the names of its entity's hierarchy
///   (`Z_14USERS1`). Which side is met first, and so which side gets a clash
///   suffix, therefore depends on those hash tables, which are reproduced here
///   (`tigerHash`, `leopardHash`).
///
/// An existing store never goes through this rule: its own names are read.
struct SQLiteNamingRule {
    /// The entity numbers, by entity name.
    private(set) var numbers: [String: Int] = [:]
    /// The join tables, in the order Core Data makes them.
    private(set) var joinTables: [JoinTable] = []

    struct JoinTable {
        /// The relationship that names the table, and its inverse.
        var relationship: RelationshipDescription
        var inverse: RelationshipDescription
        var tableName: String
        /// The column of the naming relationship's entity's keys, and its order column.
        var column: String
        var orderColumn: String?
        /// The column of the inverse's entity's keys, and its order column.
        var inverseColumn: String
        var inverseOrderColumn: String?
    }

    /// Name comparison ignoring case, as Core Data sorts entities.
    static func precedes(_ a: String, _ b: String) -> Bool {
        let (x, y) = (a.lowercased(), b.lowercased())
        if x != y { return x.utf16.lexicographicallyPrecedes(y.utf16) }
        return a.utf16.lexicographicallyPrecedes(b.utf16)
    }

    /// Computes the rule for `entities` (a whole model).
    init(entities: [EntityDescription]) {
        var byName: [String: EntityDescription] = [:]
        for entity in entities where byName[entity.name] == nil { byName[entity.name] = entity }
        func parent(_ entity: EntityDescription) -> EntityDescription? {
            guard let up = entity.superentity, byName[up.name] === up else { return nil }
            return up
        }
        func children(_ entity: EntityDescription) -> [EntityDescription] {
            entity.subentities.filter { byName[$0.name] === $0 }.sorted { Self.precedes($0.name, $1.name) }
        }
        let order = byName.values.sorted { Self.precedes($0.name, $1.name) }
        var next = 1
        func number(_ entity: EntityDescription) {
            self.numbers[entity.name] = next
            next += 1
            for child in children(entity) { number(child) }
        }
        for entity in order where parent(entity) == nil { number(entity) }
        let entityNumbers = self.numbers

        // Each entity's stored-property keys (Core Data's `NSSQLEntity` properties).
        final class Names {
            var used: [String: Int] = [:]
            /// `uniqueNameWithBase:`: the base, then base1, base2... (per base).
            func unique(_ base: String) -> String {
                guard let last = used[base] else { used[base] = 0; return base }
                var suffix = last
                repeat { suffix += 1 } while used[base + String(suffix)] != nil
                used[base] = suffix
                return base + String(suffix)
            }
        }
        final class Pair {
            let entity: String
            let relationship: RelationshipDescription
            let kind: Int   // 7 to-one, 8 to-many, 9 many-to-many
            /// Weak: pairs point at each other (and a reflexive one at itself); the
            /// entities' key tables hold every pair for as long as the rule is computed.
            weak var inverse: Pair?
            var hasVirtualInverse = false
            var table: String?
            var column: String?
            var orderColumn: String?
            var foreignOrder: String?
            init(entity: String, relationship: RelationshipDescription, kind: Int) {
                self.entity = entity
                self.relationship = relationship
                self.kind = kind
            }
        }
        enum Key { case plain, attribute, relationship(Pair) }
        final class Entry {
            var names: Names
            var keys: [String] = []              // insertion order
            var values: [String: Key] = [:]
            var leopard = LeopardOrder()
            init(names: Names) { self.names = names }
            func add(_ key: String, _ value: Key) {
                if values[key] == nil { keys.append(key) }
                values[key] = value
            }
        }
        var entries: [String: Entry] = [:]
        func stored(_ entity: EntityDescription) -> [PropertyDescription] {
            entity.properties.filter { !$0.isTransient && !($0 is FetchedPropertyDescription) }
        }
        func chain(_ entity: EntityDescription) -> [EntityDescription] {
            var result = [entity]
            while let up = parent(result[result.count - 1]) { result.append(up) }
            return result.reversed()
        }
        func generate(_ entity: EntityDescription) {
            let entry: Entry
            if let up = parent(entity), let upper = entries[up.name] {
                entry = Entry(names: upper.names)
                for key in upper.keys { entry.add(key, upper.values[key] ?? .plain) }
                for key in upper.leopard.order { entry.leopard.add(key) }
            } else {
                entry = Entry(names: Names())
                for key in ["_ent", "_pk", "_opt"] {
                    entry.add(key, .plain)
                    entry.leopard.add(key)
                }
            }
            entries[entity.name] = entry
            let own = stored(entity)
            var newAttributes: Set<String> = []
            var newRelationshipKeys: [String: [String]] = [:]
            for attribute in own.compactMap({ $0 as? AttributeDescription }).sorted(by: { $0.name.utf16.lexicographicallyPrecedes($1.name.utf16) })
            where entry.values[attribute.name] == nil {
                _ = entry.names.unique("Z" + attribute.name.uppercased())
                entry.add(attribute.name, .attribute)
                newAttributes.insert(attribute.name)
            }
            for relationship in own.compactMap({ $0 as? RelationshipDescription }).sorted(by: { $0.name.utf16.lexicographicallyPrecedes($1.name.utf16) })
            where entry.values[relationship.name] == nil {
                let destination = relationship.destinationEntityName.flatMap { byName[$0] }
                if !relationship.isToMany {
                    let pair = Pair(entity: entity.name, relationship: relationship, kind: 7)
                    var keys = ["_" + entry.names.unique("Z" + relationship.name.uppercased())]
                    if let destination, !children(destination).isEmpty {
                        keys.append("_" + entry.names.unique("Z\(entityNumbers[destination.name] ?? 0)_" + relationship.name.uppercased()))
                    }
                    for key in keys { entry.add(key, .plain) }
                    entry.add(relationship.name, .relationship(pair))
                    newRelationshipKeys[relationship.name] = keys + [relationship.name]
                } else {
                    let inverse = relationship.inverseRelationshipName.flatMap { name in destination?.relationshipsByName[name] }
                    let kind = inverse?.isToMany == true ? 9 : 8
                    entry.add(relationship.name, .relationship(Pair(entity: entity.name, relationship: relationship, kind: kind)))
                    newRelationshipKeys[relationship.name] = [relationship.name]
                }
            }
            // Core Data's dictionaries of attributes and relationships by name (the
            // entity's chain, each level's own by name) order the new keys.
            var attributeOrder = LeopardOrder(), relationshipOrder = LeopardOrder()
            for level in chain(entity) {
                let properties = level.properties.filter { !($0 is FetchedPropertyDescription) }
                for attribute in properties.compactMap({ $0 as? AttributeDescription }).sorted(by: { $0.name.utf16.lexicographicallyPrecedes($1.name.utf16) }) {
                    attributeOrder.add(attribute.name)
                }
                for relationship in properties.compactMap({ $0 as? RelationshipDescription }).sorted(by: { $0.name.utf16.lexicographicallyPrecedes($1.name.utf16) }) {
                    relationshipOrder.add(relationship.name)
                }
            }
            for name in attributeOrder.order where newAttributes.contains(name) { entry.leopard.add(name) }
            for name in relationshipOrder.order {
                for key in newRelationshipKeys[name] ?? [] { entry.leopard.add(key) }
            }
            for child in children(entity) { generate(child) }
        }
        for entity in order where parent(entity) == nil { generate(entity) }

        func addKey(_ entity: EntityDescription, _ key: String) {
            guard let entry = entries[entity.name] else { return }
            if entry.values[key] == nil {
                entry.add(key, .plain)
                entry.leopard.add(key)
            }
            for child in children(entity) { addKey(child, key) }
        }
        func pairNamed(_ entity: EntityDescription?, _ name: String?) -> Pair? {
            guard let entity, let name, case .relationship(let pair)? = entries[entity.name]?.values[name] else { return nil }
            return pair
        }
        var made: [Pair] = []
        func setInverseManyToMany(_ a: Pair, _ b: Pair) {
            if a.inverse !== b {
                a.inverse = b
                if a.table == nil {
                    a.table = "Z_\(entityNumbers[a.entity] ?? 0)\(a.relationship.name.uppercased())"
                    b.inverse = a
                    made.append(a)
                }
                setInverseManyToMany(b, a)
            }
            guard let names = entries[a.entity]?.names else { return }
            if a.column == nil {
                a.column = names.unique("Z_\(entityNumbers[a.entity] ?? 0)\(b.relationship.name.uppercased())")
            }
            if a.orderColumn == nil && b.relationship.isOrdered {
                a.orderColumn = names.unique("Z_FOK_\(entityNumbers[a.entity] ?? 0)\(b.relationship.name.uppercased())")
            }
        }
        for entity in order {
            guard let entry = entries[entity.name] else { continue }
            let inLeopard = Set(entry.leopard.order)
            let keys = entry.leopard.order.filter { entry.values[$0] != nil } + entry.keys.filter { !inLeopard.contains($0) }
            for key in TigerOrder.order(keys, capacity: entry.values.count) {
                guard case .relationship(let pair)? = entry.values[key] else { continue }
                if pair.inverse != nil || pair.hasVirtualInverse {
                    if pair.kind == 7, let order = pair.foreignOrder { addKey(entity, "_" + order) }
                    continue
                }
                let relationship = pair.relationship
                let destination = relationship.destinationEntityName.flatMap { byName[$0] }
                if let inverse = pairNamed(destination, relationship.inverseRelationshipName) {
                    if pair.kind == 9 {
                        setInverseManyToMany(pair, inverse)
                    } else {
                        pair.inverse = inverse
                        if pair.kind == 7, inverse.relationship.isToMany, inverse.relationship.isOrdered, pair.foreignOrder == nil {
                            pair.foreignOrder = entries[pair.entity]?.names.unique("Z_FOK_" + relationship.name.uppercased())
                            if let order = pair.foreignOrder { addKey(entity, "_" + order) }
                        }
                    }
                } else if pair.kind != 7, let destination, relationship.inverseRelationshipName == nil,
                          let destinationEntry = entries[destination.name] {
                    // A to-many without inverse: a hidden to-one in its destination.
                    let owner = byName[pair.entity]
                    let virtualName = "\(entityNumbers[pair.entity] ?? 0)\(relationship.name)"
                    var keys = ["_" + destinationEntry.names.unique("Z" + virtualName.uppercased())]
                    if let owner, !children(owner).isEmpty {
                        keys.append("_" + destinationEntry.names.unique("Z\(entityNumbers[pair.entity] ?? 0)_" + virtualName.uppercased()))
                    }
                    keys.append(virtualName)
                    if relationship.isOrdered { keys.append("_" + destinationEntry.names.unique("Z_FOK_" + virtualName.uppercased())) }
                    pair.hasVirtualInverse = true
                    for key in keys { addKey(destination, key) }
                }
            }
        }
        for a in made {
            guard let b = a.inverse, let table = a.table, let column = a.column else { continue }
            let reflexive = a === b
            joinTables.append(JoinTable(relationship: a.relationship, inverse: b.relationship, tableName: table,
                                        column: column, orderColumn: a.orderColumn,
                                        inverseColumn: reflexive ? "REFLEXIVE" : (b.column ?? ""),
                                        inverseOrderColumn: reflexive ? (a.orderColumn == nil ? nil : "FOK_REFLEXIVE") : b.orderColumn))
        }
    }
}

// MARK: - Core Data's private hash tables

/// The order of keys in Core Data's "Tiger" dictionary: open addressing with
/// linear probing from a 32-bit CFString hash modulo a prime bucket count.
enum TigerOrder {
    static let capacities = [4, 8, 17, 29, 47, 76, 123, 199, 322, 521, 843, 1364, 2207, 3571, 5778, 9349]
    static let buckets = [5, 11, 23, 41, 67, 113, 199, 317, 521, 839, 1361, 2207, 3571, 5779, 9349, 15121]

    /// (An entity of more keys than the table's sizes list is beyond any model seen:
    /// its keys are placed in a table twice their number.)
    static func order(_ keys: [String], capacity: Int) -> [String] {
        let count = capacities.firstIndex { $0 >= capacity }.map { buckets[$0] } ?? (2 * keys.count + 1)
        var table = [String?](repeating: nil, count: count)
        for key in keys {
            var slot = Int(tigerHash(key) % UInt32(count))
            while table[slot] != nil { slot = (slot + 1) % count }
            table[slot] = key
        }
        return table.compactMap { $0 }
    }

    /// Groups of four UTF-16 units, then single units, as CFString's hash mixes them.
    static func mix(_ seed: UInt32, _ units: [UInt16]) -> UInt32 {
        var result = seed
        var index = 0
        while index + 4 <= units.count {
            result = result &* 67503105 &+ UInt32(units[index]) &* 16974593 &+ UInt32(units[index + 1]) &* 66049
                &+ UInt32(units[index + 2]) &* 257 &+ UInt32(units[index + 3])
            index += 4
        }
        while index < units.count {
            result = result &* 257 &+ UInt32(units[index])
            index += 1
        }
        return result
    }

    /// Every unit of a string shorter than 24, else its first 8 and last 16.
    static func tigerHash(_ key: String) -> UInt32 {
        let units = Array(key.utf16)
        let count = units.count
        let hashed = count <= 23 ? units : Array(units.prefix(8) + units.suffix(16))
        let result = mix(UInt32(truncatingIfNeeded: count), hashed)
        return result &+ (result << UInt32(count % 32))
    }
}

/// The order of keys in Core Data's "Leopard" dictionary: power-of-two buckets
/// (capacity 3·2^k for 4·2^k buckets, rehashed in slot order when full), linear
/// probing from a Jenkins mix of a 32-bit CFString hash.
struct LeopardOrder {
    private var count = 0
    private var capacity = 3
    private var slots: [String?] = []
    private var members: Set<String> = []

    var order: [String] { slots.compactMap { $0 } }

    mutating func add(_ key: String) {
        guard !members.contains(key) else { return }
        if slots.isEmpty || count == capacity {
            let old = slots
            capacity = 3 << bitLength(count / 3)
            slots = [String?](repeating: nil, count: 4 << bitLength((capacity - 1) / 3))
            for case let key? in old { put(key) }
        }
        put(key)
        count += 1
        members.insert(key)
    }

    private func bitLength(_ value: Int) -> Int { value == 0 ? 0 : Int.bitWidth - value.leadingZeroBitCount }

    private mutating func put(_ key: String) {
        var slot = Int(Self.hash(key) & UInt32(slots.count - 1))
        while slots[slot] != nil { slot = (slot + 1) % slots.count }
        slots[slot] = key
    }

    /// Every unit up to 96, else the first, middle and last 32; then Jenkins' mix.
    static func hash(_ key: String) -> UInt32 {
        let units = Array(key.utf16)
        let n = units.count
        let hashed: [UInt16] = n <= 96 ? units
            : Array(units.prefix(32)) + Array(units[(n >> 1) - 16 ..< (n >> 1) + 16]) + Array(units.suffix(32))
        let r = TigerOrder.mix(UInt32(truncatingIfNeeded: n), hashed)
        let h = r &+ (r << UInt32(n % 32))
        var a = (1264676453 &- h) ^ ((h &- 1) << 8)
        var b = (2 &- h &- a) ^ (a >> 13)
        var c = (h &- 1 &- a &- b) ^ (b >> 12)
        a = (a &- b &- c) ^ (c << 16)
        b = (b &- c &- a) ^ (a >> 5)
        c = (c &- a &- b) ^ (b >> 3)
        a = (a &- b &- c) ^ (c << 10)
        return (b &- c &- a) ^ (a >> 15)
    }
}
