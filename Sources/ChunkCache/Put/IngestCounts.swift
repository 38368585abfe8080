import Dispatch
import FileIO
import Foundation

/// What one ingest wrote.
struct IngestCounts: Sendable {
    var chunks = 0
    var newChunks = 0
    var zeroChunks = 0
    /// New chunks stored as deltas.
    var deltaChunks = 0
    var storedBytes: Int64 = 0

    mutating func add(_ other: IngestCounts) {
        chunks += other.chunks
        newChunks += other.newChunks
        zeroChunks += other.zeroChunks
        deltaChunks += other.deltaChunks
        storedBytes += other.storedBytes
    }
}
