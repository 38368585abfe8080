import ChunkCache
import FileIO

/// Keeps files in the page cache, so floors and the engine read memory, not the disk.
public enum PageCache {
    /// Reads the whole file at `path` once, 1 MiB at a time, so its pages are cached.
    ///
    /// - Throws: `Errno` when the file cannot be opened or read.
    public static func warm(fileAt path: String) throws {
        let file = try FileDescriptor.open(path, .readOnly)
        try file.closeAfter {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while true {
                let n = try file.read(fromAbsoluteOffset: offset, into: buffer)
                if n == 0 { break }
                offset += Int64(n)
            }
        }
    }
}
