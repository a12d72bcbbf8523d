import Foundation
import GRDB

/// A request to fetch or delete persistent history (`NSPersistentHistoryChangeRequest`),
/// executed with ``ManagedObjectContext/execute(_:)-(PersistentHistoryChangeRequest)``.
///
/// History is recorded by SQLite stores opened with ``NSPersistentHistoryTrackingKey``.
/// A request goes to every store of the context's coordinator, or to
/// ``affectedStores``; a store without history tracking fails the request with
/// ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091).
///
/// ```swift
/// // What other writers did since we last looked:
/// var request = PersistentHistoryChangeRequest.fetchHistory(after: lastToken)
/// request.resultType = .transactionsAndChanges
/// let transactions = try context.execute(request).transactions ?? []
///
/// // Everyone has seen it: drop it.
/// try context.execute(PersistentHistoryChangeRequest.deleteHistory(before: lastToken))
/// ```
///
/// Boundaries: `fetchHistory(after:)` returns the transactions strictly after a
/// token, a transaction or a date (a nil token or transaction: all of them).
/// `deleteHistory(before:)` deletes the transactions up to *and including* a
/// token's, those strictly before a transaction, or those older than a date.
/// Fetching after a token whose successors were deleted fails with
/// ``CoreDataError/Code/persistentHistoryTokenExpired`` (134301).
public struct PersistentHistoryChangeRequest: Sendable {
    /// Where a request starts (fetch) or ends (delete).
    public enum Boundary: Sendable {
        /// A token (nil: the beginning of history).
        case token(PersistentHistoryToken?)
        /// A transaction (nil: the beginning of history).
        case transaction(PersistentHistoryTransaction?)
        /// A moment.
        case date(Date)
    }

    /// Whether the request fetches or deletes.
    public enum Operation: Sendable {
        /// Fetches history after the boundary.
        case fetch
        /// Deletes history before the boundary.
        case delete
    }

    /// What executing the request returns (`NSPersistentHistoryResultType`).
    public enum ResultType: Int, Sendable {
        /// Only whether it succeeded.
        case statusOnly = 0
        /// The IDs of the changed objects.
        case objectIDs = 1
        /// The number of transactions fetched or deleted.
        case count = 2
        /// Transactions without their changes.
        case transactionsOnly = 3
        /// Changes, each pointing back to its transaction.
        case changesOnly = 4
        /// Transactions with their changes (the default).
        case transactionsAndChanges = 5
    }

    /// Fetch or delete.
    public let operation: Operation
    /// The boundary.
    public let boundary: Boundary
    /// What ``ManagedObjectContext/execute(_:)-(PersistentHistoryChangeRequest)`` returns.
    public var resultType: ResultType = .transactionsAndChanges
    /// The stores to ask (nil: every store of the coordinator).
    public var affectedStores: [any PersistentStore]?
    /// A predicate on the fetched transactions or changes (fetches only).
    public var fetchRequest: PersistentHistoryFetchRequest?

    /// The token the request starts or ends at, when it has one.
    public var token: PersistentHistoryToken? {
        switch boundary {
        case .token(let token): return token
        case .transaction(let transaction): return transaction?.token
        case .date: return nil
        }
    }

    init(_ operation: Operation, _ boundary: Boundary) {
        self.operation = operation
        self.boundary = boundary
    }

    /// The transactions after `token` (nil: all).
    ///
    /// - Parameter token: The token of the last transaction already processed;
    ///   nil for every transaction.
    /// - Returns: A request returning transactions with their changes.
    public static func fetchHistory(after token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.fetch, .token(token))
    }

    /// The transactions after `transaction` (nil: all).
    ///
    /// - Parameter transaction: The last transaction already processed; nil for
    ///   every transaction.
    /// - Returns: A request returning transactions with their changes.
    public static func fetchHistory(after transaction: PersistentHistoryTransaction?) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.fetch, .transaction(transaction))
    }

    /// The transactions committed after `date`.
    ///
    /// - Parameter date: The earliest commit time, exclusive.
    /// - Returns: A request returning transactions with their changes.
    public static func fetchHistory(after date: Date) -> PersistentHistoryChangeRequest {
        PersistentHistoryChangeRequest(.fetch, .date(date))
    }

    /// The transactions (or changes) a fetch request selects, from the beginning.
    ///
    /// - Parameter fetchRequest: Which transactions or changes, by predicate.
    /// - Returns: A request returning transactions with their changes.
    public static func fetchHistory(withFetchRequest fetchRequest: PersistentHistoryFetchRequest) -> PersistentHistoryChangeRequest {
        var request = PersistentHistoryChangeRequest(.fetch, .token(nil))
        request.fetchRequest = fetchRequest
        return request
    }

    /// Deletes the transactions up to and including `token`'s (nil: none).
    ///
    /// - Parameter token: The token of the last transaction to delete; nil to
    ///   delete none.
    /// - Returns: A request with result type
    ///   ``PersistentHistoryChangeRequest/ResultType/statusOnly``.
    public static func deleteHistory(before token: PersistentHistoryToken?) -> PersistentHistoryChangeRequest {
        var request = PersistentHistoryChangeRequest(.delete, .token(token))
        request.resultType = .statusOnly
        return request
    }

    /// Deletes the transactions before `transaction` (nil: none).
    ///
    /// - Parameter transaction: The first transaction to keep; nil to delete
    ///   none.
    /// - Returns: A request with result type
    ///   ``PersistentHistoryChangeRequest/ResultType/statusOnly``.
    public static func deleteHistory(before transaction: PersistentHistoryTransaction?) -> PersistentHistoryChangeRequest {
        var request = PersistentHistoryChangeRequest(.delete, .transaction(transaction))
        request.resultType = .statusOnly
        return request
    }

    /// Deletes the transactions committed before `date`
    /// (`deleteHistory(before: .distantFuture)` deletes all).
    ///
    /// - Parameter date: The earliest commit time kept.
    /// - Returns: A request with result type
    ///   ``PersistentHistoryChangeRequest/ResultType/statusOnly``.
    public static func deleteHistory(before date: Date) -> PersistentHistoryChangeRequest {
        var request = PersistentHistoryChangeRequest(.delete, .date(date))
        request.resultType = .statusOnly
        return request
    }
}

/// What a ``PersistentHistoryChangeRequest`` returned (`NSPersistentHistoryResult`).
///
/// ```swift
/// let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: token))
/// result.transactions?.count
/// ```
public struct PersistentHistoryResult: Sendable {
    /// The result type the request asked for.
    public let resultType: PersistentHistoryChangeRequest.ResultType
    /// Transactions (`.transactionsOnly`, `.transactionsAndChanges`), else nil.
    public let transactions: [PersistentHistoryTransaction]?
    /// Changes (`.changesOnly`), else nil.
    public let changes: [PersistentHistoryChange]?
    /// Changed object IDs (`.objectIDs`), else nil.
    public let objectIDs: [ManagedObjectID]?
    /// The number of transactions fetched or deleted (`.count`), else nil.
    public let count: Int?
    /// Whether the request succeeded (always true: failures throw).
    public let status: Bool
}

extension ManagedObjectContext {
    /// Executes a persistent history request on the context's coordinator's stores
    /// (`execute(_:)` with an `NSPersistentHistoryChangeRequest`).
    ///
    /// ```swift
    /// let result = try context.execute(PersistentHistoryChangeRequest.fetchHistory(after: token))
    /// for transaction in result.transactions ?? [] {
    ///     print(transaction.author ?? "-", transaction.changes?.count ?? 0)
    /// }
    /// ```
    ///
    /// - Parameter request: What to fetch or delete, and the result wanted.
    /// - Returns: The transactions, changes, object IDs or count the request's
    ///   result type asks for.
    /// - Throws: ``CoreDataError`` with code ``CoreDataError/Code/coreData``
    ///   (134060) when the context has no coordinator; the errors of
    ///   ``PersistentStoreCoordinator/execute(_:)``.
    @discardableResult
    public func execute(_ request: PersistentHistoryChangeRequest) throws -> PersistentHistoryResult {
        assertOnQueue()
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError(.coreData, "The context has no persistent store coordinator")
        }
        return try coordinator.execute(request)
    }
}

extension PersistentHistoryChangeRequest.Boundary {
    /// The SQL condition on `ATRANSACTION t` selecting the transactions of store
    /// `storeIdentifier` after the boundary (a fetch) or before it (a delete: up to
    /// and including a token's transaction, strictly before a transaction), with
    /// its argument; written for SQLite and PostgreSQL alike.
    package func sqlCondition(storeIdentifier: String, deleting: Bool) -> (String, [DatabaseValue]) {
        switch self {
        case .token(let token):
            guard let token else { return deleting ? ("1 = 0", []) : ("1 = 1", []) }
            let number = token.transactionNumber(forStore: storeIdentifier) ?? 0
            return (deleting ? "t.Z_PK <= ?" : "t.Z_PK > ?", [number.databaseValue])
        case .transaction(let transaction):
            guard let transaction else { return deleting ? ("1 = 0", []) : ("1 = 1", []) }
            let number = transaction.storeID == storeIdentifier
                ? transaction.transactionNumber : (transaction.token.transactionNumber(forStore: storeIdentifier) ?? 0)
            return (deleting ? "t.Z_PK < ?" : "t.Z_PK > ?", [number.databaseValue])
        case .date(let date):
            return (deleting ? "t.ZTIMESTAMP < ?" : "t.ZTIMESTAMP > ?", [date.timeIntervalSinceReferenceDate.databaseValue])
        }
    }
}

extension PersistentStoreCoordinator {
    /// Executes a persistent history request on the coordinator's stores.
    ///
    /// - Parameter request: What to fetch or delete, and the result wanted.
    /// - Returns: The transactions, changes, object IDs or count the request's
    ///   result type asks for.
    /// - Throws: ``CoreDataError``:
    ///   ``CoreDataError/Code/persistentStoreUnsupportedRequestType`` (134091)
    ///   when a store does not track history;
    ///   ``CoreDataError/Code/persistentHistoryTokenExpired`` (134301) when a
    ///   fetch's token is older than the history kept;
    ///   ``CoreDataError/Code/persistentStoreOperation`` (134070) when the fetch
    ///   request's predicate cannot be evaluated;
    ///   ``CoreDataError/Code/persistentStoreSave`` (134030) for a delete in a
    ///   read-only store; any error the store reports.
    @discardableResult
    public func execute(_ request: PersistentHistoryChangeRequest) throws -> PersistentHistoryResult {
        let stores = try historyStores(request.affectedStores)
        switch request.operation {
        case .delete:
            var deleted = 0
            for store in stores { deleted += try store.deleteHistory(request.boundary) }
            return PersistentHistoryResult(resultType: request.resultType, transactions: nil, changes: nil, objectIDs: nil,
                                           count: request.resultType == .count ? deleted : nil, status: true)
        case .fetch:
            let withChanges = [.transactionsAndChanges, .changesOnly, .objectIDs].contains(request.resultType)
                || request.fetchRequest?.subject == .change
            var transactions: [PersistentHistoryTransaction] = []
            for store in stores { transactions += try store.fetchHistory(request.boundary, withChanges: withChanges) }
            if stores.count > 1 {
                transactions.sort { ($0.timestamp, $0.storeID, $0.transactionNumber) < ($1.timestamp, $1.storeID, $1.transactionNumber) }
            }
            if let fetchRequest = request.fetchRequest {
                do {
                    transactions = try fetchRequest.filter(transactions)
                } catch let error as CoreDataError {
                    throw error
                } catch {
                    throw CoreDataError(.persistentStoreOperation, "The history fetch request's predicate could not be evaluated: \(error)")
                }
                if !([.transactionsAndChanges, .changesOnly, .objectIDs].contains(request.resultType)) {
                    transactions = transactions.map { $0.with(changes: nil) }
                }
            }
            let changes = transactions.flatMap { $0.changes ?? [] }
            switch request.resultType {
            case .transactionsAndChanges, .transactionsOnly:
                return PersistentHistoryResult(resultType: request.resultType, transactions: transactions, changes: nil, objectIDs: nil, count: nil, status: true)
            case .changesOnly:
                return PersistentHistoryResult(resultType: request.resultType, transactions: nil, changes: changes, objectIDs: nil, count: nil, status: true)
            case .objectIDs:
                var seen = Set<ManagedObjectID>()
                let ids = changes.map(\.changedObjectID).filter { seen.insert($0).inserted }
                return PersistentHistoryResult(resultType: request.resultType, transactions: nil, changes: nil, objectIDs: ids, count: nil, status: true)
            case .count:
                return PersistentHistoryResult(resultType: request.resultType, transactions: nil, changes: nil, objectIDs: nil, count: transactions.count, status: true)
            case .statusOnly:
                return PersistentHistoryResult(resultType: request.resultType, transactions: nil, changes: nil, objectIDs: nil, count: nil, status: true)
            }
        }
    }

    /// The token of the newest transaction of `stores` (nil: every store), or nil
    /// when none of them tracks history (`currentPersistentHistoryToken(fromStores:)`).
    ///
    /// ```swift
    /// let token = coordinator.currentPersistentHistoryToken(fromStores: nil)
    /// ```
    ///
    /// - Parameter stores: The stores; nil for every store of the coordinator.
    /// - Returns: A token holding each history-tracking store's newest
    ///   transaction number, or nil.
    public func currentPersistentHistoryToken(fromStores stores: [any PersistentStore]?) -> PersistentHistoryToken? {
        var tokens: [String: Int64] = [:]
        for store in stores ?? persistentStores {
            guard let tracking = store as? any HistoryTrackingStore, tracking.isTrackingHistory,
                  let token = try? tracking.currentHistoryToken() else { continue }
            tokens.merge(token.storeTokens) { $1 }
        }
        return tokens.isEmpty ? nil : PersistentHistoryToken(storeTokens: tokens)
    }

    private func historyStores(_ requested: [any PersistentStore]?) throws -> [any HistoryTrackingStore] {
        try (requested ?? persistentStores).map { store in
            guard let tracking = store as? any HistoryTrackingStore, tracking.isTrackingHistory else {
                throw CoreDataError(.persistentStoreUnsupportedRequestType,
                                    "No history tracking option detected on store \(store.url?.path ?? store.identifier) (\(store.type.rawValue))",
                                    url: store.url)
            }
            return tracking
        }
    }
}
