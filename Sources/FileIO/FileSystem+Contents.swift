#if canImport(Glibc)
import Glibc
#endif

extension FileSystem {
    /// The whole of the file at `path`, read in order to its end: for the kernel's files (`/proc/self/mountinfo`),
    /// whose size `stat` does not tell. Meant for small files: all of it is held in memory.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing (or `/proc` is not mounted), `EACCES` when it may
    ///   not be read, `EISDIR` when it is a folder.
    ///
    /// - Parameter limit: Reads stop once more than this many bytes are in: a caller that refuses files past a
    ///   size learns it from a count of `limit + 1` without holding the rest.
    ///
    /// Uses the `open(2)`, `read(2)` and `close(2)` system calls.
    public static func contents(of path: String, limit: Int = .max) throws(Errno) -> [UInt8] {
        let file = try FileDescriptor.open(path, .readOnly)
        defer { try? file.close() }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = try chunk.withUnsafeMutableBufferPointer { buffer throws(Errno) in
                try file.read(into: UnsafeMutableRawBufferPointer(buffer))
            }
            guard count > 0 else { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > limit { return bytes }
        }
    }
}
