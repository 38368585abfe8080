import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// Copies a whole file into another, keeping its holes, by the cheapest strategy the filesystem allows.
public enum FileCloner {
    /// Makes `destination` (empty, open for writing) a copy of `source`'s first `length` bytes.
    ///
    /// Tries the strategies in `allowed`, in the order reflink, copy range, read/write, and falls back when
    /// one is not supported here (`EXDEV`, `EOPNOTSUPP`, `EINVAL`, `ENOSYS`, `ENOTTY`). Holes stay holes:
    /// only data ranges are copied and the destination is sized to `length`.
    ///
    /// - Returns: The strategy that did the copy.
    /// - Throws: ``Errno`` of the last strategy tried.
    public static func clone(
        from source: FileDescriptor, to destination: FileDescriptor, length: Int64,
        allowed: Set<CloneStrategy> = Set(CloneStrategy.allCases)
    ) throws(Errno) -> CloneStrategy {
        if allowed.contains(.reflink) {
            if CLinuxShims_ficlone(destination.rawValue, source.rawValue) == 0 {
                // FICLONE shares the whole source: cut or extend it to `length` like the other strategies.
                if try destination.status().st_size != length { try destination.resize(to: length) }
                return .reflink
            }
            // Read errno once, before anything else can overwrite it.
            let error = Errno.current
            guard isUnsupported(error), !allowed.isDisjoint(with: [.copyRange, .readWrite]) else { throw error }
        }
        let ranges = try source.dataRanges(length: length)
        try destination.resize(to: length)
        if allowed.contains(.copyRange) {
            do {
                try copyRanges(ranges, from: source, to: destination)
                return .copyRange
            } catch  where isUnsupported(error) {
                // Fall through to plain reads and writes.
            }
        }
        guard allowed.contains(.readWrite) else { throw Errno.notSupported }
        try readWriteRanges(ranges, from: source, to: destination)
        return .readWrite
    }

    /// Whether `destination` can share blocks with `source`: probes with a clone of the empty `source` into
    /// the empty `destination`, which costs one call and writes nothing. Both files must be empty.
    ///
    /// A caller that will fill one file and then copy it into the other asks this first: where the answer is
    /// `false` (another filesystem or mount, or no reflink support), the copy would write every byte twice,
    /// so the caller writes the destination directly instead.
    ///
    /// Uses the `FICLONE` ioctl.
    public static func canReflink(from source: FileDescriptor, to destination: FileDescriptor) -> Bool {
        CLinuxShims_ficlone(destination.rawValue, source.rawValue) == 0
    }

    static func isUnsupported(_ error: Errno) -> Bool {
        [Errno.crossDevice, .notSupported, .invalidArgument, .notImplemented, Errno(rawValue: ENOTTY)].contains(error)
    }

    /// Uses the `copy_file_range(2)` system call for each range.
    static func copyRanges(_ ranges: [Range<Int64>], from source: FileDescriptor, to destination: FileDescriptor)
        throws(Errno)
    {
        for range in ranges {
            var inOffset = range.lowerBound
            var outOffset = range.lowerBound
            while inOffset < range.upperBound {
                let n = try valueOrErrno {
                    CLinuxShims_copy_file_range(
                        source.rawValue, &inOffset, destination.rawValue, &outOffset, Int(range.upperBound - inOffset),
                        0)
                }
                if n == 0 { break }  // the source shrank under us
            }
        }
    }

    static func readWriteRanges(_ ranges: [Range<Int64>], from source: FileDescriptor, to destination: FileDescriptor)
        throws(Errno)
    {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        for range in ranges {
            var offset = range.lowerBound
            while offset < range.upperBound {
                let want = Int(min(Int64(buffer.count), range.upperBound - offset))
                let n = try source.read(
                    fromAbsoluteOffset: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]))
                if n == 0 { break }
                try destination.writeAll(toAbsoluteOffset: offset, UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                offset += Int64(n)
            }
        }
    }
}
