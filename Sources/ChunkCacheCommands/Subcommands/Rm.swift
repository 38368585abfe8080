import ArgumentParser
import ChunkCache
import Foundation

/// `rm`: trash an item, or delete it for good.
struct Rm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an item to the trash, or delete it (a folder with its contents) for good.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "The item identifier.") var item: String
    @Flag(help: "Delete it and its versions for good instead of trashing it.") var permanently = false

    func run() async throws {
        let cache = try await global.openCache()
        let id = ItemIdentifier(domain: domain, ContainerName.identifier(item))
        let change = permanently ? try await cache.deleteItem(id) : try await cache.trashItem(id)
        global.emit(change.json, summary: change.summary)
    }
}
