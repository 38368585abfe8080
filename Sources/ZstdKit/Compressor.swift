import CZstd

/// A reusable compression context (`ZSTD_CCtx`) with the frame checksum on.
///
/// Not `Sendable`: each worker owns one. The context is freed in `deinit`.
public final class Compressor {
    private let context: OpaquePointer

    /// Creates a context at `level` (1…19; 3 is zstd's default) writing a content checksum in every frame.
    public init(level: Int32 = 3) {
        // A nil context means malloc failed: nothing sensible can continue.
        guard let ctx = ZSTD_createCCtx() else { fatalError("ZSTD_createCCtx: out of memory") }
        context = ctx
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level)
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1)
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, 1)
    }

    deinit { ZSTD_freeCCtx(context) }

    /// The largest frame `compress` can write for `count` input bytes. The C function is `ZSTD_compressBound`.
    public static func bound(for count: Int) -> Int { ZSTD_compressBound(count) }

    /// Compresses `source` into one frame in `destination`, returning the frame's length, or `nil` when the
    /// frame would not fit (the caller then stores the bytes raw).
    /// The corresponding C function is `ZSTD_compress2`.
    public func compress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer)
        throws(ZstdError) -> Int?
    {
        let n = ZSTD_compress2(context, destination.baseAddress, destination.count, source.baseAddress, source.count)
        if ZSTD_isError(n) != 0 {
            if ZstdError(rawValue: n) == .destinationTooSmall { return nil }
            throw ZstdError(rawValue: n)
        }
        return n
    }

    /// Compresses `source` into one frame in `destination` against `prefix`, raw bytes the decoder must be given
    /// again, returning the frame's length, or `nil` when the frame would not fit.
    ///
    /// This is how a delta is made: bytes of `source` that also occur in `prefix` (an earlier version's bytes
    /// around the same content) are written as references to them, so a chunk that differs from its base by a few
    /// edits takes a few hundred bytes. The prefix applies to this frame only and is read during the call only.
    /// The window is made large enough to reach the prefix's first byte from the source's last
    /// (``deltaWindowLog(prefixCount:sourceCount:)``), and the frame carries its content checksum, so decoding it
    /// against other bytes than `prefix` fails rather than yields other bytes.
    ///
    /// - Parameters:
    ///   - source: The bytes to compress.
    ///   - prefix: The base: raw bytes, possibly empty (then the frame is a plain one).
    ///   - destination: Where the frame is written.
    /// - Returns: The frame's length, or `nil` when it does not fit in `destination`.
    /// - Throws: A `ZstdError` other than a full destination.
    ///
    /// The corresponding C functions are `ZSTD_CCtx_refPrefix` and `ZSTD_compress2`.
    public func compress(
        _ source: UnsafeRawBufferPointer, against prefix: UnsafeRawBufferPointer,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ZstdError) -> Int? {
        let windowLog = Self.deltaWindowLog(prefixCount: prefix.count, sourceCount: source.count)
        // A failed call can leave the context mid-frame, where parameters cannot be set: start from a clean
        // session, and leave one behind with no prefix and the level's own window, for the next plain frame.
        ZSTD_CCtx_reset(context, ZSTD_reset_session_only)
        defer {
            ZSTD_CCtx_reset(context, ZSTD_reset_session_only)
            ZSTD_CCtx_refPrefix(context, nil, 0)
            ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, 0)
        }
        _ = try ZstdError.check(ZSTD_CCtx_setParameter(context, ZSTD_c_windowLog, windowLog))
        _ = try ZstdError.check(ZSTD_CCtx_refPrefix(context, prefix.baseAddress, prefix.count))
        return try compress(source, into: destination)
    }

    /// The largest window a delta frame asks for: zstd's default limit for decoders (`ZSTD_WINDOWLOG_LIMIT_DEFAULT`,
    /// 128 MiB), which every ``Decompressor`` accepts. Larger than any prefix plus chunk the engine makes (two
    /// chunks of at most 4 MiB, and one); a longer prefix still round-trips, only its start is out of reach.
    public static let maxDeltaWindowLog: Int32 = 27

    /// The window a delta frame of `sourceCount` bytes against `prefixCount` bytes of prefix uses: the smallest
    /// power of two that holds both, from zstd's minimum (1 KiB) up to ``maxDeltaWindowLog``.
    ///
    /// A level's own window stops at its parameter table's (level 3's at 2 MiB once source and prefix pass
    /// 256 KiB), so without this the start of the prefix of a large chunk would be out of reach.
    public static func deltaWindowLog(prefixCount: Int, sourceCount: Int) -> Int32 {
        let (total, overflow) = prefixCount.addingReportingOverflow(sourceCount)
        guard !overflow, total > 1 << 10 else { return overflow ? maxDeltaWindowLog : 10 }
        let log = Int32(Int.bitWidth - (total - 1).leadingZeroBitCount)
        return min(log, maxDeltaWindowLog)
    }
}
