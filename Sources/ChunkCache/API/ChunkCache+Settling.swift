extension ChunkCache {
    /// Settles every downloaded chunk the store holds unsettled, and returns what it did
    /// (<doc:Contract#10-Origins-the-cold-path>).
    ///
    /// A chunk downloaded from an origin is served to its reader as it arrives and stored first as a *fill*:
    /// its raw bytes at their place in the version, checked by XXH3 on every read. Settling names it by
    /// SHA-256, checks that against the hash the store knew for it (a mismatch drops it, so the next read
    /// downloads it again, and is counted in ``SettleResult/mismatched``), deduplicates it against the
    /// store and compresses it. A process settles in the background once its downloads have been quiet for a
    /// moment; this settles all of it now, after this process's downloads are stored, waiting for another
    /// process's settling to finish first.
    public func settle() async throws -> SettleResult {
        await waitForDownloads()
        let engine = self.engine
        return try await runBlocking(doing: "settling downloaded chunks", store: engine.store.path) {
            try Settler.settleAll(engine)
        }
    }

    /// Whether this process settles downloaded chunks in the background (the default) or only when
    /// ``settle()`` is called.
    public func settleInBackground(_ enabled: Bool) {
        engine.settler.setBackground(enabled)
    }
}

extension ChunkCache {
    /// Settles like ``settle()``, unless another process settles the store now: then nothing (it takes what
    /// there is). A command that downloaded leaves this running behind it; a queue of them would each wait
    /// for the one before only to find nothing left.
    package func settleUnlessSettling() async throws -> SettleResult {
        await waitForDownloads()
        let engine = self.engine
        return try await runBlocking(doing: "settling downloaded chunks", store: engine.store.path) {
            try Settler.settleAll(engine, waiting: false)
        }
    }

    /// Whether this process downloaded chunks that may still wait to be settled: a short-lived command then
    /// leaves settling to a process of its own (``settle()``) rather than to its own exit.
    package var downloadedFills: Bool { engine.settler.filledHere }
}
