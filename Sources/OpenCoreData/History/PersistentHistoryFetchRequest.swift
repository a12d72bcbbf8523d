import Foundation
import OpenCoreDataPredicates

/// Narrows a history fetch with a predicate on transactions or on changes — the
/// `fetchRequest` of an `NSPersistentHistoryChangeRequest`, made with
/// `NSPersistentHistoryTransaction.fetchRequest` or `NSPersistentHistoryChange.fetchRequest`.
///
/// ```swift
/// // Everything except our own saves:
/// var request = PersistentHistoryChangeRequest.fetchHistory(after: token)
/// request.fetchRequest = PersistentHistoryTransaction.fetchRequest(
///     predicate: try CorePredicate(format: "author != %@", "app"))
///
/// // The history of one object: each transaction keeps only the matching changes.
/// request.fetchRequest = PersistentHistoryChange.fetchRequest(
///     predicate: try CorePredicate(format: "changedObjectID == %@", book.objectID))
/// ```
///
/// Transactions answer the keys `timestamp`, `author`, `contextName`, `bundleID`,
/// `processID`, `storeID` and `transactionNumber`; changes answer `changeID`,
/// `changedObjectID`, `changeType` (0 insert, 1 update, 2 delete), `entityName`,
/// `tombstone` and `transaction` (so `transaction.author` works). Predicates run
/// in memory on the fetched history.
public struct PersistentHistoryFetchRequest: Sendable {
    /// What the predicate is about.
    public enum Subject: Sendable {
        /// Transactions: those not matching are left out with their changes.
        case transaction
        /// Changes: those not matching are left out, and transactions left with none.
        case change
    }

    /// What the predicate is about.
    public let subject: Subject
    /// The predicate (nil: everything).
    public var predicate: CorePredicate?

    /// A request keeping the transactions or changes that match `predicate`.
    ///
    /// - Parameters:
    ///   - subject: Whether the predicate is about transactions or changes.
    ///   - predicate: What is kept; nil for everything.
    public init(subject: Subject, predicate: CorePredicate? = nil) {
        self.subject = subject
        self.predicate = predicate
    }

    /// Applies the request to fetched transactions.
    func filter(_ transactions: [PersistentHistoryTransaction]) throws -> [PersistentHistoryTransaction] {
        guard let predicate else { return transactions }
        switch subject {
        case .transaction:
            return try transactions.filter { try predicate.evaluate(with: $0) }
        case .change:
            return try transactions.compactMap { transaction in
                guard let changes = transaction.changes else { return transaction }
                let kept = try changes.filter { try predicate.evaluate(with: $0) }
                return kept.isEmpty ? nil : transaction.with(changes: kept)
            }
        }
    }
}

extension PersistentHistoryTransaction: KeyValueCoding {
    /// A fetch request on transactions (`NSPersistentHistoryTransaction.fetchRequest`).
    ///
    /// - Parameter predicate: The transactions kept, by their keys (`author`,
    ///   `timestamp`, `contextName`...); nil for all.
    /// - Returns: A request for ``PersistentHistoryChangeRequest/fetchHistory(withFetchRequest:)``.
    public static func fetchRequest(predicate: CorePredicate? = nil) -> PersistentHistoryFetchRequest {
        PersistentHistoryFetchRequest(subject: .transaction, predicate: predicate)
    }

    public func value(forKey key: String) -> Any? {
        switch key {
        case "timestamp": return timestamp
        case "author": return author
        case "contextName": return contextName
        case "bundleID": return bundleID
        case "processID": return processID
        case "storeID": return storeID
        case "transactionNumber": return transactionNumber
        case "changes": return changes
        default: return nil
        }
    }
}

extension PersistentHistoryChange: KeyValueCoding {
    /// A fetch request on changes (`NSPersistentHistoryChange.fetchRequest`).
    ///
    /// - Parameter predicate: The changes kept, by their keys (`entityName`,
    ///   `changeType`, `changedObjectID`...); nil for all.
    /// - Returns: A request for ``PersistentHistoryChangeRequest/fetchHistory(withFetchRequest:)``.
    public static func fetchRequest(predicate: CorePredicate? = nil) -> PersistentHistoryFetchRequest {
        PersistentHistoryFetchRequest(subject: .change, predicate: predicate)
    }

    public func value(forKey key: String) -> Any? {
        switch key {
        case "changeID": return changeID
        case "changedObjectID": return AttributeValue.uri(changedObjectID.uriRepresentation())
        case "changeType": return changeType.rawValue
        case "entityName": return changedObjectID.entityName
        case "tombstone": return tombstone
        case "transaction": return transaction
        case "updatedProperties": return updatedProperties?.map(\.name)
        default: return nil
        }
    }
}
