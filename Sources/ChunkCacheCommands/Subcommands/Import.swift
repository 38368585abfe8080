import ArgumentParser
import ChunkCache
import Foundation

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Take a directory hierarchy into a new domain.",
        discussion: "By default the directory is moved into the store (removed from its place once stored); --copy leaves it.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The directory to import.")
    var directory: String

    @Option(help: "The new domain's name.")
    var domain: String

    @Flag(help: "Leave the directory in place.")
    var copy = false

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await cache.import(domain, fromDirectoryAt: URL(fileURLWithPath: directory), copy: copy)
        global.emit(
            .object([
                ("domain", .string(result.domain)), ("files", .int(Int64(result.files))), ("folders", .int(Int64(result.folders))),
                ("symlinks", .int(Int64(result.symlinks))), ("logicalBytes", .int(result.logicalBytes)),
                ("newChunks", .int(Int64(result.newChunks))), ("domainVersion", result.domainVersion.json),
            ]),
            summary: "imported \(directory) as domain \(domain): \(result.files) files, \(result.folders) folders, \(result.symlinks) symlinks, \(result.logicalBytes) bytes, \(result.newChunks) new chunks; domain version \(result.domainVersion)")
    }
}
