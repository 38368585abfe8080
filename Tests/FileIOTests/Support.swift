import FileIO
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A filesystem the tests make their files on: the temp directory's, and tmpfs when `/dev/shm` is one.
struct ScratchFilesystem: Sendable, CustomTestStringConvertible {
    let name: String
    let parent: String

    var testDescription: String { name }

    static let all: [ScratchFilesystem] = {
        var result = [ScratchFilesystem(name: "temp directory", parent: NSTemporaryDirectory())]
        // /proc/mounts lines read "device mount-point type options …".
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        let shmIsTmpfs = mounts.split(separator: "\n").contains { line in
            line.split(separator: " ").dropFirst().prefix(2).elementsEqual(["/dev/shm", "tmpfs"])
        }
        if shmIsTmpfs && access("/dev/shm", W_OK) == 0 {
            result.append(ScratchFilesystem(name: "tmpfs", parent: "/dev/shm"))
        }
        return result
    }()
}

/// Creates `path` (it must not exist), open for reading and writing, and closes it after `body`.
@discardableResult
func withNewFile<R>(_ path: String, _ body: (FileDescriptor) throws -> R) throws -> R {
    let fd = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL)
    return try fd.closeAfter { try body(fd) }
}

/// Opens the existing `path` read-only and closes it after `body`.
@discardableResult
func withExistingFile<R>(_ path: String, _ body: (FileDescriptor) throws -> R) throws -> R {
    let fd = try FileDescriptor.open(path, O_RDONLY)
    return try fd.closeAfter { try body(fd) }
}

extension FileDescriptor {
    /// Writes `bytes` at `offset`.
    func write(_ bytes: [UInt8], at offset: Int64) throws {
        try bytes.withUnsafeBytes { try writeAll(toAbsoluteOffset: offset, $0) }
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    func read(count: Int, at offset: Int64) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0xAA, count: count)
        let n = try buffer.withUnsafeMutableBytes { try readAll(fromAbsoluteOffset: offset, into: $0) }
        return Array(buffer[..<n])
    }

    /// The file's length in bytes.
    var length: Int64 { get throws { Int64(try status().st_size) } }

    /// The bytes the file takes on disk (`st_blocks` counts 512-byte units).
    var allocatedBytes: Int64 { get throws { Int64(try status().st_blocks) * 512 } }

    /// The filesystem's block size: the granularity of `SEEK_DATA` and `SEEK_HOLE`.
    var blockSize: Int64 {
        get throws {
            var info = statvfs()
            guard fstatvfs(rawValue, &info) == 0 else { throw Errno.current }
            return Int64(info.f_bsize)
        }
    }

    /// Whether the first `length` bytes of both files are the same, compared 1 MiB at a time.
    func hasSameBytes(as other: FileDescriptor, length: Int64) throws -> Bool {
        var offset: Int64 = 0
        while offset < length {
            let count = Int(min(1 << 20, length - offset))
            guard try read(count: count, at: offset) == other.read(count: count, at: offset) else { return false }
            offset += Int64(count)
        }
        return true
    }
}

/// `value` rounded down and up to a multiple of `block`.
func roundDown(_ value: Int64, _ block: Int64) -> Int64 { value / block * block }
func roundUp(_ value: Int64, _ block: Int64) -> Int64 { (value + block - 1) / block * block }
