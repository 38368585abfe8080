/// No bases at all: where a chunk is checked on its own (the fuzz target), a delta cannot be read.
package struct NoBases: BaseValues {
    package let scratch = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    package init() {}
    package var decoded: DecodedBases? { nil }
    package func withStoredChunk<R>(_: ChunkDigest, _: (UnsafeRawBufferPointer) throws -> R) throws -> R? { nil }
}
