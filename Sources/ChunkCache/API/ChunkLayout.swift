/// The store's chunk size, a power of two from 4 KiB to 4 MiB: `1 << shift` bytes.
public struct ChunkLayout: Hashable, Sendable, CustomStringConvertible {
    /// log2 of the chunk size.
    public let shift: Int

    /// The smallest and largest allowed shifts: 4 KiB and 4 MiB.
    public static let shifts = 12...22
    /// The default, 64 KiB.
    public static let standard = ChunkLayout(uncheckedShift: 16)

    init(uncheckedShift shift: Int) { self.shift = shift }

    /// A layout for `size` bytes per chunk.
    /// - Throws: `invalidArgument` when `size` is not a power of two from 4 KiB to 4 MiB.
    public init(chunkSize size: Int) throws(CacheError) {
        guard size > 0, size & (size - 1) == 0, Self.shifts.contains(size.trailingZeroBitCount) else {
            throw CacheError(
                .invalidArgument, "chunk size \(size) is not a power of two from 4 KiB to 4 MiB; pick e.g. 65536")
        }
        shift = size.trailingZeroBitCount
    }

    /// The chunk size in bytes.
    public var chunkSize: Int { 1 << shift }

    /// The largest item the engine stores: 1 PiB.
    ///
    /// <doc:Contract#2-Model> asks manifests to scale to 1 TiB files; a bound 1024 times that keeps every real file in,
    /// while any offset below it plus an alignment (≤ 2^30) or a chunk (≤ 2^22) stays far inside `Int64`, so
    /// no size arithmetic after the check can overflow, and chunk and manifest-page indices (LMDB keys hold
    /// them as 64-bit numbers) stay small.
    public static let maxItemLength: Int64 = 1 << 50

    /// Checks a size that came from outside (a file's length, a record read back) against ``maxItemLength``.
    /// - Parameters:
    ///   - length: The size in bytes.
    ///   - what: What has that size, for the message (a path, "a version record of ITEM").
    ///   - code: `invalidArgument` for input, `corruptData` for a record read back from the store.
    /// - Throws: `code`, naming `what`, its size and the limit.
    static func checkItemLength(_ length: Int64, of what: String, code: CacheError.Code = .invalidArgument)
        throws(CacheError)
    {
        guard length < 0 || length > maxItemLength else { return }
        let advice = code == .corruptData ? "run `chunkcache verify`" : "store a smaller file"
        throw CacheError(
            code,
            "\(what) is \(length) bytes, beyond the largest item the store takes (\(maxItemLength) bytes, \(formatSize(maxItemLength))); \(advice)"
        )
    }

    /// The number of chunks a file of `length` bytes has (0 for a negative length). Never traps.
    public func chunkCount(forLength length: Int64) -> Int64 {
        guard length > 0 else { return 0 }
        // Rounds up without `length + chunkSize - 1`, which overflows near Int64.max.
        return (length >> shift) + (length & Int64(chunkSize - 1) == 0 ? 0 : 1)
    }

    /// The byte range chunk `index` covers in a file of `length` bytes: empty at the file's end when
    /// `index` is not one of the file's chunks. Never traps.
    public func range(ofChunk index: Int64, length: Int64) -> ByteRange {
        guard index >= 0, index < chunkCount(forLength: length) else {
            return ByteRange(location: max(length, 0), length: 0)
        }
        // index < ceil(length / chunkSize), so the start lies inside the file and cannot overflow.
        let start = index << shift
        return ByteRange(location: start, length: min(Int64(chunkSize), length - start))
    }

    /// The range a fetch of `minimal` aligned to `alignment` retrieves from a file of `length` bytes
    /// (<doc:Contract#3-Partial-fetch>): both ends clamped to the file, the start rounded down and the end rounded up
    /// to `max(alignment, chunkSize)`, the end capped at `length`.
    public func retrievedRange(for minimal: ByteRange, aligningTo alignment: Int64, length: Int64) -> ByteRange {
        FetchPlanner.retrievedRange(for: minimal, alignment: alignment, chunkSize: Int64(chunkSize), size: length)
    }

    public var description: String { formatSize(Int64(chunkSize)) }
}
