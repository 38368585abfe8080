import ChunkCache
import Synchronization

/// An open file: the item and the version it was opened at, which every read of the handle reads (an open
/// file never mixes versions, CONTRACT §13).
struct OpenFile: Sendable {
    let item: ItemIdentifier
    let version: ItemVersion
    let size: Int64
    /// The process that opened it, whose trace its reads teach (CONTRACT §15); nil on a mount that does not
    /// learn (a local domain).
    let opener: TraceOpener?
}
