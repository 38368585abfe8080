import Dispatch
import FileIO
import Foundation

/// A file's chunks written as a pending manifest: what ``Ingestor`` returns and publishing consumes.
struct IngestedContent: Sendable {
    let manifestID: UInt64
    let length: Int64
    /// Equal for equal bytes: names the content when the caller gives no version.
    let root: ChunkDigest
    let counts: IngestCounts
}
