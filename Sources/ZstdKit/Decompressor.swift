import CZstd

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
