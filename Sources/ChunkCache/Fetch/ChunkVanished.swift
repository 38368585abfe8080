import FileIO
import Foundation

/// A chunk the plan found in the cache was absent when it was read: the reading snapshot is newer than the
/// planning one, and `verify --repair` (or eviction) marked the chunk absent in between. The fetch is planned
/// again in a newer snapshot, never reported as `versionNoLongerAvailable` (<doc:FileProviderRules#C4>).
struct ChunkVanished: Error {
    let index: Int64
}
