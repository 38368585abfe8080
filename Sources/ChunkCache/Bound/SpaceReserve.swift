import FileIO
import Foundation
import Synchronization

/// A few MiB of disk the store holds back so that a fetch of what it already has still works on a full disk
/// (<doc:Contract#6-Errors>, <doc:Contract#12-A-bounded-cache>): a fetch needs a temp file, and with no block left even
/// a 4 KiB range could not be written. The reserve is `reserve` in the store directory, allocated when the store opens
/// with room to spare; a fetch that runs out of space releases it and tries once more; the next open with room makes it
/// again. Best effort: when the disk is already full at open there is none, and another process may take
/// what was released first.
///
/// It is one of the store's files, so it counts toward the bound (``SpaceBound`` leaves room for it within
/// `maxSize`) and is sized from the bound: a 16 MiB store holds back 512 KiB, not 32 MiB.
final class SpaceReserve: Sendable {
    private let path: String
    /// Released since this process opened the store: a second fetch out of space fails at once.
    private let released = Atomic<Bool>(false)

    /// The reserve's file name in the store directory.
    static let fileName = "reserve"

    init(storePath: String) { path = storePath + "/" + Self.fileName }

    /// The reserve's size for a store bounded at `maxSize` on a filesystem of status `fs`: 32 MiB, but no
    /// more than 1/32 of the bound (the rest is the store's content) nor 1/64 of a smaller filesystem.
    static func size(of fs: statvfs, maxSize: Int64) -> Int64 {
        min(Store.largestReserve(maxSize: maxSize), Int64(fs.f_blocks) * Int64(fs.f_frsize) / 64)
    }

    /// Allocates the reserve for a store bounded at `maxSize` unless it exists at that size, when the
    /// filesystem has room for it beyond `keepFree`; one of another size (the bound changed) is made anew.
    /// Blocking (a few MiB of allocation at most): at open, on the blocking pool.
    func ensure(keepFree: Int64, maxSize: Int64) {
        guard let fs = try? FileSystem.filesystemStatus((path as NSString).deletingLastPathComponent) else { return }
        let size = Self.size(of: fs, maxSize: maxSize)
        if let existing = try? FileSystem.status(path) {
            guard Int64(existing.st_size) != size else { return }
            try? FileSystem.unlink(path)
        }
        guard size > 0, Int64(fs.f_bavail) * Int64(fs.f_frsize) > keepFree + 2 * size,
            let file = try? FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o600)
        else { return }
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
