import ArgumentParser
import ChunkCache
import Foundation

/// `mv`: move or rename an item.
struct Mv: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an item to another folder (root, trash, or a folder), renaming it with --name.")

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Argument(help: "The item identifier.") var item: String
    @Option(help: "root, trash, or a folder's identifier.") var to: String
    @Option(help: "Its new filename.") var name: String?

    func run() async throws {
        let cache = try await global.openCache()
        let change = try await cache.moveItem(
            ItemIdentifier(domain: domain, ContainerName.identifier(item)), to: ContainerName.identifier(to),
            renamingTo: name)
        global.emit(change.json, summary: change.summary)
    }
}
