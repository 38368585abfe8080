import Foundation
import Synchronization

/// The chunks of one version a fetch of an origin domain read from the store, for the eviction policy.
struct ChunkReads: Sendable {
    let manifestID: UInt64
    let chunks: ClosedRange<Int64>
}
