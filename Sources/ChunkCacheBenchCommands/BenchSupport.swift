import ArgumentParser
import ChunkCache
import ChunkCacheCommands

// What every `chunkcache-bench` command shares: checking its input file and options, and the one error it reports.
// The scratch store and the progress line are `BenchSession`'s.

/// The size of the regular file at `path`, checked as `put` checks its input, with its error codes.
func benchInputSize(_ path: String) throws -> Int64 { try ChunkCache.inputFileSize(at: path) }

/// Wraps what a floor or the zstd sizing threw (an `Errno`, a `ZstdError`, a `FloorError`) as the one
/// error the command line reports.
func benchError(_ error: any Error, doing what: String) -> CacheError {
    if let error = error as? CacheError { return error }
    return CacheError(.transient, "\(what) failed: \(error); retry", underlying: error)
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
