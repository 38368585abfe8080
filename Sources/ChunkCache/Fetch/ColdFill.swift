import Foundation
import LMDBKit
import OriginKit

/// Fills what a fetch of an origin domain lacks from the origin (<doc:Contract#10-Origins-the-cold-path>): discovers an
/// unknown item in the first ranged GET, downloads only the absent chunks of the range (adjacent ones in one request of
/// at most 8 MiB) and the read-ahead after it, and waits until the range's chunks are stored.
///
/// Downloads run as tasks of their own, shared with every fetch that needs their chunks (single flight); a
/// cancelled fetch stops the downloads of its own range and stops waiting.
struct ColdFill: Sendable {
    let engine: Engine
    var store: Store { engine.store }
    let session: OriginSession
    let item: String
    let counters: DownloadProgress

    /// The most bytes one request asks for.
    static let maxRequestBytes: Int64 = 8 << 20

    /// What a discovery learned, and the fetch's bytes when it is served from its download, before they are stored.
    struct Discovered: Sendable {
        let version: VersionRecord
        let item: ItemRecord
        let domainVersion: DomainVersion
        /// The retrieved range of the fetch and its bytes (``DirectBytes``), or nil: the fetch fills its range
        /// of the version and reads it from the store.
        let downloaded: (range: ByteRange, bytes: [UInt8])?
    }

    /// Discovers the item with one ranged GET of the range a fetch of `minimal` retrieves (its first 8 MiB;
    /// from the start for a whole-file fetch): the response tells size and version, the item and an all-absent
    /// version are recorded, and the bytes it brings are stored.
    ///
    /// - Parameters:
    ///   - pinned: The version the origin must hold; nil for whatever it holds now.
    ///   - refresh: Ask even when the store knows the item (its version is stale).
    ///   - direct: The fetch may take its range's bytes before they are stored (a small hand-off).
    ///   - streamed: The fetch's own file, which the bytes of its range are written into as they arrive.
    /// - Returns: What the origin holds, also when a concurrent fetch discovered it (as the store recorded it);
    ///   nil when that discovery did not record the version `pinned` (discover again, refreshing).
    func discover(
        pinned: [UInt8]?, minimal: ByteRange?, alignment: Int, refresh: Bool = false, direct: Bool = false,
        streamed: StreamedFile? = nil
    ) async throws -> Discovered? {
        let (flight, claimed) = session.discoveries.claim(item)
        guard claimed else {
            try await flight.wait()
            return try recordedVersion(pinned)
        }
        // A discovery that ended between this fetch's plan and its claim recorded what this one would: take
        // its answer rather than ask twice.
        if !refresh, let recorded = try recordedVersion(pinned) {
            session.discoveries.finish(item, flight, with: .success(()))
            return recorded
        }
        let range = Self.discoveryRange(minimal, alignment: alignment, chunkSize: Int64(store.layout.chunkSize))
        let head = SetOnce<DiscoveryHead>()
        let store = self.store
        let session = self.session
        let item = self.item
        let counters = self.counters
        // The request runs on its own, so the fetch can return as soon as its bytes are in while they are stored.
        session.downloads.begin()  // counted before the task starts, so waitForDownloads() cannot miss it
        let download = Task {
            defer { session.downloads.end() }
            do {
                try await session.requests.withPermit {
                    counters.requested()
                    try await session.origin.read(
                        item, range: range, version: pinned.map { String(decoding: $0, as: UTF8.self) },
                        object: { object in
                            // What the origin said can be asked again: a crash may lose this record, never damage the store.
                            let recorded = try await store.writer.write(durability: .deferMeta) { txn in
                                try txn.recordOriginVersion(
                                    domain: session.domain, item: item, contentVersion: Array(object.version.utf8),
                                    size: object.size, layout: store.layout, store.dbs)
                            }
                            let version = recorded.version
                            let end = min(range.upperBound, object.size)
                            let chunks = try self.claimAbsent(
                                of: version,
                                in: ByteRange(location: range.lowerBound, length: max(0, end - range.lowerBound))
                            ).mine
                            // The fetch's retrieved range, now the size is known: its progress counts its bytes.
                            let retrieved =
                                minimal.map {
                                    version.layout.retrievedRange(
                                        for: $0, aligningTo: Int64(alignment), length: object.size)
                                } ?? ByteRange(location: 0, length: object.size)
                            counters.expect(retrieved)
                            var directBytes: DirectBytes?
                            if direct, minimal != nil {
                                let claimedIndices = Set(chunks.map(\.index))
                                let indices =
                                    retrieved.length > 0
                                    ? Array(
                                        (retrieved.location >> version.layout.shift)...((retrieved.end - 1)
                                            >> version.layout.shift)) : []
                                if retrieved.length > 0 && retrieved.length <= FetchThresholds.inlineBytes
                                    && indices.allSatisfy(claimedIndices.contains)
                                {
                                    directBytes = DirectBytes(
                                        range: retrieved, manifestID: version.manifestID,
                                        chunkShift: version.layout.shift)
                                }
                            }
                            // The discovery's bytes go into the fetch's file too, so the fill that follows can
                            // complete it from its own download.
                            let fileTarget = streamed?.target(for: version, range: retrieved)
                            head.set(
                                DiscoveryHead(
                                    recorded: recorded,
                                    sink: ChunkSink(
                                        engine: engine, version: version, item: item, session: session, claimed: chunks,
                                        counters: counters, direct: directBytes ?? fileTarget),
                                    direct: directBytes
                                        ?? fileTarget.flatMap {
                                            // The fetch is served when the discovery brings all its range.
                                            $0.missing.isSubset(of: Set(chunks.map(\.index))) ? $0 : nil
                                        }))
                            session.discoveries.finish(item, flight, with: .success(()))
                        },
                        deliver: { offset, bytes in try await head.current?.sink.deliver(offset, bytes) })
                }
                try await head.current?.sink.finish()
            } catch {
                head.current?.sink.abandon(error)
                session.discoveries.finish(item, flight, with: .failure(error))
                throw error
            }
        }
        // Cancelling the fetch cancels the download it started (the waits below do not pass it on by themselves).
        let finished = {
            try await withTaskCancellationHandler {
                try await download.value
            } onCancel: {
                download.cancel()
            }
        }
        do {
            try await flight.wait()
            guard let discovered = head.current else {
                try await finished()
                return try recordedVersion(pinned)
            }
            let recorded = discovered.recorded
            if let direct = discovered.direct {
                do {
                    let bytes = try await direct.wait()
                    return Discovered(
                        version: recorded.version, item: recorded.item, domainVersion: recorded.domainVersion,
                        downloaded: (direct.range, bytes))
                } catch is CancellationError where Task.isCancelled {
                    throw CancellationError()
                } catch {
                    // Serving from the download failed with the download: its own error follows.
                }
            }
            try await finished()
            return Discovered(
                version: recorded.version, item: recorded.item, domainVersion: recorded.domainVersion, downloaded: nil)
        } catch {
            download.cancel()
            // The download's own failure says more than a waiter's.
            if case .failure(let failure) = await download.result { throw failure }
            throw error
        }
    }

    /// The item's version as the store recorded it: `pinned`, or when nil the newest; nil when the store
    /// holds no such version.
    private func recordedVersion(_ pinned: [UInt8]?) throws -> Discovered? {
        let itemKey = Keys.item(domain: session.domain, id: item)
        let dbs = store.dbs
        return try store.environment.read { txn -> Discovered? in
            guard try txn.contains(dbs.items, key: itemKey) else { return nil }
            let versions = try Records.versions(ofItemKey: itemKey, in: txn, dbs)
            let version = pinned.map { pinned in versions.first { $0.contentVersion == pinned } } ?? versions.first
            guard let version else { return nil }
            return Discovered(
                version: version, item: try Records.item(item, domain: session.domain, key: itemKey, in: txn, dbs),
                domainVersion: DomainVersion(rawValue: try Records.domain(session.domain, in: txn, dbs).version),
                downloaded: nil)
        }
    }

    /// Downloads the absent chunks of `range` of `version`, and the read-ahead `ahead`, and waits for those
    /// of `range`, including ones other fetches are downloading.
    ///
    /// - Parameter direct: The caller can take the range's bytes before they are stored: for a range of at
    ///   most ``FetchThresholds/inlineBytes`` it returns them as soon as the absent chunks arrive (checked
    ///   against known hashes), with the chunks the store holds read from it, and the downloaded chunks are
    ///   stored behind it.
    /// - Parameter streamed: The fetch's own file (a large range): when this fill downloads every chunk of
    ///   the range not written into it yet, they are written into it as they arrive and the fill returns
    ///   once they all are, while the chunks are stored behind it.
    /// - Returns: The range's bytes when the fetch is served from its download (empty when they went into
    ///   `streamed`); nil when they are in the store.
    func fill(
        _ version: VersionRecord, range: ByteRange, ahead: Range<Int64>?, direct: Bool = false,
        streamed: StreamedFile? = nil
    ) async throws -> [UInt8]? {
        let needed = try claimAbsent(of: version, in: range)
        var extra: [ClaimedChunk] = []
        if let ahead {
            extra = try claimAbsent(of: version, in: ByteRange(location: ahead.lowerBound, length: Int64(ahead.count)))
                .mine
        }
        // A small range is served from the bytes as they arrive, never from a commit: the chunks on their way
        // are taken from the downloads bringing them (this fill's, or another's: concurrent reads of nearby
        // ranges share one download), and those the store holds already (a read-ahead's earlier batches) are
        // read from it here.
        let directBytes =
            direct && range.length > 0 && range.length <= FetchThresholds.inlineBytes
            ? DirectBytes(range: range, manifestID: version.manifestID, chunkShift: version.layout.shift)
            : streamed.flatMap { Self.fileTarget($0, version: version, range: range, mine: needed.mine) }
        let urgent = Set(needed.mine.map(\.index))
        var ownDownloads: [Task<Void, Never>] = []
        for run in Self.runs(of: needed.mine + extra, chunkShift: version.layout.shift) {
            let task = startDownload(run, of: version, direct: directBytes)
            if run.contains(where: { urgent.contains($0.index) }) { ownDownloads.append(task) }
        }
        if let directBytes, directBytes.isUrgent {
            Self.takeArriving(needed.awaited, notIn: needed.mine, into: directBytes)
            engine.probes.beforeTakingStored?()
            // The store holds the chunks of the range nothing brings (none when every one is on its way). Which
            // those are comes from the plan, never from what is still missing: the downloads started above may
            // have handed over chunks already, and a count of the missing ones then hid a stored chunk, which
            // nothing would ever bring (the fetch waited forever).
            do {
                try takeStored(of: version, in: range, except: Set(needed.awaited.map(\.index)), into: directBytes)
            } catch {
                directBytes.fail(error)  // evicted or damaged since: the fetch waits for the store instead
            }
        }
        do {
            if let directBytes, let bytes = try? await directBytes.wait() { return bytes }
            for (_, flight) in needed.awaited { try await flight.wait() }
            return nil
        } catch let error as CancellationError where Task.isCancelled {
            for task in ownDownloads { task.cancel() }
            throw error
        }
    }

    /// Hands `direct` the bytes of the chunks other downloads bring as they arrive; a chunk stored before
    /// its bytes could be handed over makes the fetch wait for the store instead. One task takes them in
    /// order (they arrive in order), not one per chunk: a 1 MiB read made 16 tasks and as many wake-ups.
    private static func takeArriving(
        _ awaited: [(index: Int64, flight: Flight)], notIn mine: [ClaimedChunk], into direct: DirectBytes
    ) {
        let own = Set(mine.map { ObjectIdentifier($0.flight) })
        let others = awaited.filter { !own.contains(ObjectIdentifier($0.flight)) }
        guard !others.isEmpty else { return }
        Task {
            do {
                for (index, flight) in others {
                    guard let bytes = try await flight.waitForBytes() else {
                        return direct.fail(CancellationError())
                    }
                    try bytes.withUnsafeBytes { try direct.take(index, $0, isZero: false) }
                }
            } catch {
                direct.fail(error)
            }
        }
    }

    /// Hands `direct` the chunks of `range` the store holds (all but `absent`), decoded and checked. Bounded
    /// work (at most ``FetchThresholds/inlineBytes``) on the calling thread, as a small warm read's is.
    /// - Throws: ``ChunkVanished`` for a chunk evicted since the claim, `corruptData` for a damaged one.
    private func takeStored(
        of version: VersionRecord, in range: ByteRange, except absent: Set<Int64>, into direct: DirectBytes
    ) throws {
        let layout = version.layout
        let first = range.location >> layout.shift
        let last = (min(range.end, version.size) - 1) >> layout.shift
        guard last >= first, absent.count < last - first + 1 else { return }
        let dbs = store.dbs
        try store.environment.read { txn in
            try store.codecs.withDecoder { context in
                let reader = StoredChunkReader(context, dbs)
                var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
                for index in first...last where !absent.contains(index) {
                    let chunk = layout.range(ofChunk: index, length: version.size)
                    switch try reader.read(
                        try cursor.entry(index, in: txn), of: version.manifestID, spanning: chunk,
                        into: { context.buffer }, in: txn)
                    {
                    case .zero: try direct.take(index, ZeroBytes.prefix(Int(chunk.length)), isZero: true)
                    case .bytes(let raw): try direct.take(index, raw, isZero: false)
                    case .unreadable(.damaged(_, let error)): throw error
                    case .unreadable: throw ChunkVanished(index: index)
                    }
                }
            }
        }
    }

    /// The fetch's file as this fill's target, when the fill downloads every chunk of the range the file
    /// lacks; otherwise the file is given up (the fetch is written from the store).
    private static func fileTarget(
        _ streamed: StreamedFile, version: VersionRecord, range: ByteRange, mine: [ClaimedChunk]
    ) -> DirectBytes? {
        guard let target = streamed.target(for: version, range: range),
            target.missing.isSubset(of: Set(mine.map(\.index)))
        else {
            streamed.giveUp()
            return nil
        }
        return target
    }

    /// Downloads the chunks of `ranges` the store lacks and waits for them, and for those other downloads
    /// bring. Where the origin takes many ranges in one request, the chunks this claims are one download, a
    /// request of their runs; elsewhere each run of adjacent chunks is a request of its own.
    func fill(_ version: VersionRecord, scattered ranges: [ByteRange]) async throws {
        var mine: [ClaimedChunk] = []
        var awaited: [(index: Int64, flight: Flight)] = []
        for range in ranges {
            let claimed = try claimAbsent(of: version, in: range)
            mine += claimed.mine
            awaited += claimed.awaited
        }
        let downloads =
            session.origin.readsManyRanges && !mine.isEmpty
            ? [mine] : Self.runs(of: mine, chunkShift: version.layout.shift)
        var started: [Task<Void, Never>] = []
        for run in downloads { started.append(startDownload(run, of: version)) }
        do {
            for (_, flight) in awaited { try await flight.wait() }
        } catch let error as CancellationError where Task.isCancelled {
            for task in started { task.cancel() }
            throw error
        }
    }

    /// Downloads chunk `index` of `version` again and overwrites the copy that failed its check on read
    /// (<doc:Contract#10-Origins-the-cold-path> "Integrity"): the stored chunk `digest`, or, when nil, the fill. Waits
    /// until it is stored. Nothing is downloaded when the entry changed since the read (a fill settled or evicted
    /// meanwhile): the fetch reads its plan again, and what is absent then is its one refill.
    func replace(_ version: VersionRecord, index: Int64, digest: ChunkDigest?) async throws {
        let key = ChunkKey(manifestID: version.manifestID, index: index)
        let (flight, claimed) = session.chunks.claim(key)
        if claimed {
            let current = try store.environment.read { txn in
                var cursor = ManifestCursor(manifestID: version.manifestID, dbs: store.dbs)
                return try cursor.entry(index, in: txn)
            }
            switch (current, digest) {
            case (.stored(let stored), let digest?) where stored == digest:
                let run = [ClaimedChunk(index: index, flight: flight, expected: digest)]
                startDownload(run, of: version, mode: .replaceStored)
            case (.filled, nil):
                let run = [ClaimedChunk(index: index, flight: flight, expected: nil)]
                startDownload(run, of: version, mode: .refill)
            default:
                session.chunks.finish(key, flight, with: .success(()))
            }
        }
        try await flight.wait()
    }

    /// Starts downloading `ahead` of `version` without waiting (read-ahead behind a warm fetch).
    func prefetch(_ version: VersionRecord, ahead: Range<Int64>) throws {
        let claimed = try claimAbsent(
            of: version, in: ByteRange(location: ahead.lowerBound, length: Int64(ahead.count))
        ).mine
        for run in Self.runs(of: claimed, chunkShift: version.layout.shift) {
            startDownload(run, of: version)
        }
    }

    /// Downloads one run of consecutive claimed chunks in one ranged request pinned to the version, storing
    /// them as they arrive, in a task of its own, counted at once in the session's running downloads
    /// (``ChunkCache/waitForDownloads()``). A chunk failing its hash check is downloaded once more, then
    /// `corruptData`. Every outcome ends the run's flights.
    @discardableResult
    private func startDownload(
        _ run: [ClaimedChunk], of version: VersionRecord, mode: SinkMode = .fill, direct: DirectBytes? = nil
    ) -> Task<Void, Never> {
        let sink = ChunkSink(
            engine: engine, version: version, item: item, session: session, claimed: run, counters: counters,
            mode: mode, direct: direct)
        let expected = String(decoding: version.contentVersion, as: UTF8.self)
        let session = self.session
        let item = self.item
        let counters = self.counters
        session.downloads.begin()
        return Task {
            defer { session.downloads.end() }
            var mismatches = 0
            while let range = sink.remainingRange {
                do {
                    try await session.requests.withPermit {
                        counters.requested()
                        let checked: @Sendable (RemoteObject) async throws -> Void = { object in
                            guard object.version == expected, object.size == version.size else {
                                throw OriginFailure.versionChanged(current: object)
                            }
                        }
                        let deliver: @Sendable (Int64, RemoteBytes) async throws -> Void = { offset, bytes in
                            try await sink.deliver(offset, bytes)
                        }
                        // Runs apart from each other go in one request where the origin takes many ranges;
                        // elsewhere the request spans them and the sink skips what lies between.
                        let runs = session.origin.readsManyRanges ? sink.remainingRuns : []
                        if runs.count > 1 {
                            try await session.origin.read(
                                item, ranges: runs, version: expected, object: checked, deliver: deliver)
                        } else {
                            try await session.origin.read(
                                item, range: range, version: expected, object: checked, deliver: deliver)
                        }
                    }
                    try await sink.finish()
                } catch is ChunkMismatch where mismatches == 0 {
                    mismatches += 1
                    sink.restart()
                } catch let mismatch as ChunkMismatch {
                    sink.abandon(
                        CacheError(
                            .corruptData,
                            "chunk \(mismatch.index) of item \"\(item)\" at the origin of domain \"\(session.domain)\" hashes to \(mismatch.actual.map { "\($0)" } ?? "zeros"), not \(mismatch.expected), twice; the origin serves other bytes than the version it names: check it, then retry"
                        ))
                    return
                } catch {
                    sink.abandon(error)
                    return
                }
            }
        }
    }

    /// The absent chunks of `range`: those this call claimed (it must download them), and the flights of all
    /// of them, claimed here or by another download, to wait for.
    ///
    /// Bounded reads of the manifest's pages, page-cache hot, on the calling thread, as warm hand-offs are
    /// (``BlockingPool``).
    private func claimAbsent(of version: VersionRecord, in range: ByteRange) throws -> (
        mine: [ClaimedChunk], awaited: [(index: Int64, flight: Flight)]
    ) {
        guard range.length > 0 else { return ([], []) }
        let layout = version.layout
        let first = range.location >> layout.shift
        let last = (min(range.end, version.size) - 1) >> layout.shift
        guard last >= first else { return ([], []) }
        let absent = try absentEntries(of: version, among: first...last)
        var claimed: [ClaimedChunk] = []
        var awaited: [(index: Int64, flight: Flight)] = []
        for (index, digest) in absent {
            let (flight, isMine) = session.chunks.claim(ChunkKey(manifestID: version.manifestID, index: index))
            if isMine { claimed.append(ClaimedChunk(index: index, flight: flight, expected: digest)) }
            awaited.append((index, flight))
        }
        guard !claimed.isEmpty else { return ([], awaited) }
        // A download stores its chunks before it ends their flights, so a second read sees every chunk stored
        // between the first and the claim: those flights end at once.
        let stillAbsent = Set(try absentEntries(of: version, among: claimed.map(\.index)).map(\.index))
        var mine: [ClaimedChunk] = []
        for chunk in claimed {
            if stillAbsent.contains(chunk.index) {
                mine.append(chunk)
            } else {
                session.chunks.finish(
                    ChunkKey(manifestID: version.manifestID, index: chunk.index), chunk.flight, with: .success(()))
            }
        }
        return (mine, awaited)
    }

    /// The entries of `indices` (ascending) of `version` that are absent, with the hash the manifest knows.
    private func absentEntries(of version: VersionRecord, among indices: some Sequence<Int64>) throws -> [(
        index: Int64, digest: ChunkDigest?
    )] {
        try store.environment.read { txn in
            var cursor = ManifestCursor(manifestID: version.manifestID, dbs: store.dbs)
            var absent: [(index: Int64, digest: ChunkDigest?)] = []
            for index in indices {
                if case .absent(let digest) = try cursor.entry(index, in: txn) { absent.append((index, digest)) }
            }
            return absent
        }
    }

    /// Claimed chunks grouped into runs of consecutive indices of at most ``maxRequestBytes`` each.
    static func runs(of chunks: [ClaimedChunk], chunkShift: Int) -> [[ClaimedChunk]] {
        let perRun = max(1, Int(maxRequestBytes >> chunkShift))
        var runs: [[ClaimedChunk]] = []
        for chunk in chunks.sorted(by: { $0.index < $1.index }) {
            if let last = runs.last?.last, last.index + 1 == chunk.index, runs[runs.count - 1].count < perRun {
                runs[runs.count - 1].append(chunk)
            } else {
                runs.append([chunk])
            }
        }
        return runs
    }

    /// The range a discovery asks for: the chunk-and-alignment-rounded range of `minimal`, at most
    /// ``maxRequestBytes``, at least one chunk; the file's start for a whole-file fetch.
    static func discoveryRange(_ minimal: ByteRange?, alignment: Int, chunkSize: Int64) -> Range<Int64> {
        guard let minimal else { return 0..<maxRequestBytes }
        // No item is longer than 1 PiB: clamping there keeps the arithmetic far from overflow.
        let limit = ChunkLayout.maxItemLength
        let unit = max(Int64(alignment), chunkSize)
        let lower = min(minimal.location, limit) / unit * unit
        let upper = min(minimal.location, limit) + min(max(minimal.length, 1), limit)
        let rounded = (upper + unit - 1) / unit * unit
        return lower..<max(lower + chunkSize, min(rounded, lower + maxRequestBytes))
    }
}

/// What a discovery learns in its response's head, for the body that follows and for the fetch waiting on it:
/// set once, when the head arrives (a ``SetOnce``), read after the discovery's flight ends.
private struct DiscoveryHead: Sendable {
    let recorded: RecordedVersion
    let sink: ChunkSink
    let direct: DirectBytes?
}
