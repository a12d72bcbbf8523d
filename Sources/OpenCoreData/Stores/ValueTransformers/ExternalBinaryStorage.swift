import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The column format of Binary and Transformable attributes that allow external
/// storage (`allowsExternalBinaryDataStorage`), and the files beside the store
/// that hold their large values.
///
/// Core Data stores such a value in its column with a one-byte tag:
///
/// * `0x01` followed by the bytes themselves, for small values;
/// * `0x02` followed by an ASCII UUID (`"1B4E28BA-2FA1-11D2-883F-0016D3CCA427"`),
///   for values larger than ``threshold``; the bytes are in the file
///   `<store folder>/.<store name without extension>_SUPPORT/_EXTERNAL_DATA/<UUID>`.
///
/// Attributes without the option keep their raw bytes in the column, with no tag:
/// ``encode(_:for:)`` and ``decode(_:for:)`` pass them through.
///
/// Files are written atomically (a temporary file in the same folder, then a
/// rename), one new file per stored value; files of values that were changed or
/// deleted stay until ``removeUnreferencedFiles(keeping:)`` is called with the
/// UUIDs the store still references (``externalReference(in:)`` reads one from a
/// column).
///
/// ```swift
/// let storage = ExternalBinaryStorage(storeURL: URL(fileURLWithPath: "/data/Photos.sqlite"))
/// let column = try storage.encode(photoBytes)      // 0x02 + UUID when over 100 KB
/// let bytes = try storage.decode(column)           // photoBytes
/// // later, after a save:
/// try storage.removeUnreferencedFiles(keeping: referencedUUIDs)
/// ```
public struct ExternalBinaryStorage: Sendable {
    /// Core Data's approximate threshold: values larger than 100 KB go to a file.
    public static let defaultThreshold = 100 * 1024

    /// The tag of a column holding its bytes inline.
    public static let inlineTag: UInt8 = 0x01
    /// The tag of a column naming an external file.
    public static let externalTag: UInt8 = 0x02

    /// The store file the external data belongs to.
    public let storeURL: URL
    /// Values with more bytes than this are written to files.
    public let threshold: Int
    /// `<store folder>/.<store name>_SUPPORT/_EXTERNAL_DATA`.
    public let directoryURL: URL

    /// The external storage of the store at `storeURL`.
    public init(storeURL: URL, threshold: Int = ExternalBinaryStorage.defaultThreshold) {
        self.storeURL = storeURL
        self.threshold = threshold
        let name = storeURL.deletingPathExtension().lastPathComponent
        directoryURL = storeURL.deletingLastPathComponent()
            .appendingPathComponent(".\(name)_SUPPORT", isDirectory: true)
            .appendingPathComponent("_EXTERNAL_DATA", isDirectory: true)
    }

    /// The file holding the external value named `uuid`.
    public func fileURL(for uuid: UUID) -> URL {
        directoryURL.appendingPathComponent(uuid.uuidString, isDirectory: false)
    }

    // MARK: Columns

    /// The column value for `data`: `0x01` + `data` when it has at most
    /// ``threshold`` bytes, otherwise `0x02` + a new UUID, `data` being written to
    /// that UUID's file.
    public func encode(_ data: Data) throws -> Data {
        guard data.count > threshold else {
            var column = Data([Self.inlineTag])
            column.append(data)
            return column
        }
        let uuid = UUID()
        try write(data, to: fileURL(for: uuid))
        var column = Data([Self.externalTag])
        column.append(contentsOf: uuid.uuidString.utf8)
        return column
    }

    /// The bytes a column value stands for: the inline bytes, or the contents of
    /// the external file it names.
    ///
    /// Throws ``CoreDataError/Code/fileReadCorruptFile`` for a column with another
    /// tag or an invalid UUID, ``CoreDataError/Code/fileReadNoSuchFile`` (naming
    /// the file) when the external file is missing.
    public func decode(_ column: Data) throws -> Data {
        guard let tag = column.first else {
            throw CoreDataError(.fileReadCorruptFile, "an external-storage column of \(storeURL.lastPathComponent) is empty (expected a 0x01 or 0x02 tag)", url: storeURL)
        }
        switch tag {
        case Self.inlineTag:
            return Data(column.dropFirst())
        case Self.externalTag:
            guard let uuid = Self.externalReference(in: column) else {
                let text = String(decoding: column.dropFirst().prefix(64), as: UTF8.self)
                throw CoreDataError(.fileReadCorruptFile, "an external-storage column of \(storeURL.lastPathComponent) names '\(text)', which is not a UUID", url: storeURL)
            }
            let file = directoryURL.appendingPathComponent(Self.fileName(in: column) ?? uuid.uuidString, isDirectory: false)
            guard FileManager.default.fileExists(atPath: file.path) else {
                throw CoreDataError(.fileReadNoSuchFile, "the external data file \(file.path) is missing", url: file)
            }
            do {
                return try Data(contentsOf: file)
            } catch {
                throw CoreDataError(.fileReadUnknown, "cannot read the external data file \(file.path): \(error.localizedDescription)", url: file)
            }
        default:
            throw CoreDataError(.fileReadCorruptFile, "an external-storage column of \(storeURL.lastPathComponent) starts with 0x\(String(tag, radix: 16)), not 0x01 (inline) or 0x02 (external file)", url: storeURL)
        }
    }

    /// The column value of a Binary or Transformable attribute's bytes:
    /// ``encode(_:)`` when the attribute allows external storage, `data` itself otherwise.
    public func encode(_ data: Data, for attribute: AttributeDescription) throws -> Data {
        attribute.allowsExternalBinaryDataStorage ? try encode(data) : data
    }

    /// The bytes of a Binary or Transformable attribute's column value:
    /// ``decode(_:)`` when the attribute allows external storage, `column` itself otherwise.
    public func decode(_ column: Data, for attribute: AttributeDescription) throws -> Data {
        attribute.allowsExternalBinaryDataStorage ? try decode(column) : column
    }

    /// The UUID of the external file a column value names, nil for inline values
    /// (and anything else).
    public static func externalReference(in column: Data) -> UUID? {
        fileName(in: column).flatMap(UUID.init(uuidString:))
    }

    /// The file name after an `0x02` tag (a trailing NUL, if any, is not part of it).
    private static func fileName(in column: Data) -> String? {
        guard column.first == externalTag else { return nil }
        var bytes = column.dropFirst()
        if bytes.last == 0 { bytes = bytes.dropLast() }
        guard bytes.count == 36, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Files

    /// Deletes every external file whose UUID is not in `referenced`; returns the
    /// UUIDs deleted. Files whose names are not UUIDs are left alone.
    @discardableResult
    public func removeUnreferencedFiles(keeping referenced: Set<UUID>) throws -> [UUID] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directoryURL.path)
        } catch {
            if !FileManager.default.fileExists(atPath: directoryURL.path) { return [] }
            throw CoreDataError(.fileReadUnknown, "cannot list \(directoryURL.path): \(error.localizedDescription)", url: directoryURL)
        }
        var removed: [UUID] = []
        for name in names.sorted() {
            guard let uuid = UUID(uuidString: name), !referenced.contains(uuid) else { continue }
            let file = directoryURL.appendingPathComponent(name, isDirectory: false)
            do {
                try FileManager.default.removeItem(at: file)
                removed.append(uuid)
            } catch {
                if FileManager.default.fileExists(atPath: file.path) {
                    throw CoreDataError(.fileWriteUnknown, "cannot delete the external data file \(file.path): \(error.localizedDescription)", url: file)
                }
            }
        }
        return removed
    }

    /// Writes `data` to a temporary file beside `file`, then renames it into place.
    private func write(_ data: Data, to file: URL) throws {
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: directoryURL, withIntermediateDirectories: true)
        } catch {
            throw CoreDataError(.fileWriteUnknown, "cannot create \(directoryURL.path): \(error.localizedDescription)", url: directoryURL)
        }
        let temporary = directoryURL.appendingPathComponent(".\(file.lastPathComponent).\(UUID().uuidString).tmp", isDirectory: false)
        do {
            try data.write(to: temporary, options: [.withoutOverwriting])
        } catch {
            try? manager.removeItem(at: temporary)
            throw CoreDataError(.fileWriteUnknown, "cannot write the external data file \(temporary.path): \(error.localizedDescription)", url: temporary)
        }
        guard rename(temporary.path, file.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? manager.removeItem(at: temporary)
            throw CoreDataError(.fileWriteUnknown, "cannot move the external data file into place at \(file.path): \(reason)", url: file)
        }
    }
}
