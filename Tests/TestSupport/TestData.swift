import Foundation
import SeededRandom

#if canImport(Glibc)
import Glibc
#endif

/// Deterministic test contents drawn from `SplitMix64`: the same seed gives the same bytes on every run.
public enum TestData {
    /// `count` incompressible bytes: the generator's words, least significant byte first.
    public static func random(count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < count {
                var word = generator.next()
                if count - offset >= 8 {
                    buffer.storeBytes(of: word.littleEndian, toByteOffset: offset, as: UInt64.self)
                    offset += 8
                    continue
                }
                while offset < count {
                    buffer[offset] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    offset += 1
                }
            }
        }
        return bytes
    }

    /// `count` bytes of text-like words: compresses well, yet no two 4 KiB blocks are alike.
    public static func text(count: Int, seed: UInt64) -> [UInt8] {
        let words = [
            "chunk", "cache", "domain", "item", "version", "range", "sparse", "hole", "fetch", "store",
            "the", "a", "of", "and", "to", "provider", "file", "zstd", "lmdb", "manifest",
        ].map { Array($0.utf8) }
        var generator = SplitMix64(seed: seed)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 32)
        var line = 0
        while bytes.count < count {
            let r = generator.next()
            bytes += words[Int(r % UInt64(words.count))]
            line += 1
            if r >> 60 == 0 {
                bytes += Array(String(r >> 32).utf8)  // a number now and then keeps chunks distinct
            }
            bytes.append(line % 12 == 0 ? 0x0A : 0x20)
        }
        return Array(bytes[..<count])
    }
}

extension TestData {
    /// Writes `bytes` to `path`, creating or truncating the file.
    ///
    /// Plain `open`/`write`: Foundation's `Data.write(to:)` on Linux writes through a
    /// `TemporaryDirectory.*` folder in /tmp that it never removes.
    public static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw WriteFailed(path: path, errno: errno) }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            guard n > 0 else { throw WriteFailed(path: path, errno: errno) }
            done += n
        }
    }
}

/// A test file could not be written.
public struct WriteFailed: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "writing \(path) failed: errno \(errno)" }
}

// MARK: - Files

/// Files of test contents: plain, sparse with holes, and read back with `pread`.
extension TestData {
    /// Makes a sparse file of `length` bytes (ftruncate) with `pieces` written at their offsets (pwrite), and
    /// returns its full contents: zeros everywhere else, with holes where nothing was written.
    @discardableResult
    public static func writeSparse(to path: String, length: Int, pieces: [(offset: Int, bytes: [UInt8])]) throws
        -> [UInt8]
    {
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        guard ftruncate(fd, off_t(length)) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var model = [UInt8](repeating: 0, count: length)
        for piece in pieces {
            let written = piece.bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(piece.offset)) }
            guard written == piece.bytes.count else { throw POSIXError(.EIO) }
            model.replaceSubrange(piece.offset..<(piece.offset + piece.bytes.count), with: piece.bytes)
        }
        return model
    }

    /// Reads `count` bytes of `path` at `offset` with `pread`; fewer only at end of file.
    public static func read(_ path: String, offset: Int64 = 0, count: Int) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0xAA, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes {
                pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            guard n >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            if n == 0 { break }
            done += n
        }
        return Array(buffer[..<done])
    }

    /// The file's status (`stat`).
    public static func status(_ path: String) throws -> stat {
        var st = stat()
        guard stat(path, &st) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return st
    }

    /// The first hole at or after `offset` (`lseek(SEEK_HOLE)`); the file size when there is none.
    public static func firstHole(in path: String, atOrAfter offset: Int64) throws -> Int64 {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        let seekHole: Int32 = 4  // SEEK_HOLE, man 2 lseek
        return Int64(lseek(fd, off_t(offset), seekHole))
    }
}
