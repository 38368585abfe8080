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

/// Runs `body` with a new, empty, canonical directory under `parent`, and deletes it afterwards.
@discardableResult
func withTemporaryDirectory<R>(in parent: String = NSTemporaryDirectory(), _ body: (String) throws -> R) throws -> R {
    var template = Array((parent + "/FileIOTests.XXXXXX").utf8CString)
    let directory = try template.withUnsafeMutableBufferPointer { buffer in
        guard let made = mkdtemp(buffer.baseAddress!), let canonical = realpath(made, nil) else {
            throw Errno.current
        }
        defer { free(canonical) }
        return String(cString: canonical)
    }
    defer {
        do { try FileManager.default.removeItem(atPath: directory) } catch {
            Issue.record("could not remove \(directory): \(error)")
        }
    }
    return try body(directory)
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

/// Deterministic pseudo-random bytes (SplitMix64), so a failure can be replayed.
func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    var result: [UInt8] = []
    result.reserveCapacity(count)
    while result.count < count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var word = state
        word = (word ^ (word >> 30)) &* 0xBF58_476D_1CE4_E5B9
        word = (word ^ (word >> 27)) &* 0x94D0_49BB_1331_11EB
        word ^= word >> 31
        for _ in 0..<min(8, count - result.count) {
            result.append(UInt8(truncatingIfNeeded: word))
            word >>= 8
        }
    }
    return result
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

// MARK: - Mounting an XFS image

/// What the machine can do, for gating tests.
enum Capabilities {
    static let searchPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    /// The path of `tool` in ``searchPath`` (which includes the sbin directories), or `nil`.
    static func path(of tool: String) -> String? {
        searchPath.split(separator: ":").map { "\($0)/\(tool)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Making and loop-mounting an XFS image needs root and `mkfs.xfs` (Debian: `xfsprogs`).
    static var canMountXFS: Bool { getuid() == 0 && path(of: "mkfs.xfs") != nil && path(of: "mount") != nil }
}

/// A command that exited with a non-zero status.
struct CommandFailed: Error, CustomStringConvertible {
    let command: [String]
    let status: Int32
    let output: String

    var description: String { "\(command.joined(separator: " ")) exited with \(status): \(output)" }
}

/// Runs `arguments[0]` found in ``Capabilities/searchPath`` and waits for it; throws unless it exits 0.
func run(_ arguments: String...) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    process.environment = ["PATH": Capabilities.searchPath, "LC_ALL": "C"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CommandFailed(command: arguments, status: process.terminationStatus, output: text)
    }
}

/// Makes a 512 MiB sparse image in `directory`, formats it XFS with reflink, loop-mounts it, and runs `body`
/// with the mount point. Unmounts and deletes the image afterwards, whatever happens.
func withReflinkXFS<R>(in directory: String, _ body: (String) throws -> R) throws -> R {
    let image = directory + "/xfs.img"
    let mountPoint = directory + "/mnt"
    defer {
        do { try FileManager.default.removeItem(atPath: image) } catch {
            Issue.record("could not delete \(image): \(error)")
        }
    }
    try withNewFile(image) { try $0.resize(to: 512 << 20) }
    try run("mkfs.xfs", "-q", "-m", "reflink=1", image)
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
    try run("mount", "-o", "loop", image, mountPoint)
    defer {
        do { try run("umount", mountPoint) } catch {
            Issue.record("could not unmount \(mountPoint): \(error)")
            do { try run("umount", "-l", mountPoint) } catch {
                Issue.record("lazy unmount of \(mountPoint) failed too: \(error)")
            }
        }
    }
    return try body(mountPoint)
}
