import ArgumentParser
import ChunkCache

struct Sweep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete leftover hand-off files older than --tmp-grace now.")

    @OptionGroup var global: GlobalOptions

    @Flag(help: "Delete every hand-off file, whatever its age.")
    var all = false

    func run() async throws {
        let cache = try await global.openCache()
        // Opening already swept what is past the grace period: count that too.
        let removed = cache.sweptAtOpen + (await cache.sweep(all: all))
        global.emit(.object([("removed", .int(Int64(removed)))]), summary: "removed \(removed) hand-off files")
    }
}
