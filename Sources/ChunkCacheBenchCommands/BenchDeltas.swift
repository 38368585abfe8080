import ArgumentParser
import ChunkCache
import ChunkCacheBench
import ChunkCacheCommands
import DeltaKit
import FileIO
import Foundation
import ZstdKit

/// `chunkcache-bench deltas V1 V2 …`: what a version series would take stored as today (distinct chunks, each
/// zstd or raw) and with deltas against the previous version (CONTRACT §14, issue 21), without writing a store.
struct BenchDeltas: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deltas",
        abstract: "Model the bytes VERSIONs take stored with and without deltas across versions.",
        discussion: """
            Reads the VERSIONs in order, one chunk at a time (no store is written), twice. Today: every chunk whose \
            SHA-256 was not seen before (all-zero chunks are never stored) counts as its zstd frame at --level, or \
            its raw bytes when the frame does not save 1/32 of them, as the store encodes chunks. With deltas: the \
            same, except that a new chunk of version k > 1 whose base `DeltaKit` finds in version k−1 (the same \
            offset, else where a rolling match of blocks of --block-size places its bytes; at most two chunks of \
            bytes) is first compressed against that base at --delta-level, and counts as that delta frame when it \
            is at most 1/32 of the chunk (no plain frame is made then), or at most (1 − --min-saving) × its plain \
            size. Every delta is decoded against its base and checked. \
            Sizes are payloads: no per-chunk header and no LMDB overhead, the same on both sides. Times are the \
            process's CPU time per MiB of the versions (reads, SHA-256, the index of each version, base finding, \
            compression); the decode times are per delta chunk, of its delta frame and of its plain frame.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The versions of one item, oldest first.")
    var files: [String]

    @Option(
        name: .customLong("chunk-size"), help: "Chunk size, a power of two from 4KiB to 4MiB (default 64KiB).")
    var chunkSize: ByteSize?

    @Option(help: "zstd level of plain chunks (1…19), the store's.")
    var level: Int32 = 3

    @Option(name: .customLong("delta-level"), help: "zstd level of delta frames (1…19).")
    var deltaLevel: Int32 = BenchDeltas.defaultDeltaLevel

    @Option(
        name: .customLong("block-size"),
        help: "Block size of the rolling match, from 64 bytes to 64KiB and at most the chunk size (default 512).")
    var blockSize: ByteSize?

    @Option(
        name: .customLong("min-saving"),
        help: "The fraction of a chunk's plain size a delta must save to be kept (0 ≤ f < 1).")
    var minSaving = BenchDeltas.defaultMinSaving

    @Flag(
        name: .customLong("aligned-bases"),
        help: "Start each base on a chunk boundary of the previous version: two whole chunks, not parts of three.")
    var alignedBases = false

    /// Delta frames are written once and read often: a level above the store's costs ingest time only.
    static let defaultDeltaLevel: Int32 = 3
    /// A delta costs its base's decode on every read, and its base must be kept: it must save a real margin.
    static let defaultMinSaving = 0.25

    var chunkBytes: Int { Int(chunkSize?.bytes ?? 64 << 10) }
    var blockBytes: Int { Int(blockSize?.bytes ?? Int64(BaseIndex.defaultBlockSize)) }

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one VERSION") }
        try validateBenchChunkSize(chunkSize)
        try validateBenchLevel(level)
        try validateBenchLevel(deltaLevel)
        let size = blockSize?.bytes ?? Int64(BaseIndex.defaultBlockSize)
        guard BaseIndex.blockSizes.contains(Int(clamping: size)), size <= Int64(chunkBytes) else {
            throw ValidationError(
                "--block-size \(blockSize?.bytes ?? 0) is not from 64 bytes to 64KiB and at most the chunk size")
        }
        guard minSaving >= 0 && minSaving < 1 else {
            throw ValidationError("--min-saving \(minSaving) is not a fraction from 0 to below 1")
        }
    }

    func run() async throws {
        let sizes = try files.map(benchInputSize)
        let progress = ProgressLine()
        defer { progress.clear() }
        let model = DeltaModel(
            chunkSize: chunkBytes, level: level, deltaLevel: deltaLevel, blockSize: blockBytes, minSaving: minSaving,
            alignedBases: alignedBases)
        var today = DeltaModel.Pass()
        var deltas = DeltaModel.Pass()
        do {
            today = try model.run(files: files, sizes: sizes, withDeltas: false) { file, done in
                progress.show("today: \(file) \(done >> 20) MiB")
            }
            deltas = try model.run(files: files, sizes: sizes, withDeltas: true) { file, done in
                progress.show("with deltas: \(file) \(done >> 20) MiB")
            }
        } catch {
            throw benchError(error, doing: "reading and encoding the versions")
        }
        progress.clear()
        emit(today: today, deltas: deltas)
    }

    private func emit(today: DeltaModel.Pass, deltas: DeltaModel.Pass) {
        let logical = today.logicalBytes
        let mib = Double(max(logical, 1)) / Double(1 << 20)
        func ratio(_ a: Int64, _ b: Int64) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
        let rows: [JSON] = files.indices.map { index in
            .object([
                ("file", .string(files[index])), ("logicalBytes", .int(today.versions[index].logicalBytes)),
                ("newChunks", .int(Int64(today.versions[index].newChunks))),
                ("todayBytes", .int(today.versions[index].storedBytes)),
                ("deltaBytes", .int(deltas.versions[index].storedBytes)),
                ("deltaChunks", .int(Int64(deltas.versions[index].deltaChunks))),
            ])
        }
        let statistics = deltas.statistics
        global.emit(
            .object([
                ("chunkSize", .int(Int64(chunkBytes))), ("level", .int(Int64(level))),
                ("deltaLevel", .int(Int64(deltaLevel))), ("blockSize", .int(Int64(blockBytes))),
                ("minSaving", .double(minSaving)), ("alignedBases", .bool(alignedBases)), ("versions", .array(rows)),
                (
                    "totals",
                    .object([
                        ("logicalBytes", .int(logical)), ("todayBytes", .int(today.storedBytes)),
                        ("deltaBytes", .int(deltas.storedBytes)),
                        ("deltaToToday", .double(ratio(deltas.storedBytes, today.storedBytes))),
                        ("newChunks", .int(Int64(today.newChunks))), ("deltaChunks", .int(Int64(deltas.deltaChunks))),
                        ("basesAtSameOffset", .int(Int64(statistics.sameOffset))),
                        ("basesShifted", .int(Int64(statistics.shifted))),
                        ("basesRejected", .int(Int64(statistics.rejected))),
                        ("noBase", .int(Int64(statistics.noBase))),
                        ("todayCPUMillisPerMiB", .double(today.cpuSeconds * 1000 / mib)),
                        ("deltaCPUMillisPerMiB", .double(deltas.cpuSeconds * 1000 / mib)),
                        ("findMBps", .double(statistics.findThroughput)),
                        ("deltaDecodeMicros", .double(statistics.deltaDecodeMicros)),
                        ("plainDecodeMicros", .double(statistics.plainDecodeMicros)),
                    ])
                ),
            ]),
            summary: summary(today: today, deltas: deltas, mib: mib))
    }

    private func summary(today: DeltaModel.Pass, deltas: DeltaModel.Pass, mib: Double) -> String {
        let headers = ["version", "file", "bytes", "new chunks", "today +", "deltas +", "delta chunks"]
        var table: [[String]] = files.indices.map { index in
            let (plain, delta) = (today.versions[index], deltas.versions[index])
            return [
                "v\(index + 1)", files[index], String(plain.logicalBytes), String(plain.newChunks),
                String(plain.storedBytes), String(delta.storedBytes), String(delta.deltaChunks),
            ]
        }
        table.append([
            "total", "", String(today.logicalBytes), String(today.newChunks), String(today.storedBytes),
            String(deltas.storedBytes), String(deltas.deltaChunks),
        ])
        let widths = headers.indices.map { column in ([headers] + table).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.indices.map { column in
                let pad = String(repeating: " ", count: widths[column] - cells[column].count)
                return column <= 1 ? cells[column] + pad : pad + cells[column]
            }.joined(separator: "  ")
        }
        let statistics = deltas.statistics
        let toToday = today.storedBytes == 0 ? 0 : Double(deltas.storedBytes) / Double(today.storedBytes)
        var lines = [
            "deltas across \(files.count) versions, \(formatSize(Int64(chunkBytes))) chunks, zstd -\(level) plain, "
                + "-\(deltaLevel) deltas, \(blockBytes)-byte blocks, kept when saving ≥ \(minSaving) of plain:",
            line(headers),
        ]
        lines += table.map(line)
        lines += [
            "stored with deltas: \(formatSize(deltas.storedBytes)), \(String(format: "%.3f", toToday))× today's "
                + "(\(formatSize(today.storedBytes))); logical \(formatSize(today.logicalBytes))",
            "bases: \(statistics.sameOffset) at the same offset, \(statistics.shifted) shifted, "
                + "\(statistics.rejected) found but not worth it, \(statistics.noBase) new chunks with none",
            String(
                format: "CPU per MiB: today %.2f ms, with deltas %.2f ms (%.2f×); base finding %.0f MB/s",
                today.cpuSeconds * 1000 / mib, deltas.cpuSeconds * 1000 / mib,
                today.cpuSeconds > 0 ? deltas.cpuSeconds / today.cpuSeconds : 0, statistics.findThroughput),
            String(
                format: "decode per delta chunk: delta frame %.1f µs, its plain frame %.1f µs (base reads excluded)",
                statistics.deltaDecodeMicros, statistics.plainDecodeMicros),
        ]
        return lines.joined(separator: "\n")
    }
}

/// The encoding model of `chunkcache-bench deltas`: one pass over the versions, today's way or with deltas.
private struct DeltaModel {
    let chunkSize: Int
    let level: Int32
    let deltaLevel: Int32
    let blockSize: Int
    let minSaving: Double
    let alignedBases: Bool

    /// One version's figures.
    struct Version {
        var logicalBytes: Int64 = 0
        var newChunks = 0
        var storedBytes: Int64 = 0
        var deltaChunks = 0
    }

    /// What the delta pass saw of bases, and how fast it found and decoded them.
    struct Statistics {
        var sameOffset = 0
        var shifted = 0
        var rejected = 0
        var noBase = 0
        var searchedBytes: Int64 = 0
        var findNanoseconds: UInt64 = 0
        var deltaDecodeNanoseconds: UInt64 = 0
        var plainDecodeNanoseconds: UInt64 = 0
        var deltaDecodes = 0
        var plainDecodes = 0
        /// The CPU time of the decode checks, taken out of the pass's.
        var checkSeconds = 0.0

        var findThroughput: Double {
            findNanoseconds == 0 ? 0 : Double(searchedBytes) / Double(findNanoseconds) * 1000
        }
        var deltaDecodeMicros: Double {
            deltaDecodes == 0 ? 0 : Double(deltaDecodeNanoseconds) / Double(deltaDecodes) / 1000
        }
        var plainDecodeMicros: Double {
            plainDecodes == 0 ? 0 : Double(plainDecodeNanoseconds) / Double(plainDecodes) / 1000
        }
    }

    /// One pass's figures.
    struct Pass {
        var versions: [Version] = []
        var statistics = Statistics()
        var cpuSeconds = 0.0

        var logicalBytes: Int64 { versions.reduce(0) { $0 + $1.logicalBytes } }
        var storedBytes: Int64 { versions.reduce(0) { $0 + $1.storedBytes } }
        var newChunks: Int { versions.reduce(0) { $0 + $1.newChunks } }
        var deltaChunks: Int { versions.reduce(0) { $0 + $1.deltaChunks } }
    }

    /// The buffers of a pass: a chunk, its plain frame, its delta frame, a base, a decode.
    private final class Buffers {
        let chunk: UnsafeMutableRawBufferPointer
        let plain: UnsafeMutableRawBufferPointer
        let delta: UnsafeMutableRawBufferPointer
        let base: UnsafeMutableRawBufferPointer
        let decoded: UnsafeMutableRawBufferPointer

        init(chunkSize: Int) {
            chunk = .allocate(byteCount: chunkSize, alignment: 4096)
            plain = .allocate(byteCount: Compressor.bound(for: chunkSize), alignment: 4096)
            delta = .allocate(byteCount: Compressor.bound(for: chunkSize), alignment: 4096)
            base = .allocate(byteCount: 2 * chunkSize, alignment: 4096)
            decoded = .allocate(byteCount: chunkSize, alignment: 4096)
        }

        deinit {
            for buffer in [chunk, plain, delta, base, decoded] { buffer.deallocate() }
        }
    }

    /// Reads `files` in order, one chunk at a time, and counts what each new chunk takes stored.
    func run(
        files: [String], sizes: [Int64], withDeltas: Bool, progress: (_ file: String, _ bytesDone: Int64) -> Void
    ) throws -> Pass {
        let started = Self.cpuSeconds()
        var pass = Pass()
        var seen = Set<ChunkDigest>()
        let buffers = Buffers(chunkSize: chunkSize)
        let compressor = Compressor(level: level)
        let deltaCompressor = Compressor(level: deltaLevel)
        let decompressor = Decompressor()
        var previous: (index: BaseIndex, file: FileDescriptor)?
        defer { try? previous?.file.close() }
        for (number, path) in files.enumerated() {
            let file = try FileDescriptor.open(path, .readOnly)
            var index: BaseIndex? = withDeltas ? BaseIndex(blockSize: blockSize, expectedLength: sizes[number]) : nil
            var version = Version()
            var offset: Int64 = 0
            // Versions shift in runs: the previous chunk's shift is where the next one's bytes most likely are.
            var likelyShift: Int64 = 0
            while true {
                let count = try file.readAll(fromAbsoluteOffset: offset, into: buffers.chunk)
                if count == 0 { break }
                let chunk = UnsafeRawBufferPointer(rebasing: buffers.chunk[..<count])
                index?.append(chunk)
                version.logicalBytes += Int64(count)
                if !isAllZero(chunk), seen.insert(ChunkDigest(hashing: chunk)).inserted {
                    version.newChunks += 1
                    let coders = Coders(plain: compressor, delta: deltaCompressor, decompressor: decompressor)
                    let stored = try encode(
                        chunk, at: offset, likelyShift: &likelyShift, against: previous, buffers: buffers,
                        coders: coders, statistics: &pass.statistics)
                    version.storedBytes += Int64(stored.size)
                    if stored.isDelta { version.deltaChunks += 1 }
                }
                offset += Int64(count)
                progress(path, offset)
                if count < chunkSize { break }
            }
            pass.versions.append(version)
            try? previous?.file.close()
            previous = nil
            if let index { previous = (index, file) } else { try file.close() }
        }
        // The checks of the deltas' decodes are not part of an ingest.
        pass.cpuSeconds = Self.cpuSeconds() - started - pass.statistics.checkSeconds
        return pass
    }

    /// The size the store keeps of `chunk` plain: its zstd frame, or its raw bytes when the frame does not save
    /// 1/32 of them (ChunkCodec's rule).
    private func plainFrame(
        _ chunk: UnsafeRawBufferPointer, compressor: Compressor, into buffer: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let worthwhile = ChunkCodec.worthwhileLength(rawCount: chunk.count)
        guard worthwhile > 0 else { return chunk.count }
        let frame = UnsafeMutableRawBufferPointer(rebasing: buffer[..<worthwhile])
        return try compressor.compress(chunk, into: frame) ?? chunk.count
    }

    /// The contexts of a pass.
    struct Coders {
        let plain: Compressor
        let delta: Compressor
        let decompressor: Decompressor
    }

    /// The bytes the store keeps of a new chunk, and whether as a delta against its base in the previous version.
    ///
    /// The delta is tried first: one of at most 1/32 of the chunk is kept without a plain frame to compare it with
    /// (a plain frame that small is rare, and beating it by the margin would gain little), so most delta chunks
    /// cost one encode; otherwise it must save `minSaving` of the plain frame. Every delta kept is decoded and
    /// checked, and its decode timed beside its plain frame's, out of the pass's time.
    private func encode(
        _ chunk: UnsafeRawBufferPointer, at offset: Int64, likelyShift: inout Int64,
        against previous: (index: BaseIndex, file: FileDescriptor)?, buffers: Buffers, coders: Coders,
        statistics: inout Statistics
    ) throws -> (size: Int, isDelta: Bool) {
        func plain() throws -> Int { try plainFrame(chunk, compressor: coders.plain, into: buffers.plain) }
        guard let previous,
            let (size, base, shift) = try delta(
                chunk, at: offset, likelyShift: &likelyShift, against: previous, buffers: buffers,
                compressor: coders.delta, statistics: &statistics)
        else { return (try plain(), false) }
        let plainSize = size <= chunk.count / 32 ? nil : try plain()
        if let plainSize, size > plainSize - Int((Double(plainSize) * minSaving).rounded(.up)) {
            statistics.rejected += 1
            return (plainSize, false)
        }
        let checkStart = Self.cpuSeconds()
        try checkDecode(
            chunk, delta: size, plain: plainSize ?? plainFrame(chunk, compressor: coders.plain, into: buffers.plain),
            base: base, buffers: buffers, decompressor: coders.decompressor, statistics: &statistics)
        statistics.checkSeconds += Self.cpuSeconds() - checkStart
        if shift == 0 { statistics.sameOffset += 1 } else { statistics.shifted += 1 }
        return (size, true)
    }

    /// `chunk`'s delta frame (in `buffers.delta`) against its base in the previous version, and the base; nil when
    /// it has none, or the frame does not save 1/32 of the chunk.
    private func delta(
        _ chunk: UnsafeRawBufferPointer, at offset: Int64, likelyShift: inout Int64,
        against previous: (index: BaseIndex, file: FileDescriptor), buffers: Buffers, compressor: Compressor,
        statistics: inout Statistics
    ) throws -> (size: Int, base: UnsafeRawBufferPointer, shift: Int64)? {
        let findStart = MonotonicClock.nanoseconds()
        let match = previous.index.findBase(
            for: chunk, at: offset, maxLength: 2 * chunkSize, likelyShift: likelyShift)
        statistics.findNanoseconds += MonotonicClock.nanoseconds() - findStart
        statistics.searchedBytes += Int64(chunk.count)
        guard let match else {
            statistics.noBase += 1
            return nil
        }
        likelyShift = match.shift
        var (baseOffset, baseLength) = (match.offset, match.length)
        if alignedBases {
            // The chunk boundary at or before the chunk's bytes at the best shift: the base holds them whole.
            baseOffset = max(0, offset + match.shift) / Int64(chunkSize) * Int64(chunkSize)
            baseLength = Int(min(Int64(2 * chunkSize), previous.index.length - baseOffset))
        }
        let baseBuffer = UnsafeMutableRawBufferPointer(rebasing: buffers.base[..<baseLength])
        let read = try previous.file.readAll(fromAbsoluteOffset: baseOffset, into: baseBuffer)
        let base = UnsafeRawBufferPointer(rebasing: buffers.base[..<read])
        let capacity = ChunkCodec.worthwhileLength(rawCount: chunk.count)
        guard capacity > 0,
            let size = try compressor.compress(
                chunk, against: base, into: UnsafeMutableRawBufferPointer(rebasing: buffers.delta[..<capacity]))
        else {
            statistics.rejected += 1
            return nil
        }
        return (size, base, match.shift)
    }

    /// Decodes the delta frame against its base and compares it with the chunk; times it, and the plain frame's
    /// decode (when the plain form is a frame, not raw bytes).
    private func checkDecode(
        _ chunk: UnsafeRawBufferPointer, delta: Int, plain: Int, base: UnsafeRawBufferPointer, buffers: Buffers,
        decompressor: Decompressor, statistics: inout Statistics
    ) throws {
        let decoded = UnsafeMutableRawBufferPointer(rebasing: buffers.decoded[..<chunk.count])
        let start = MonotonicClock.nanoseconds()
        _ = try decompressor.decompress(
            UnsafeRawBufferPointer(rebasing: buffers.delta[..<delta]), against: base, into: decoded)
        let middle = MonotonicClock.nanoseconds()
        guard UnsafeRawBufferPointer(decoded).elementsEqual(chunk) else {
            throw CacheError(.corruptData, "a delta frame decoded to other bytes than its chunk's; report this bug")
        }
        statistics.deltaDecodeNanoseconds += middle - start
        statistics.deltaDecodes += 1
        guard plain < chunk.count else { return }  // stored raw: nothing to decode
        let plainStart = MonotonicClock.nanoseconds()
        _ = try decompressor.decompress(UnsafeRawBufferPointer(rebasing: buffers.plain[..<plain]), into: decoded)
        statistics.plainDecodeNanoseconds += MonotonicClock.nanoseconds() - plainStart
        statistics.plainDecodes += 1
    }

    /// The process's CPU time in seconds (user and system: reads included, waiting for the disk not).
    private static func cpuSeconds() -> Double { Clocks.processCPUSeconds() }
}
