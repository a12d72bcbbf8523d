/// Moves the contents of `array` out, leaving it empty: the caller gets the
/// array's reference to its buffer without a retain, and nothing is released when
/// `array` goes.
///
/// Rows hand their values to the objects made from them this way: right after a
/// large fetch the rows' buffers are out of the cache, and a retain would fetch
/// each buffer's header back just to count a second reference.
///
/// ```swift
/// var row = rows[0]
/// let values = takeArray(&row.values)   // row.values is now []
/// ```
@inline(__always)
func takeArray<Element>(_ array: inout [Element]) -> [Element] {
    var taken: [Element] = []
    swap(&taken, &array)
    return taken
}
