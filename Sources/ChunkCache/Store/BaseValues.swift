/// Where a delta's bases are read from while it is decoded: the stored values of plain chunks, and room to
/// decode two of them side by side (the frame's prefix).
package protocol BaseValues {
    /// At least two chunks of scratch space.
    var scratch: UnsafeMutableRawBufferPointer { get }
    /// Bases decoded by earlier reads, kept by digest; nil where none are kept.
    var decoded: DecodedBases? { get }
    /// Calls `body` with the stored value of chunk `digest`; nil when the store does not hold it.
    func withStoredChunk<R>(_ digest: ChunkDigest, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R?
}
