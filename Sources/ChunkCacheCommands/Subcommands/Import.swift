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

    func validate() throws {
        // An empty path would mean the current directory to URL(fileURLWithPath:): never import that by accident.
        if directory.isEmpty { throw ValidationError("<directory> is empty; give the directory to import") }
    }

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await cache.import(domain, fromDirectoryAt: URL(fileURLWithPath: directory), copy: copy)
        if let reason = result.sourceRemovalError {
            // The import succeeded: a warning, not an error, and the exit code stays 0.
            FileHandle.standardError.write(Data("chunkcache: warning: domain \(domain) was imported, but \(directory) was not removed: \(reason)\n".utf8))
        }
        global.emit(
            .object([
                ("domain", .string(result.domain)), ("files", .int(Int64(result.files))), ("folders", .int(Int64(result.folders))),
                ("symlinks", .int(Int64(result.symlinks))), ("logicalBytes", .int(result.logicalBytes)),
                ("newChunks", .int(Int64(result.newChunks))), ("domainVersion", result.domainVersion.json),
                ("sourceRemovalError", result.sourceRemovalError.map { .string($0) } ?? .null),
            ]),
            summary: "imported \(directory) as domain \(domain): \(result.files) files, \(result.folders) folders, \(result.symlinks) symlinks, \(formatSize(result.logicalBytes)), \(result.newChunks) new chunks; domain version \(result.domainVersion)")
    }
}
