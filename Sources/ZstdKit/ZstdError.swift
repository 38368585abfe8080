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
