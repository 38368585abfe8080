import FileIO
import Foundation

/// What eviction could free and what pins hold (`stat`'s `evictableBytes` and `pinnedBytes`,
/// <doc:Contract#12-A-bounded-cache>): stored bytes of distinct chunks, each counted once however many versions share
/// it.
struct HeldChunks: Sendable, Equatable {
    /// Chunks every reference of which is a version of an unpinned item of an origin domain.
    var evictableBytes: Int64 = 0
    /// Chunks a version of a pinned item references.
    var pinnedBytes: Int64 = 0
}
