import ArgumentParser
import ChunkCache
import Foundation

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
