import ArgumentParser
import ChunkCache
import Foundation

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
