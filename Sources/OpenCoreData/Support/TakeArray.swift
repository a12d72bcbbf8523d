/// Moves the contents of `array` out, leaving it empty: the caller gets the
/// array's reference to its buffer without a retain, and nothing is released when
/// `array` goes.
///
/// Groups of rows are handed on this way (rows hand their values to objects the
/// same way, with `RowSnapshot.takeValues()`): right after a large fetch the
/// buffers are out of the cache, and a retain would fetch each buffer's header
/// back just to count a second reference.
///
/// ```swift
/// let rows = takeArray(&grouped[position])   // grouped[position] is now []
/// ```
@inline(__always)
func takeArray<Element>(_ array: inout [Element]) -> [Element] {
    var taken: [Element] = []
    swap(&taken, &array)
    return taken
}
