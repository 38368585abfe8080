import ChunkCache
import FileIO
import Foundation

/// What a command that downloaded does with the chunks it left unsettled (CONTRACT §10), from
/// `CHUNKCACHE_SETTLE`: `background` (the default) starts `chunkcache settle` as a process of its own, so the
/// command ends as soon as its reader has its bytes; `wait` settles before the command ends; `off` leaves
/// them to the next process that settles.
enum SettleBehind {
    static let variable = "CHUNKCACHE_SETTLE"

    /// Settles, or starts a settler for, what `cache` downloaded in this process.
    static func afterDownloads(_ cache: ChunkCache) async throws {
        guard cache.downloadedFills else { return }
        switch ProcessInfo.processInfo.environment[variable] ?? "background" {
        case "off":
            return
        case "wait":
            _ = try await cache.settle()
        default:
            // A settler that cannot start leaves the fills to the next one: nothing is lost.
            _ = try? DetachedProcess.spawn(
                ["--store", cache.path, "settle", "--unless-settling"], quiet: true, what: "the settler",
                instead: "run `chunkcache settle`")
        }
    }
}
