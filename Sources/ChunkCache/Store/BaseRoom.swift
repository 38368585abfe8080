/// Room to decode a delta's bases in, and the bases decoded before: made with its owner (a decode context),
/// its buffers only at the first delta read, so reads of plain chunks never pay for them (nor allocate per
/// read). Used by one thread at a time.
final class BaseRoom {
    let chunkSize: Int
    private let keepsDecoded: Bool
    private var buffer: UnsafeMutableRawBufferPointer?
    private var kept: DecodedBases?

    /// - Parameters:
    ///   - chunkSize: The largest base: two of them fit side by side.
    ///   - keepsDecoded: Whether bases are kept between reads (``DecodedBases``).
    init(chunkSize: Int, keepsDecoded: Bool = true) {
        self.chunkSize = chunkSize
        self.keepsDecoded = keepsDecoded
    }

    deinit { buffer?.deallocate() }

    var scratch: UnsafeMutableRawBufferPointer {
        if let buffer { return buffer }
        let made = UnsafeMutableRawBufferPointer.allocate(byteCount: DeltaLayout.maxBases * chunkSize, alignment: 4096)
        buffer = made
        return made
    }

    var decoded: DecodedBases? {
        guard keepsDecoded else { return nil }
        if let kept { return kept }
        let made = DecodedBases(chunkSize: chunkSize)
        kept = made
        return made
    }
}
