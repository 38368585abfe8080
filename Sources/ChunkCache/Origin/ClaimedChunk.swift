import FileIO
import Foundation
import Synchronization

/// A chunk this download claimed: its flight and the hash its manifest already knows for it, if any.
struct ClaimedChunk: Sendable {
    let index: Int64
    let flight: Flight
    let expected: ChunkDigest?
}
