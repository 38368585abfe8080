import Foundation
import LMDBKit
import ZstdKit

extension ChunkCache {
    /// The hot tier's size (<doc:Contract#14-Chunk-encodings>): `init --hot-size` once set, else the smaller of 10 % of
    /// the bound and 1 GiB; 0 when the tier is off.
    public func hotTierSize() async throws -> Int64 {
        let store = self.store
        return try await runBlocking(doing: "reading the hot tier's size", store: store.path) { _ in
            try store.environment.read { txn in try txn.hotBudget(store.dbs, maxSize: store.maxSize) }
        }
    }

    /// Keeps at most `bytes` of chunks decoded in the hot tier from now on (`init --hot-size`), recorded in the
    /// store; 0 turns the tier off. Hot chunks beyond the new size are compressed again before this returns.
    /// - Throws: `invalidArgument` for a negative size.
    public func setHotTierSize(_ bytes: Int64) async throws {
        guard bytes >= 0 else {
            throw CacheError(
                .invalidArgument, "--hot-size \(bytes) is negative; give a size such as 256MiB, or 0 to turn it off")
        }
        let store = self.store
        try await recordSetting(HotMeta.size, UInt64(bytes), doing: "setting the hot tier's size")
        do {
            try await store.writer.onQueue { try HotTier.coolToBudget(store) }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "cooling the hot tier to its new size")
        }
        engine.usage.hotTracking.store(bytes > 0, ordering: .relaxed)
    }
}
