import CZstd

/// An error code returned by a zstd function (`ZSTD_isError`), with zstd's own name for it.
public struct ZstdError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The raw `size_t` code as returned.
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The frame's content checksum does not match (`ZSTD_error_checksum_wrong`).
    public static let checksumWrong = ZstdError(rawValue: -Int(ZSTD_error_checksum_wrong.rawValue))
    /// The destination buffer is too small (`ZSTD_error_dstSize_tooSmall`).
    public static let destinationTooSmall = ZstdError(rawValue: -Int(ZSTD_error_dstSize_tooSmall.rawValue))
    /// The frame is damaged (`ZSTD_error_corruption_detected`).
    public static let corruptionDetected = ZstdError(rawValue: -Int(ZSTD_error_corruption_detected.rawValue))
    /// The frame's declared size does not match what was expected.
    public static let sizeMismatch = ZstdError(rawValue: -Int(ZSTD_error_srcSize_wrong.rawValue))
    /// The frame lacks a parameter its reader requires (`ZSTD_error_frameParameter_unsupported`): a delta frame
    /// without its content checksum.
    public static let frameParameterUnsupported = ZstdError(
        rawValue: -Int(ZSTD_error_frameParameter_unsupported.rawValue))

    /// The text of `ZSTD_getErrorName`.
    public var description: String { String(cString: ZSTD_getErrorName(rawValue)) }

    public static func ~= (pattern: ZstdError, value: any Error) -> Bool { (value as? ZstdError) == pattern }

    static func check(_ code: Int) throws(ZstdError) -> Int {
        if ZSTD_isError(code) != 0 { throw ZstdError(rawValue: code) }
        return code
    }
}

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

/// A reusable decompression context (`ZSTD_DCtx`). Not `Sendable`: each worker owns one.
public final class Decompressor {
    private let context: OpaquePointer

    public init() {
        // A nil context means malloc failed: nothing sensible can continue.
        guard let ctx = ZSTD_createDCtx() else { fatalError("ZSTD_createDCtx: out of memory") }
        context = ctx
        // zstd's default, said here because delta frames rely on it: every window a Compressor writes is accepted.
        ZSTD_DCtx_setParameter(ctx, ZSTD_d_windowLogMax, Compressor.maxDeltaWindowLog)
    }

    deinit { ZSTD_freeDCtx(context) }

    /// The content size a frame declares, or `nil` when unknown, not a frame, or too large for an `Int`.
    /// The C function is `ZSTD_getFrameContentSize`.
    public static func contentSize(of frame: UnsafeRawBufferPointer) -> Int? {
        let n = ZSTD_getFrameContentSize(frame.baseAddress, frame.count)
        if n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN { return nil }
        // A damaged header can declare up to 2^64 - 3 bytes: no buffer has that size, and `Int(n)` would trap.
        return Int(exactly: n)
    }

    /// Decompresses one frame into `destination`, which must be exactly the frame's content size: a frame
    /// that declares another size, fails its checksum or is damaged throws. Returns the bytes written.
    /// The corresponding C function is `ZSTD_decompressDCtx`.
    public func decompress(_ frame: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer)
        throws(ZstdError) -> Int
    {
        guard let declared = Self.contentSize(of: frame), declared == destination.count else {
            throw ZstdError.sizeMismatch
        }
        let n = try ZstdError.check(
            ZSTD_decompressDCtx(context, destination.baseAddress, destination.count, frame.baseAddress, frame.count))
        guard n == declared else { throw ZstdError.sizeMismatch }
        return n
    }

    /// Decompresses one delta frame, made by `Compressor.compress(_:against:into:)`, against the same `prefix`,
    /// into `destination`, which must be exactly the frame's content size. Returns the bytes written.
    ///
    /// A delta is only as sound as its base: the frame must carry its content checksum (a frame without one
    /// throws ``ZstdError/frameParameterUnsupported``), so a prefix other than the one it was made against (an
    /// evicted and refetched base that changed, a damaged one) fails the checksum or the decode, never yields
    /// other bytes. The prefix applies to this frame only and is read during the call only.
    ///
    /// - Throws: ``ZstdError/sizeMismatch`` when the frame declares another size; ``ZstdError/checksumWrong`` or
    ///   ``ZstdError/corruptionDetected`` when the frame or the prefix is not the one it was made with.
    ///
    /// The corresponding C functions are `ZSTD_DCtx_refPrefix` and `ZSTD_decompressDCtx`.
    public func decompress(
        _ frame: UnsafeRawBufferPointer, against prefix: UnsafeRawBufferPointer,
        into destination: UnsafeMutableRawBufferPointer
    ) throws(ZstdError) -> Int {
        guard Self.hasContentChecksum(frame) else { throw ZstdError.frameParameterUnsupported }
        _ = try ZstdError.check(ZSTD_DCtx_refPrefix(context, prefix.baseAddress, prefix.count))
        // zstd drops the prefix once a frame starts; a frame refused before that must not leave it for the next.
        defer { ZSTD_DCtx_refPrefix(context, nil, 0) }
        return try decompress(frame, into: destination)
    }

    /// Whether `frame` starts with a zstd frame header whose content-checksum flag is set (bit 2 of the frame
    /// header descriptor, after the 4-byte magic number; RFC 8878, section 3.1.1.1.1).
    public static func hasContentChecksum(_ frame: UnsafeRawBufferPointer) -> Bool {
        guard frame.count > 4 else { return false }
        let magic = UInt32(frame[0]) | UInt32(frame[1]) << 8 | UInt32(frame[2]) << 16 | UInt32(frame[3]) << 24
        return magic == UInt32(ZSTD_MAGICNUMBER) && frame[4] & 0x04 != 0
    }
}
