extension ChunkCache {
    /// Whether puts and imports store a new version's chunks as deltas against the item's previous version
    /// when that saves space (<doc:Contract#14-Chunk-encodings>). On by default.
    public var storesDeltas: Bool {
        get async throws {
            let store = self.store
            return try await runBlocking(doing: "reading the store's settings", store: store.path) { _ in
                try store.environment.read { txn in try txn.counter(store.dbs, MetaKey.deltasOff) == 0 }
            }
        }
    }

    /// Turns deltas on or off for the puts and imports that follow (`init --deltas` / `--no-deltas`). Chunks
    /// already stored keep their encoding: turning deltas off makes no chunk plain.
    public func setStoresDeltas(_ enabled: Bool) async throws {
        try await recordSetting(MetaKey.deltasOff, enabled ? 0 : 1, doing: "setting whether puts store deltas")
    }

    /// Records a setting in `meta` on the writer; `doing` completes "… failed" in the error.
    func recordSetting(_ name: String, _ value: UInt64, doing what: String) async throws {
        let store = self.store
        do {
            try await store.writer.write { txn in try txn.setCounter(store.dbs, name, value) }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: what)
        }
    }
}
