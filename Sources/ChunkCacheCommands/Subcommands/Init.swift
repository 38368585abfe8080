import ArgumentParser
import ChunkCache

struct Init: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create the store (other commands create it with defaults).",
        discussion:
            "On an existing store with the same settings this changes nothing; a different chunk size is an error.")

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("chunk-size"), help: "Chunk size, a power of two from 4KiB to 4MiB (default 64KiB).")
    var chunkSize: ByteSize?

    @Option(name: .customLong("max-size"), help: "The most bytes the store may take (default 1TiB).")
    var maxSize: ByteSize?

    @Option(
        name: .customLong("min-free"),
        help:
            "Free space eviction keeps on the store's filesystem (default 1GiB, or 5% of a filesystem under 20GiB; 0 for none)."
    )
    var minFree: ByteSize?

    @Flag(
        inversion: .prefixedNo,
        help:
            "Whether puts and imports store a new version's chunks as deltas against the previous version (default on)."
    )
    var deltas: Bool?

    @Option(
        name: .customLong("hot-size"),
        help:
            "Bytes of often-read chunks kept decoded, counted toward --max-size (default the smaller of 10% of it and 1GiB; 0 for none)."
    )
    var hotSize: ByteSize?

    func validate() throws {
        if let maxSize, maxSize.bytes < 1 << 20 {
            throw ValidationError("--max-size must be at least 1MiB")
        }
    }

    func run() async throws {
        let layout = try chunkSize.map { try ChunkLayout(chunkSize: Int($0.bytes)) }
        let cache = try await ChunkCache.open(
            at: global.store, chunkSize: layout, maxSize: maxSize?.bytes, handOffGracePeriod: global.tmpGrace.seconds)
        if let minFree { try await cache.setMinimumFreeSpace(minFree.bytes) }
        if let deltas { try await cache.setStoresDeltas(deltas) }
        if let hotSize { try await cache.setHotTierSize(hotSize.bytes) }
        let storesDeltas = try await cache.storesDeltas
        let hot = try await cache.hotTierSize()
        global.emit(
            .object([
                ("chunkSize", .int(Int64(cache.layout.chunkSize))), ("maxSize", .int(cache.maxSize)),
                ("minFree", .int(cache.minimumFreeSpace)), ("deltas", .bool(storesDeltas)), ("hotSize", .int(hot)),
                ("path", .string(cache.path)),
            ]),
            summary:
                "store \(cache.path): \(cache.layout) chunks, at most \(formatSize(cache.maxSize)), keeping \(formatSize(cache.minimumFreeSpace)) free, deltas \(storesDeltas ? "on" : "off"), up to \(formatSize(hot)) hot"
        )
    }
}
