import Foundation

/// The one error type of OpenCoreData, carrying Core Data's error codes.
///
/// Core Data reports problems as `NSError`s in the `NSCocoaErrorDomain` with codes
/// from `CoreDataErrors.h`: validation failures (1550-1690), merge conflicts
/// (133020), store and migration failures (134xxx). OpenCoreData throws the same
/// codes, so code that switches on them keeps working, and every error carries a
/// message naming what was wrong: the file, the entity or object, the property and
/// the value.
///
/// ```swift
/// do {
///     try context.save()
/// } catch let error as CoreDataError where error.code == .validationMultipleErrors {
///     for detail in error.underlyingErrors {
///         print(detail.code, detail.key ?? "", detail.message)
///     }
/// }
/// ```
public struct CoreDataError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// A Core Data error code (`NSValidationMissingMandatoryPropertyError` and friends).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public var description: String { "\(rawValue)" }
    }

    /// The error's code.
    public var code: Code
    /// A message for people, naming what was wrong.
    public var message: String
    /// The file involved, if any (a model file, a store).
    public var url: URL?
    /// The entity involved, if any.
    public var entityName: String?
    /// A description of the object involved, if any (its object ID URI, for
    /// managed objects).
    public var objectDescription: String?
    /// The property involved, if any (`NSValidationKeyErrorKey`).
    public var key: String?
    /// A description of the value involved, if any (`NSValidationValueErrorKey`).
    public var valueDescription: String?
    /// The errors this one gathers (`NSDetailedErrorsKey`), for
    /// ``Code/validationMultipleErrors`` and conflicts.
    public var underlyingErrors: [CoreDataError]

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The Core Data error code.
    ///   - message: A message for people, naming what was wrong.
    ///   - url: The file involved, if any.
    ///   - entityName: The entity involved, if any.
    ///   - objectDescription: A description of the object involved, if any.
    ///   - key: The property involved, if any.
    ///   - valueDescription: A description of the value involved, if any.
    ///   - underlyingErrors: The errors this one gathers.
    public init(
        _ code: Code,
        _ message: String,
        url: URL? = nil,
        entityName: String? = nil,
        objectDescription: String? = nil,
        key: String? = nil,
        valueDescription: String? = nil,
        underlyingErrors: [CoreDataError] = []
    ) {
        self.code = code
        self.message = message
        self.url = url
        self.entityName = entityName
        self.objectDescription = objectDescription
        self.key = key
        self.valueDescription = valueDescription
        self.underlyingErrors = underlyingErrors
    }

    /// `NSCocoaErrorDomain`, the domain of every Core Data error.
    public static let domain = "NSCocoaErrorDomain"

    public var description: String {
        var text = "CoreDataError \(code.rawValue): \(message)"
        for detail in underlyingErrors {
            text += "\n  - " + detail.description.replacingOccurrences(of: "\n", with: "\n    ")
        }
        return text
    }

    public var errorDescription: String? { description }
}

extension CoreDataError.Code {
    // MARK: Validation (CoreDataErrors.h)

    /// `NSManagedObjectValidationError`: generic validation error.
    public static let managedObjectValidation = Self(rawValue: 1550)
    /// `NSManagedObjectConstraintValidationError`: a uniqueness constraint is violated.
    public static let managedObjectConstraintValidation = Self(rawValue: 1551)
    /// `NSValidationMultipleErrorsError`: several validation errors, in ``CoreDataError/underlyingErrors``.
    public static let validationMultipleErrors = Self(rawValue: 1560)
    /// `NSValidationMissingMandatoryPropertyError`: a non-optional property has no value.
    public static let validationMissingMandatoryProperty = Self(rawValue: 1570)
    /// `NSValidationRelationshipLacksMinimumCountError`.
    public static let validationRelationshipLacksMinimumCount = Self(rawValue: 1580)
    /// `NSValidationRelationshipExceedsMaximumCountError`.
    public static let validationRelationshipExceedsMaximumCount = Self(rawValue: 1590)
    /// `NSValidationRelationshipDeniedDeleteError`: a deny delete rule refused a delete.
    public static let validationRelationshipDeniedDelete = Self(rawValue: 1600)
    /// `NSValidationNumberTooLargeError`.
    public static let validationNumberTooLarge = Self(rawValue: 1610)
    /// `NSValidationNumberTooSmallError`.
    public static let validationNumberTooSmall = Self(rawValue: 1620)
    /// `NSValidationDateTooLateError`.
    public static let validationDateTooLate = Self(rawValue: 1630)
    /// `NSValidationDateTooSoonError`.
    public static let validationDateTooSoon = Self(rawValue: 1640)
    /// `NSValidationInvalidDateError`.
    public static let validationInvalidDate = Self(rawValue: 1650)
    /// `NSValidationStringTooLongError`.
    public static let validationStringTooLong = Self(rawValue: 1660)
    /// `NSValidationStringTooShortError`.
    public static let validationStringTooShort = Self(rawValue: 1670)
    /// `NSValidationStringPatternMatchingError`.
    public static let validationStringPatternMatching = Self(rawValue: 1680)
    /// `NSValidationInvalidURIError`.
    public static let validationInvalidURI = Self(rawValue: 1690)

    // MARK: Objects, contexts, merges

    /// `NSManagedObjectContextLockingError`.
    public static let managedObjectContextLocking = Self(rawValue: 132000)
    /// `NSPersistentStoreCoordinatorLockingError`.
    public static let persistentStoreCoordinatorLocking = Self(rawValue: 132010)
    /// `NSManagedObjectReferentialIntegrityError`: a fault's row no longer exists.
    public static let managedObjectReferentialIntegrity = Self(rawValue: 133000)
    /// `NSManagedObjectExternalRelationshipError`: a relationship crosses stores.
    public static let managedObjectExternalRelationship = Self(rawValue: 133010)
    /// `NSManagedObjectMergeError`: optimistic locking failed.
    public static let managedObjectMerge = Self(rawValue: 133020)
    /// `NSManagedObjectConstraintMergeError`: uniqueness constraints conflict.
    public static let managedObjectConstraintMerge = Self(rawValue: 133021)

    // MARK: Stores

    /// `NSPersistentStoreInvalidTypeError`.
    public static let persistentStoreInvalidType = Self(rawValue: 134000)
    /// `NSPersistentStoreTypeMismatchError`.
    public static let persistentStoreTypeMismatch = Self(rawValue: 134010)
    /// `NSPersistentStoreIncompatibleSchemaError`.
    public static let persistentStoreIncompatibleSchema = Self(rawValue: 134020)
    /// `NSPersistentStoreSaveError`.
    public static let persistentStoreSave = Self(rawValue: 134030)
    /// `NSPersistentStoreIncompleteSaveError`.
    public static let persistentStoreIncompleteSave = Self(rawValue: 134040)
    /// `NSPersistentStoreSaveConflictsError`.
    public static let persistentStoreSaveConflicts = Self(rawValue: 134050)
    /// `NSCoreDataError`: a general Core Data error.
    public static let coreData = Self(rawValue: 134060)
    /// `NSPersistentStoreOperationError`.
    public static let persistentStoreOperation = Self(rawValue: 134070)
    /// `NSPersistentStoreOpenError`.
    public static let persistentStoreOpen = Self(rawValue: 134080)
    /// `NSPersistentStoreTimeoutError`.
    public static let persistentStoreTimeout = Self(rawValue: 134090)
    /// `NSPersistentStoreUnsupportedRequestTypeError`.
    public static let persistentStoreUnsupportedRequestType = Self(rawValue: 134091)
    /// `NSPersistentStoreIncompatibleVersionHashError`: the model does not match the store.
    public static let persistentStoreIncompatibleVersionHash = Self(rawValue: 134100)

    // MARK: Migration

    /// `NSMigrationError`.
    public static let migration = Self(rawValue: 134110)
    /// `NSMigrationConstraintViolationError`.
    public static let migrationConstraintViolation = Self(rawValue: 134111)
    /// `NSMigrationCancelledError`.
    public static let migrationCancelled = Self(rawValue: 134120)
    /// `NSMigrationMissingSourceModelError`.
    public static let migrationMissingSourceModel = Self(rawValue: 134130)
    /// `NSMigrationMissingMappingModelError`.
    public static let migrationMissingMappingModel = Self(rawValue: 134140)
    /// `NSMigrationManagerSourceStoreError`.
    public static let migrationManagerSourceStore = Self(rawValue: 134150)
    /// `NSMigrationManagerDestinationStoreError`.
    public static let migrationManagerDestinationStore = Self(rawValue: 134160)
    /// `NSEntityMigrationPolicyError`.
    public static let entityMigrationPolicy = Self(rawValue: 134170)
    /// `NSSQLiteError`: SQLite reported an error.
    public static let sqlite = Self(rawValue: 134180)
    /// `NSInferredMappingModelError`.
    public static let inferredMappingModel = Self(rawValue: 134190)
    /// `NSManagedObjectModelReferenceNotFoundError`: a staged migration's model
    /// reference cannot be resolved.
    public static let managedObjectModelReferenceNotFound = Self(rawValue: 134504)
    /// `NSStagedMigrationFrameworkVersionMismatchError`.
    public static let stagedMigrationFrameworkVersionMismatch = Self(rawValue: 134505)
    /// `NSStagedMigrationBackwardMigrationError`: a stage would migrate a store backwards.
    public static let stagedMigrationBackwardMigration = Self(rawValue: 134506)
    /// `NSExternalRecordImportError`.
    public static let externalRecordImport = Self(rawValue: 134200)
    /// `NSPersistentHistoryTokenExpiredError`.
    public static let persistentHistoryTokenExpired = Self(rawValue: 134301)

    // MARK: Files (Foundation's Cocoa codes, used for model and store files)

    /// `NSFileReadUnknownError`.
    public static let fileReadUnknown = Self(rawValue: 256)
    /// `NSFileReadNoPermissionError`.
    public static let fileReadNoPermission = Self(rawValue: 257)
    /// `NSFileReadNoSuchFileError`: a model or store file does not exist.
    public static let fileReadNoSuchFile = Self(rawValue: 260)
    /// `NSFileReadCorruptFileError`: a model or store file is malformed.
    public static let fileReadCorruptFile = Self(rawValue: 259)
    /// `NSFileWriteUnknownError`.
    public static let fileWriteUnknown = Self(rawValue: 512)
}
