import ArgumentParser
import ChunkCache
import Foundation

/// `reimport`: take a directory in again as a domain's contents, or a folder's.
struct Reimport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Take a directory in again as a domain's contents (or a folder's, with --below): unchanged files are matched by name, size and time, not read."
    )

    @OptionGroup var global: GlobalOptions
    @Option(help: "The domain.") var domain: String
    @Option(help: "The folder whose contents the directory is (default: the root).") var below: String?
    @Option(help: "The directory.") var from: String

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await cache.reimportItems(
            below: below.map(ContainerName.identifier) ?? Item.rootContainer, in: domain,
            from: URL(fileURLWithPath: from))
        global.emit(result.json, summary: "reimported \(from) into " + result.summary)
    }
}
