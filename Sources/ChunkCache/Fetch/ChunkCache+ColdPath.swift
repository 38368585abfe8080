import FileIO
import Foundation
import LMDBKit
import OriginKit

extension ChunkCache {
    /// Waits until every download this process started from an origin is stored.
    ///
    /// A fetch of a small cold range returns its bytes as soon as they arrive and stores the chunks behind it
    /// (read-ahead stores behind too): call this before the process exits so what was downloaded is kept
    /// (what is not is downloaded again next time; the store is never damaged).
    /// It leaves the runs of learned prefetch open (a pin or a settle mid-run must not cut them short): a process
    /// about to exit calls ``finishTraceSessions()`` first, so what its fetches taught is saved.
    public func waitForDownloads() async {
        await engine.origins.waitUntilStored()
    }

    /// The cold path, for async and blocking callers: fills what a fetch of an origin domain lacks from the
    /// origin (`first`, what the caller's warm attempt found absent, with the plan it made) and serves the plan
    /// the miss carried (`serve`), without planning again. A fetch that may be served from its download (a
    /// hand-off of a small range whose every chunk it downloads) is written from the downloaded bytes at once,
    /// the chunks stored behind it (``DirectBytes``, `servesFromDownload`); a large one into its own file
    /// (`streamed`), whose bytes `servesFromDownload` then is given empty. Read-ahead starts once, after the
    /// fetch is served.
    ///
    /// It goes one way: discover (an unknown item), fill, serve. Two things send it back, each bounded: a
    /// chunk that left the store between the fill and the read (another process's eviction, a damaged fill)
    /// is filled again from the same plan (at most ``ColdRounds/maxRefills`` times), a chunk found damaged on
    /// read is downloaded again (each once), and an origin that moved on from the version being filled is asked for the
    /// version it holds now (non-strict), at most ``ColdRounds/maxChanges`` times.
    ///
    /// - Returns: What served the fetch, and what it downloaded.
    func throughOrigin<Served: ServedBytes & Sendable>(
        _ target: ColdTarget, options: FetchOptions, request: FetchRequest,
        servesFromDownload: (@Sendable ([UInt8], DownloadedRange) throws -> Served)? = nil,
        streamed: StreamedFile? = nil, first: Absence,
        serve: @Sendable (ColdPlan) async throws -> FetchOutcome<Served>
    ) async throws -> (served: Served, downloaded: DownloadProgress) {
        let cold = ColdRequest(
            target, options: options, request: request, servesFromDownload: servesFromDownload != nil,
            streamed: streamed, downloads: engine.space.unreadDownloads)
        // Eviction spares what this fetch downloads until it has read it (PolicyProtection).
        defer { cold.claim.end() }
        var readAheadDone = false
        var absence = first
        var rounds = ColdRounds(item: target.item)
        while true {
            // The plan knows the retrieved range now: a progress display learns how many bytes are coming.
            if case .chunks(let plan) = absence { request.progress?.expect(plan.range) }
            let served: Served
            switch try await coldFill(absence, cold, readAheadDone: &readAheadDone) {
            case .servedFromDownload(let bytes, let downloaded):
                // Only a fetch that gave `servesFromDownload` is offered its downloaded bytes.
                served = try servesFromDownload!(bytes, downloaded)
            case .again(let next):
                try rounds.change()
                absence = next
                continue
            case .filled(let plan):
                switch try await serve(plan) {
                case .served(let fromStore): served = fromStore
                case .missing(let lost):
                    if case .damaged(_, let chunk) = lost { try rounds.replace(chunk) } else { try rounds.refill() }
                    absence = lost
                    continue
                }
            }
            if !readAheadDone { await readAhead(after: served, target.item) }
            return (served, cold.counters)
        }
    }

    /// The cold path for a caller that owns its thread and cannot await
    /// (``throughOrigin(_:options:request:servesFromDownload:streamed:first:serve:)`` as a task the thread waits for):
    /// served from its download as the async caller's is, and each `serve` runs on the blocking pool.
    @available(*, noasync)
    func throughOriginWaiting<Served: ServedBytes & Sendable>(
        _ target: ColdTarget, options: FetchOptions, request: FetchRequest,
        servesFromDownload: (@Sendable ([UInt8], DownloadedRange) throws -> Served)? = nil,
        streamed: StreamedFile? = nil, first: Absence,
        serve: @escaping @Sendable (ColdPlan) throws -> FetchOutcome<Served>
    ) throws -> (served: Served, downloaded: DownloadProgress) {
        let storePath = store.path
        return try Self.waitFor {
            try await self.throughOrigin(
                target, options: options, request: request, servesFromDownload: servesFromDownload,
                streamed: streamed, first: first
            ) { plan in
                try await runBlocking(doing: "fetching \(target.item)", store: storePath) { try serve(plan) }
            }
        }
    }

    /// Runs `body` as a task and waits for it on the calling thread, which is not a Swift concurrency thread.
    @available(*, noasync)
    private static func waitFor<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) throws -> R {
        let outcome = SetOnce<Result<R, any Error>>()
        Task { outcome.set(await Result { try await body() }) }
        return try outcome.waitBlocking().get()
    }

    /// Writes the bytes a fetch downloaded into its hand-off file (``HandOff/make(size:in:fill:)``), at
    /// their own offsets in a file of the item's size: the fetch is served from its download while the
    /// chunks are stored behind it. Bounded work (at most ``FetchThresholds/inlineBytes``) on the calling
    /// thread, as warm hand-offs are.
    func handOffDownloaded(_ bytes: [UInt8], _ downloaded: DownloadedRange) throws -> FetchResult {
        let store = self.store
        do {
            var flags: MaterializationFlags = []
            let made = try HandOff.make(size: downloaded.version.size, in: store.tmpPath) { file in
                let writer = HandOffWriter(file: file, holesForZeros: downloaded.version.isWhole(downloaded.range))
                let leftHoles = try bytes.withUnsafeBytes {
                    try writer.write(
                        chunks: $0, at: downloaded.range.location, chunkSize: downloaded.version.layout.chunkSize)
                }
                if leftHoles { flags = .knownSparseRanges }
                return .complete
            }
            guard case .file(let path) = made else { preconditionFailure("downloaded bytes are never damaged") }
            return downloaded.served(
                at: URL(fileURLWithPath: path, isDirectory: false), flags: flags, owner: .caller, engine: engine)
        } catch {
            throw CacheError.wrap(
                error, store: store.path, doing: "writing the downloaded range of \(downloaded.item.identifier)")
        }
    }

    /// A range downloaded from the origin, for a hand-off written from its bytes.
    struct DownloadedRange: Sendable {
        let domain: String
        let item: ItemRecord
        let version: VersionRecord
        let range: ByteRange
        let domainVersion: DomainVersion

        /// The item at the version the range is of, as a result names it.
        var publicItem: Item { Records.publicItem(item, domain: domain, version: version) }

        /// A fetch served from the download: records the item's use, as a fetch served from the store does,
        /// and returns the result of a file at `url`.
        func served(at url: URL, flags: MaterializationFlags, owner: FileOwner, engine: Engine) -> FetchResult {
            noteUse(in: engine)
            return FetchResult(
                url: url, item: publicItem, retrievedRange: range, flags: flags, owner: owner,
                domainVersion: domainVersion, cloneStrategy: nil, fromOriginDomain: true)
        }

        /// Records the item's use (``UsageRecorder``).
        func noteUse(in engine: Engine) {
            engine.usage.noteUse(
                of: ItemIdentifier(domain: domain, item.identifier), recorded: item.lastUsedDate, engine: engine)
        }
    }

    /// Where a fill leaves a fetch.
    enum ColdStep: Sendable {
        /// The range's bytes, downloaded by this fetch: the fetch is served from them while they are stored.
        case servedFromDownload([UInt8], DownloadedRange)
        /// The plan's chunks are in the store: read them.
        case filled(ColdPlan)
        /// Go to the origin again for this: the origin moved on from the version being filled (discover the
        /// one it holds now, non-strict), or a discovery another fetch made did not bring the version asked for.
        case again(Absence)
    }

    /// Fills one absence from the origin, mapping the origin's failures to the errors
    /// <doc:Contract#10-Origins-the-cold-path> names: an unknown item is discovered and its range filled at once, with
    /// the same session.
    func coldFill(_ absence: Absence, _ request: ColdRequest, readAheadDone: inout Bool) async throws -> ColdStep {
        let store = self.store
        let item = request.item
        let startsReadAhead = !readAheadDone
        let (session, ahead) = try await sessionAndReadAhead(for: absence, of: item, startsReadAhead: startsReadAhead)
        let fill = ColdFill(engine: engine, session: session, item: item.rawValue, counters: request.counters)
        var filling: ColdPlan?
        do {
            switch absence {
            case .undiscovered(let asked, let minimal, let refresh):
                guard
                    let found = try await fill.discover(
                        pinned: Self.discoveryPin(asked, strict: request.strict, origin: session.origin),
                        minimal: minimal, alignment: request.alignment, refresh: refresh,
                        direct: request.servesFromDownload, streamed: request.streamed)
                else { return .again(.undiscovered(asked: asked, range: minimal, refresh: true)) }
                if let (range, bytes) = found.downloaded {
                    return .servedFromDownload(
                        bytes,
                        DownloadedRange(
                            domain: item.domain, item: found.item, version: found.version, range: range,
                            domainVersion: found.domainVersion))
                }
                let plan = ColdPlan(
                    version: found.version,
                    range: FetchPlanner.retrieved(minimal, of: found.version, alignment: request.alignment),
                    item: found.item, domainVersion: found.domainVersion)
                request.counters.expect(plan.range)
                filling = plan
                let ahead =
                    startsReadAhead
                    ? await aheadOfDiscovered(in: session, item, fetching: plan.range, size: plan.version.size) : nil
                return try await fillChunks(plan, with: fill, ahead: ahead, request, readAheadDone: &readAheadDone)
            case .chunks(let plan):
                filling = plan
                return try await fillChunks(plan, with: fill, ahead: ahead, request, readAheadDone: &readAheadDone)
            case .damaged(let plan, let chunk):
                filling = plan
                try await fill.replace(plan.version, index: chunk.index, digest: chunk.digest)
                return .filled(plan)
            }
        } catch let failure as OriginFailure {
            if case .versionChanged = failure, !request.strict {
                return .again(.undiscovered(asked: nil, range: request.minimal, refresh: true))
            }
            throw try await originFailed(failure, item, strict: request.strict)
        } catch is CancellationError {
            // Either this fetch was cancelled, or another fetch cancelled a download this one waited for: then
            // what it left absent is filled again (a discovery, asked again).
            if Task.isCancelled { throw CacheError(.userCancelled, "the fetch of \(item) was cancelled") }
            return filling.map { .filled($0) } ?? .again(absence)
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "fetching \(item) from its origin")
        }
    }

    /// Fills the absent chunks of `plan` (and the read-ahead `ahead`): the fetch is served from the download
    /// when it may be, else reads the plan from the store.
    private func fillChunks(
        _ plan: ColdPlan, with fill: ColdFill, ahead: Range<Int64>?, _ request: ColdRequest, readAheadDone: inout Bool
    ) async throws -> ColdStep {
        request.claim.protect(plan.version, plan.range)
        readAheadDone = true  // a fill advances the fetch's read-ahead (`ahead`, when it starts it)
        guard
            let bytes = try await fill.fill(
                plan.version, range: plan.range, ahead: ahead, direct: request.servesFromDownload,
                streamed: request.streamed)
        else { return .filled(plan) }
        return .servedFromDownload(
            bytes,
            DownloadedRange(
                domain: request.item.domain, item: plan.item, version: plan.version, range: plan.range,
                domainVersion: plan.domainVersion))
    }

    /// The version a discovery pins its request to, for a fetch that asks for `asked` (<doc:Contract#3-Partial-fetch>,
    /// <doc:Contract#10-Origins-the-cold-path>): a strict fetch's own; a non-strict fetch's when the origin still
    /// serves it by name though the item moved on (an S3 `VersionId`), so the version asked for serves whenever the
    /// origin keeps it, and the origin's current one only when it lacks it (its refusal moves the fetch on,
    /// ``ColdStep/again(_:)``). An HTTP ETag or date names only what the server holds now: asking for it unpinned gets
    /// the same answer in one request fewer when it is gone.
    static func discoveryPin(_ asked: [UInt8]?, strict: Bool, origin: any RemoteOrigin) -> [UInt8]? {
        guard let asked, !strict else { return asked }
        return origin.addresses(String(decoding: asked, as: UTF8.self)) ? asked : nil
    }

    /// The origin session a fill uses, and what to read ahead when this fill starts the fetch's read-ahead.
    ///
    /// A fill of a known version (the common cold fetch) has its domain's record from the plan, and in the
    /// steady state its session exists and remembers the item: that costs two locks and no hop. Otherwise
    /// the domain's record or the item's stored position is read from LMDB, and a session may be made (S3
    /// credentials read from files): on the blocking pool, in one hop.
    private func sessionAndReadAhead(
        for absence: Absence, of item: ItemIdentifier, startsReadAhead: Bool
    ) async throws -> (OriginSession, Range<Int64>?) {
        if case .chunks(let plan) = absence, let domain = plan.domain,
            let session = engine.origins.existing(item.domain, matching: domain)
        {
            guard startsReadAhead else { return (session, nil) }
            // The item's read-ahead window, when the session remembers it: no hop.
            if let step = session.readAheadIfRemembered(
                item.rawValue, fetching: plan.range.location..<plan.range.end, size: plan.version.size)
            {
                return (session, noted(step, of: item))
            }
        }
        return try await runBlocking(
            doing: "starting a fetch of \(item) from its origin", store: store.path
        ) { () -> (OriginSession, Range<Int64>?) in
            let session = try self.originSession(of: item.domain)
            guard startsReadAhead, case .chunks(let plan) = absence else { return (session, nil) }
            return (
                session,
                self.advanceReadAhead(
                    in: session, item, fetching: plan.range.location..<plan.range.end, size: plan.version.size)
            )
        }
    }

    /// What to read ahead of the fill of `range` a discovery planned (``advanceReadAhead(in:_:fetching:size:)``):
    /// in memory when the session remembers the item, else one hop to the blocking pool.
    private func aheadOfDiscovered(
        in session: OriginSession, _ item: ItemIdentifier, fetching range: ByteRange, size: Int64
    ) async -> Range<Int64>? {
        let fetching = range.location..<range.end
        if let remembered = advanceRememberedReadAhead(in: session, item, fetching: fetching, size: size) {
            return remembered
        }
        let ahead = try? await runBlocking(doing: "reading ahead in \(item)", store: store.path) {
            self.advanceReadAhead(in: session, item, fetching: fetching, size: size)
        }
        return ahead ?? nil
    }

    /// Records a fetch of `range` of `item` in its session's read-ahead (``ReadAhead``) and returns what to
    /// download after it. A process that has no state for the item continues from the position the last
    /// reader left in the store, and each new position is noted for the next (``ReadPositions``).
    private func advanceReadAhead(
        in session: OriginSession, _ item: ItemIdentifier, fetching range: Range<Int64>, size: Int64
    ) -> Range<Int64>? {
        let store = self.store
        let step = session.readAhead(item.rawValue, fetching: range, size: size) {
            try? store.environment.read { txn in try txn.readPosition(of: item, store.dbs) }
        }
        return noted(step, of: item)
    }

    /// ``advanceReadAhead(in:_:fetching:size:)`` when the session remembers `item`, which reads nothing from
    /// the store: what to download ahead (nil inside: nothing), or nil when the session does not remember it.
    private func advanceRememberedReadAhead(
        in session: OriginSession, _ item: ItemIdentifier, fetching range: Range<Int64>, size: Int64
    ) -> Range<Int64>?? {
        session.readAheadIfRemembered(item.rawValue, fetching: range, size: size).map { noted($0, of: item) }
    }

    /// Notes a read-ahead step's new position for the next process (``ReadPositions``); returns what to
    /// download ahead.
    private func noted(_ step: (ahead: Range<Int64>?, moved: ReadAhead?), of item: ItemIdentifier) -> Range<Int64>? {
        if let moved = step.moved { engine.usage.noteReadPosition(of: item, moved, engine: engine) }
        return step.ahead
    }

    /// What the origin's `failure` means for a download of `item`: the error to throw, and an item the origin
    /// says is gone (<doc:FileProviderRules#C2>) removed from the store first.
    func originFailed(_ failure: OriginFailure, _ item: ItemIdentifier, strict: Bool) async throws -> CacheError {
        if case .notFound = failure {
            let store = self.store
            try await store.writer.write { txn in
                try txn.removeGoneItem(domain: item.domain, item: item.rawValue, store.dbs)
            }
        }
        return CacheError.origin(failure, item: item.rawValue, domain: item.domain, strict: strict)
    }

    /// The origin session of `domain`. Reads the domain's record: blocking work.
    func originSession(of domain: String) throws -> OriginSession {
        let store = self.store
        let record = try store.environment.read { txn in try Records.domain(domain, in: txn, store.dbs) }
        guard let session = try engine.origins.session(for: domain, record) else {
            throw CacheError(.transient, "domain \"\(domain)\" lost its origin while a fetch ran; retry")
        }
        return session
    }

    /// Records a served fetch for its item's read-ahead and starts downloading what comes next, without
    /// waiting for the download. A fetch of a domain without an origin (which has no read-ahead) costs nothing
    /// here. In the steady state of a read, the session and the item's position are in memory and most
    /// fetches move nothing ahead: that costs a lock and no hop. LMDB reads (a position another process left,
    /// the version to download ahead) run on the blocking pool.
    func readAhead(after served: some ServedBytes & Sendable, _ item: ItemIdentifier) async {
        guard served.fromOriginDomain else { return }
        guard let session = engine.origins.existing(item.domain),
            let remembered = advanceRememberedReadAhead(
                in: session, item, fetching: served.servedRange, size: served.servedItem.documentSize)
        else {
            try? await runBlocking(doing: "reading ahead in \(item)", store: store.path) {
                self.startReadAhead(after: served, item)
            }
            return
        }
        guard let ahead = remembered else { return }
        try? await runBlocking(doing: "reading ahead in \(item)", store: store.path) {
            self.prefetch(ahead, of: served.servedItem, item, session: session)
        }
    }

    /// ``readAhead(after:_:)`` on the calling thread, which may block (a blocking fetch's, or the pool's).
    /// The chunks are claimed before this returns, so the next fetch finds them in flight instead of asking
    /// for them again. Only items of origin domains have read-ahead.
    func startReadAhead(after served: some ServedBytes, _ item: ItemIdentifier) {
        guard served.fromOriginDomain,
            let session = engine.origins.sessionForReadAhead(item.domain, make: { try originSession(of: item.domain) }),
            let ahead = advanceReadAhead(
                in: session, item, fetching: served.servedRange, size: served.servedItem.documentSize)
        else { return }
        prefetch(ahead, of: served.servedItem, item, session: session)
    }

    /// Claims and starts downloading `ahead` of the served version of `item`. Reads its version record:
    /// blocking work.
    private func prefetch(_ ahead: Range<Int64>, of served: Item, _ item: ItemIdentifier, session: OriginSession) {
        let store = self.store
        let contentVersion = served.itemVersion.contentVersion
        store.diagnostics.attempt("read ahead in \(item)") {
            let key = Keys.version(
                itemKey: Keys.item(domain: item.domain, id: item.rawValue), contentVersion: contentVersion)
            let version = try store.environment.read { txn in
                try txn.withValue(store.dbs.versions, key: key) {
                    try VersionRecord(decoding: $0, name: "a version of \(item)")
                }
            }
            let fill = ColdFill(engine: engine, session: session, item: item.rawValue, counters: DownloadProgress())
            if let version { try fill.prefetch(version, ahead: ahead) }
        }
    }
}
