import Foundation

/// The key of the store option that turns persistent history tracking on
/// (Core Data's `NSPersistentHistoryTrackingKey`); pass `"1"` as its value.
///
/// ```swift
/// try coordinator.addPersistentStore(type: .sqlite, at: storeURL,
///                                    options: [NSPersistentHistoryTrackingKey: "1"])
/// ```
public let NSPersistentHistoryTrackingKey = "NSPersistentHistoryTrackingKey"

/// The key of the store option that posts `Notification.Name.persistentStoreRemoteChange`
/// whenever the store's file changes (Core Data's
/// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`); pass `"1"`.
public let NSPersistentStoreRemoteChangeNotificationPostOptionKey = "NSPersistentStoreRemoteChangeNotificationPostOptionKey"

extension SQLiteStore.Option {
    /// `NSPersistentHistoryTrackingKey`: "1" records every save in the store's
    /// history tables (`ATRANSACTION`, `ACHANGE`, `ATRANSACTIONSTRING`).
    public static let persistentHistoryTracking = NSPersistentHistoryTrackingKey
    /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`: "1" posts
    /// `.persistentStoreRemoteChange` after each change to the store's file.
    public static let remoteChangeNotificationPost = NSPersistentStoreRemoteChangeNotificationPostOptionKey
    /// How often (seconds, default 0.5) the store looks for changes made by other
    /// coordinators or processes when remote-change notifications are on. An
    /// OpenCoreData option: Core Data has its own mechanism.
    public static let remoteChangePollInterval = "OpenCoreDataRemoteChangePollInterval"

    /// Whether a boolean store option is on ("1", "true", "yes").
    static func isOn(_ value: String?) -> Bool {
        guard let value = value?.lowercased() else { return false }
        return value == "1" || value == "true" || value == "yes"
    }
}

/// A bookmark in a store's persistent history (`NSPersistentHistoryToken`): the
/// number of the last transaction seen, per store.
///
/// Keep the token of the last transaction you processed — it is `Codable`, so it
/// can go to disk — and ask for what came after it:
///
/// ```swift
/// let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: lastToken))
/// for transaction in result.transactions ?? [] { /* … */ }
/// lastToken = result.transactions?.last?.token ?? lastToken
/// let data = try JSONEncoder().encode(lastToken)
/// ```
///
/// Tokens of the same store are ordered by transaction; a token naming several
/// stores is smaller than another when it is nowhere ahead of it and somewhere
/// behind. Tokens of unrelated stores are not ordered (neither is smaller).
public struct PersistentHistoryToken: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The last transaction number seen, by store identifier (`NSStoreUUID`).
    public let storeTokens: [String: Int64]

    /// A token at transaction `number` of the store `storeIdentifier`.
    ///
    /// - Parameters:
    ///   - storeIdentifier: The store's identifier (`NSStoreUUID`).
    ///   - transactionNumber: The last transaction number seen in that store.
    public init(storeIdentifier: String, transactionNumber: Int64) {
        storeTokens = [storeIdentifier: transactionNumber]
    }

    /// A token made of per-store transaction numbers.
    ///
    /// - Parameter storeTokens: The last transaction number seen, by store
    ///   identifier.
    public init(storeTokens: [String: Int64]) {
        self.storeTokens = storeTokens
    }

    /// The transaction number for one store, if the token names it.
    ///
    /// - Parameter identifier: The store's identifier (`NSStoreUUID`).
    /// - Returns: The last transaction number seen in that store, or nil.
    public func transactionNumber(forStore identifier: String) -> Int64? { storeTokens[identifier] }

    public static func < (lhs: PersistentHistoryToken, rhs: PersistentHistoryToken) -> Bool {
        var behind = false
        for (store, number) in lhs.storeTokens {
            guard let other = rhs.storeTokens[store] else { continue }
            if number > other { return false }
            if number < other { behind = true }
        }
        return behind
    }

    public var description: String {
        "<PersistentHistoryToken " + storeTokens.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + ">"
    }
}
