import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor. A thin, copyable wrapper in swift-system's vocabulary; whoever opens one closes it.
public struct FileDescriptor: Sendable, Hashable {
    /// The raw descriptor.
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Opens `path` with `flags` (and `mode` when creating). Uses the `open(2)` system call.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600, retryOnInterrupt: Bool = true)
        throws(Errno) -> FileDescriptor
    {
        let fd = try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
    }

    /// Opens a new file in `directory` that has no name: nobody else can open it, and it vanishes when the
    /// last descriptor closes, also when the process is killed. ``link(to:)`` gives it a name.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `directory` is missing, `ENOTDIR` when it is not a folder;
    ///   `EOPNOTSUPP` (or `EISDIR` or `EINVAL` on older kernels) where the filesystem cannot make unnamed files.
    ///
    /// Uses the `open(2)` system call with `O_TMPFILE`.
    public static func openUnnamedFile(in directory: String, mode: mode_t = 0o600, retryOnInterrupt: Bool = true)
        throws(Errno) -> FileDescriptor
    {
        try open(directory, CLinuxShims_O_TMPFILE | O_RDWR, mode: mode, retryOnInterrupt: retryOnInterrupt)
    }

    /// Closes the descriptor. Uses the `close(2)` system call; `EINTR` is not retried (Linux frees it anyway).
    public func close() throws(Errno) {
        if Glibc.close(rawValue) != 0 && errno != EINTR { throw Errno.current }
    }

    /// Runs `body` and closes the descriptor afterwards, whatever happens.
    public func closeAfter<R>(_ body: () throws -> R) throws -> R {
        defer { try? close() }
        return try body()
    }

    /// Reads up to `buffer.count` bytes at `offset`, returning how many were read (0 at end of file).
    /// Uses the `pread(2)` system call.
    public func read(
        fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true
    ) throws(Errno) -> Int {
        try valueOrErrno(retryOnInterrupt: retryOnInterrupt) {
            pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset))
        }
    }

    /// Fills `buffer` from `offset`, stopping early only at end of file; returns the bytes read.
    public func readAll(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(Errno)
        -> Int
    {
        var done = 0
        while done < buffer.count {
            let n = try read(
                fromAbsoluteOffset: offset + Int64(done), into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            )
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `bytes` at `offset`, looping over short writes. Uses the `pwrite(2)` system call.
    public func writeAll(toAbsoluteOffset offset: Int64, _ bytes: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true)
        throws(Errno)
    {
        var done = 0
        while done < bytes.count {
            let n = try valueOrErrno(retryOnInterrupt: retryOnInterrupt) {
                pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            }
            done += n
        }
    }

    /// Writes all of `bytes` at the file's current position, looping over short writes; for pipes and
    /// FIFOs, which have no offsets. Uses the `write(2)` system call.
    public func writeAll(_ bytes: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) {
        var done = 0
        while done < bytes.count {
            done += try valueOrErrno(retryOnInterrupt: retryOnInterrupt) {
                Glibc.write(rawValue, bytes.baseAddress! + done, bytes.count - done)
            }
        }
    }

    /// Writes every byte `vectors` point at, in order, from `offset`, looping over short writes, at most
    /// `IOV_MAX` (1024) vectors per call. Adjusts `vectors` as it goes. Uses the `pwritev(2)` system call.
    public func writeAll(toAbsoluteOffset offset: Int64, vectors: UnsafeMutableBufferPointer<iovec>) throws(Errno) {
        var offset = offset
        var first = 0
        while true {
            while first < vectors.count && vectors[first].iov_len == 0 { first += 1 }
            guard first < vectors.count else { return }
            let count = Int32(min(vectors.count - first, 1024))
            let written = try valueOrErrno { pwritev(rawValue, vectors.baseAddress! + first, count, off_t(offset)) }
            if written == 0 { throw Errno(rawValue: EIO) }
            offset += Int64(written)
            var remaining = written
            while first < vectors.count && remaining >= vectors[first].iov_len {
                remaining -= vectors[first].iov_len
                first += 1
            }
            if remaining > 0 {
                vectors[first].iov_base += remaining
                vectors[first].iov_len -= remaining
            }
        }
    }

    /// Sets the file's length, leaving a hole when it grows. Uses the `ftruncate(2)` system call.
    public func resize(to length: Int64, retryOnInterrupt: Bool = true) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { ftruncate(rawValue, off_t(length)) }
    }

    /// Gives the file's first `length` bytes blocks on disk, so later writes there cannot fail for want of
    /// space. Uses `posix_fallocate(3)` (which returns its error rather than setting `errno`).
    public func allocate(_ length: Int64) throws(Errno) {
        let result = posix_fallocate(rawValue, 0, off_t(length))
        if result != 0 { throw Errno(rawValue: result) }
    }

    /// Frees the disk of `length` bytes at `offset`: they read as zeros from then on and the length stays.
    /// Uses `fallocate(2)` with `FALLOC_FL_PUNCH_HOLE`.
    public func punchHole(at offset: Int64, length: Int64) throws(Errno) {
        _ = try valueOrErrno { CLinuxShims_punch_hole(rawValue, offset, length) }
    }

    /// The file's status. Uses the `fstat(2)` system call.
    public func status() throws(Errno) -> stat {
        var st = stat()
        _ = try valueOrErrno { fstat(rawValue, &st) }
        return st
    }

    /// Makes reads and writes wait (`true`) or fail with `EAGAIN` (`false`) when they cannot go on at once:
    /// clears or sets `O_NONBLOCK`, keeping the other status flags.
    ///
    /// - Throws: ``Errno``: `EBADF` when the descriptor is not open.
    ///
    /// Uses the `fcntl(2)` system call with `F_GETFL` and `F_SETFL`.
    public func setBlocking(_ blocking: Bool) throws(Errno) {
        let flags = try valueOrErrno { fcntl(rawValue, F_GETFL) }
        let wanted = blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK
        if wanted != flags { _ = try valueOrErrno { fcntl(rawValue, F_SETFL, wanted) } }
    }

    /// Calls `body` with each entry of the open folder, as ``FileSystem/forEachEntry(in:_:)`` does for a
    /// path: the folder read is the one open here, even if its path now names something else. The
    /// descriptor stays open and the caller's; the listing reads a duplicate of it (which shares its
    /// position), from the start, and closes it afterwards.
    ///
    /// - Throws: ``Errno``: `ENOTDIR` when the file is not a folder, `EMFILE` when no descriptor is left
    ///   for the duplicate; or what `body` throws.
    ///
    /// Uses the `fcntl(2)` system call with `F_DUPFD_CLOEXEC`, and the `fdopendir(3)`, `rewinddir(3)`,
    /// `readdir(3)` and `closedir(3)` library calls.
    public func forEachEntry(_ body: (DirectoryEntry) throws -> Void) throws {
        // fdopendir takes over the descriptor it is given (closedir closes it): give it a duplicate.
        let duplicate = try valueOrErrno { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) }
        guard let stream = fdopendir(duplicate) else {
            let error = Errno.current
            Glibc.close(duplicate)
            throw error
        }
        defer { closedir(stream) }
        rewinddir(stream)  // the position is shared with the caller's descriptor: start from the first entry
        try FileSystem.forEachEntry(of: stream, body)
    }

    /// Gives the open file the name `path`; an existing `path` is `EEXIST`, never replaced. Meant for a file
    /// from ``openUnnamedFile(in:mode:retryOnInterrupt:)``; any other file gets a second name.
    ///
    /// - Throws: ``Errno``: `EEXIST` when `path` exists, `ENOENT` when its folder is missing (or `/proc` is
    ///   not mounted), `EXDEV` when `path` is on another filesystem.
    ///
    /// Uses the `linkat(2)` system call on `/proc/self/fd/N` with `AT_SYMLINK_FOLLOW`, which needs no
    /// privilege, unlike `AT_EMPTY_PATH` (see `man 2 open`, O_TMPFILE).
    public func link(to path: String) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) {
            linkat(AT_FDCWD, "/proc/self/fd/\(rawValue)", AT_FDCWD, path, AT_SYMLINK_FOLLOW)
        }
    }

    /// Whether a lock is shared with other holders or exclusive.
    public enum LockKind: Sendable {
        /// Many holders at once (`LOCK_SH`); none while an exclusive lock is held.
        case shared
        /// One holder alone (`LOCK_EX`).
        case exclusive

        var operation: Int32 { self == .shared ? LOCK_SH : LOCK_EX }
    }

    /// Takes an advisory lock on the open file, waiting while another open file description holds a
    /// conflicting one. The kernel drops the lock when the last descriptor of this description closes,
    /// also when the process dies.
    ///
    /// - Throws: ``Errno``: `ENOLCK` when the kernel is out of lock records.
    ///
    /// Uses the `flock(2)` system call.
    public func lock(_ kind: LockKind, retryOnInterrupt: Bool = true) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { flock(rawValue, kind.operation) }
    }

    /// Takes an advisory lock on the open file if nobody holds a conflicting one, without waiting.
    ///
    /// - Returns: Whether the lock was taken; `false` when another open file description holds one.
    /// - Throws: ``Errno``: `ENOLCK` when the kernel is out of lock records.
    ///
    /// Uses the `flock(2)` system call with `LOCK_NB`.
    public func tryLock(_ kind: LockKind) throws(Errno) -> Bool {
        do {
            _ = try valueOrErrno { flock(rawValue, kind.operation | LOCK_NB) }
            return true
        } catch  where error == .wouldBlock {
            return false
        }
    }

    /// Flushes the file's data and metadata to disk. Uses the `fsync(2)` system call.
    public func sync() throws(Errno) { _ = try valueOrErrno { fsync(rawValue) } }

    /// The ranges of `[0, length)` that hold data, skipping holes. Uses `lseek(2)` with `SEEK_DATA` and
    /// `SEEK_HOLE`; where the filesystem cannot tell, the whole file is one data range.
    public func dataRanges(length: Int64) throws(Errno) -> [Range<Int64>] {
        var ranges: [Range<Int64>] = []
        var position: Int64 = 0
        while position < length {
            let start = lseek(rawValue, off_t(position), CLinuxShims_SEEK_DATA)
            if start < 0 {
                if errno == ENXIO { break }  // no data past `position`
                if errno == EINVAL || errno == EOPNOTSUPP { return [0..<length] }
                throw Errno.current
            }
            let end = lseek(rawValue, start, CLinuxShims_SEEK_HOLE)
            if end < 0 { throw Errno.current }
            let upper = min(Int64(end), length)
            if Int64(start) < upper { ranges.append(Int64(start)..<upper) }
            position = Int64(end)
        }
        return ranges
    }

    /// Counts the file's extents that share blocks with another file (a reflink clone), and all its extents.
    /// Uses the `FS_IOC_FIEMAP` ioctl.
    public func sharedExtents() throws(Errno) -> (shared: Int, total: Int) {
        var total: Int32 = 0
        let shared = CLinuxShims_count_shared_extents(rawValue, &total)
        if shared < 0 { throw Errno.current }
        return (Int(shared), Int(total))
    }
}
