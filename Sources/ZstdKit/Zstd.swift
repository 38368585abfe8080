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
}

/// A reusable decompression context (`ZSTD_DCtx`). Not `Sendable`: each worker owns one.
public final class Decompressor {
    private let context: OpaquePointer

    public init() {
        // A nil context means malloc failed: nothing sensible can continue.
        guard let ctx = ZSTD_createDCtx() else { fatalError("ZSTD_createDCtx: out of memory") }
        context = ctx
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
}
