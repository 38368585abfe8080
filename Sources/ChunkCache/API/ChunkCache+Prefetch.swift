import OriginKit

extension ChunkCache {
    /// Downloads what the store lacks of `range` of `item` at `version` into the store, and reads none of it
    /// back: a fetch of the range afterwards is warm (<doc:Contract#10-Origins-the-cold-path>).
    ///
    /// The bytes are stored as a read's downloads are, in their cheapest form (fills, settled later), with no
    /// destination buffer or file. The range goes out in extents of ``prefetchExtentBytes``, several at a time
    /// but never more than half the domain's `--pipeline-depth` for all of this process's prefetches together,
    /// so a fetch always finds a request free: a reader's own downloads go first and a prefetch yields to them.
    /// Chunks already stored, or on their way for another fetch, are not asked for again. A mount hydrates
    /// the files programs read at random this way.
    ///
    /// - Parameters:
    ///   - item: An item of a domain with an origin.
    ///   - version: The version to download, which the store must know (the one an open file was opened at,
    ///     say); a prefetch never moves to another one.
    ///   - range: Clamped to the file; rounded out to whole chunks.
    ///   - progress: Counts the bytes and requests this prefetch asks of the origin.
    /// - Throws: `invalidArgument` for a domain without an origin or a negative range; `noSuchItem` for an item
    ///   the store does not know; `versionNoLongerAvailable` when the store or the origin no longer has
    ///   `version`; the origin's errors (<doc:Contract#10-Origins-the-cold-path>); `userCancelled`.
    public func prefetch(
        _ item: ItemIdentifier, version: ItemVersion, range: ByteRange, progress: DownloadProgress = DownloadProgress()
    ) async throws {
        guard range.location >= 0, range.length >= 0 else {
            throw CacheError(
                .invalidArgument, "a prefetch of \(item) needs a range at or after offset 0, not \(range)")
        }
        try await prefetch(item, version: version, progress: progress) { record, _ in
            Self.extents(of: range, size: record.size, chunkSize: Int64(record.layout.chunkSize)).map { [$0] }
        }
    }

    /// The prefetch of the requests `batches` makes of the version's record (told whether the origin takes
    /// many ranges in one request): a batch of one range is filled as a read's range is, one of several as
    /// one download of their chunks (``ColdFill/fill(_:scattered:)``).
    func prefetch(
        _ item: ItemIdentifier, version: ItemVersion, progress: DownloadProgress,
        batches: @Sendable (_ record: VersionRecord, _ manyRanges: Bool) -> [[ByteRange]]
    ) async throws {
        let store = self.store
        let (session, record) = try await runBlocking(doing: "starting a prefetch of \(item)", store: store.path) {
            try self.prefetchTarget(item, version: version.contentVersion)
        }
        let fill = ColdFill(engine: engine, session: session, item: item.rawValue, counters: progress)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var started = 0
                for batch in batches(record, session.origin.readsManyRanges) {
                    // As many batches under way as the lane lets run: the rest wait here, claiming nothing yet.
                    if started >= session.prefetches.limit { _ = try await group.next() }
                    group.addTask {
                        try await session.prefetches.withPermit {
                            if batch.count == 1 {
                                _ = try await fill.fill(record, range: batch[0], ahead: nil)
                            } else {
                                try await fill.fill(record, scattered: batch)
                            }
                        }
                    }
                    started += 1
                }
                try await group.waitForAll()
            }
        } catch let failure as OriginFailure {
            throw try await originFailed(failure, item, strict: true)
        } catch is CancellationError {
            throw CacheError(.userCancelled, "the prefetch of \(item) was cancelled")
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "prefetching \(item) from its origin")
        }
    }

    /// How much one request of a prefetch asks for: large enough to run at the wire's speed with a few in
    /// flight, small enough that a reader needing a chunk near the end of one waits little for it.
    public static let prefetchExtentBytes: Int64 = 2 << 20

    /// `range` clamped to `size`, cut into extents of ``prefetchExtentBytes`` (at least a chunk) from its start.
    static func extents(of range: ByteRange, size: Int64, chunkSize: Int64) -> [ByteRange] {
        let step = max(chunkSize, prefetchExtentBytes)
        let end = min(size, range.end)
        guard range.location < end else { return [] }
        return stride(from: range.location, to: end, by: Int(step)).map {
            ByteRange(location: $0, length: min(step, end - $0))
        }
    }

    /// The origin session and the version record a prefetch downloads with. Blocking work: LMDB reads, and a
    /// session may be made.
    private func prefetchTarget(_ item: ItemIdentifier, version contentVersion: [UInt8]) throws -> (
        OriginSession, VersionRecord
    ) {
        let store = self.store
        let (domain, version) = try store.environment.read { txn in
            let domain = try Records.domain(item.domain, in: txn, store.dbs)
            _ = try Records.item(item.rawValue, domain: item.domain, in: txn, store.dbs)
            let key = Keys.version(
                itemKey: Keys.item(domain: item.domain, id: item.rawValue), contentVersion: contentVersion)
            let version = try txn.withValue(store.dbs.versions, key: key) {
                try VersionRecord(decoding: $0, name: "a version of \(item)")
            }
            return (domain, version)
        }
        guard domain.origin != nil, let session = try engine.origins.session(for: item.domain, domain) else {
            throw CacheError(
                .invalidArgument,
                "domain \"\(item.domain)\" has no origin: the store holds all of \(item) already, there is nothing to prefetch"
            )
        }
        guard let version else {
            throw CacheError(
                .versionNoLongerAvailable,
                "the store no longer knows version \(String(decoding: contentVersion, as: UTF8.self)) of \(item); fetch the item to learn its current one"
            )
        }
        return (session, version)
    }
}
