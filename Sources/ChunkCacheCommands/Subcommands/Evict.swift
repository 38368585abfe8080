import ArgumentParser
import ChunkCache
import Foundation

/// `evict`: drop cached content of an origin domain now (CONTRACT §12).
struct Evict: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Drop the cached content of an origin domain's items (all, or those given); the next fetch downloads it again."
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain (it must have an origin).") var domain: String
    @Argument(help: "Item identifiers (default: every item).") var items: [String] = []

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await cache.evict(items, inDomain: domain)
        global.emit(
            .object([
                ("evictedBytes", .int(result.bytes)), ("versions", .int(Int64(result.versions))),
                ("pinnedSkipped", .int(Int64(result.pinnedSkipped))),
            ]),
            summary:
                "evicted \(formatSize(result.bytes)) of \(result.versions) version\(result.versions == 1 ? "" : "s")\(result.pinnedSkipped == 0 ? "" : "; \(result.pinnedSkipped) pinned item\(result.pinnedSkipped == 1 ? "" : "s") kept")"
        )
    }
}
