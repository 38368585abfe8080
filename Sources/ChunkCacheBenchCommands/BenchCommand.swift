import ArgumentParser
import ChunkCache
import ChunkCacheCommands

/// `chunkcache-bench`: the engine measured on the user's own files, beside floors measured in the same run.
///
/// A program of its own beside `chunkcache`, so the CLI a user runs carries no benchmark code. Its options and
/// output are those `chunkcache` takes and prints: the global options (`--json` above all), `CacheError`'s codes,
/// exit 1 on an engine error and 64 on a usage error.
public struct BenchCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "chunkcache-bench",
        abstract: "Measure the engine on your own files, beside what the machine can do at best.",
        discussion: """
            Each benchmark works in a scratch store under the temp directory (never the --store one) and \
            removes it afterwards. While it runs, a progress line is shown on stderr when stderr is a terminal.
            """,
        version: ChunkCacheCommand.version,
        subcommands: [BenchReadLatency.self, BenchDedup.self, BenchChurn.self, BenchDeltas.self])

    // Declared here as well so `chunkcache-bench --json dedup …` parses: a subcommand's `global`, under the same
    // name, reads what was given before the subcommand's name.
    @OptionGroup var global: GlobalOptions

    public init() {}

    /// Runs the command line `arguments` (without the program name) and returns the exit code: 0 on success,
    /// 1 on an engine error, 64 on a usage error.
    public static func main(arguments: [String]) async -> Int32 {
        await exitCode(json: ChunkCacheCommand.takesJSONFlag(arguments)) {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        }
    }
}
