import ChunkCache
import FileIO
import ZstdKit

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
