import ArgumentParser
import ChunkCache

struct Settle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Settle every downloaded chunk not settled yet: name, check, deduplicate and compress it.",
        discussion: """
            A chunk downloaded from an origin is served as it arrives and kept as a fill, its raw bytes; \
            settling stores it as a put would. Commands that download leave a settler running in the \
            background; this settles everything now and waits for it.
            """)

    @OptionGroup var global: GlobalOptions

    @Flag(help: ArgumentHelp("Settle nothing when another process settles the store now.", visibility: .hidden))
    var unlessSettling = false

    func run() async throws {
        let cache = try await global.openCache()
        let result = try await unlessSettling ? cache.settleUnlessSettling() : cache.settle()
        global.emit(
            .object([
                ("settled", .int(Int64(result.settled))), ("settledBytes", .int(result.settledBytes)),
                ("mismatched", .int(Int64(result.mismatched))), ("lost", .int(Int64(result.lost))),
            ]),
            summary: "settled \(result.settled) chunks (\(formatSize(result.settledBytes)))"
                + (result.mismatched > 0
                    ? ", dropped \(result.mismatched) that did not match the hash the store knew" : "")
                + (result.lost > 0 ? ", dropped \(result.lost) whose bytes were lost" : ""))
    }
}
