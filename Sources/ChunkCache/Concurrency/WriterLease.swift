import FileIO
import Foundation

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
