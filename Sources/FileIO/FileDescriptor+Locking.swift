#if canImport(Glibc)
import Glibc
#endif

// MARK: - Advisory locks and writes at the file position

extension FileDescriptor {
    /// Takes an exclusive advisory lock on the open file without waiting, returning whether it was free.
    ///
    /// The lock belongs to this open file description: another `open` of the same file, in this process or
    /// any other, does not share it, and the kernel drops it when the last descriptor of this one closes,
    /// however the process ends. Uses the `flock(2)` system call with `LOCK_EX | LOCK_NB`.
    public func tryLockExclusive(retryOnInterrupt: Bool = true) throws(Errno) -> Bool {
        while true {
            if flock(rawValue, LOCK_EX | LOCK_NB) == 0 { return true }
            switch Errno.current {
            case Errno(rawValue: EWOULDBLOCK): return false
            case .interrupted where retryOnInterrupt: continue
            case let error: throw error
            }
        }
    }

    /// Writes all of `bytes` at the file position, for files that have no offsets (pipes, `/proc` entries).
    /// Uses the `write(2)` system call.
    public func writeAll(_ bytes: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) {
        var done = 0
        while done < bytes.count {
            done += try valueOrErrno(retryOnInterrupt: retryOnInterrupt) {
                Glibc.write(rawValue, bytes.baseAddress! + done, bytes.count - done)
            }
        }
    }
}
