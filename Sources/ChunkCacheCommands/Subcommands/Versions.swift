import ArgumentParser
import ChunkCache
import Foundation

struct Versions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List an item's versions, newest first.")

    @OptionGroup var global: GlobalOptions

    @Option(help: "The domain.")
    var domain: String

    @Argument(help: "The item identifier.")
    var item: String

    func run() async throws {
        let cache = try await global.openCache()
        let (current, versions) = try await cache.versions(of: ItemIdentifier(domain: domain, item))
        let formatter = ISO8601DateFormatter()
        global.emit(
            .object([
                ("item", current.json),
                (
                    "versions",
                    .array(
                        versions.map { version in
                            .object([
                                ("contentVersion", .string(version.contentVersion)), ("size", .int(version.size)),
                                ("createdAt", .string(formatter.string(from: version.createdAt))),
                                ("cachedBytes", .int(version.cachedBytes)),
                            ])
                        })
                ),
            ]),
            summary: versions.map {
                "\($0.contentVersion)  \(formatSize($0.size))  \(formatter.string(from: $0.createdAt))  \(formatSize($0.cachedBytes)) cached"
            }
            .joined(separator: "\n"))
    }
}
