import FileIO
import Foundation
import Synchronization

/// A few MiB of disk the store holds back so that a fetch of what it already has still works on a full disk
/// (CONTRACT §6, §12): a fetch needs a temp file, and with no block left even a 4 KiB range could not be
/// written. The reserve is `reserve` in the store directory, allocated when the store opens with room to
/// spare; a fetch that runs out of space releases it and tries once more; the next open with room makes it
/// again. Best effort: when the disk is already full at open there is none, and another process may take
/// what was released first.
final class SpaceReserve: Sendable {
    private let path: String
    /// Released since this process opened the store: a second fetch out of space fails at once.
    private let released = Atomic<Bool>(false)

    init(storePath: String) { path = storePath + "/reserve" }

    /// The reserve's size on a filesystem of status `fs`: 32 MiB, or 1/64 of a smaller filesystem.
    static func size(of fs: statvfs) -> Int64 {
        min(32 << 20, Int64(fs.f_blocks) * Int64(fs.f_frsize) / 64)
    }

    /// Allocates the reserve unless it exists, when the filesystem has room for it beyond `keepFree`.
    /// Blocking (a few MiB of allocation at most): at open, on the blocking pool.
    func ensure(keepFree: Int64) {
        if (try? FileSystem.status(path)) != nil { return }
        guard let fs = try? FileSystem.filesystemStatus((path as NSString).deletingLastPathComponent) else { return }
        let size = Self.size(of: fs)
        guard size > 0, Int64(fs.f_bavail) * Int64(fs.f_frsize) > keepFree + 2 * size,
              let file = try? FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600) else { return }
        defer { try? file.close() }
        do {
            try file.allocate(size)
            released.store(false, ordering: .releasing)
        } catch {
            try? FileSystem.unlink(path)  // no half reserve: it would hold space without promising any
        }
    }

    /// Gives the reserve's blocks back to the filesystem; whether there was one to give.
    func release() -> Bool {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        do {
            try FileSystem.unlink(path)
            return true
        } catch {
            return false
        }
    }
}
