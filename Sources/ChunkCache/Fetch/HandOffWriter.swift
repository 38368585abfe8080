import FileIO

/// The one writer of a fetch's bytes into its file (a hand-off, a clone's staging file, `fetch --out`): bytes
/// go at their own offsets in a file of the item's size, by the rule of <doc:Contract#3-Partial-fetch>. When the range
/// written is the whole file a zero chunk stays a hole (the result says `knownSparseRanges`); inside any other range
/// every byte is written, zeros too, since a hole there would read as "not materialized" (<doc:FileProviderRules#A7>).
///
/// Every path that fills such a file writes through it: the store's chunks, in runs (``RunWriter``, for
/// ``RangeAssembler``), a cold fetch's downloaded range (``ChunkCache/handOffDownloaded(_:_:)``), and the
/// chunks a download writes as they arrive (``DirectBytes``, file mode).
struct HandOffWriter: Sendable {
    let file: FileDescriptor
    /// Zero chunks stay holes: the range written is the whole file.
    let holesForZeros: Bool

    /// Writes consecutive buffers with one `pwritev` from `offset`.
    func write(vectors: UnsafeMutableBufferPointer<IOVector>, at offset: Int64) throws(Errno) {
        try file.writeAll(toAbsoluteOffset: offset, vectors: vectors)
    }

    /// Writes one chunk at `offset`, or leaves a zero chunk a hole.
    /// - Returns: Whether the chunk was left a hole.
    @discardableResult
    func write(chunk: UnsafeRawBufferPointer, at offset: Int64, isZero: Bool) throws(Errno) -> Bool {
        if isZero && holesForZeros { return true }
        try file.writeAll(toAbsoluteOffset: offset, chunk)
        return false
    }

    /// Writes the bytes of consecutive chunks of `chunkSize` from `offset` (a chunk boundary), telling zero
    /// chunks by their bytes.
    /// - Returns: Whether a zero chunk was left a hole.
    func write(chunks bytes: UnsafeRawBufferPointer, at offset: Int64, chunkSize: Int) throws(Errno) -> Bool {
        guard holesForZeros else {
            try file.writeAll(toAbsoluteOffset: offset, bytes)
            return false
        }
        var leftHoles = false
        for start in stride(from: 0, to: bytes.count, by: chunkSize) {
            let chunk = UnsafeRawBufferPointer(rebasing: bytes[start..<min(start + chunkSize, bytes.count)])
            if try write(chunk: chunk, at: offset + Int64(start), isZero: isAllZero(chunk)) { leftHoles = true }
        }
        return leftHoles
    }
}
