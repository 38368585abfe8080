import ArgumentParser
import ChunkCache
import ChunkCacheBench
import ChunkCacheCommands
import FileIO
import Foundation

// What every `chunkcache-bench` command shares: checking input files, the scratch store, the progress line.

/// The size of the regular file at `path`, checked as `put` checks its input, with its error codes.
func benchInputSize(_ path: String) throws -> Int64 { try ChunkCache.inputFileSize(at: path) }

/// Wraps what a floor or the zstd sizing threw (an `Errno`, a `ZstdError`, a `FloorError`) as the one
/// error the command line reports.
func benchError(_ error: any Error, doing what: String) -> CacheError {
    if let error = error as? CacheError { return error }
    return CacheError(.transient, "\(what) failed: \(error); retry", underlying: error)
}

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

/// Checks a `--chunk-size` for the bench commands (a usage error, exit 64, when it is not one a store takes).
func validateBenchChunkSize(_ size: ByteSize?) throws {
    guard let size else { return }
    // The engine's own rule, reported as a usage error (exit 64) before any store is made.
    guard size.bytes <= Int64(Int.max), (try? ChunkLayout(chunkSize: Int(size.bytes))) != nil else {
        let shifts = ChunkLayout.shifts
        throw ValidationError(
            "--chunk-size \(size.bytes) is not a power of two from \(formatSize(1 << shifts.lowerBound)) to \(formatSize(1 << shifts.upperBound))"
        )
    }
}

/// Checks a `--level` (1…19, as ZstdKit's `Compressor` takes).
func validateBenchLevel(_ level: Int32) throws {
    guard (1...19).contains(level) else { throw ValidationError("--level \(level) is not a zstd level from 1 to 19") }
}

/// What every bench command sets up: a scratch store and a progress line, both cleaned up by ``close()``.
final class BenchSession {
    let progress = ProgressLine()
    let scratch: ScratchDirectory
    let cache: ChunkCache

    private init(scratch: ScratchDirectory, cache: ChunkCache) {
        self.scratch = scratch
        self.cache = cache
    }

    /// Makes a scratch directory under `parent` and a store in it with the chunk size (default 64 KiB), level and
    /// bound (`init --max-size`; default the engine's).
    static func open(in parent: String?, chunkSize: ByteSize?, level: Int32, maxSize: Int64? = nil) async throws
        -> BenchSession
    {
        let scratch = try ScratchDirectory(in: parent)
        do {
            let layout = try ChunkLayout(chunkSize: Int(chunkSize?.bytes ?? 64 << 10))
            let cache = try await ChunkCache.open(
                at: scratch.path + "/store", chunkSize: layout, maxSize: maxSize, compressionLevel: level)
            return BenchSession(scratch: scratch, cache: cache)
        } catch {
            scratch.remove()
            throw error
        }
    }

    /// Clears the progress line and removes the scratch store.
    func close() {
        progress.clear()
        scratch.remove()
    }
}
