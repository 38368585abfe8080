import ChunkCache
import Synchronization

/// An open file: the item and the version it was opened at, which every read of the handle reads (an open
/// file never mixes versions, CONTRACT §13).
struct OpenFile: Sendable {
    let item: ItemIdentifier
    let version: ItemVersion
    let size: Int64
    /// The process that opened it: its reads teach that process's trace (CONTRACT §15).
    let opener: TraceOpener
}
