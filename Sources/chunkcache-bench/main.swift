import ChunkCacheBenchCommands
// For `exit`, as in `chunkcache`'s main.swift.
import Foundation

// `chunkcache-bench read-latency|dedup|churn|deltas …`: the engine measured on the user's own files.
exit(await BenchCommand.main(arguments: Array(CommandLine.arguments.dropFirst())))
