import Foundation
import SigV4
import Synchronization

/// A chunk of one manifest: what a chunk flight downloads.
struct ChunkKey: Hashable, Sendable {
    let manifestID: UInt64
    let index: Int64
}
