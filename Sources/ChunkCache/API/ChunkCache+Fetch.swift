import FileIO
import Foundation

extension ChunkCache {

    /// Returns a file holding at least `minimalRange` of the item, as `fetchPartialContents`
    /// (<doc:Contract#3-Partial-fetch>).
    ///
    /// The retrieved range starts at `minimalRange`'s start rounded down to `max(alignment, chunkSize)` and
    /// ends at its end rounded up, or at EOF; both ends are clamped to the file first, so a range past EOF
    /// is never an error. The file has the item's full length with the retrieved bytes at their own offsets
    /// and no holes inside the range, except when the range is the whole file: then zero chunks stay holes
    /// and `knownSparseRanges` is set.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest. With `.strictVersioning` only that version
    ///     serves. Without it, when that version cannot serve the range, the newest *newer* version that can
    ///     does, and the result says which; an older version never does (<doc:FileProviderRules#B6>). A version the
    ///     store does not know is asked of the origin on an origin domain (served when the origin holds it, else the
    ///     origin's current version serves); elsewhere the newest version that can serve does.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    ///   - minimalRange: The bytes needed.
    ///   - alignment: A power of two from 1 to 2^30.
    ///   - options: `.strictVersioning` to accept only `version`.
    ///   - destination: A hand-off file (default) or a clone at a path.
    /// - Throws: `invalidArgument`, `noSuchItem` (confirmed only, <doc:FileProviderRules#C2>),
    ///   `versionNoLongerAvailable` (strict fetches only, <doc:FileProviderRules#C4>), `noPermission`, `corruptData`
    ///   (also when no allowed version holds the range: it names the lost chunks), `userCancelled`, `fileExists` (clone
    ///   destination).
    public func fetchPartialContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest = FetchRequest(),
        minimalRange: ByteRange, aligningTo alignment: Int, options: FetchOptions = [],
        destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        try Self.validate(minimalRange, of: item, alignment: alignment)
        return try await fetch(
            item, version: version?.contentVersion, minimalRange: minimalRange, alignment: alignment,
            options: options, request: request, destination: destination)
    }

    /// Returns a file holding the whole item, as `fetchContents` (<doc:Contract#4-Full-fetch>): zero chunks are holes
    /// and `knownSparseRanges` says so.
    ///
    /// As the seed says, a requested version is returned or the fetch fails: with `options` left out, a
    /// non-nil `version` runs with `.strictVersioning` (<doc:FileProviderRules#B6>, <doc:FileProviderRules#A11>),
    /// exactly as the completion-handler ``fetchContents(for:version:request:completionHandler:)`` does.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest, never an older one.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    ///   - destination: A hand-off file (default) or a clone at a path.
    ///   - options: `nil` (the default) for the seed's rule above. Given, they apply as given: `[]` lets a
    ///     newer version serve when `version` cannot, following the rules of
    ///     ``fetchPartialContents(for:version:request:minimalRange:aligningTo:options:destination:)`` (the
    ///     command line's non-strict `fetch`, <doc:Contract#7-Command-line>).
    /// - Throws: As the partial fetch; `versionNoLongerAvailable` when a strict fetch's version cannot serve.
    public func fetchContents(
        for item: ItemIdentifier, version: ItemVersion? = nil, request: FetchRequest = FetchRequest(),
        options: FetchOptions? = nil, destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        let options = options ?? (version == nil ? [] : .strictVersioning)
        return try await fetch(
            item, version: version?.contentVersion, minimalRange: nil, alignment: 1, options: options,
            request: request, destination: destination)
    }

    /// Returns a file holding at least `minimalRange` of the item, as the async
    /// ``fetchPartialContents(for:version:request:minimalRange:aligningTo:options:destination:)`` does, on the
    /// calling thread.
    ///
    /// For callers that own their thread and cannot await (a FUSE worker, a C caller). A fetch the store
    /// can serve runs on the calling thread as the async one does (system calls, LMDB reads, zstd decoding);
    /// one that must go to the origin waits, blocking the thread, for the same cold path the async API
    /// takes. It cannot be cancelled. Never call it from a Swift concurrency task: use the async method there.
    ///
    /// - Throws: The errors of the async method except `userCancelled`.
    @available(*, noasync, message: "use the async fetchPartialContents in a task")
    public func fetchPartialContentsSynchronously(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest = FetchRequest(),
        minimalRange: ByteRange, aligningTo alignment: Int, options: FetchOptions = [],
        destination: FetchDestination = .handOff
    ) throws -> FetchResult {
        try Self.validate(minimalRange, of: item, alignment: alignment)
        try Records.validate(domain: item.domain, item: item.rawValue)
        let engine = self.engine
        let job = FetchJob(
            item: item, minimalRange: minimalRange, alignment: alignment, options: options, request: request,
            destination: destination)
        let version = version?.contentVersion
        // The warm attempt on the calling thread: no task, no hop, nothing of the cold path allocated.
        switch try job.attempt(version, engine: engine, cancellation: CancellationFlag()) {
        case .served(var served):
            startReadAhead(after: served, item)
            if let progress = request.progress { served.record(progress) }
            noteFetched(item, minimalRange)
            return served
        case .missing(let absence):
            let (streamed, fromDownload) = try downloadServing(job)
            defer { streamed?.close() }
            let cold = try throughOriginWaiting(
                ColdTarget(item: item, minimal: minimalRange, alignment: alignment), options: options,
                request: request, servesFromDownload: fromDownload, streamed: streamed, first: absence
            ) { plan in
                try job.serve(plan, engine: engine, cancellation: CancellationFlag())
            }
            noteColdFetch(item, minimalRange)
            var served = cold.served
            served.record(cold.downloaded)
            return served
        }
    }

    /// Reads the item's bytes from `offset` into `buffer`, with no temp file: the buffer-returning form of a
    /// partial fetch, on the calling thread (a FUSE read, a C caller).
    ///
    /// The version is chosen as for
    /// ``fetchPartialContents(for:version:request:minimalRange:aligningTo:options:destination:)``
    /// (<doc:FileProviderRules#B6>, <doc:FileProviderRules#C4>), and all bytes come from that one version. The read
    /// stops at EOF: a read at or past the end returns 0 bytes. It blocks for a buffer's worth of LMDB reads and zstd
    /// decoding; never call it from a Swift concurrency task.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest.
    ///   - offset: The first byte to read, ≥ 0.
    ///   - buffer: Where the bytes go, from its start. On a throw its contents are unspecified.
    ///   - options: `.strictVersioning` to accept only `version`.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    /// - Returns: How many bytes were read and the item at the version they came from.
    /// - Throws: `invalidArgument` (a negative offset), `noSuchItem`, `versionNoLongerAvailable` (strict),
    ///   `noPermission`, `corruptData`.
    @available(*, noasync, message: "use the async read in a task")
    public func read(
        _ item: ItemIdentifier, version: ItemVersion?, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer,
        options: FetchOptions = [], request: FetchRequest = FetchRequest()
    ) throws -> ReadResult {
        let job = try BufferReadJob(item: item, offset: offset, buffer: buffer, options: options, request: request)
        let engine = self.engine
        let version = version?.contentVersion
        // The warm attempt on the calling thread, as the blocking fetch's.
        switch try job.attempt(version, engine: engine) {
        case .served(let served):
            startReadAhead(after: served, item)
            return served.result
        case .missing(let absence):
            // Served from the download as the async read is: never read back from a store that may have
            // evicted it meanwhile (another process's eviction does not know this read waits for it).
            return try throughOriginWaiting(
                ColdTarget(item: item, minimal: job.minimalRange, alignment: 1), options: options,
                request: request,
                servesFromDownload: { @Sendable bytes, downloaded in try job.copy(bytes, downloaded, engine: engine) },
                first: absence
            ) { plan in
                try job.serve(plan, engine: engine)
            }.served.result
        }
    }

    /// Reads the item's bytes from `offset` into `buffer` from the store alone, on the calling thread: the
    /// warm half of ``read(_:version:at:into:options:request:)-yqvn``, for a caller that must not wait for the
    /// origin on its thread. A FUSE session thread answers what this serves at once and hands a miss to a task,
    /// which fetches it with ``read(_:)`` without planning again.
    ///
    /// - Returns: What was read, as the blocking read returns it; or, when the store alone cannot serve the
    ///   range (bytes or the item not cached yet, a damaged chunk), the miss and the plan it made, for
    ///   ``read(_:)``, which fetches them from the origin.
    /// - Throws: The errors of the blocking read that need no origin: `invalidArgument`, `noSuchItem` (a
    ///   domain that does not exist), `versionNoLongerAvailable` (strict), `noPermission`.
    @available(*, noasync, message: "use the async read in a task")
    public func readCached(
        _ item: ItemIdentifier, version: ItemVersion?, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer,
        options: FetchOptions = [], request: FetchRequest = FetchRequest()
    ) throws -> CachedRead {
        let job = try BufferReadJob(item: item, offset: offset, buffer: buffer, options: options, request: request)
        switch try job.attempt(version?.contentVersion, engine: engine) {
        case .served(let served):
            startReadAhead(after: served, item)
            return .served(served.result)
        case .missing(let absence):
            return .missing(ReadMiss(job: job, absence: absence))
        }
    }

    /// Fetches what ``readCached(_:version:at:into:options:request:)`` found missing from the origin into its
    /// buffer, from the plan that read made: the async read's cold half, with its errors. The buffer must
    /// stay valid until this returns, and nothing else may use it meanwhile.
    public func read(_ miss: ReadMiss) async throws -> ReadResult {
        try await readThroughOrigin(miss.job, first: miss.absence)
    }

    /// Reads the item's bytes from `offset` into `buffer`, with no temp file: the async form of the blocking
    /// ``read(_:version:at:into:options:request:)-yqvn``, with the same versions, errors and end of file.
    ///
    /// Bytes in the store are read on the blocking pool (or inline, for a buffer of at most
    /// `FetchThresholds.inlineBytes`); bytes that come from the origin are copied into `buffer` as they
    /// arrive, while they are stored behind the read. `buffer` must stay valid until the read returns, and
    /// nothing else may use it meanwhile.
    ///
    /// - Throws: The errors of the blocking read, and `userCancelled` when the task is cancelled.
    public func read(
        _ item: ItemIdentifier, version: ItemVersion?, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer,
        options: FetchOptions = [], request: FetchRequest = FetchRequest()
    ) async throws -> ReadResult {
        try await readAsync(
            BufferReadJob(item: item, offset: offset, buffer: buffer, options: options, request: request),
            version: version?.contentVersion)
    }

    /// The async buffer read of `job`: from the store, else through the origin.
    private func readAsync(_ job: BufferReadJob, version: [UInt8]?) async throws -> ReadResult {
        switch try await readFromStore(job, { engine in try job.attempt(version, engine: engine) }) {
        case .served(let served):
            await readAhead(after: served, job.item)
            return served.result
        case .missing(let absence):
            return try await readThroughOrigin(job, first: absence)
        }
    }

    /// The cold half of a buffer read: fills `first` and reads the plan it carries into the buffer.
    private func readThroughOrigin(_ job: BufferReadJob, first: Absence) async throws -> ReadResult {
        let cold = try await throughOrigin(
            ColdTarget(item: job.item, minimal: job.minimalRange, alignment: 1), options: job.options,
            request: job.request,
            servesFromDownload: { @Sendable bytes, downloaded in try job.copy(bytes, downloaded, engine: self.engine) },
            first: first
        ) { plan in
            try await self.readFromStore(job, { engine in try job.serve(plan, engine: engine) })
        }
        return cold.served.result
    }

    /// One attempt at a buffer read from the store alone: inline when the buffer is small (as
    /// ``fetchFromStore(_:_:)`` does for hand-offs), else on the blocking pool.
    private func readFromStore(
        _ job: BufferReadJob, _ attempt: @escaping @Sendable (Engine) throws -> FetchOutcome<ServedRead>
    ) async throws -> FetchOutcome<ServedRead> {
        if Task.isCancelled { throw CacheError(.userCancelled, "the read of \(job.item) was cancelled") }
        let engine = self.engine
        if job.buffer.count <= FetchThresholds.inlineBytes { return try attempt(engine) }
        return try await runBlocking(doing: "reading \(job.item)", store: engine.store.path) { _ in try attempt(engine)
        }
    }

    /// Checks a partial fetch's range and alignment.
    static func validate(_ minimalRange: ByteRange, of item: ItemIdentifier, alignment: Int) throws(CacheError) {
        try FetchPlanner.validate(alignment: alignment)
        guard minimalRange.location >= 0, minimalRange.length >= 0 else {
            throw CacheError(
                .invalidArgument,
                "range \(minimalRange) of item \"\(item.rawValue)\" has a negative start or length; give START:LENGTH with both ≥ 0"
            )
        }
    }

    /// A fetch through the async API.
    ///
    /// The warm attempt first (``FetchJob``), with nothing of the cold path allocated, from the caller's own
    /// plan when it made one (`planned`), which goes straight to the cold path when it missed; what is absent
    /// on an origin domain goes to the cold path
    /// (``throughOrigin(_:options:request:servesFromDownload:streamed:first:serve:)``) with the plan the miss made,
    /// which serves it once filled. Task cancellation reaches both: it sets the flag the assembler checks before each
    /// chunk.
    func fetch(
        _ item: ItemIdentifier, version: [UInt8]?, minimalRange: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest, destination: FetchDestination, planned: PlanOutcome? = nil
    ) async throws -> FetchResult {
        try Records.validate(domain: item.domain, item: item.rawValue)
        let job = FetchJob(
            item: item, minimalRange: minimalRange, alignment: alignment, options: options, request: request,
            destination: destination)
        let absence: Absence
        if case .miss(let missing) = planned {
            absence = missing
        } else {
            let source: PlanSource
            if case .serve(let plan) = planned {
                source = .planned(plan, requested: version)
            } else {
                source = .planning(version)
            }
            switch try await fetchFromStore(job, source) {
            case .served(let served):
                await readAhead(after: served, item)
                noteFetched(item, minimalRange ?? served.retrievedRange)
                return served
            case .missing(let missing):
                absence = missing
            }
        }
        let (streamed, fromDownload) = try downloadServing(job)
        defer { streamed?.close() }
        let cold = try await throughOrigin(
            ColdTarget(item: item, minimal: minimalRange, alignment: alignment), options: options, request: request,
            servesFromDownload: fromDownload, streamed: streamed, first: absence
        ) { plan in
            try await self.fetchFromStore(job, .serving(plan))
        }
        noteColdFetch(item, minimalRange ?? cold.served.retrievedRange)
        var served = cold.served
        served.record(cold.downloaded)
        return served
    }

    /// Notes a warm fetch's range in the item's run, when a run of it is under way
    /// (<doc:Contract#15-Learned-prefetch>): the check costs one atomic load when none is.
    private func noteFetched(_ item: ItemIdentifier, _ range: ByteRange) {
        guard engine.traces.isOpen else { return }
        noteRead(item, range: range, by: .fetches(of: item))
    }

    /// Notes a fetch that went to the origin, once it is served: the first fetch of an item starts its run, and
    /// the prefetch of its trace (<doc:Contract#15-Learned-prefetch>), which so never races the fetch itself.
    private func noteColdFetch(_ item: ItemIdentifier, _ range: ByteRange) {
        let opener = TraceOpener.fetches(of: item)
        noteOpen(item, by: opener)
        noteRead(item, range: range, by: opener)
    }

    /// How a cold fetch is served from what it downloads, never read back from the store: a large range goes
    /// into the fetch's own file as it arrives (`streamed`, which the caller closes), a small hand-off is
    /// written from the downloaded bytes; nil for a fetch that reads the store (a clone, a placed file).
    private func downloadServing(_ job: FetchJob) throws -> (
        streamed: StreamedFile?, fromDownload: (@Sendable ([UInt8], DownloadedRange) throws -> FetchResult)?
    ) {
        if let streamed = try StreamedFile.make(for: job, engine: engine) {
            let engine = self.engine
            return (streamed, { @Sendable _, downloaded in try streamed.finish(downloaded, engine: engine) })
        }
        guard job.servesFromDownload else { return (nil, nil) }
        return (nil, { @Sendable bytes, downloaded in try self.handOffDownloaded(bytes, downloaded) })
    }

    /// One attempt at `job` from the store alone: planned now, or the plan a miss carried through its fill
    /// (whose reads are not hits for eviction: the fetch just downloaded them).
    ///
    /// Hand-offs of up to `FetchThresholds.inlineBytes` are planned and written in one snapshot on the
    /// calling thread: bounded, page-cache-hot work that costs less than the two thread wake-ups of a hop.
    /// Clones and larger ranges go to the blocking pool (``runBlocking(doing:store:_:)``), which plans again in
    /// its own snapshot.
    private func fetchFromStore(_ job: FetchJob, _ source: PlanSource) async throws -> FetchOutcome<FetchResult> {
        let engine = self.engine
        if Task.isCancelled { throw CacheError(.userCancelled, "the fetch of \(job.item) was cancelled") }
        let cancellation = CancellationFlag()
        let inline = try await withTaskCancellationHandler {
            try job.run(source, engine: engine, cancellation: cancellation, within: FetchThresholds.inlineBytes)
        } onCancel: {
            cancellation.cancel()
        }
        if let inline { return inline }
        return try await runBlocking(doing: "fetching \(job.item)", store: engine.store.path) { cancellation in
            try job.run(source, engine: engine, cancellation: cancellation, within: nil)!  // no limit: never nil
        }
    }

    /// Which strategies a clone may use: every one, unless a test's probes narrow them
    /// (``EngineProbes/cloneStrategies``) to run each fallback.
    static let cloneStrategies = Set(CloneStrategy.allCases)
}
