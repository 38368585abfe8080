/// A read's result and where it started, for read-ahead.
struct ServedRead: ServedBytes, Sendable {
    let offset: Int64
    let fromOriginDomain: Bool
    let result: ReadResult
    var servedItem: Item { result.item }
    var servedRange: Range<Int64> { offset..<(offset + Int64(result.bytesRead)) }
}
