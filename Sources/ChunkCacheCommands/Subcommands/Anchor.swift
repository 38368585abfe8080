import ArgumentParser
import ChunkCache
import Foundation

/// `anchor`: the domain's current sync anchor.
struct Anchor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a domain's current sync anchor and version.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String

    func run() async throws {
        let cache = try await global.openCache()
        let enumerator = try await cache.enumeratorOfAllItems(in: domain)
        let anchor = try await enumerator.currentSyncAnchor()
        let version = try cache.domainVersion(of: domain)
        global.emit(
            .object([("syncAnchor", .string(anchor.description)), ("domainVersion", version.json)]),
            summary: "\(anchor) (domain version \(version))")
    }
}
