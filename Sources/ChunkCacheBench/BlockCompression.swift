import FileIO
import ZstdKit

/// What a whole file takes compressed with zstd, the figure a user would get from `zstd -LEVEL FILE`,
/// computed in process in bounded memory.
///
/// ZstdKit has one-shot frames only (no streaming context), so the file is cut into blocks of
/// ``blockSize`` bytes (1 MiB by default), each compressed independently into its own checksummed frame,
/// and the frame lengths are summed. Matches across block boundaries are lost, so the figure is a little
/// above what `zstd` (whose level-3 window is 2 MiB) writes for the same file; memory is two buffers,
/// whatever the file's size.
public struct BlockCompression: Sendable {
    /// The zstd level.
    public var level: Int32
    /// The bytes compressed per frame.
    public var blockSize: Int

    /// 1 MiB: the block size `chunkcache-bench dedup` uses.
    public static let defaultBlockSize = 1 << 20

    /// Compression at `level` in blocks of `blockSize` bytes.
    public init(level: Int32 = 3, blockSize: Int = BlockCompression.defaultBlockSize) {
        precondition(blockSize > 0, "a block holds at least one byte")  // callers pass a constant
        self.level = level
        self.blockSize = blockSize
    }

    /// The compressed size of the file at `path`: the sum of its blocks' frame lengths.
    ///
    /// - Parameters:
    ///   - path: The file, read with `pread` one block at a time.
    ///   - progress: Called after each block with the bytes read so far.
    /// - Returns: The bytes the frames take.
    /// - Throws: `Errno` when the file cannot be opened or read, `ZstdError` from compression.
    public func compressedSize(ofFileAt path: String, progress: (_ bytesDone: Int64) -> Void = { _ in }) throws -> Int64
    {
        let file = try FileDescriptor.open(path, .readOnly)
        return try file.closeAfter {
            let compressor = Compressor(level: level)
            let raw = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 4096)
            let encoded = UnsafeMutableRawBufferPointer.allocate(
                byteCount: Compressor.bound(for: blockSize), alignment: 4096)
            defer {
                raw.deallocate()
                encoded.deallocate()
            }
            var offset: Int64 = 0
            var total: Int64 = 0
            while true {
                let n = try file.readAll(fromAbsoluteOffset: offset, into: raw)
                if n == 0 { break }
                // The destination is the bound, so a frame always fits: `nil` cannot happen, but count raw if it did.
                total += Int64(try compressor.compress(UnsafeRawBufferPointer(rebasing: raw[..<n]), into: encoded) ?? n)
                offset += Int64(n)
                progress(offset)
                if n < blockSize { break }
            }
            return total
        }
    }
}
