import CFuse3
import FileIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Fills a `READDIRPLUS` answer of at most the size the kernel asked for.
public struct FuseDirectoryBuffer: ~Copyable {
    private let request: FuseRequest
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0

    /// A buffer for an answer of at most `size` bytes.
    public init(for request: FuseRequest, size: Int) {
        self.request = request
        self.buffer = .allocate(byteCount: max(size, 0), alignment: 8)
    }

    deinit { buffer.deallocate() }

    /// Adds `entry` under `name`; `next` is the offset the kernel asks from to continue after it.
    /// - Returns: false when the entry does not fit: the answer is full, send it.
    public mutating func add(_ name: String, _ entry: FuseEntry, next: Int64) -> Bool {
        var param = entry.parameters
        let room = buffer.count - used
        let start = buffer.baseAddress.map { ($0 + used).assumingMemoryBound(to: CChar.self) }
        let needed = fuse_add_direntry_plus(request.raw, start, room, name, &param, off_t(next))
        guard needed <= room else { return false }
        used += needed
        return true
    }

    /// Sends the entries added.
    public consuming func send() {
        request.reply(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<used]))
    }
}
