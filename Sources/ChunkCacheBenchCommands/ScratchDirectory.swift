import ChunkCache
import FileIO
import Foundation

/// A scratch directory for a benchmark's store, made with `mkdtemp(3)` under the temp directory and removed
/// by ``remove()``, or when the process is interrupted (SIGINT, SIGTERM, SIGHUP) before that.
final class ScratchDirectory {
    /// The directory's canonical path.
    let path: String
    private var interrupts: InterruptSignals?

    /// Makes `chunkcache-bench.XXXXXX` under `parent` (default `$TMPDIR` or `/tmp`).
    init(in parent: String?) throws {
        let parent = parent ?? NSTemporaryDirectory()
        do {
            path = try FileSystem.canonicalPath(FileSystem.makeUniqueDirectory(in: parent, prefix: "chunkcache-bench."))
        } catch {
            if error == .noSuchFile || error == .notDirectory {
                throw CacheError(
                    .invalidArgument, "cannot make a scratch directory in \(parent): it does not exist; check the path")
            }
            if [Errno.permissionDenied, .notPermitted, .readOnlyFilesystem].contains(error) {
                throw CacheError(
                    .noPermission,
                    "cannot make a scratch directory in \(parent): no permission; pick another with --scratch")
            }
            throw CacheError(.transient, "cannot make a scratch directory in \(parent): \(error); retry")
        }
        let path = self.path
        interrupts = InterruptSignals { signalNumber in
            // Best effort, as the process is going anyway.
            try? FileSystem.removeTree(path)
            let stderr = FileDescriptor.standardError
            let erase = stderr.isTerminal ? "\r\u{1B}[K" : ""  // the progress line, if any
            let line = erase + "chunkcache-bench: interrupted; removed the scratch store \(path)\n"
            try? Array(line.utf8).withUnsafeBytes { try stderr.writeAll($0) }
            exit(128 + signalNumber)
        }
    }

    /// Removes the directory and everything in it, and restores the default signal actions.
    func remove() {
        interrupts?.release()
        interrupts = nil
        try? FileSystem.removeTree(path)
    }
}
