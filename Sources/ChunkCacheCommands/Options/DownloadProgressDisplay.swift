import ChunkCache
import Foundation

/// Shows on stderr's ``ProgressLine`` what a fetch downloads from its origin, once it passes a few MB
/// (CONTRACT §10): smaller downloads end before a display would help, and a pipe or log sees nothing.
struct DownloadProgressDisplay {
    static let threshold: Int64 = 4_000_000
    private let task: Task<Void, Never>

    /// Starts showing `progress` every 200 ms until ``finish()``.
    init(_ progress: DownloadProgress) {
        task = Task.detached {
            let line = ProgressLine()
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                let bytes = progress.downloadedBytes
                guard bytes >= Self.threshold else { continue }
                let requests = progress.originRequests
                line.show("downloading: \(formatSize(bytes)) in \(requests) request\(requests == 1 ? "" : "s")")
            }
            line.clear()
        }
    }

    /// Stops the display and erases its line.
    func finish() async {
        task.cancel()
        await task.value
    }
}
