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

/// A floor could not do its work for a reason that is not a system call's or zstd's error.
public struct FloorError: Error, Sendable, CustomStringConvertible {
    /// What went wrong and what to do about it.
    public let message: String

    /// An error saying `message`.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

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

// MARK: - Decode floor

/// The decode floor of a partial fetch: the raw floor's temp file, then one-thread zstd decoding (one
/// reused `Decompressor`) of every chunk the range touches, from frames held in memory, and one `pwritev`
/// of the range's bytes at their offset. With `roundingToChunks` the range is first widened as the raw floor
/// widens it, so the floor decodes and writes the whole range the engine retrieves.
///
/// The frames are the chunks of `layout`, compressed at `level` with checksums as the engine compresses
/// them. With `keepingIncompressibleChunksRaw` (the default) a chunk that zstd does not shrink by at least
/// 1/32 is kept raw and written straight from memory, as the engine keeps it raw and writes it straight from
/// LMDB's map; without it every chunk is decoded, whatever it holds.
///
/// Frames are made by ``prepare(_:)`` for the ranges about to be fetched (outside the measured part), so
/// memory follows the ranges, not the file: a benchmark prepares a batch of ranges, fetches them, and
/// prepares the next batch. ``fetch(_:)`` of a range whose chunks were not prepared throws.
///
/// Not `Sendable`: one caller uses it at a time (it reuses its contexts, buffers and temp-file name).
public final class DecodeFloor {
    /// One chunk as held in memory: a zstd frame, or the raw bytes when compression did not pay.
    private struct Frame {
        var bytes: UnsafeMutableRawBufferPointer
        var rawLength: Int
        var compressed: Bool
    }

    /// The original file's size when the floor was made; every temp file gets this length.
    public let size: Int64
    /// The chunk size: what one frame holds.
    public let layout: ChunkLayout
    /// The zstd level of the frames.
    public let level: Int32
    /// Whether chunks that compression does not shrink by 1/32 stay raw.
    public let keepingIncompressibleChunksRaw: Bool
    /// Whether ranges are widened to whole chunks.
    public let roundingToChunks: Bool
    /// With `roundingToChunks`, ranges are widened to multiples of `max(alignment, layout.chunkSize)`.
    public let alignment: Int
    private let source: FileDescriptor
    private let temporaryPath: String
    private let compressor: Compressor
    private let decompressor = Decompressor()
    private var frames: [Int64: Frame] = [:]
    private var decoded: UnsafeMutableRawBufferPointer
    private var vectors: UnsafeMutableBufferPointer<IOVector>
    private let rawScratch: UnsafeMutableRawBufferPointer
    private let encodedScratch: UnsafeMutableRawBufferPointer

    /// Opens `path` for reading and allocates (and touches) the buffers for ranges up to `maximumLength`.
    /// No frame is made yet: call ``prepare(_:)``.
    ///
    /// - Parameters:
    ///   - path: The original file, whose chunks are compressed.
    ///   - layout: The chunk size of the store being compared.
    ///   - temporaryDirectory: Where each fetch makes its temp file: the engine's hand-off directory.
    ///   - maximumLength: The longest range that will be fetched; a longer one grows the buffers inside
    ///     ``fetch(_:)``.
    ///   - level: The zstd level, as the store's (default 3).
    ///   - keepingIncompressibleChunksRaw: Keep chunks raw when compression saves less than 1/32, as the engine does.
    ///   - roundingToChunks: Widen every range to whole chunks first.
    ///   - alignment: With `roundingToChunks`, widen to multiples of `max(alignment, layout.chunkSize)`
    ///     instead, as a fetch `aligningTo: alignment` retrieves; a power of two (the default, 1, leaves chunks).
    /// - Throws: `Errno` when `path` cannot be opened or examined.
    public init(
        file path: String, layout: ChunkLayout, temporaryDirectory: String, maximumLength: Int, level: Int32 = 3,
        keepingIncompressibleChunksRaw: Bool = true, roundingToChunks: Bool = false, aligningTo alignment: Int = 1
    ) throws {
        (source, size) = try openFloorSource(path, alignment: alignment)
        self.layout = layout
        self.level = level
        self.keepingIncompressibleChunksRaw = keepingIncompressibleChunksRaw
        self.roundingToChunks = roundingToChunks
        self.alignment = alignment
        compressor = Compressor(level: level)
        temporaryPath = floorTemporaryPath(in: temporaryDirectory, kind: "decode")
        rawScratch = touchedBuffer(layout.chunkSize)
        encodedScratch = touchedBuffer(Compressor.bound(for: layout.chunkSize))
        let chunks = Self.chunkCount(
            forLength: floorBufferLength(
                maximumLength, layout: layout, roundingToChunks: roundingToChunks, alignment: alignment),
            layout: layout)
        decoded = touchedBuffer(chunks * layout.chunkSize)
        vectors = .allocate(capacity: chunks)
        vectors.initialize(repeating: IOVector())
    }

    deinit {
        try? source.close()
        for frame in frames.values { frame.bytes.deallocate() }
        decoded.deallocate()
        vectors.deallocate()
        rawScratch.deallocate()
        encodedScratch.deallocate()
    }

    /// The most chunks a range of `length` bytes can touch: a range starting anywhere touches at most
    /// `length / chunkSize + 2` chunks.
    private static func chunkCount(forLength length: Int, layout: ChunkLayout) -> Int {
        max(1, length >> layout.shift + 2)
    }

    /// The bytes a fetch of `range` writes: `range` clamped to the file, widened to whole chunks (or
    /// alignment units) with `roundingToChunks`.
    public func span(of range: ByteRange) -> ByteRange {
        floorSpan(of: range, size: size, layout: layout, roundingToChunks: roundingToChunks, alignment: alignment)
    }

    /// Holds in memory exactly the chunks that `ranges` touch: compresses those not held yet (reading them
    /// with `pread`) and frees the rest. Call it outside the measured part.
    ///
    /// - Parameter ranges: The ranges the next fetches will ask for.
    /// - Throws: `Errno` from `pread(2)`, `ZstdError` from compression, ``FloorError`` when the file shrank.
    public func prepare(_ ranges: some Sequence<ByteRange>) throws {
        var needed = Set<Int64>()
        for range in ranges {
            let span = self.span(of: range)
            guard span.length > 0 else { continue }
            for index in (span.location >> layout.shift)...((span.end - 1) >> layout.shift) { needed.insert(index) }
        }
        for index in Array(frames.keys) where !needed.contains(index) {
            frames.removeValue(forKey: index)?.bytes.deallocate()
        }
        for index in needed.sorted() where frames[index] == nil {
            frames[index] = try encode(chunk: index)
        }
    }

    /// Holds every chunk of the file in memory (about the file's compressed size): for small files, or a
    /// benchmark that draws its ranges one at a time.
    public func prepareWholeFile() throws {
        try prepare([ByteRange(location: 0, length: size)])
    }

    private func encode(chunk index: Int64) throws -> Frame {
        let range = layout.range(ofChunk: index, length: size)
        let raw = UnsafeMutableRawBufferPointer(rebasing: rawScratch[..<Int(range.length)])
        guard try source.readAll(fromAbsoluteOffset: range.location, into: raw) == raw.count else {
            throw FloorError(
                "the file shrank while the decode floor read chunk \(index); leave it unchanged during the benchmark")
        }
        // The engine's rule (ChunkCodec.encode): compression must save at least 1/32 of the bytes.
        let worthwhile = keepingIncompressibleChunksRaw ? raw.count - raw.count / 32 : encodedScratch.count
        var frame: Frame
        if worthwhile > 0,
            let length = try compressor.compress(
                UnsafeRawBufferPointer(raw),
                into: UnsafeMutableRawBufferPointer(rebasing: encodedScratch[..<worthwhile]))
        {
            frame = Frame(bytes: .allocate(byteCount: length, alignment: 64), rawLength: raw.count, compressed: true)
            frame.bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: encodedScratch[..<length]))
        } else {
            frame = Frame(
                bytes: .allocate(byteCount: max(raw.count, 1), alignment: 64), rawLength: raw.count, compressed: false)
            UnsafeMutableRawBufferPointer(rebasing: frame.bytes[..<raw.count]).copyMemory(
                from: UnsafeRawBufferPointer(raw))
        }
        return frame
    }

    /// Does one fetch of `range`: the part a benchmark measures.
    ///
    /// - Parameter range: The bytes asked for; clamped to the file. Its chunks must have been prepared.
    /// - Returns: The bytes written.
    /// - Throws: ``FloorError`` when a chunk was not prepared, `ZstdError` when a frame does not decode,
    ///   `Errno` from `open(2)`, `ftruncate(2)` or `pwritev(2)`; the temp file is removed.
    @discardableResult
    public func fetch(_ range: ByteRange) throws -> Int64 {
        let span = self.span(of: range)
        try withFloorFile(at: temporaryPath, size: size) { file in
            if span.length > 0 { try decodeAndWrite(span, to: file) }
        }
        return span.length
    }

    private func decodeAndWrite(_ span: ByteRange, to file: FileDescriptor) throws {
        let shift = layout.shift
        let first = span.location >> shift
        let last = (span.end - 1) >> shift
        let chunks = Int(last - first + 1)
        if chunks > vectors.count { growBuffers(chunks: chunks) }
        for index in first...last {
            guard let frame = frames[index] else {
                throw FloorError(
                    "chunk \(index) of the decode floor was not prepared; call prepare(_:) with the range first")
            }
            let slot = Int(index - first)
            let bytes: UnsafeMutableRawPointer
            if frame.compressed {
                let start = slot << shift
                let destination = UnsafeMutableRawBufferPointer(rebasing: decoded[start..<(start + frame.rawLength)])
                _ = try decompressor.decompress(UnsafeRawBufferPointer(frame.bytes), into: destination)
                bytes = destination.baseAddress!  // a slice of a non-empty allocation
            } else {
                bytes = frame.bytes.baseAddress!  // allocated with at least one byte
            }
            let chunkStart = index << shift
            let lower = max(span.location, chunkStart) - chunkStart
            let upper = min(span.end, chunkStart + Int64(frame.rawLength)) - chunkStart
            vectors[slot] = IOVector(bytes + Int(lower), count: Int(upper - lower))
        }
        try file.writeAll(
            toAbsoluteOffset: span.location, vectors: UnsafeMutableBufferPointer(rebasing: vectors[..<chunks]))
    }

    private func growBuffers(chunks: Int) {
        decoded.deallocate()
        decoded = touchedBuffer(chunks * layout.chunkSize)
        vectors.deallocate()
        vectors = .allocate(capacity: chunks)
        vectors.initialize(repeating: IOVector())
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
private func openFloorSource(_ path: String, alignment: Int) throws -> (FileDescriptor, Int64) {
    precondition(alignment > 0 && alignment & (alignment - 1) == 0, "the alignment must be a power of two")
    let source = try FileDescriptor.open(path, .readOnly)
    do { return (source, Int64(try source.status().st_size)) } catch {
        try? source.close()
        throw error
    }
}

/// The longest span a floor handles for ranges up to `maximumLength`: widening adds at most one unit on
/// each side.
private func floorBufferLength(_ maximumLength: Int, layout: ChunkLayout, roundingToChunks: Bool, alignment: Int) -> Int
{
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

// MARK: - Page cache

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
