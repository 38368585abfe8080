import ArgumentParser
import ChunkCache

struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Store FILE as a version of ITEM (creates the domain and the item).")

    @OptionGroup var global: GlobalOptions

    @Option(help: "The domain.")
    var domain: String

    @Argument(help: "The item identifier.")
    var item: String

    @Argument(help: "The file to store.")
    var file: String

    @Option(
        help:
            "The content version (≤ 128 bytes); default: the item's version that holds these bytes, else one derived from them."
    )
    var version: String?

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await cache.put(
            fileAt: file, as: ItemIdentifier(domain: domain, item), contentVersion: version)
        global.emit(
            .object([
                ("item", result.item.json), ("chunks", .int(Int64(result.chunks))),
                ("newChunks", .int(Int64(result.newChunks))),
                ("zeroChunks", .int(Int64(result.zeroChunks))), ("deltaChunks", .int(Int64(result.deltaChunks))),
                ("storedBytes", .int(result.storedBytes)),
                ("domainVersion", result.domainVersion.json),
            ]),
            summary:
                "put \(domain)/\(item) version \(result.item.itemVersion.contentVersionString): \(formatSize(result.item.documentSize)), \(result.chunks) chunks, \(result.newChunks) new\(result.deltaChunks > 0 ? " (\(result.deltaChunks) as deltas)" : ""), \(result.zeroChunks) zero, \(formatSize(result.storedBytes)) stored; domain version \(result.domainVersion)"
        )
    }
}
