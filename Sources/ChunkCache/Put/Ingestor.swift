import Dispatch
import FileIO
import Foundation
import LMDBKit

/// What one ingest wrote.
struct IngestCounts: Sendable {
    var chunks = 0
    var newChunks = 0
    var zeroChunks = 0
    /// New chunks stored as deltas.
    var deltaChunks = 0
    var storedBytes: Int64 = 0

    mutating func add(_ other: IngestCounts) {
        chunks += other.chunks
        newChunks += other.newChunks
        zeroChunks += other.zeroChunks
        deltaChunks += other.deltaChunks
        storedBytes += other.storedBytes
    }
}

/// A file's chunks written as a pending manifest: what ``Ingestor`` returns and publishing consumes.
struct IngestedContent: Sendable {
    let manifestID: UInt64
    let length: Int64
    /// Equal for equal bytes: names the content when the caller gives no version.
    let root: ChunkDigest
    let counts: IngestCounts
}

/// Streams a file into the store: reads it in batches (skipping holes), hashes and compresses each batch on
/// the blocking pool's threads (``SharedWork``), and commits batch after batch on the writer while the next
/// is prepared. New chunks of an item's next version are also tried as deltas against the one before
/// (``DeltaSource``, <doc:Contract#14-Chunk-encodings>).
///
/// Memory is two batches of raw and encoded bytes whatever the file's size, and the previous version's index
/// (at most 24 MiB). Chunks go into a pending manifest,
/// invisible until published; ``Store/rollBackAbandonedManifests()`` or the caller's rollback undoes it.
final class Ingestor: Sendable {
    let engine: Engine
    let store: Store
    let cancellation: CancellationFlag

    /// Bytes per batch: big enough to keep both cores busy and commits few.
    static let batchBytes = 16 << 20

    init(engine: Engine, cancellation: CancellationFlag = CancellationFlag()) {
        self.engine = engine
        self.store = engine.store
        self.cancellation = cancellation
    }

    /// The newest version of item `id` of `domain`: the base of its next version's deltas; nil when the store
    /// makes no deltas (`init --no-deltas`).
    static func previousVersion(of id: String, domain: String, store: Store) throws -> VersionRecord? {
        try store.environment.read { txn in
            guard try txn.counter(store.dbs, MetaKey.deltasOff) == 0 else { return nil }
            return try Records.versions(ofItem: id, domain: domain, in: txn, store.dbs).first
        }
    }

    /// Ingests `length` bytes of `file` (named `path` in errors) into a new pending manifest.
    /// On any error the manifest is rolled back before this throws.
    /// - Parameter previous: The item's version before this one, whose chunks new chunks may be stored as deltas
    ///   against (<doc:Contract#14-Chunk-encodings>); nil for a new item.
    /// - Throws: `invalidArgument` when `length` is beyond ``ChunkLayout/maxItemLength``, before anything is written.
    @available(*, noasync)
    func ingest(_ file: FileDescriptor, length: Int64, path: String, previous: VersionRecord?) throws
        -> IngestedContent
    {
        // The one door sizes from outside come through (put and import): checked before any arithmetic.
        try ChunkLayout.checkItemLength(length, of: path)
        let dbs = store.dbs
        let writer = try store.writerToken()
        let manifestID = try store.writer.writeAndWait { txn in
            try txn.beginManifest(dbs, writer: writer, now: Date().timeIntervalSince1970)
        }
        do {
            return try fill(manifestID, from: file, length: length, path: path, previous: previous)
        } catch {
            store.diagnostics.attempt("roll back the pending manifest of \(path)") {
                try store.writer.writeAndWait { txn in try txn.dropManifest(manifestID, dbs) }
            }
            throw CacheError.wrap(error, store: store.path, doing: "storing \(path)")
        }
    }

    @available(*, noasync)
    private func fill(
        _ manifestID: UInt64, from file: FileDescriptor, length: Int64, path: String, previous: VersionRecord?
    ) throws -> IngestedContent {
        var previous = previous
        var deltas: DeltaSource?
        let layout = store.layout
        let chunkCount = layout.chunkCount(forLength: length)
        let perBatch = max(Self.batchBytes >> layout.shift, 2 * BlockingPool.width)
        let dataRanges = try file.dataRanges(length: length)
        // Eviction makes room for the batches only when the whole put could fit once it did (CONTRACT §12).
        let evicting = engine.space.couldFit(dataRanges.reduce(0) { $0 + Int64($1.count) })
        let state = CommitState(manifestID: manifestID)
        let batches: [Batch]
        do {
            batches = [try Batch(capacity: perBatch, layout: layout), try Batch(capacity: perBatch, layout: layout)]
        } catch {
            throw CacheError(
                .transient,
                "no memory for the buffers to store \(path) (\(error)); nothing was stored: retry when fewer puts run at once",
                underlying: error)
        }
        // Whether each batch is free again (its commit finished on the writer): this pool thread waits for the
        // writer queue, which never waits for the pool (see ``BlockingPool``).
        let free = [DispatchSemaphore(value: 1), DispatchSemaphore(value: 1)]
        var rootHasher = RootHasher(length: length)

        var first: Int64 = 0
        var turn = 0
        while first < chunkCount {
            if let error = state.failure { throw error }
            try cancellation.check()
            let batch = batches[turn]
            free[turn].wait()
            let count = Int(min(Int64(perBatch), chunkCount - first))
            do {
                try batch.load(
                    from: file, firstChunk: first, count: count, length: length, dataRanges: dataRanges, path: path)
                batch.hashChunks()
                try batch.markKnownChunks(in: store)
                if let base = previous, batch.hasNewChunks {
                    // Once, at the first chunk the store lacks: a version the store already holds needs no base.
                    previous = nil
                    deltas = try DeltaSource.build(from: base, store: store, cancellation: cancellation)
                }
                batch.compressNewChunks(with: store.codecs, deltas: deltas, store: store)
            } catch {
                free[turn].signal()
                throw error
            }
            for digest in batch.digests[..<count] { rootHasher.add(digest) }
            let semaphore = free[turn]
            let environment = store.environment
            // At most the batch's raw bytes are added: the bound (CONTRACT §12) is checked before they are.
            let most = Int64(count) << Int64(store.layout.shift)
            store.writer.writeLater(
                reserving: most, evicting: evicting, doing: "storing \(path)",
                { txn in try state.commit(batch, into: &txn, store: self.store) },
                completion: { result in
                    if case .failure(let error) = result { state.fail(error) }
                    // Lookups fault in neighbouring pages of the map: keep the RSS flat.
                    environment.releaseMappedPages()
                    semaphore.signal()
                })
            first += Int64(count)
            turn ^= 1
        }
        for semaphore in free {
            semaphore.wait()
            semaphore.signal()
        }
        if let error = state.failure { throw error }
        return IngestedContent(
            manifestID: manifestID, length: length, root: rootHasher.finalize(), counts: state.counts)
    }
}

/// A batch of consecutive chunks: the raw bytes, their digests (nil for all-zero chunks) and encodings.
/// Used by one thread at a time: the ingest thread fills it, then the writer commits it.
final class Batch: @unchecked Sendable {
    let layout: ChunkLayout
    let capacity: Int
    /// Batch buffers come straight from `mmap` and go back with `munmap`: from malloc, glibc keeps tens of
    /// megabytes per put in its heap once its mmap threshold has grown, and a long-lived process bloats.
    private let rawMapping: AnonymousMapping
    private let encodedMapping: AnonymousMapping
    let encodedStride: Int
    var firstChunk: Int64 = 0
    var count = 0
    var rawLengths: [Int]
    var digests: [ChunkDigest?]
    var known: [Bool]
    var encodedLengths: [Int]
    /// The delta layout of each chunk encoded as a delta, else nil.
    var deltaLayouts: [DeltaLayout?]

    /// - Throws: ``Errno`` `ENOMEM` when the address space has no room for the buffers.
    init(capacity: Int, layout: ChunkLayout) throws(Errno) {
        self.layout = layout
        self.capacity = capacity
        rawMapping = try AnonymousMapping(byteCount: capacity << layout.shift)
        encodedStride = ChunkCodec.encodedBound(rawCount: layout.chunkSize)
        encodedMapping = try AnonymousMapping(byteCount: capacity * encodedStride)
        rawLengths = Array(repeating: 0, count: capacity)
        digests = Array(repeating: nil, count: capacity)
        known = Array(repeating: false, count: capacity)
        encodedLengths = Array(repeating: 0, count: capacity)
        deltaLayouts = Array(repeating: nil, count: capacity)
    }

    /// The raw bytes of the batch's chunks, one chunk size apart.
    var raw: UnsafeMutableRawBufferPointer { rawMapping.buffer }
    /// The chunks' encodings, `encodedStride` bytes apart.
    var encoded: UnsafeMutableRawBufferPointer { encodedMapping.buffer }

    func rawChunk(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: raw[(i << layout.shift)..<((i << layout.shift) + rawLengths[i])])
    }

    func encodedChunk(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: encoded[(i * encodedStride)..<(i * encodedStride + encodedLengths[i])])
    }

    /// Reads the batch's bytes: data ranges by `pread`, holes as zeros without reading.
    func load(
        from file: FileDescriptor, firstChunk: Int64, count: Int, length: Int64, dataRanges: [Range<Int64>],
        path: String
    ) throws {
        self.firstChunk = firstChunk
        self.count = count
        let start = firstChunk << layout.shift
        let end = min(length, start + (Int64(count) << layout.shift))
        for i in 0..<count {
            rawLengths[i] = Int(min(Int64(layout.chunkSize), length - ((firstChunk + Int64(i)) << layout.shift)))
            encodedLengths[i] = 0
            deltaLayouts[i] = nil
            known[i] = false
        }
        var position = start
        for range in dataRanges where range.upperBound > start && range.lowerBound < end {
            let lower = max(range.lowerBound, start)
            let upper = min(range.upperBound, end)
            zero(from: position, to: lower, batchStart: start)
            let target = UnsafeMutableRawBufferPointer(rebasing: raw[Int(lower - start)..<Int(upper - start)])
            let n = try file.readAll(fromAbsoluteOffset: lower, into: target)
            guard n == target.count else {
                throw CacheError(.invalidArgument, "\(path) shrank while it was read; retry when it no longer changes")
            }
            position = upper
        }
        zero(from: position, to: end, batchStart: start)
    }

    private func zero(from lower: Int64, to upper: Int64, batchStart: Int64) {
        guard upper > lower else { return }
        UnsafeMutableRawBufferPointer(rebasing: raw[Int(lower - batchStart)..<Int(upper - batchStart)])
            .initializeMemory(as: UInt8.self, repeating: 0)
    }

    /// SHA-256 of each chunk on this thread and the blocking pool's free ones (``SharedWork``); all-zero
    /// chunks get no digest and are never stored.
    func hashChunks() {
        let results = ParallelSlots<ChunkDigest?>(count: count, initialValue: nil)
        defer { results.deallocate() }
        SharedWork.forEachIndex(below: count) { claim in
            while let i = claim() {
                let bytes = self.rawChunk(i)
                results[i] = isAllZero(bytes) ? nil : ChunkDigest(hashing: bytes)
            }
        }
        for i in 0..<count { digests[i] = results[i] }
    }

    /// Marks the chunks the store already has, so they are not compressed again.
    func markKnownChunks(in store: Store) throws {
        try store.environment.read { txn in
            for i in 0..<count {
                guard let digest = digests[i] else { continue }
                known[i] = try digest.withUnsafeBytes { try txn.contains(store.dbs.refs, key: $0) }
            }
        }
    }

    /// Whether the batch holds a chunk the store lacks.
    var hasNewChunks: Bool { (0..<count).contains { digests[$0] != nil && !known[$0] } }

    /// Compresses, on this thread and the blocking pool's free ones, the first occurrence of each chunk the
    /// store lacks; with `deltas`, each is also tried as a delta against the previous version and kept so when
    /// that beats its plain form (``DeltaEncoder``).
    func compressNewChunks(with codecs: CodecPool, deltas: DeltaSource?, store: Store) {
        var seen = Set<ChunkDigest>()
        let work = (0..<count).filter { i in
            guard let digest = digests[i], !known[i] else { return false }
            return seen.insert(digest).inserted
        }
        let lengths = ParallelSlots<Int>(count: work.count, initialValue: 0)
        let layouts = ParallelSlots<DeltaLayout?>(count: work.count, initialValue: nil)
        defer {
            lengths.deallocate()
            layouts.deallocate()
        }
        // Runs of consecutive chunks per claim: neighbours share bases, which a worker's encoder keeps decoded.
        let run = deltas == nil ? 1 : 8
        SharedWork.forEachIndex(below: (work.count + run - 1) / run) { claim in
            let encoder = deltas.map { DeltaEncoder(source: $0, store: store) }
            codecs.withCompressor { compressor in
                while let claimed = claim() {
                    for w in (claimed * run)..<min((claimed + 1) * run, work.count) {
                        let i = work[w]
                        let stride = self.encodedStride
                        let output = UnsafeMutableRawBufferPointer(
                            rebasing: self.encoded[(i * stride)..<((i + 1) * stride)])
                        // Compression of a valid buffer only fails for lack of memory; then store raw.
                        guard let encoder else {
                            lengths[w] =
                                (try? ChunkCodec.encode(self.rawChunk(i), compressor: compressor, into: output)) ?? 0
                            continue
                        }
                        switch try? encoder.encode(
                            self.rawChunk(i), at: (self.firstChunk + Int64(i)) << self.layout.shift,
                            compressor: compressor, into: output)
                        {
                        case .delta(let length, let layout)?:
                            lengths[w] = length
                            layouts[w] = layout
                        case .plain(let length)?: lengths[w] = length
                        case nil: lengths[w] = 0
                        }
                    }
                }
            }
        }
        for (w, i) in work.enumerated() {
            encodedLengths[i] = lengths[w]
            deltaLayouts[i] = layouts[w]
        }
    }
}

/// Slots that the threads of a ``SharedWork`` fill, each index by exactly one thread, so no two threads
/// touch one slot and the buffer may cross into the workers (`@unchecked Sendable`).
struct ParallelSlots<T>: @unchecked Sendable {
    private let base: UnsafeMutableBufferPointer<T>

    init(count: Int, initialValue: T) {
        base = .allocate(capacity: max(1, count))
        base.initialize(repeating: initialValue)
    }

    subscript(index: Int) -> T {
        get { base[index] }
        nonmutating set { base[index] = newValue }
    }

    func deallocate() {
        base.deinitialize()
        base.deallocate()
    }
}

/// What the writer accumulates across a manifest's batches: the ingest's own state, not a coordination type.
///
/// Who may touch what: ``commit(_:into:store:)`` runs only on the writer queue, one batch after another in the
/// order the ingest queued them, so the counts and the page being filled need no lock (`@unchecked
/// Sendable`); the ingest thread reads ``counts`` only after the last batch's completion signalled it. The
/// first failure, from a commit or its completion, is kept (a ``FirstValue``) and read from any thread: the
/// ingest stops at its next batch, and later batches commit nothing.
final class CommitState: @unchecked Sendable {
    let manifestID: UInt64
    private(set) var counts = IngestCounts()
    /// Entries of the manifest page being filled.
    private var page: [UInt8] = []
    private var pageIndex: Int64 = 0
    private let firstFailure = FirstValue<any Error>()

    init(manifestID: UInt64) { self.manifestID = manifestID }

    var failure: (any Error)? { firstFailure.current }

    func fail(_ error: any Error) { firstFailure.offer(error) }

    /// Writes a batch: new chunks, references to known ones, and every manifest page it completes.
    @available(*, noasync)
    func commit(_ batch: Batch, into txn: inout WriteTransaction, store: Store) throws {
        guard failure == nil else { return }
        let dbs = store.dbs
        var scratch: UnsafeMutableRawBufferPointer?
        defer { scratch?.deallocate() }
        for i in 0..<batch.count {
            counts.chunks += 1
            let entry: ManifestEntry
            if let digest = batch.digests[i] {
                entry = .stored(digest)
                if try !txn.retainChunk(digest, dbs) {
                    var encoded = batch.encodedChunk(i)
                    // A delta whose bases left the store since it was made (an `rm` meanwhile) is made plain.
                    if let layout = batch.deltaLayouts[i], try !Self.basesStand(layout, of: digest, in: txn, dbs) {
                        encoded = UnsafeRawBufferPointer(start: nil, count: 0)
                    }
                    if encoded.isEmpty {
                        // Not compressed ahead: a duplicate within the batch whose first copy was known, or a
                        // chunk deleted since the batch looked. Encode it here.
                        let buffer = scratch ?? .allocate(byteCount: batch.encodedStride, alignment: 64)
                        scratch = buffer
                        let n = try store.codecs.withCompressor {
                            try ChunkCodec.encode(batch.rawChunk(i), compressor: $0, into: buffer)
                        }
                        encoded = UnsafeRawBufferPointer(rebasing: buffer[..<n])
                    }
                    if let layout = batch.deltaLayouts[i], ChunkCodec.isDelta(encoded) {
                        try txn.insertDelta(
                            digest, encoded: encoded, rawLength: batch.rawLengths[i], layout: layout, dbs)
                        counts.deltaChunks += 1
                    } else {
                        try txn.insertChunk(digest, encoded: encoded, rawLength: batch.rawLengths[i], dbs)
                    }
                    counts.newChunks += 1
                    counts.storedBytes += Int64(encoded.count - ChunkCodec.headerSize)
                }
            } else {
                entry = .zero
                counts.zeroChunks += 1
            }
            ManifestPage.append(entry, to: &page)
            if page.count == Int(ManifestPage.entriesPerPage) * ManifestPage.entrySize {
                try ManifestPage.store(&page, manifest: manifestID, page: pageIndex, in: &txn, dbs)
                page.removeAll(keepingCapacity: true)
                pageIndex += 1
            }
        }
        // The page being filled is written too, so the references this batch counted are always listed in
        // the manifest: a rollback (or the crash clean-up at open) releases exactly what was retained.
        if !page.isEmpty {
            try ManifestPage.store(&page, manifest: manifestID, page: pageIndex, in: &txn, dbs)
        }
    }

    /// Whether every base of a delta is still stored plain, and is not the delta's own chunk.
    private static func basesStand(
        _ layout: DeltaLayout, of digest: ChunkDigest, in txn: borrowing WriteTransaction, _ dbs: Databases
    ) throws -> Bool {
        try layout.bases.allSatisfy { base in try base.digest != digest && txn.isPlainChunk(base.digest, dbs) }
    }
}
