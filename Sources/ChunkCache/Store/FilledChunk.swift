import FileIO

/// A downloaded chunk on its way into the store as a fill (``FillFiles``): its bytes are written into the fill
/// file by the transaction that records it.
struct FilledChunk: Sendable {
    let index: Int64
    /// Where its bytes start in the item (and in the fill file).
    let offset: Int64
    /// The XXH3 of its bytes; ignored for a zero chunk.
    let checksum: UInt64
    let length: Int
    /// All zeros: recorded as a zero entry, nothing written.
    let isZero: Bool
    /// The bytes, which the transaction that records them writes into the fill file.
    let bytes: [UInt8]
}
