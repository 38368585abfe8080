import ChunkCache
import Synchronization

/// Downloads the rest of a file opened through the mount, in the background, when it is small enough
/// (``MountOptions/fillBelow``): a program that reads a file at random (a database, an archive's index)
/// waits a round trip for each read it makes before the file is whole, and after it none. rclone's mount does
/// the same with its read chunks. The fill reads the file in order into a scratch buffer through the async
/// read, so the download streams with the read-ahead it grows, and it stores what it reads; a reader's own
/// reads meanwhile share its downloads.
final class BackgroundFill: Sendable {
    private let cache: ChunkCache
    /// Files at most this large are filled; 0 fills none.
    private let limit: Int64
    /// The fills under way, by item and version: one per file however often it is opened.
    private let running = Mutex<Set<String>>([])
    /// How much a fill reads at a time.
    static let step = 1 << 20

    init(_ cache: ChunkCache, limit: Int64) {
        self.cache = cache
        self.limit = limit
    }

    /// Starts filling `file` unless it is too large, already cached, or being filled.
    func start(_ file: OpenFile, cachedBytes: Int64) {
        guard file.size <= limit, cachedBytes < file.size else { return }
        let key = file.item.domain + "\u{0}" + file.item.rawValue + "\u{0}" + file.version.contentVersionString
        guard running.withLock({ $0.insert(key).inserted }) else { return }
        Task.detached(priority: .background) { [self] in
            defer { _ = running.withLock { $0.remove(key) } }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.step, alignment: 64)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while offset < file.size {
                // A failure (the origin gone, the version replaced) ends the fill: reads report their own.
                guard
                    let read = try? await cache.read(
                        file.item, version: file.version, at: offset, into: buffer, options: .strictVersioning),
                    read.bytesRead > 0
                else { return }
                offset += Int64(read.bytesRead)
            }
        }
    }
}
