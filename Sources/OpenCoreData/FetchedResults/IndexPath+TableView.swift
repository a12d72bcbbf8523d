import Foundation

#if !canImport(UIKit) && !canImport(AppKit)
/// The table and collection view accessors UIKit adds to `IndexPath`, for the
/// platforms without UIKit (Linux): a fetched results controller's index paths
/// are `[section, row]`.
///
/// ```swift
/// let indexPath = IndexPath(row: 2, section: 0)
/// let mood = try controller.object(at: indexPath)
/// controller.indexPath(forObject: mood)?.row   // 2
/// ```
extension IndexPath {
    /// The index path of `row` in `section`.
    public init(row: Int, section: Int) {
        self.init(indexes: [section, row])
    }

    /// The index path of `item` in `section` (a collection view's name for a row).
    public init(item: Int, section: Int) {
        self.init(indexes: [section, item])
    }

    /// The section: the first index.
    public var section: Int {
        get { self[0] }
        set { self[0] = newValue }
    }

    /// The row in the section: the second index.
    public var row: Int {
        get { self[1] }
        set { self[1] = newValue }
    }

    /// The item in the section: the second index.
    public var item: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
}
#endif
