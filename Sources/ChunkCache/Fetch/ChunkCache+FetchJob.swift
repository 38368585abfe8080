import FileIO
import Foundation
import LMDBKit

extension ChunkCache {
    /// Runs `body` in a read snapshot. When a chunk the plan found left the cache before it was read (a
    /// parallel worker's newer snapshot saw `verify --repair` mark it absent), `body` runs again in a fresh
    /// snapshot, where the planner sees the loss; a fetch never reports that as `versionNoLongerAvailable`
    /// (<doc:FileProviderRules#C4>).
    static func inFreshSnapshots<R>(
        of store: Store, fetching item: ItemIdentifier, _ body: (borrowing ReadTransaction) throws -> R
    ) throws -> R {
        var attempts = 0
        while true {
            do {
                return try store.environment.read(body)
            } catch let vanished as ChunkVanished {
                attempts += 1
                guard attempts < maxSnapshots else {
                    throw CacheError(
                        .corruptData,
                        "chunk \(vanished.index) of item \(item) kept leaving the cache while it was read; run `chunkcache verify --repair`, then retry"
                    )
                }
            } catch {
                throw CacheError.wrap(error, store: store.path, doing: "fetching \(item)")
            }
        }
    }

    /// Snapshots a fetch tries before it gives up on chunks that keep leaving the cache.
    static let maxSnapshots = 3
}
