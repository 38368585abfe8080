import ArgumentParser
import ChunkCache

struct Stat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the store's figures.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let cache = try await global.openCache()
        let s = try await cache.statistics()
        global.emit(
            .object([
                ("chunkSize", .int(Int64(s.chunkSize))), ("domains", .int(Int64(s.domains))),
                ("items", .int(Int64(s.items))),
                ("versions", .int(Int64(s.versions))), ("chunks", .int(Int64(s.chunks))),
                ("logicalBytes", .int(s.logicalBytes)),
                ("uniqueBytes", .int(s.uniqueBytes)), ("storedBytes", .int(s.storedBytes)),
                ("dedupRatio", .double(s.dedupRatio)),
                ("compressionRatio", .double(s.compressionRatio)), ("fileBytes", .int(s.fileBytes)),
                ("maxSize", .int(s.maxSize)), ("minFree", .int(s.minFree)), ("evictableBytes", .int(s.evictableBytes)),
                ("pinnedBytes", .int(s.pinnedBytes)), ("hits", .int(s.hits)), ("misses", .int(s.misses)),
                ("evictedBytes", .int(s.evictedBytes)), ("deltaChunks", .int(s.deltaChunks)),
                ("deltaSavedBytes", .int(s.deltaSavedBytes)), ("hotSize", .int(s.hotSize)),
                ("hotBytes", .int(s.hotBytes)), ("hotChunks", .int(s.hotChunks)),
                ("unsettledChunks", .int(s.unsettledChunks)), ("unsettledBytes", .int(s.unsettledBytes)),
                ("fillBytes", .int(s.fillBytes)), ("settleMismatches", .int(s.settleMismatches)),
                ("traces", .int(Int64(s.traces))), ("prefetchedBytes", .int(s.prefetchedBytes)),
                ("prefetchHitBytes", .int(s.prefetchHitBytes)),
            ]),
            summary: """
                store \(cache.path) (\(cache.layout) chunks)
                \(s.domains) domains, \(s.items) items, \(s.versions) versions, \(s.chunks) chunks
                logical \(formatSize(s.logicalBytes)), unique \(formatSize(s.uniqueBytes)), stored \(formatSize(s.storedBytes)), on disk \(formatSize(s.fileBytes))
                dedup ×\(String(format: "%.2f", s.dedupRatio)), compression ×\(String(format: "%.2f", s.compressionRatio))
                bound \(formatSize(s.maxSize)), keeping \(formatSize(s.minFree)) free; evictable \(formatSize(s.evictableBytes)), pinned \(formatSize(s.pinnedBytes))
                \(s.hits) hits, \(s.misses) misses, evicted \(formatSize(s.evictedBytes))
                \(s.deltaChunks) delta chunks, saving \(formatSize(s.deltaSavedBytes)) over plain
                hot \(formatSize(s.hotBytes)) in \(s.hotChunks) chunks, of \(formatSize(s.hotSize))
                unsettled \(formatSize(s.unsettledBytes)) in \(s.unsettledChunks) chunks, fill files \(formatSize(s.fillBytes)), \(s.settleMismatches) dropped at settling
                \(s.traces) traces; prefetched \(formatSize(s.prefetchedBytes)), of which read \(formatSize(s.prefetchHitBytes))
                """)
    }
}
