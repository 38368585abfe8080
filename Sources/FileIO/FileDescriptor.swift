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
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600, retryOnInterrupt: Bool = true) throws(Errno) -> FileDescriptor {
        let fd = try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(rawValue: fd)
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
    public func read(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) -> Int {
        try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Fills `buffer` from `offset`, stopping early only at end of file; returns the bytes read.
    public func readAll(fromAbsoluteOffset offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try read(fromAbsoluteOffset: offset + Int64(done), into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `bytes` at `offset`, looping over short writes. Uses the `pwrite(2)` system call.
    public func writeAll(toAbsoluteOffset offset: Int64, _ bytes: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let n = try valueOrErrno(retryOnInterrupt: retryOnInterrupt) {
                pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            }
            done += n
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

    /// The file's status. Uses the `fstat(2)` system call.
    public func status() throws(Errno) -> stat {
        var st = stat()
        _ = try valueOrErrno { fstat(rawValue, &st) }
        return st
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
