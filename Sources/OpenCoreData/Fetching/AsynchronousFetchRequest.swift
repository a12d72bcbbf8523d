import Foundation
import OpenCoreDataPredicates

/// A fetch that reports progress and can be cancelled while it loads its objects
/// (`NSAsynchronousFetchRequest`).
///
/// ```swift
/// let request = FetchRequest<Mood>(entityName: "Mood")
/// request.fetchBatchSize = 100
/// let asynchronous = AsynchronousFetchRequest(fetchRequest: request) { result in
///     if let moods = result.finalResult { show(moods) }
/// }
/// asynchronous.progressHandler = { progress in
///     if userTappedCancel { progress.cancel() }
/// }
/// let result = try context.execute(asynchronous)
/// result.progress.fractionCompleted   // 1.0 when it finished
/// ```
///
/// The matching IDs are fetched first (they set `progress.totalUnitCount`), then
/// the objects are loaded a batch of `fetchBatchSize` at a time (100 when it is
/// 0), `progress.completedUnitCount` advancing after each batch. Cancelling the
/// progress (from the handler, or from another thread) stops before the next
/// batch: the result has no `finalResult` and an `operationError` with code 3072
/// (`NSUserCancelledError`). The completion runs on the context's queue when the
/// fetch ends; run the request inside the context's `perform` to keep the
/// caller's queue free.
public final class AsynchronousFetchRequest<Result> {
    /// The fetch to run.
    public let fetchRequest: FetchRequest<Result>
    /// Called once with the result, finished or cancelled.
    public let completionBlock: ((AsynchronousFetchResult<Result>) -> Void)?
    /// Called after each batch with the progress (which it may cancel).
    public var progressHandler: ((Progress) -> Void)?
    /// An estimate of the number of results, used as the total until the IDs are
    /// known (`estimatedResultCount`).
    public var estimatedResultCount: Int = 0

    /// A request running `fetchRequest` and calling `completionBlock` with the result.
    ///
    /// - Parameters:
    ///   - fetchRequest: The fetch to run.
    ///   - completionBlock: Called once with the result, on the context's queue.
    public init(fetchRequest: FetchRequest<Result>, completionBlock: ((AsynchronousFetchResult<Result>) -> Void)? = nil) {
        self.fetchRequest = fetchRequest
        self.completionBlock = completionBlock
    }
}

/// The result of an ``AsynchronousFetchRequest`` (`NSAsynchronousFetchResult`).
public final class AsynchronousFetchResult<Result> {
    /// The request.
    public let fetchRequest: AsynchronousFetchRequest<Result>
    /// The fetched objects, or nil when the fetch was cancelled or failed.
    public internal(set) var finalResult: [Result]?
    /// Why there is no final result.
    public internal(set) var operationError: CoreDataError?
    /// The fetch's progress: a unit per result.
    public let progress: Progress

    init(fetchRequest: AsynchronousFetchRequest<Result>, progress: Progress) {
        self.fetchRequest = fetchRequest
        self.progress = progress
    }

    /// Cancels the fetch (`cancel()`): it stops before its next batch.
    public func cancel() { progress.cancel() }
}

extension CoreDataError.Code {
    /// The user cancelled the operation (`NSUserCancelledError`).
    public static let userCancelled = Self(rawValue: 3072)
}

extension ManagedObjectContext {
    /// Runs an asynchronous fetch request (`execute(_:)`): IDs first, then objects
    /// a batch at a time, with progress and cancellation; calls the request's
    /// completion and returns the result.
    ///
    /// - Parameter request: The request: a fetch request and the blocks to call.
    /// - Returns: The result: its ``AsynchronousFetchResult/finalResult``, or, when
    ///   the fetch was cancelled, an ``AsynchronousFetchResult/operationError``
    ///   with code ``CoreDataError/Code/userCancelled`` (3072).
    /// - Throws: The errors of ``fetch(_:)`` and ``fetchInBatches(_:)``.
    @discardableResult
    public func execute<Result>(_ request: AsynchronousFetchRequest<Result>) throws -> AsynchronousFetchResult<Result> {
        assertOnQueue()
        let progress = Progress(totalUnitCount: Int64(max(request.estimatedResultCount, 0)))
        let result = AsynchronousFetchResult(fetchRequest: request, progress: progress)
        defer { request.completionBlock?(result) }
        let fetchRequest = request.fetchRequest
        if fetchRequest.resultType != .managedObject {
            let values = try fetch(fetchRequest)
            progress.totalUnitCount = Int64(values.count)
            progress.completedUnitCount = Int64(values.count)
            result.finalResult = values
            return result
        }
        let batchSize = fetchRequest.fetchBatchSize > 0 ? fetchRequest.fetchBatchSize : 100
        let lazy = try fetchInBatches(fetchRequest)
        let entity = lazy.storage.entity
        progress.totalUnitCount = Int64(lazy.count)
        var values: [Result] = []
        values.reserveCapacity(lazy.count)
        var index = 0
        while index < lazy.count {
            if progress.isCancelled {
                result.operationError = CoreDataError(.userCancelled, "The asynchronous fetch of \(fetchRequest.entityName ?? "?") was cancelled after \(index) of \(lazy.count) objects",
                                                      entityName: fetchRequest.entityName)
                return result
            }
            let end = min(index + batchSize, lazy.count)
            let batch = loadBatch(Array(lazy.objectIDs[index..<end]), entity: entity)
            for object in batch {
                guard let typed = object as? Result else { continue }
                values.append(typed)
            }
            index = end
            progress.completedUnitCount = Int64(index)
            request.progressHandler?(progress)
        }
        result.finalResult = values
        return result
    }
}
