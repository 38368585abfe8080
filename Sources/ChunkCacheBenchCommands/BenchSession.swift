import ChunkCache
import ChunkCacheCommands

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
