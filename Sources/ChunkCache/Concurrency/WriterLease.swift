import FileIO
import Foundation

/// Names the writer of a pending manifest: 16 random bytes, and the name of that writer's lease file.
struct WriterToken: Hashable, Sendable, CustomStringConvertible {
    static let byteCount = 16
    let bytes: [UInt8]

    /// A token from bytes read back from a record; `nil` unless it has ``byteCount`` bytes.
    init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A token from a lease file's name: ``byteCount`` bytes in lowercase hex.
    init?(fileName: String) {
        let digits = Array(fileName.utf8)
        guard digits.count == 2 * Self.byteCount else { return nil }
        var bytes: [UInt8] = []
        for pair in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[pair]), let low = hexValue(digits[pair + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        guard hexString(bytes) == fileName else { return nil }  // one spelling per token
        self.bytes = bytes
    }

    static func random() -> WriterToken {
        var generator = SystemRandomNumberGenerator()
        return WriterToken(unchecked: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    var description: String { hexString(bytes) }
}

/// A process's claim to the pending manifests it writes: the file `STORE/writers/<token>`, held under an
/// exclusive `flock` for as long as the lease lives.
///
/// Whether a writer still runs is decided by this lock, which the kernel drops however the process ends, and
/// never by its pid: a process in another PID namespace (a container sharing the store) would see the pid as
/// dead, or as another process, and roll back a put in flight. The crash clean-up at open rolls back a pending manifest only
/// when it can take its writer's lock (see ``AbandonedLease/claim(_:in:)``). `flock` locks belong to one open
/// file description, so this process's own crash clean-up, opening the file anew, finds its own leases held too.
final class WriterLease: Sendable {
    let token: WriterToken
    private let file: FileDescriptor
    private let path: String

    private init(token: WriterToken, file: FileDescriptor, path: String) {
        self.token = token
        self.file = file
        self.path = path
    }

    deinit {
        // Unlinked while still locked, so no crash clean-up mistakes the file for a dead writer's. A lease already
        // gone (a sweep raced it) needs no removal, and a deinit has nobody to report a failure to.
        try? FileSystem.unlink(path)
        try? file.close()
    }

    /// Creates and locks a new lease file in `directory` (created, mode 0700, when missing).
    static func acquire(in directory: String) throws(CacheError) -> WriterLease {
        do {
            try FileSystem.makeDirectory(directory, mode: 0o700)
        } catch {
            // An existing writers directory is the usual case: another writer made it.
            guard error == .fileExists else {
                throw CacheError.file(error, path: directory, doing: "creating the store's writers directory")
            }
        }
        while true {
            let token = WriterToken.random()
            let path = directory + "/" + token.description
            let file: FileDescriptor
            do { file = try FileDescriptor.open(path, .readWrite, options: [.create, .exclusiveCreate]) } catch {
                if error == .fileExists { continue }
                throw CacheError.file(error, path: path, doing: "creating this process's writer lease")
            }
            do throws(Errno) {
                // A sweep of dead leases may lock and unlink the new file before this process locks it: then
                // the lock is not free, or the file is no longer linked. Start again with another token.
                if try file.tryLock(.exclusive), try file.status().st_nlink > 0 {
                    return WriterLease(token: token, file: file, path: path)
                }
                try? file.close()
            } catch {
                try? file.close()
                try? FileSystem.unlink(path)  // best effort: the lock error below is the one to report
                throw CacheError.file(error, path: path, doing: "locking this process's writer lease")
            }
        }
    }
}

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
