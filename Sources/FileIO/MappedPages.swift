#if canImport(Glibc)
import Glibc
#endif

/// This process's mappings of files: where one starts, and dropping its pages from the process.
public enum MappedPages {
    /// Where this process first mapped the file at `path`, from `/proc/self/maps` (the first mapping whose
    /// file name is `path`, as the kernel prints it); `nil` when none is, or the list cannot be read.
    ///
    /// Uses the `open(2)` and `pread(2)` system calls on `/proc/self/maps`.
    public static func start(ofMappingOf path: String) -> UnsafeMutableRawPointer? {
        guard let maps = try? FileDescriptor.open("/proc/self/maps", O_RDONLY) else { return nil }
        defer { try? maps.close() }
        let suffix = Array((" " + path).utf8)
        var pending: [UInt8] = []
        var offset: Int64 = 0
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = (try? chunk.withUnsafeMutableBytes { try maps.read(fromAbsoluteOffset: offset, into: $0) }) ?? 0
            if count == 0 { return pending.isEmpty ? nil : address(onLine: pending[...], ending: suffix) }
            offset += Int64(count)
            pending += chunk[..<count]
            var lineStart = pending.startIndex
            while let newline = pending[lineStart...].firstIndex(of: UInt8(ascii: "\n")) {
                if let found = address(onLine: pending[lineStart..<newline], ending: suffix) { return found }
                lineStart = newline + 1
            }
            pending.removeSubrange(..<lineStart)
        }
    }

    /// The start address of a `/proc/self/maps` line (`start-end perms offset dev inode path`) whose path
    /// ends the line as `suffix`.
    static func address(onLine line: ArraySlice<UInt8>, ending suffix: [UInt8]) -> UnsafeMutableRawPointer? {
        guard line.count > suffix.count, line.suffix(suffix.count).elementsEqual(suffix),
            let dash = line.firstIndex(of: UInt8(ascii: "-")),
            let start = UInt(String(decoding: line[..<dash], as: UTF8.self), radix: 16)
        else { return nil }
        return UnsafeMutableRawPointer(bitPattern: start)
    }

    /// Drops this process's mappings of the `count` bytes at `start` (`madvise(MADV_DONTNEED)`): the pages of
    /// a shared file mapping stay in the page cache and fault back in on the next access. Best effort: the
    /// advice only fails for a range that is not mapped, which leaves nothing to drop.
    ///
    /// Uses the `madvise(2)` system call.
    public static func drop(_ start: UnsafeMutableRawPointer, count: Int) {
        _ = madvise(start, count, MADV_DONTNEED)
    }

    /// Asks the kernel to start reading the pages under `bytes` of a file mapping now
    /// (`madvise(MADV_WILLNEED)`): one read of the whole range, started at once, instead of a fault and a
    /// 4 KiB read for each page as it is touched (LMDB's map is `MADV_RANDOM`, `MDB_NORDAHEAD`). Pages
    /// already in the page cache cost nothing more. Best effort.
    ///
    /// Uses the `madvise(2)` system call.
    public static func willNeed(_ bytes: UnsafeRawBufferPointer) {
        guard let start = bytes.baseAddress, bytes.count > 0 else { return }
        let page = UInt(ThisProcess.pageSize)
        let first = UInt(bitPattern: start) & ~(page - 1)
        let end = UInt(bitPattern: start) + UInt(bytes.count)
        _ = madvise(UnsafeMutableRawPointer(bitPattern: first), Int(end - first), MADV_WILLNEED)
    }
}
