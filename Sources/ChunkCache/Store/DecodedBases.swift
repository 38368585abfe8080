/// Bases decoded by earlier delta reads, kept by digest so that the next delta, which mostly shares one of
/// them (consecutive chunks of a version are placed on consecutive chunks of the previous one), decodes one
/// base rather than two. A digest names its bytes for good, so a kept base never goes stale; only bytes that
/// passed their check are kept. Used by one thread at a time, as its ``CodecPool/DecodeContext`` is.
package final class DecodedBases {
    private let chunkSize: Int
    private let slots: UnsafeMutableRawBufferPointer
    private var names: [(digest: ChunkDigest, length: Int)?]
    private var next = 0

    /// Bases kept: the two of one delta and the two of the next.
    static let count = 4

    init(chunkSize: Int) {
        self.chunkSize = chunkSize
        slots = .allocate(byteCount: Self.count * chunkSize, alignment: 4096)
        names = Array(repeating: nil, count: Self.count)
    }

    deinit { slots.deallocate() }

    /// Copies the kept bytes of `digest` into `target`; false when they are not kept.
    func copy(_ digest: ChunkDigest, length: Int, into target: UnsafeMutableRawBufferPointer) -> Bool {
        guard let slot = names.firstIndex(where: { $0?.digest == digest && $0?.length == length }) else { return false }
        target.copyMemory(
            from: UnsafeRawBufferPointer(rebasing: slots[(slot * chunkSize)..<(slot * chunkSize + length)]))
        return true
    }

    /// Keeps the checked bytes of base `digest`, in place of the oldest kept.
    func keep(_ digest: ChunkDigest, _ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= chunkSize, !names.contains(where: { $0?.digest == digest }) else { return }
        UnsafeMutableRawBufferPointer(rebasing: slots[(next * chunkSize)..<(next * chunkSize + bytes.count)])
            .copyMemory(from: bytes)
        names[next] = (digest, bytes.count)
        next = (next + 1) % Self.count
    }
}
