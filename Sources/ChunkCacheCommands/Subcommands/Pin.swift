import ArgumentParser
import ChunkCache
import Foundation

/// `pin` / `unpin`: keep items available offline, or let eviction have them again.
struct Pin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Keep items available offline: download what is absent and exempt them from eviction.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "Item identifiers.") var items: [String]

    func run() async throws {
        let cache = try await global.openCache()
        var results: [JSON] = []
        var lines: [String] = []
        for item in items {
            let progress = DownloadProgress()
            let display = DownloadProgressDisplay(progress)
            let pinned: (change: ItemChange, downloadedBytes: Int64)
            do {
                pinned = try await cache.pin(
                    ItemIdentifier(domain: domain, ContainerName.identifier(item)), progress: progress)
            } catch {
                await display.finish()
                throw error
            }
            await display.finish()
            results.append(
                .object([
                    ("item", pinned.change.item.catalogueJSON), ("downloadedBytes", .int(pinned.downloadedBytes)),
                    ("domainVersion", pinned.change.domainVersion.json),
                ]))
            lines.append("pinned \(item): \(formatSize(pinned.downloadedBytes)) downloaded")
        }
        global.emit(.object([("pinned", .array(results))]), summary: lines.joined(separator: "\n"))
    }
}
