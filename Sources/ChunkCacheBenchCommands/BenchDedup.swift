import ArgumentParser
import ChunkCache
import ChunkCacheBench
import ChunkCacheCommands
import Foundation

/// `chunkcache-bench dedup FILE…`: versions of one file stored in order, beside a per-version zstd.
struct BenchDedup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dedup",
        abstract: "Store FILEs in order as versions v1…vN of one item and show what each adds.",
        discussion: """
            Works in a fresh scratch store. Per version: its chunks, the chunks new to the store, the bytes it \
            added to the store (compressed, as `put` reports them), the cumulative dedup ratio, and the bytes \
            a zstd of the whole file at --level would take. The cumulative dedup ratio after version k is the \
            sum of the sizes of versions 1…k divided by the raw bytes of the distinct chunks stored after \
            version k (all-zero chunks are never stored, so they count as saved; `chunkcache stat` calls \
            this dedupRatio). The zstd figure compresses each file in independent 1 MiB blocks (ZstdKit has \
            no streaming API), a little above what `zstd -3 FILE` writes, in bounded memory. Each version is \
            also stored in a second scratch store without deltas (`init --no-deltas`): beside it, what deltas \
            against the previous version saved (CONTRACT §14).
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The versions, oldest first (the same file may repeat).")
    var files: [String]

    @Option(
        name: .customLong("chunk-size"),
        help: "Chunk size of the scratch store, a power of two from 4KiB to 4MiB (default 64KiB).")
    var chunkSize: ByteSize?

    @Option(help: "zstd level of the scratch store and of the whole-file figure (1…19).")
    var level: Int32 = 3

    @Option(help: ArgumentHelp("Where to make the scratch store (default: the temp directory).", valueName: "dir"))
    var scratch: String?

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one FILE") }
        try validateBenchChunkSize(chunkSize)
        try validateBenchLevel(level)
    }

    /// One version's figures.
    struct Row {
        var file: String
        var version: String
        var logicalBytes: Int64
        var chunks: Int
        var newChunks: Int
        var storedBytes: Int64
        /// New chunks stored as deltas.
        var deltaChunks: Int
        /// What the version added to a store without deltas.
        var storedWithoutDeltas: Int64
        var cumulativeDedupRatio: Double
        var zstdBytes: Int64
    }

    func run() async throws {
        // Every file is checked before any work, so a bad last version fails at once.
        let sizes = try files.map(benchInputSize)
        let session = try await BenchSession.open(in: scratch, chunkSize: chunkSize, level: level)
        defer { session.close() }
        let plain = try await BenchSession.open(in: scratch, chunkSize: chunkSize, level: level)
        defer { plain.close() }
        try await plain.cache.setStoresDeltas(false)
        let (cache, progress, layout) = (session.cache, session.progress, session.cache.layout)
        let id = ItemIdentifier(domain: "bench", "file")
        let compression = BlockCompression(level: level)
        var rows: [Row] = []
        var statistics: StoreStatistics?
        for (index, file) in files.enumerated() {
            let version = "v\(index + 1)"
            let step = "version \(index + 1)/\(files.count)"
            progress.show("\(step): storing \(file) (\(formatSize(sizes[index])))…", force: true)
            let put = try await cache.put(fileAt: file, as: id, contentVersion: version)
            progress.show("\(step): storing \(file) without deltas…", force: true)
            let withoutDeltas = try await plain.cache.put(fileAt: file, as: id, contentVersion: version)
            let figures = try await cache.statistics()
            statistics = figures
            let zstdBytes: Int64
            do {
                zstdBytes = try compression.compressedSize(ofFileAt: file) { done in
                    progress.show(
                        "\(step): zstd -\(level) of \(file) \(sizes[index] == 0 ? 100 : done * 100 / sizes[index])%")
                }
            } catch {
                throw benchError(error, doing: "compressing \(file) with zstd")
            }
            rows.append(
                Row(
                    file: file, version: version, logicalBytes: put.item.documentSize, chunks: put.chunks,
                    newChunks: put.newChunks, storedBytes: put.storedBytes, deltaChunks: put.deltaChunks,
                    storedWithoutDeltas: withoutDeltas.storedBytes, cumulativeDedupRatio: figures.dedupRatio,
                    zstdBytes: zstdBytes))
        }
        progress.clear()

        let logical = rows.reduce(0) { $0 + $1.logicalBytes }
        let stored = rows.reduce(0) { $0 + $1.storedBytes }
        let storedWithoutDeltas = rows.reduce(0) { $0 + $1.storedWithoutDeltas }
        let deltaChunks = rows.reduce(0) { $0 + $1.deltaChunks }
        let zstd = rows.reduce(0) { $0 + $1.zstdBytes }
        let newChunks = rows.reduce(0) { $0 + $1.newChunks }
        let unique = statistics?.uniqueBytes ?? 0
        let dedupRatio = statistics?.dedupRatio ?? 1
        let storedToZstd = zstd == 0 ? 1 : Double(stored) / Double(zstd)
        global.emit(
            .object([
                ("chunkSize", .int(Int64(layout.chunkSize))), ("level", .int(Int64(level))),
                ("zstdBlockSize", .int(Int64(compression.blockSize))),
                (
                    "versions",
                    .array(
                        rows.map { row in
                            .object([
                                ("file", .string(row.file)), ("version", .string(row.version)),
                                ("logicalBytes", .int(row.logicalBytes)),
                                ("chunks", .int(Int64(row.chunks))), ("newChunks", .int(Int64(row.newChunks))),
                                ("storedBytes", .int(row.storedBytes)),
                                ("deltaChunks", .int(Int64(row.deltaChunks))),
                                ("storedBytesWithoutDeltas", .int(row.storedWithoutDeltas)),
                                ("cumulativeDedupRatio", .double(row.cumulativeDedupRatio)),
                                ("zstdBytes", .int(row.zstdBytes)),
                            ])
                        })
                ),
                (
                    "totals",
                    .object([
                        ("versions", .int(Int64(rows.count))), ("logicalBytes", .int(logical)),
                        ("newChunks", .int(Int64(newChunks))),
                        ("uniqueBytes", .int(unique)), ("storedBytes", .int(stored)),
                        ("deltaChunks", .int(Int64(deltaChunks))),
                        ("storedBytesWithoutDeltas", .int(storedWithoutDeltas)),
                        ("dedupRatio", .double(dedupRatio)),
                        ("zstdBytes", .int(zstd)), ("storedToZstdRatio", .double(storedToZstd)),
                    ])
                ),
            ]),
            summary: summary(
                rows: rows, layout: layout, logical: logical, newChunks: newChunks, stored: stored,
                storedWithoutDeltas: storedWithoutDeltas, zstd: zstd, dedupRatio: dedupRatio,
                storedToZstd: storedToZstd))
    }

    private func summary(
        rows: [Row], layout: ChunkLayout, logical: Int64, newChunks: Int, stored: Int64, storedWithoutDeltas: Int64,
        zstd: Int64, dedupRatio: Double, storedToZstd: Double
    ) -> String {
        let headers = [
            "version", "file", "bytes", "chunks", "new", "deltas", "stored +", "no deltas +", "dedup ×",
            "zstd -\(level)",
        ]
        var table: [[String]] = rows.map { row in
            [
                row.version, row.file, String(row.logicalBytes), String(row.chunks), String(row.newChunks),
                String(row.deltaChunks), String(row.storedBytes), String(row.storedWithoutDeltas),
                String(format: "%.2f", row.cumulativeDedupRatio), String(row.zstdBytes),
            ]
        }
        table.append([
            "total", "", String(logical), String(rows.reduce(0) { $0 + $1.chunks }), String(newChunks),
            String(rows.reduce(0) { $0 + $1.deltaChunks }), String(stored), String(storedWithoutDeltas),
            String(format: "%.2f", dedupRatio), String(zstd),
        ])
        let widths = headers.indices.map { column in ([headers] + table).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.indices.map { column in
                let pad = String(repeating: " ", count: widths[column] - cells[column].count)
                return column <= 1 ? cells[column] + pad : pad + cells[column]  // text left, numbers right
            }.joined(separator: "  ")
        }
        var lines = [
            "dedup of \(rows.count) versions, \(formatSize(Int64(layout.chunkSize))) chunks, zstd -\(level):",
            line(headers),
        ]
        lines += table.map(line)
        lines.append(
            """
            stored after all versions: \(formatSize(stored)), \(String(format: "%.2f", storedToZstd))× a per-version zstd -\(level) of every \
            file (\(formatSize(zstd)); each file in independent 1 MiB blocks); without deltas \(formatSize(storedWithoutDeltas)), so deltas \
            saved \(formatSize(storedWithoutDeltas - stored)). dedup × = versions' bytes so far / unique chunk bytes stored.
            """)
        return lines.joined(separator: "\n")
    }
}
