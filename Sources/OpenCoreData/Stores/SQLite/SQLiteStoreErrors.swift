import Foundation
import GRDB

/// Turning SQLite's errors into Core Data's, and reading values of unknown type
/// from a store without trapping on surprises.
enum SQLiteStoreErrors {
    /// The Core Data error for an error thrown while opening or reading the store at `url`.
    ///
    /// ```swift
    /// do { ... } catch { throw SQLiteStoreErrors.coreDataError(error, url: url, doing: "reading metadata") }
    /// ```
    static func coreDataError(_ error: any Error, url: URL?, doing action: String) -> CoreDataError {
        if let error = error as? CoreDataError { return error }
        let place = url.map { " of \($0.path)" } ?? ""
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_NOTADB, .SQLITE_CORRUPT:
                return CoreDataError(.fileReadCorruptFile,
                                     "Error \(action)\(place): the file is not a SQLite database (\(error.message ?? "\(error.resultCode)"))",
                                     url: url)
            case .SQLITE_CANTOPEN:
                return CoreDataError(.fileReadNoSuchFile, "Error \(action)\(place): the file can't be opened", url: url)
            case .SQLITE_PERM, .SQLITE_READONLY:
                return CoreDataError(.fileReadNoPermission, "Error \(action)\(place): \(error.message ?? "permission denied")", url: url)
            default:
                return CoreDataError(.sqlite, "SQLite error \(error.resultCode.rawValue) \(action)\(place): \(error.message ?? "")", url: url)
            }
        }
        return CoreDataError(.sqlite, "Error \(action)\(place): \(error)", url: url)
    }

    static func int(_ value: DatabaseValue) -> Int? {
        switch value.storage {
        case .int64(let number): return Int(exactly: number)
        case .double(let number): return Int(exactly: number)
        case .string(let text): return Int(text)
        default: return nil
        }
    }

    static func string(_ value: DatabaseValue) -> String? {
        switch value.storage {
        case .string(let text): return text
        case .blob(let data): return String(data: data, encoding: .utf8)
        case .int64(let number): return String(number)
        default: return nil
        }
    }

    static func data(_ value: DatabaseValue) -> Data? {
        switch value.storage {
        case .blob(let data): return data
        case .string(let text): return Data(text.utf8)
        default: return nil
        }
    }
}
