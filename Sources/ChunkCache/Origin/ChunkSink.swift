import FileIO
import Foundation
import OriginKit
import Synchronization

/// Turns one response's bytes into stored chunks (<doc:Contract#10-Origins-the-cold-path>): cuts them at chunk
/// boundaries and hands each to the readers waiting for it as it arrives; batches of them are written into the
/// version's fill file and recorded by write transactions while the response goes on, and each chunk's flight ends when
/// its transaction commits. Nothing is hashed or compressed on the way: the settler (``Settler``) does that
/// later. A chunk that replaces a damaged stored copy (``SinkMode/replaceStored``) is hashed, checked and
/// compressed here instead.
///
/// Bytes of chunks the download did not claim (another download has them, or the store holds them) are
/// skipped. A batch is committed when it reaches ``batchBytes`` or holds a chunk a fetch waits for, so a
/// reader never waits for more of the response than it needs. Used by one response at a time, in order
/// (`@unchecked Sendable`): the origin calls `deliver` sequentially.
final class ChunkSink: @unchecked Sendable {
    private let engine: Engine
    private let store: Store
    private let version: VersionRecord
    private let session: OriginSession
    private let counters: DownloadProgress
    private var claimed: [Int64: ClaimedChunk]
    /// The chunk being filled and its bytes so far.
    private var current: (index: Int64, bytes: [UInt8])?
    private var batch: [(chunk: ClaimedChunk, raw: [UInt8])] = []
    private var batchSize = 0
    /// Chunks handed over and written into the fill file (or hashed, checked and compressed, when replacing
    /// a stored chunk), not yet committed.
    private var encoded: [(chunk: ClaimedChunk, stored: SunkChunk)] = []
    private var encodedSize = 0
    /// The commit under way (``commitBatch(waiting:)``).
    private var committing: Task<Void, any Error>?

    /// Raw bytes a batch gathers before it is committed.
    static let batchBytes = 4 << 20

    private let mode: SinkMode
    /// A fetch that takes its range's bytes as they arrive, before they are stored.
    private let direct: DirectBytes?

    /// The `items` key of the item downloaded, for the eviction policy (``EvictionPolicy``).
    private let itemKey: [UInt8]

    init(
        engine: Engine, version: VersionRecord, item: String, session: OriginSession, claimed: [ClaimedChunk],
        counters: DownloadProgress, mode: SinkMode = .fill, direct: DirectBytes? = nil
    ) {
        self.itemKey = Keys.item(domain: session.domain, id: item)
        self.mode = mode
        self.direct = direct
        self.engine = engine
        self.store = engine.store
        self.version = version
        self.session = session
        self.counters = counters
        self.claimed = Dictionary(uniqueKeysWithValues: claimed.map { ($0.index, $0) })
    }

    /// The byte range of the chunks still to download, or nil when none is left.
    var remainingRange: Range<Int64>? {
        guard let first = claimed.keys.min(), let last = claimed.keys.max() else { return nil }
        return (first << version.layout.shift)..<min(version.size, (last + 1) << version.layout.shift)
    }

    /// The byte ranges of the runs of chunks still to download, in order: what a request of many ranges asks.
    var remainingRuns: [Range<Int64>] {
        let shift = version.layout.shift
        var runs: [Range<Int64>] = []
        for index in claimed.keys.sorted() {
            let start = index << shift
            let end = min(version.size, (index + 1) << shift)
            if let last = runs.last, last.upperBound == start {
                runs[runs.count - 1] = last.lowerBound..<end
            } else {
                runs.append(start..<end)
            }
        }
        return runs
    }

    /// Takes the response's next bytes, starting at item offset `offset`.
    func deliver(_ offset: Int64, _ bytes: RemoteBytes) async throws {
        counters.received(bytes.count, at: offset)
        let shift = version.layout.shift
        var position = offset
        var urgent = false
        try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws in
            var consumed = 0
            while consumed < raw.count {
                let index = position >> shift
                let chunkEnd = min(version.size, (index + 1) << shift)
                let take = Int(min(Int64(raw.count - consumed), chunkEnd - position))
                if claimed[index] != nil {
                    if current?.index != index {
                        guard position == index << shift else {
                            throw OriginFailure.invalidResponse(detail: "bytes began inside chunk \(index)")
                        }
                        current = (index, [])
                        current?.bytes.reserveCapacity(Int(chunkEnd - position))
                    }
                    current?.bytes.append(
                        contentsOf: UnsafeRawBufferPointer(rebasing: raw[consumed..<(consumed + take)]))
                    if position + Int64(take) == chunkEnd, let done = current,
                        let chunk = claimed.removeValue(forKey: index)
                    {
                        if let direct, direct.isUrgent, direct.wants(index) { urgent = true }
                        batch.append((chunk, done.bytes))
                        batchSize += done.bytes.count
                        current = nil
                    }
                }
                consumed += take
                position += Int64(take)
            }
        }
        // A reader waiting for bytes gets them at once; the commit waits for a full batch, or for a reader of
        // the store.
        if urgent || batch.contains(where: { $0.chunk.flight.wantsBytes }) { try await encodeBatch() }
        if batchSize + encodedSize >= Self.batchBytes || batch.contains(where: { $0.chunk.flight.isAwaited })
            || encoded.contains(where: { $0.chunk.flight.isAwaited })
        {
            try await commitBatch()
        }
    }

    /// Commits what is left after the response ended. Claimed chunks the response did not bring fail.
    func finish() async throws {
        try await commitBatch(waiting: true)
        if !claimed.isEmpty {
            throw OriginFailure.invalidResponse(detail: "the response ended before chunk \(claimed.keys.min() ?? 0)")
        }
    }

    /// Forgets a partly received chunk, so a retry starts at the first chunk not stored.
    func restart() {
        current = nil
        batch.removeAll()
        batchSize = 0
    }

    /// Fails the flights of every chunk not stored: nothing partial is kept.
    func abandon(_ error: any Error) {
        direct?.fail(error)
        let chunks = Array(claimed.values) + batch.map(\.chunk) + encoded.map(\.chunk)
        claimed.removeAll()
        batch.removeAll()
        encoded.removeAll()
        encodedSize = 0
        current = nil
        for chunk in chunks {
            session.chunks.finish(
                ChunkKey(manifestID: version.manifestID, index: chunk.index), chunk.flight, with: .failure(error))
        }
    }

    /// Hands the batch's chunks to the readers served from the download (``DirectBytes``,
    /// ``Flight/arrived(_:)``) and takes their checksums: on this thread for a small batch, else in one hop on
    /// the blocking pool. When
    /// replacing a stored chunk, hashes and checks it first and compresses it: one that fails its hash check
    /// goes back to be downloaded again, and ``ChunkMismatch`` says which.
    private func encodeBatch() async throws {
        guard !batch.isEmpty else { return }
        let pending = batch
        batch.removeAll()
        batchSize = 0
        let result: ([SunkChunk], ChunkMismatch?)
        // A small batch of fills (a random read's chunk) is handed over on this thread: an XXH3 and a copy
        // cost microseconds, a hop to the pool and back two thread wake-ups on the reader's way.
        if mode != .replaceStored, batchBytes(pending) <= Self.inlineFillBytes {
            do {
                let chunks = pending.map { ($0.chunk, $0.raw) }
                result = (try Self.fill(chunks, of: version, direct: direct).map(SunkChunk.filled), nil)
            } catch {
                failFlights(of: pending.map(\.chunk), error)
                throw error
            }
        } else {
            result = try await encodeOnPool(pending)
        }
        let (chunks, mismatch) = result
        for ((chunk, _), stored) in zip(pending, chunks) {
            encoded.append((chunk, stored))
            encodedSize += stored.length
        }
        for (chunk, _) in pending.dropFirst(chunks.count) { claimed[chunk.index] = chunk }  // downloaded again
        if let mismatch { throw mismatch }
    }

    /// The most raw bytes a batch of fills hands over on the calling thread rather than on the blocking pool.
    static let inlineFillBytes = 256 << 10

    private func batchBytes(_ pending: [(chunk: ClaimedChunk, raw: [UInt8])]) -> Int {
        pending.reduce(0) { $0 + $1.raw.count }
    }

    /// ``encodeBatch()``'s work on the blocking pool: a large batch of fills, or chunks that replace stored
    /// ones (hashed, checked and compressed).
    private func encodeOnPool(_ pending: [(chunk: ClaimedChunk, raw: [UInt8])]) async throws -> (
        [SunkChunk], ChunkMismatch?
    ) {
        let store = self.store
        let direct = self.direct
        let version = self.version
        let mode = self.mode
        do {
            return try await runBlocking(doing: "storing downloaded chunks", store: store.path) {
                let chunks = pending.map { ($0.chunk, $0.raw) }
                if mode == .replaceStored {
                    let (encoded, mismatch) = try Self.encode(chunks, store: store, direct: direct)
                    return (encoded.map(SunkChunk.stored), mismatch)
                }
                return (try Self.fill(chunks, of: version, direct: direct).map(SunkChunk.filled), nil)
            }
        } catch {
            failFlights(of: pending.map(\.chunk), error)
            throw error
        }
    }

    /// Encodes what is left of the batch and starts its commit, one write transaction that stores every
    /// encoded chunk and then ends their flights. The commit runs while the response goes on arriving; the
    /// next one waits for it (one at a time, in order), and so does the end of the response (`waiting`).
    private func commitBatch(waiting: Bool = false) async throws {
        try await encodeBatch()
        if !encoded.isEmpty {
            // The commit before this one first: when it failed, this batch stays in `encoded`, where the
            // download's ``abandon(_:)`` fails its flights. Taken out before that wait, its chunks were in no
            // list and no commit, and the fetches waiting for them waited forever (a full store fails a commit).
            try await committing?.value
            let pending = encoded
            encoded.removeAll()
            encodedSize = 0
            committing = Task { [self] in
                do {
                    try await commit(pending.map(\.stored))
                } catch {
                    // The chunks left `claimed` and `encoded`: their flights end here, or their waiters would
                    // wait forever.
                    failFlights(of: pending.map(\.chunk), error)
                    throw error
                }
                for (chunk, _) in pending {
                    session.chunks.finish(
                        ChunkKey(manifestID: version.manifestID, index: chunk.index), chunk.flight, with: .success(()))
                }
            }
        }
        if waiting { try await committing?.value }
    }

    private func failFlights(of chunks: [ClaimedChunk], _ error: any Error) {
        for chunk in chunks {
            session.chunks.finish(
                ChunkKey(manifestID: version.manifestID, index: chunk.index), chunk.flight, with: .failure(error))
        }
    }

    /// Records the batch's chunks in one write transaction.
    private func commit(_ chunks: [SunkChunk]) async throws {
        let store = self.store
        let manifestID = version.manifestID
        let itemKey = self.itemKey
        let refill = mode == .refill
        let probe = engine.probes.beforeDownloadCommit
        let bytes = chunks.reduce(Int64(0)) { $0 + Int64($1.length) }
        let filled: [FilledChunk] = chunks.compactMap { if case .filled(let fill) = $0 { fill } else { nil } }
        let downloaded: [DownloadedChunk] = chunks.compactMap {
            if case .stored(let stored) = $0 { stored } else { nil }
        }
        // Downloads can be made again: a crash may lose the last batch, never damage the store. The writer
        // makes room for them first (CONTRACT §12), and the policy takes them into its window. Batches that
        // come while another commits go in one transaction (``DownloadCommits``).
        try await engine.downloadCommits.commit(on: store.writer, reserving: bytes) { txn in
            var admitted: [(index: Int64, storedBytes: UInt32)] = []
            if !filled.isEmpty {
                let recorded = try txn.recordFills(filled, manifestID: manifestID, refill: refill, store.dbs)
                admitted = recorded.filter { !$0.isZero }.map { ($0.index, UInt32($0.length)) }
            }
            if !downloaded.isEmpty {
                try txn.storeDownloaded(downloaded, manifestID: manifestID, replacing: true, store.dbs)
                admitted += downloaded.filter { $0.digest != nil }.map {
                    ($0.index, UInt32(max(0, $0.encoded.count - ChunkCodec.headerSize)))
                }
            }
            try txn.policyAdmit(PolicyAdmission(itemKey: itemKey, chunks: admitted), manifestID: manifestID, store.dbs)
            try txn.addToCounter(store.dbs, PolicyMeta.misses, Int64(admitted.count))
            // A test's probe (``EngineProbes/beforeDownloadCommit``): a throw here fails the commit.
            try probe?()
        }
        if !filled.isEmpty { engine.settler.fillsArrived(in: engine) }
    }

    /// Hands each chunk of a batch to the readers waiting for it, then takes its checksum for the fill the
    /// commit writes: the readers first, the store behind them.
    private static func fill(
        _ pending: [(ClaimedChunk, [UInt8])], of version: VersionRecord, direct: DirectBytes?
    ) throws -> [FilledChunk] {
        let zeros = pending.map { $0.1.withUnsafeBytes(isAllZero) }
        for ((chunk, raw), isZero) in zip(pending, zeros) {
            chunk.flight.arrived(raw)
            if let direct { try raw.withUnsafeBytes { try direct.take(chunk.index, $0, isZero: isZero) } }
        }
        return zip(pending, zeros).map { item, isZero in
            let (chunk, raw) = item
            return FilledChunk(
                index: chunk.index, offset: chunk.index << version.layout.shift,
                checksum: isZero ? 0 : raw.withUnsafeBytes(ChunkCodec.checksum), length: raw.count, isZero: isZero,
                bytes: isZero ? [] : raw)
        }
    }

    /// The chunks of a batch hashed and encoded, up to the first that fails its check. Every chunk is hashed
    /// and checked first, and the checked ones handed to `direct`, so a fetch served from the download does
    /// not wait for their compression.
    private static func encode(_ pending: [(ClaimedChunk, [UInt8])], store: Store, direct: DirectBytes?) throws -> (
        [DownloadedChunk], ChunkMismatch?
    ) {
        var digests: [ChunkDigest?] = []
        digests.reserveCapacity(pending.count)
        var mismatch: ChunkMismatch?
        for (chunk, raw) in pending {
            let digest = raw.withUnsafeBytes { ChunkEncoder.digest(of: $0) }
            if let expected = chunk.expected, digest != expected {
                mismatch = ChunkMismatch(index: chunk.index, expected: expected, actual: digest)
                break
            }
            digests.append(digest)
            chunk.flight.arrived(raw)
        }
        if let direct {
            for ((chunk, raw), digest) in zip(pending, digests) {
                try raw.withUnsafeBytes { try direct.take(chunk.index, $0, isZero: digest == nil) }
            }
        }
        var out: [DownloadedChunk] = []
        out.reserveCapacity(digests.count)
        var encoder = ChunkEncoder(store: store, largest: pending.map(\.1.count).max() ?? 0)
        for ((chunk, raw), digest) in zip(pending, digests) {
            out.append(try raw.withUnsafeBytes { try encoder.encode($0, index: chunk.index, digest: digest) })
        }
        return (out, mismatch)
    }
}

/// A downloaded chunk ready to be recorded: a fill, or a stored chunk that replaces a damaged one.
enum SunkChunk: Sendable {
    case filled(FilledChunk)
    case stored(DownloadedChunk)

    /// Its raw length.
    var length: Int {
        switch self {
        case .filled(let fill): fill.length
        case .stored(let stored): stored.rawLength
        }
    }
}
