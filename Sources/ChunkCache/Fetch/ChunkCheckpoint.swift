import FileIO
import Foundation

/// What a fetch checks before each chunk: its cancellation, and a test's probe (``EngineProbes/beforeChunk``).
struct ChunkCheckpoint: Sendable {
    let cancellation: CancellationFlag
    /// Called with each chunk's index before the chunk is read, so a test can act at a known point of a
    /// fetch (cancel it, change the store) without sleeping.
    var beforeChunk: (@Sendable (Int64) -> Void)?

    /// Throws `userCancelled` once the fetch is cancelled.
    func check(_ index: Int64) throws(CacheError) {
        beforeChunk?(index)
        try cancellation.check()
    }
}
