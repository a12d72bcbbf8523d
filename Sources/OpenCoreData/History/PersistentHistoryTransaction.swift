import Foundation
import OpenCoreDataPredicates

/// One save recorded in a store's persistent history
/// (`NSPersistentHistoryTransaction`): who saved (author, context name, bundle
/// and process), when, and what changed.
///
/// ```swift
/// let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: token))
/// for transaction in result.transactions ?? [] where transaction.author != "importer" {
///     viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
/// }
/// ```
///
/// Transactions are values: they can cross to any task.
public struct PersistentHistoryTransaction: Sendable, Hashable, Identifiable {
    /// When the save committed.
    public let timestamp: Date
    /// The token of this transaction: fetch after it for the saves that followed.
    public let token: PersistentHistoryToken
    /// The transaction number in its store (`ATRANSACTION.Z_PK`), increasing.
    public let transactionNumber: Int64
    /// The saving context's `transactionAuthor`.
    public let author: String?
    /// The saving context's `name`.
    public let contextName: String?
    /// The identifier (`NSStoreUUID`) of the store the transaction belongs to.
    public let storeID: String
    /// The bundle identifier of the saving app (the executable's name when it has none).
    public let bundleID: String
    /// The name of the saving process.
    public let processID: String
    /// The transaction's changes (nil when the request asked for transactions only,
    /// and in the transaction a ``PersistentHistoryChange`` points back to).
    public let changes: [PersistentHistoryChange]?

    /// The transaction number (unique within its store).
    public var id: Int64 { transactionNumber }

    /// A did-save notification carrying the object IDs this transaction inserted,
    /// updated and deleted (Core Data's `NSManagedObjectContextDidSaveObjectIDs`
    /// notification), for `mergeChanges(fromContextDidSave:)`. Empty when the
    /// transaction was fetched without its changes.
    ///
    /// - Returns: A ``ManagedObjectContext/didSaveObjectIDsNotification`` whose
    ///   object is nil.
    public func objectIDNotification() -> Notification {
        var inserted = Set<ManagedObjectID>(), updated = Set<ManagedObjectID>(), deleted = Set<ManagedObjectID>()
        for change in changes ?? [] {
            switch change.changeType {
            case .insert: inserted.insert(change.changedObjectID)
            case .update: updated.insert(change.changedObjectID)
            case .delete: deleted.insert(change.changedObjectID)
            }
        }
        return Notification(name: PersistentHistoryTransaction.objectIDsNotificationName, object: nil, userInfo: [
            ManagedObjectContext.NotificationKey.insertedObjectIDs: inserted,
            ManagedObjectContext.NotificationKey.updatedObjectIDs: updated,
            ManagedObjectContext.NotificationKey.deletedObjectIDs: deleted,
        ])
    }

    /// The name of the notifications ``objectIDNotification()`` makes: a context's
    /// ``ManagedObjectContext/didSaveObjectIDsNotification``.
    public static let objectIDsNotificationName = ManagedObjectContext.didSaveObjectIDsNotification

    /// The transaction without its changes (what a change points back to).
    package var withoutChanges: PersistentHistoryTransaction {
        PersistentHistoryTransaction(timestamp: timestamp, token: token, transactionNumber: transactionNumber, author: author,
                                     contextName: contextName, storeID: storeID, bundleID: bundleID, processID: processID, changes: nil)
    }

    package func with(changes: [PersistentHistoryChange]?) -> PersistentHistoryTransaction {
        PersistentHistoryTransaction(timestamp: timestamp, token: token, transactionNumber: transactionNumber, author: author,
                                     contextName: contextName, storeID: storeID, bundleID: bundleID, processID: processID, changes: changes)
    }
}

/// What happened to one object in a transaction (`NSPersistentHistoryChangeType`).
public enum PersistentHistoryChangeType: Int, Sendable, Hashable, Codable {
    /// The object was inserted.
    case insert = 0
    /// Properties of the object changed.
    case update = 1
    /// The object was deleted.
    case delete = 2
}

/// One object's change in a transaction (`NSPersistentHistoryChange`).
///
/// ```swift
/// for change in transaction.changes ?? [] {
///     switch change.changeType {
///     case .insert: print("new", change.changedObjectID)
///     case .update: print("changed", change.updatedProperties?.map(\.name) ?? [])
///     case .delete: print("deleted; kept:", change.tombstone ?? [:])
///     }
/// }
/// ```
public struct PersistentHistoryChange: Sendable, Hashable, Identifiable {
    /// The change's number in its store (`ACHANGE.Z_PK`).
    public let changeID: Int64
    /// The object that changed.
    public let changedObjectID: ManagedObjectID
    /// Insert, update or delete.
    public let changeType: PersistentHistoryChangeType
    /// For a delete, the values of the attributes marked
    /// `preservesValueInHistoryOnDeletion` at deletion; nil otherwise.
    public let tombstone: [String: AttributeValue]?
    /// For an update, the properties the save wrote; nil otherwise.
    public let updatedProperties: [PropertyDescription]?
    /// The transaction the change belongs to (without its changes).
    public let transaction: PersistentHistoryTransaction?

    /// The change number (unique within its store).
    public var id: Int64 { changeID }

    public static func == (lhs: PersistentHistoryChange, rhs: PersistentHistoryChange) -> Bool {
        lhs.changeID == rhs.changeID && lhs.changedObjectID == rhs.changedObjectID && lhs.changeType == rhs.changeType
            && lhs.changedObjectID.storeIdentifier == rhs.changedObjectID.storeIdentifier
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(changeID)
        hasher.combine(changedObjectID)
    }
}

extension PersistentHistoryTransaction {
    /// A transaction as a store reads it from its history tables.
    package init(timestamp: Date, token: PersistentHistoryToken, transactionNumber: Int64, author: String?, contextName: String?,
                 storeID: String, bundleID: String, processID: String, historyChanges changes: [PersistentHistoryChange]?) {
        self.init(timestamp: timestamp, token: token, transactionNumber: transactionNumber, author: author, contextName: contextName,
                  storeID: storeID, bundleID: bundleID, processID: processID, changes: changes)
    }
}

extension PersistentHistoryChange {
    /// A change as a store reads it from its history tables.
    package init(historyChangeID changeID: Int64, changedObjectID: ManagedObjectID, changeType: PersistentHistoryChangeType,
                 tombstone: [String: AttributeValue]?, updatedProperties: [PropertyDescription]?, transaction: PersistentHistoryTransaction?) {
        self.init(changeID: changeID, changedObjectID: changedObjectID, changeType: changeType, tombstone: tombstone,
                  updatedProperties: updatedProperties, transaction: transaction)
    }
}

/// A store that records persistent history (the SQLite and PostgreSQL stores):
/// what ``PersistentHistoryChangeRequest`` and
/// ``PersistentStoreCoordinator/currentPersistentHistoryToken(fromStores:)`` ask of it.
package protocol HistoryTrackingStore: PersistentStore {
    /// Whether the store was opened with `NSPersistentHistoryTrackingKey`.
    var isTrackingHistory: Bool { get }
    /// The token of the store's last transaction (0 when it has none yet).
    func currentHistoryToken() throws -> PersistentHistoryToken
    /// The transactions after `boundary`, in order, with their changes when `withChanges`.
    func fetchHistory(_ boundary: PersistentHistoryChangeRequest.Boundary, withChanges: Bool) throws -> [PersistentHistoryTransaction]
    /// Deletes the transactions before `boundary`; returns how many went.
    func deleteHistory(_ boundary: PersistentHistoryChangeRequest.Boundary) throws -> Int
}
