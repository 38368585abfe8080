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

struct Unpin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Let eviction drop items' cached content again.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "Item identifiers.") var items: [String]

    func run() async throws {
        let cache = try await global.openCache()
        var results: [JSON] = []
        for item in items {
            let change = try await cache.unpin(ItemIdentifier(domain: domain, ContainerName.identifier(item)))
            results.append(change.json)
        }
        global.emit(.object([("unpinned", .array(results))]), summary: "unpinned \(items.joined(separator: ", "))")
    }
}

/// `gc`: remove old versions and the chunks only they used.
struct Gc: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove each item's versions beyond the newest N and free the chunks only they used.")

    @OptionGroup var global: GlobalOptions
    @Option(name: .customLong("keep-versions"), help: "Versions kept per item, newest first (at least 1).")
    var keepVersions: Int = 1

    func validate() throws {
        if keepVersions < 1 {
            throw ValidationError(
                "--keep-versions \(keepVersions) must be at least 1: the newest version of each item always stays")
        }
    }

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await cache.collectGarbage(keepVersions: keepVersions)
        global.emit(
            .object([("removedVersions", .int(Int64(result.versions))), ("removedBytes", .int(result.bytes))]),
            summary:
                "removed \(result.versions) old version\(result.versions == 1 ? "" : "s") (\(formatSize(result.bytes)))"
        )
    }
}
