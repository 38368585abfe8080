import ArgumentParser
import ChunkCache
import Foundation

/// Options every command takes: where the store is and how to print.
public struct GlobalOptions: ParsableArguments, Sendable {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store directory (default $CHUNKCACHE_STORE, $XDG_CACHE_HOME/chunkcache, ~/.cache/chunkcache).",
            valueName: "dir"))
    public var store: String?

    @Flag(name: .long, help: "Print exactly one JSON object on stdout.")
    public var json = false

    @Option(
        name: .customLong("tmp-grace"),
        help: ArgumentHelp("Age at which leftover hand-off files are swept (e.g. 1h, 30m, 0).", valueName: "duration"))
    public var tmpGrace: Duration = Duration(argument: "1h")!

    public init() {}

    /// Opens the store these options name.
    func openCache() async throws -> ChunkCache {
        // A command is short-lived: an interrupted import resumes with `import --resume`, not behind it.
        try await ChunkCache.open(
            at: store, chunkSize: nil, maxSize: nil, handOffGracePeriod: tmpGrace.seconds, resumingImports: false)
    }

    /// Prints a command's result: the JSON object with `--json`, else the human summary.
    package func emit(_ json: JSON, summary: @autoclosure () -> String) {
        print(self.json ? json.rendered : summary())
    }
}

extension Item {
    /// The item object of CONTRACT §7.
    var json: JSON {
        .object([
            ("domain", .string(domain)), ("id", .string(identifier)),
            ("contentVersion", .string(itemVersion.contentVersionString)),
            ("metadataVersion", .string(itemVersion.metadataVersionString)), ("size", .int(documentSize)),
        ])
    }
}

extension DomainVersion {
    var json: JSON { .string(description) }
}
