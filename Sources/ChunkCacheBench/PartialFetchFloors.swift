import ChunkCache
import FileIO
import ZstdKit

// The floors of a partial fetch: what the same hand-off costs with nothing but the system calls (and zstd),
// measured in the same run and on the same ranges as the engine so that the ratios hold on a noisy machine.
//
// Both floors follow one protocol: everything that is not part of a fetch (opening the source, allocating
// and touching buffers, compressing frames) happens in `init` or `prepare`, and `fetch(_:)` is the one call
// a benchmark measures, once per iteration, with the range the engine was given. Each `fetch` makes its temp
// file in the directory it was given (pass the store's `temporaryDirectoryURL`, where the engine makes its
// hand-off files) with `O_CREAT | O_EXCL`, and closes and unlinks it before returning, as a caller of the
// engine unlinks a hand-off file.

// MARK: - Raw floor

/// The raw floor of a partial fetch: create a temp file (`O_CREAT | O_EXCL`), `ftruncate` it to the file's
/// size, `pread` the range from the original file (uncompressed, and page-cached once warmed with
/// ``PageCache/warm(fileAt:)``), `pwrite` it at the same offset, `close`, `unlink`.
///
/// With `roundingToChunks`, each range is first widened to whole chunks of `layout` (or to whole multiples of
/// `alignment` when that is larger), as the engine widens what it retrieves for `aligningTo:`: the gap between
/// the two raw floors is the cost of the retrieval granularity alone.
///
/// Not `Sendable`: one caller uses it at a time (it reuses one buffer and one temp-file name).
///
/// ```swift
/// let floor = try RawCopyFloor(file: path, layout: cache.layout,
///                              temporaryDirectory: cache.temporaryDirectoryURL.path, maximumLength: 65536)
/// let start = MonotonicClock.nanoseconds()
/// try floor.fetch(ByteRange(location: 1 << 20, length: 65536))
/// let elapsed = MonotonicClock.nanoseconds() - start
/// ```
public final class RawCopyFloor {
    /// The original file's size when the floor was made; every temp file gets this length.
    public let size: Int64
    /// The chunk size ranges are widened to with `roundingToChunks`.
    public let layout: ChunkLayout
    /// Whether ranges are widened to whole chunks.
    public let roundingToChunks: Bool
    /// With `roundingToChunks`, ranges are widened to multiples of `max(alignment, layout.chunkSize)`.
    public let alignment: Int
    private let source: FileDescriptor
    private let temporaryPath: String
    private var buffer: UnsafeMutableRawBufferPointer

    /// Opens `path` for reading and allocates (and touches) the buffer for ranges up to `maximumLength`.
    ///
    /// - Parameters:
    ///   - path: The original file, read with `pread`.
    ///   - layout: The chunk size of the store being compared (used with `roundingToChunks`).
    ///   - temporaryDirectory: Where each fetch makes its temp file: the engine's hand-off directory.
    ///   - maximumLength: The longest range that will be fetched; a longer one grows the buffer inside
    ///     ``fetch(_:)``, which then pays for the allocation and its page faults.
    ///   - roundingToChunks: Widen every range to whole chunks first.
    ///   - alignment: With `roundingToChunks`, widen to multiples of `max(alignment, layout.chunkSize)`
    ///     instead, as a fetch `aligningTo: alignment` retrieves; a power of two (the default, 1, leaves chunks).
    /// - Throws: `Errno` when `path` cannot be opened or examined.
    public init(
        file path: String, layout: ChunkLayout, temporaryDirectory: String, maximumLength: Int,
        roundingToChunks: Bool = false,
        aligningTo alignment: Int = 1
    ) throws {
        (source, size) = try openFloorSource(path, alignment: alignment)
        self.layout = layout
        self.roundingToChunks = roundingToChunks
        self.alignment = alignment
        temporaryPath = floorTemporaryPath(in: temporaryDirectory, kind: "raw")
        buffer = touchedBuffer(
            floorBufferLength(maximumLength, layout: layout, roundingToChunks: roundingToChunks, alignment: alignment))
    }

    deinit {
        try? source.close()
        buffer.deallocate()
    }

    /// The bytes a fetch of `range` copies: `range` clamped to the file, widened to whole chunks (or
    /// alignment units) with `roundingToChunks`.
    public func span(of range: ByteRange) -> ByteRange {
        floorSpan(of: range, size: size, layout: layout, roundingToChunks: roundingToChunks, alignment: alignment)
    }

    /// Does one fetch of `range`: the part a benchmark measures.
    ///
    /// - Parameter range: The bytes asked for; clamped to the file (so a range past the end is not an error).
    /// - Returns: The bytes copied.
    /// - Throws: `Errno` from `open(2)`, `ftruncate(2)`, `pread(2)` or `pwrite(2)`; the temp file is removed.
    @discardableResult
    public func fetch(_ range: ByteRange) throws -> Int64 {
        let span = self.span(of: range)
        if span.length > buffer.count { growBuffer(to: Int(span.length)) }
        try withFloorFile(at: temporaryPath, size: size) { file in
            let bytes = UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(span.length)])
            let count = try source.readAll(fromAbsoluteOffset: span.location, into: bytes)
            try file.writeAll(toAbsoluteOffset: span.location, UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        }
        return span.length
    }

    private func growBuffer(to count: Int) {
        buffer.deallocate()
        buffer = touchedBuffer(count)
    }
}

// MARK: - Shared parts

/// The bytes a floor handles for `range`: clamped to `[0, size)`, widened if asked to the range a fetch
/// `aligningTo: alignment` retrieves (``ChunkLayout/retrievedRange(for:aligningTo:length:)``, the engine's rule).
func floorSpan(of range: ByteRange, size: Int64, layout: ChunkLayout, roundingToChunks: Bool, alignment: Int = 1)
    -> ByteRange
{
    let start = min(max(range.location, 0), size)
    let end = min(max(range.location + max(range.length, 0), start), size)
    let clamped = ByteRange(location: start, length: end - start)
    guard roundingToChunks, end > start else { return clamped }
    return layout.retrievedRange(for: clamped, aligningTo: Int64(alignment), length: size)
}

/// Opens a floor's original file for reading and returns it with its size, after checking that `alignment`
/// (the `aligningTo:` of an init) is a power of two.
func openFloorSource(_ path: String, alignment: Int) throws -> (FileDescriptor, Int64) {
    precondition(alignment > 0 && alignment & (alignment - 1) == 0, "the alignment must be a power of two")
    let source = try FileDescriptor.open(path, .readOnly)
    do { return (source, Int64(try source.status().st_size)) } catch {
        try? source.close()
        throw error
    }
}

/// The longest span a floor handles for ranges up to `maximumLength`: widening adds at most one unit on
/// each side.
func floorBufferLength(_ maximumLength: Int, layout: ChunkLayout, roundingToChunks: Bool, alignment: Int) -> Int {
    maximumLength + (roundingToChunks ? 2 * max(alignment, layout.chunkSize) : 0)
}

/// A page-aligned buffer whose pages are touched up front, so no measured call pays first-touch faults.
public func touchedBuffer(_ count: Int) -> UnsafeMutableRawBufferPointer {
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 4096)
    buffer.initializeMemory(as: UInt8.self, repeating: 0)
    return buffer
}

/// A temp-file name for one floor, reused by each of its fetches (each fetch unlinks it again). The process
/// id and a random part keep two floors, or two processes, from ever colliding on `O_EXCL`.
public func floorTemporaryPath(in directory: String, kind: String) -> String {
    "\(directory)/floor-\(ThisProcess.id)-\(kind)-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
}

/// What every floor does around its copy, as the engine does around a fetch: create the temp file
/// (`O_EXCL`), size it to the whole item, let `body` write, close it and unlink it, also when `body` throws.
@inline(__always)
public func withFloorFile(at path: String, size: Int64, _ body: (FileDescriptor) throws -> Void) throws {
    let file = try FileDescriptor.open(path, .readWrite, options: [.create, .exclusiveCreate])
    do {
        try file.resize(to: size)
        try body(file)
    } catch {
        try? file.close()
        try? FileSystem.unlink(path)
        throw error
    }
    try file.close()
    try FileSystem.unlink(path)
}
