import ArgumentParser
import ChunkCache
import ChunkCacheBench
import ChunkCacheCommands
import FileIO
import Foundation

/// `chunkcache-bench read-latency FILE`: warm partial fetches beside the raw and decode floors.
struct BenchReadLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read-latency",
        abstract: "Time random warm partial fetches of FILE beside the raw and decode floors.",
        discussion: """
            Ingests FILE into a scratch store, warms the page cache, then runs --iterations random ranges of \
            --range-size bytes starting on --align boundaries (after a warm-up). Each range is fetched three \
            times in a row, each kind first, second and third in turn so none gains from its place: by the engine \
            (fetchPartialContents, then unlinking the hand-off file); by the raw floor (create a temp file \
            O_CREAT|O_EXCL beside the engine's, ftruncate it to FILE's size, pread the range from FILE, pwrite it at \
            its offset, close, unlink); and by the decode floor (the same, but the bytes come from zstd frames \
            of the chunks, compressed at --level with checksums and held in memory, decoded on one thread with a \
            reused context; chunks zstd does not shrink by 1/32 stay raw, as in the engine). The floors write the \
            requested bytes; the engine writes its retrieved range (widened to whole chunks). Prints p50/p90/p99 \
            of each in microseconds and the engine's ratios to the floors. These rows run with the store's hot \
            tier off, so the engine decodes as it did before it. With --hot, the ranges' chunks are then read until \
            the hot tier (CONTRACT §14, sized to FILE) holds them decoded, and the same ranges are fetched again \
            by the engine and the raw floor in turn: the hot rows and their ratio.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The file to measure on (read, never changed).")
    var file: String

    @Option(name: .customLong("range-size"), help: "Bytes per fetch (default 64KiB).")
    var rangeSize: ByteSize?

    @Option(help: "Start alignment of each range and the fetch's alignment, a power of two (default 4096).")
    var align: ByteSize?

    @Option(
        name: .customLong("chunk-size"),
        help: "Chunk size of the scratch store, a power of two from 4KiB to 4MiB (default 64KiB).")
    var chunkSize: ByteSize?

    @Option(help: "Measured fetches of each kind.")
    var iterations = 1000

    @Option(help: "Unmeasured fetches of each kind first (default max(20, iterations/10)).")
    var warmup: Int?

    @Option(help: "zstd level of the scratch store and the decode floor (1…19).")
    var level: Int32 = 3

    @Option(help: "Seed of the random ranges (the same seed draws the same ranges).")
    var seed: UInt64 = 0x5EED

    @Option(help: ArgumentHelp("Where to make the scratch store (default: the temp directory).", valueName: "dir"))
    var scratch: String?

    @Option(
        help: ArgumentHelp(
            "A previous version of FILE, stored first: FILE's new chunks are then deltas against it where that pays (CONTRACT §14).",
            valueName: "file"))
    var previous: String?

    @Flag(help: "Also time the same fetches once their chunks are hot (kept decoded, CONTRACT §14).")
    var hot = false

    var rangeBytes: Int64 { rangeSize?.bytes ?? 64 << 10 }
    var alignment: Int64 { align?.bytes ?? 4096 }
    var warmupCount: Int { warmup ?? max(20, iterations / 10) }

    func validate() throws {
        guard rangeBytes >= 1 && rangeBytes <= 1 << 30 else {
            throw ValidationError("--range-size \(rangeBytes) is not from 1 byte to 1GiB")
        }
        guard alignment >= 1 && alignment <= 1 << 30 && alignment & (alignment - 1) == 0 else {
            throw ValidationError("--align \(alignment) is not a power of two from 1 to 1GiB")
        }
        try validateBenchChunkSize(chunkSize)
        guard iterations >= 1 && iterations <= 10_000_000 else {
            throw ValidationError("--iterations \(iterations) is not from 1 to 10000000")
        }
        if let warmup, warmup < 0 || warmup > 10_000_000 {
            throw ValidationError("--warmup \(warmup) is not from 0 to 10000000")
        }
        try validateBenchLevel(level)
    }

    func run() async throws {
        let size = try benchInputSize(file)
        guard size >= rangeBytes else {
            throw ValidationError(
                "--range-size \(rangeBytes) is larger than \(file) (\(size) bytes); give a smaller --range-size or a larger file"
            )
        }
        let session = try await BenchSession.open(in: scratch, chunkSize: chunkSize, level: level)
        defer { session.close() }
        let (cache, progress, layout) = (session.cache, session.progress, session.cache.layout)
        progress.show("ingesting \(file) (\(formatSize(size)))…", force: true)
        let id = ItemIdentifier(domain: "bench", "file")
        if let previous {
            progress.show("ingesting the previous version \(previous)…", force: true)
            _ = try await cache.put(fileAt: previous, as: id, contentVersion: "v0")
        }
        let put = try await cache.put(fileAt: file, as: id, contentVersion: "v1")
        let statistics = try await cache.statistics()

        progress.show("warming the page cache…", force: true)
        let temporaryDirectory = cache.temporaryDirectoryURL.path
        let raw: RawCopyFloor
        let decode: DecodeFloor
        do {
            try PageCache.warm(fileAt: file)
            raw = try RawCopyFloor(
                file: file, layout: layout, temporaryDirectory: temporaryDirectory, maximumLength: Int(rangeBytes))
            decode = try DecodeFloor(
                file: file, layout: layout, temporaryDirectory: temporaryDirectory, maximumLength: Int(rangeBytes),
                level: level)
        } catch {
            throw benchError(error, doing: "preparing the floors on \(file)")
        }

        // The rows of before the hot tier: it stays off, so no fetch is served decoded and none notes reads.
        try await cache.setHotTierSize(0)
        let measured = try await measure(
            [.engine, .raw, .decode], cache: cache, id: id, version: put.item.itemVersion, size: size, raw: raw,
            decode: decode,
            progress: progress)
        let (engineSamples, rawSamples, decodeSamples) = (measured[.engine]!, measured[.raw]!, measured[.decode]!)
        let hotRows =
            hot ? try await measureHot(cache: cache, id: id, put: put, size: size, raw: raw, progress: progress) : nil
        progress.clear()
        let engine = LatencySummary(engineSamples)
        let rawFloor = LatencySummary(rawSamples)
        let decodeFloor = LatencySummary(decodeSamples)
        let toRaw = engine.ratio(to: rawFloor)
        let toDecode = engine.ratio(to: decodeFloor)
        global.emit(
            .object(
                [
                    ("file", .string(file)), ("size", .int(size)), ("chunkSize", .int(Int64(layout.chunkSize))),
                    ("rangeSize", .int(rangeBytes)), ("alignment", .int(alignment)),
                    ("iterations", .int(Int64(iterations))),
                    ("warmup", .int(Int64(warmupCount))), ("level", .int(Int64(level))),
                    ("seed", .string(String(seed))),
                    ("engine", Self.json(engine)), ("rawFloor", Self.json(rawFloor)),
                    ("decodeFloor", Self.json(decodeFloor)),
                    ("ratios", .object([("engineToRaw", Self.json(toRaw)), ("engineToDecode", Self.json(toDecode))])),
                    ("compressionRatio", .double(statistics.compressionRatio)),
                    ("deltaChunks", .int(Int64(put.deltaChunks))),
                ] + (hotRows.map { [("hot", $0.json)] } ?? [])),
            summary: summary(
                size: size, layout: layout, compression: statistics.compressionRatio,
                rows: [("engine", engine), ("raw floor", rawFloor), ("decode floor", decodeFloor)]
                    + (hotRows.map { [("engine, hot", $0.engine), ("raw floor, hot", $0.rawFloor)] } ?? []),
                ratios: [("engine / raw", toRaw), ("engine / decode", toDecode)]
                    + (hotRows.map { [("hot / raw", $0.engine.ratio(to: $0.rawFloor))] } ?? []))
                + (hotRows.map { "\n" + $0.note } ?? ""))
    }

    /// Fetches `--iterations` random ranges (after the warm-up) by each of `kinds` in turn, returning each
    /// kind's measured times in nanoseconds. The same seed draws the same ranges on every call.
    private func measure(
        _ kinds: [MeasuredKind], cache: ChunkCache, id: ItemIdentifier, version: ItemVersion, size: Int64,
        raw: RawCopyFloor, decode: DecodeFloor?, progress: ProgressLine, label: String = ""
    ) async throws -> [MeasuredKind: [UInt64]] {
        var ranges = RangeSampler(size: size, length: rangeBytes, alignment: alignment, seed: seed)
        let total = warmupCount + iterations
        var samples = Dictionary(uniqueKeysWithValues: kinds.map { ($0, [UInt64]()) })
        for kind in kinds { samples[kind]!.reserveCapacity(iterations) }
        // Frames are made a batch at a time, outside the measured part, so memory follows the batch, not FILE.
        let batchSize = 64
        var done = 0
        while done < total {
            let batch = ranges.next(min(batchSize, total - done))
            if let decode {
                do { try decode.prepare(batch) } catch {
                    throw benchError(error, doing: "compressing the decode floor's chunks of \(file)")
                }
            }
            for range in batch {
                // Each kind goes first, second and third in turn: whichever runs right after another's
                // unlink (inode and page-cache teardown) or thread hop pays for it, so a fixed order biases.
                var elapsed: [MeasuredKind: UInt64] = [:]
                for kind in MeasuredKind.order(kinds, forIteration: done) {
                    let start = MonotonicClock.nanoseconds()
                    switch kind {
                    case .engine:
                        let result = try await cache.fetchPartialContents(
                            for: id, version: version, minimalRange: range, aligningTo: Int(alignment))
                        try? FileSystem.unlink(result.url.path)  // the scratch directory's removal catches a leftover
                    case .raw:
                        do { try raw.fetch(range) } catch {
                            throw benchError(error, doing: "the raw floor on range \(range) of \(file)")
                        }
                    case .decode:
                        do { try decode?.fetch(range) } catch {
                            throw benchError(error, doing: "the decode floor on range \(range) of \(file)")
                        }
                    }
                    elapsed[kind] = MonotonicClock.nanoseconds() - start
                }
                if done >= warmupCount {
                    for (kind, time) in elapsed { samples[kind]!.append(time) }
                }
                done += 1
                progress.show(
                    done <= warmupCount
                        ? "\(label)warm-up \(done)/\(warmupCount)"
                        : "\(label)fetch \(done - warmupCount)/\(iterations)  engine p50 \(micros(LatencySummary(samples[.engine]!).p50)) µs"
                )
            }
        }
        return samples
    }

    /// The hot rows: turns the hot tier on with room for FILE, reads the chunks the ranges touch until it
    /// holds them decoded (a chunk is promoted once read in two usage flushes, a bounded amount per flush),
    /// then times the same ranges by the engine and the raw floor in turn.
    private func measureHot(
        cache: ChunkCache, id: ItemIdentifier, put: ChunkCache.PutResult, size: Int64, raw: RawCopyFloor,
        progress: ProgressLine
    ) async throws -> HotRows {
        try await cache.setHotTierSize(size)
        let chunkSize = Int64(cache.layout.chunkSize)
        var ranges = RangeSampler(size: size, length: rangeBytes, alignment: alignment, seed: seed)
        var chunks = Set<Int64>()
        for range in ranges.next(warmupCount + iterations) {
            chunks.formUnion((range.location / chunkSize)...((range.end - 1) / chunkSize))
        }
        var (before, after): (Int64, Int64) = (-1, 0)
        var rounds = 0
        // Until a round promotes nothing more (at least the two flushes promotion needs).
        while rounds < 2 || after > before {
            before = after
            rounds += 1
            progress.show("making the ranges' chunks hot: round \(rounds), \(formatSize(after)) hot…", force: true)
            for index in chunks.sorted() {
                let result = try await cache.fetchPartialContents(
                    for: id, version: put.item.itemVersion,
                    minimalRange: ByteRange(location: index * chunkSize, length: 1), aligningTo: 1)
                try? FileSystem.unlink(result.url.path)
            }
            try await cache.flushUsage()
            after = try await cache.statistics().hotBytes
        }
        let stats = try await cache.statistics()
        let measured = try await measure(
            [.engine, .raw], cache: cache, id: id, version: put.item.itemVersion, size: size, raw: raw, decode: nil,
            progress: progress, label: "hot ")
        return HotRows(
            engine: LatencySummary(measured[.engine]!), rawFloor: LatencySummary(measured[.raw]!),
            hotBytes: stats.hotBytes, hotChunks: stats.hotChunks, chunksRead: chunks.count, rounds: rounds)
    }

    /// What `--hot` measured.
    private struct HotRows {
        let engine: LatencySummary
        let rawFloor: LatencySummary
        let hotBytes: Int64
        let hotChunks: Int64
        /// Distinct chunks the ranges touch, and the rounds of reads that made them hot.
        let chunksRead: Int
        let rounds: Int

        var json: JSON {
            .object([
                ("engine", BenchReadLatency.json(engine)), ("rawFloor", BenchReadLatency.json(rawFloor)),
                ("ratios", .object([("engineToRaw", BenchReadLatency.json(engine.ratio(to: rawFloor)))])),
                ("hotBytes", .int(hotBytes)), ("hotChunks", .int(hotChunks)),
                ("chunksRead", .int(Int64(chunksRead))), ("warmingRounds", .int(Int64(rounds))),
            ])
        }

        var note: String {
            "hot rows: \(hotChunks) chunks (\(formatSize(hotBytes))) hot of the \(chunksRead) the ranges touch, after \(rounds) rounds of reads"
        }
    }

    private func micros(_ nanoseconds: UInt64) -> String { String(format: "%.1f", LatencySummary.micros(nanoseconds)) }

    static func json(_ summary: LatencySummary) -> JSON {
        .object([
            ("p50Micros", .double(LatencySummary.micros(summary.p50))),
            ("p90Micros", .double(LatencySummary.micros(summary.p90))),
            ("p99Micros", .double(LatencySummary.micros(summary.p99))),
        ])
    }

    static func json(_ ratio: LatencyRatio) -> JSON {
        .object([("p50", .double(ratio.p50)), ("p90", .double(ratio.p90)), ("p99", .double(ratio.p99))])
    }

    private func summary(
        size: Int64, layout: ChunkLayout, compression: Double, rows: [(String, LatencySummary)],
        ratios: [(String, LatencyRatio)]
    ) -> String {
        func column(_ text: String, _ width: Int) -> String {
            String(repeating: " ", count: max(0, width - text.count)) + text
        }
        func label(_ text: String) -> String { text + String(repeating: " ", count: max(0, 16 - text.count)) }
        var lines = [
            "read latency of \(file) (\(formatSize(size)), \(formatSize(Int64(layout.chunkSize))) chunks, zstd -\(level) ×\(String(format: "%.2f", compression))):",
            "\(iterations) random \(formatSize(rangeBytes)) ranges aligned to \(formatSize(alignment)), after \(warmupCount) warm-up fetches (seed \(seed))",
            "",
            label("") + column("p50 µs", 10) + column("p90 µs", 10) + column("p99 µs", 10),
        ]
        for (name, s) in rows {
            lines.append(
                label(name) + column(micros(s.p50), 10) + column(micros(s.p90), 10) + column(micros(s.p99), 10))
        }
        for (name, r) in ratios {
            func times(_ value: Double) -> String { String(format: "%.2f×", value) }
            lines.append(label(name) + column(times(r.p50), 10) + column(times(r.p90), 10) + column(times(r.p99), 10))
        }
        return lines.joined(separator: "\n")
    }
}

/// The three fetches of one range in `chunkcache-bench read-latency`, in the order one iteration runs them.
private enum MeasuredKind: CaseIterable {
    case engine, raw, decode

    /// `kinds` rotated by `iteration`, so each kind takes each place as often.
    static func order(_ kinds: [MeasuredKind], forIteration iteration: Int) -> [MeasuredKind] {
        (0..<kinds.count).map { kinds[(iteration + $0) % kinds.count] }
    }
}
