import FileIO
import Foundation

/// The lease file of a writer that no longer runs, locked by this process until this value goes: while it
/// lives, no other process can claim the lease or take it for a live writer's. Used by one thread (the
/// crash clean-up at open), so it is not `Sendable`.
final class AbandonedLease {
    private let file: FileDescriptor?
    private let path: String

    private init(file: FileDescriptor?, path: String) {
        self.file = file
        self.path = path
    }

    deinit { try? file?.close() }

    /// The lease of `token` in `directory` when its writer is gone: its lock could be taken, or the file is
    /// missing. `nil` while the writer holds it.
    static func claim(_ token: WriterToken, in directory: String) throws(CacheError) -> AbandonedLease? {
        let path = directory + "/" + token.description
        let file: FileDescriptor
        do { file = try FileDescriptor.open(path, .readOnly) } catch {
            if error == .noSuchFile { return AbandonedLease(file: nil, path: path) }
            throw CacheError.file(error, path: path, doing: "opening a writer lease")
        }
        do throws(Errno) {
            if try file.tryLock(.exclusive) { return AbandonedLease(file: file, path: path) }
            try? file.close()
            return nil
        } catch {
            try? file.close()
            throw CacheError.file(error, path: path, doing: "locking a writer lease")
        }
    }

    /// Deletes the lease file while still holding its lock, so no new writer can take it over.
    func remove() {
        // Best effort: a lease file left behind is claimed and removed again by the next crash clean-up.
        try? FileSystem.unlink(path)
    }
}
