import Crypto
import Dispatch
import FileIO
import Foundation
import LMDBKit
import Synchronization

/// Settles fills (<doc:Contract#10-Origins-the-cold-path>, "stored behind"): reads each fill's bytes from its file,
/// names it by SHA-256, checks that against the hash its manifest knew (a mismatch drops it, so the next read downloads
/// it again, and is counted), deduplicates it against the store, compresses it, and records it as a stored chunk;
/// a version's fill file goes once none of its fills is left.
///
/// Work runs in batches of ``batchBytes(_:)``: a read snapshot lists and reads them, the hashing and compression
/// run outside any transaction, and one write transaction records the batch, checking again that each entry
/// is still the fill it read (a fill evicted, refilled or settled by another process meanwhile is left to
/// that); a second, once it has committed, frees the bytes of the fills it recorded. ``settleAll(_:waiting:)``
/// prepares the next batch while one commits. Fills are settled in the background when the process has downloaded
/// nothing for ``idleTime``, one settler per store across processes (`fills/.settling` is locked while one runs).
final class Settler: Sendable {
    /// Raw bytes a batch settles: 8 MiB, or a 32nd of a smaller store's bound. While a batch commits its
    /// chunks are in `data.mdb` before their fills' room is reused, so a bounded store may pass its mark by
    /// about one batch.
    static func batchBytes(_ store: Store) -> Int { Int(min(8 << 20, max(256 << 10, store.maxSize / 32))) }
    /// Raw bytes a background batch settles, on one thread (``settleBatch(_:inBackground:)``).
    static let backgroundBatchBytes = 1 << 20
    /// How long downloads must have been quiet before background settling takes a batch.
    static let idleTime: Duration = .milliseconds(200)

    private struct State {
        var running = false
        var lastFill: ContinuousClock.Instant?
        /// Background settling is off (``ChunkCache/ChunkCache/settle()`` alone settles).
        var paused = false
    }

    private let state = Mutex(State())

    /// Notes that fills were recorded now, and starts background settling behind them.
    func fillsArrived(in engine: Engine) {
        let start = state.withLock { state -> Bool in
            state.lastFill = .now
            guard !state.running, !state.paused else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        Task.detached(priority: .background) { await self.settleInBackground(engine) }
    }

    /// Whether this process recorded fills since it opened the store.
    var filledHere: Bool { state.withLock { $0.lastFill != nil } }

    /// Stops or resumes background settling in this process (tests and commands that settle when they choose).
    func setBackground(_ enabled: Bool) { state.withLock { $0.paused = !enabled } }

    private func settleInBackground(_ engine: Engine) async {
        let store = engine.store
        defer { state.withLock { $0.running = false } }
        while true {
            // Idle first: the cores belong to the readers while downloads arrive.
            while let last = state.withLock({ $0.lastFill }), last.duration(to: .now) < Self.idleTime {
                try? await Task.sleep(for: Self.idleTime)
            }
            if state.withLock({ $0.paused }) { return }
            do {
                let round = try await runBlocking(doing: "settling downloaded chunks", store: store.path) {
                    try Self.withSettlingLock(store, waiting: false) {
                        try Self.settleBatch(engine, inBackground: true)
                    }
                }
                guard let round, round.touched > 0 else { return }
            } catch {
                engine.diagnostics.report("settle downloaded chunks", error)
                return
            }
        }
    }

    /// Settles every fill the store holds, waiting for another settler to finish first, and removes the fill
    /// files no fill is left in; unless `waiting`, does nothing when another settler runs (it settles what
    /// there is). Blocking.
    ///
    /// Batches overlap: while one commits on the writer, the next is read, hashed and compressed on every core,
    /// so at most two batches are in memory. Each is listed after the last record of the one before; at the
    /// end of the records, once the last commit is in, listing starts again from the first, for fills recorded
    /// meanwhile, until a pass from the first settles nothing more.
    @available(*, noasync)
    static func settleAll(_ engine: Engine, waiting: Bool = true) throws -> SettleResult {
        let store = engine.store
        var total = SettleResult()
        try withSettlingLock(store, waiting: waiting) {
            var committing: PendingCommit?
            var after: [UInt8]? = nil
            var pass = SettleResult()
            /// Waits for the batch committing, if any, and counts it.
            func land() throws {
                guard let pending = committing else { return }
                committing = nil
                let landed = try pending.wait()
                pass.add(landed)
                total.add(landed)
            }
            do {
                while true {
                    if let batch = try prepareBatch(store, after: after, width: BlockingPool.shared.threadCount) {
                        after = batch.next
                        try land()
                        committing = commit(batch, engine)
                        continue
                    }
                    try land()
                    // The end of the records: from the first again, unless this pass from it found nothing.
                    guard after != nil, pass.touched > 0 else { break }
                    (after, pass) = (nil, SettleResult())
                }
            } catch {
                try? land()  // nothing outlives the settling lock
                throw error
            }
            try removeFilesWithoutFills(store)
        }
        return total
    }

    /// Removes fill files no fill names, with their counted bytes: a process killed inside the transaction that
    /// wrote into one leaves bytes no record names, which nothing else removes nor counts toward the bound. In a
    /// write transaction, so no writer of fills runs meanwhile.
    /// Opening the store does it too (a `readdir` of `fills/`, and a write only when one is found).
    @available(*, noasync)
    static func removeFilesWithoutFills(_ store: Store) throws {
        let dbs = store.dbs
        var ids = Set(dbs.fillFiles.manifestIDs())
        let unnamed = try store.environment.read { txn in
            // And the versions whose file's bytes are counted: a kill may have undone the removal of the count
            // after the file was unlinked.
            try txn.scan(dbs.fills, prefix: []) { key, _ in
                if let id = FillKeys.manifestID(ofFileKey: key) { ids.insert(id) }
                return true
            }
            return try ids.sorted().filter { try !txn.hasFillRecords($0, dbs) }
        }
        guard !unnamed.isEmpty else { return }
        // Checked again in the transaction: a writer may have recorded fills in one meanwhile.
        try store.writer.writeAndWait(durability: .deferMeta) { txn in
            for id in unnamed { try txn.forgetFillFileIfDone(id, dbs) }
        }
    }

    /// Runs `body` holding the store's settling lock; nil when `waiting` is false and another settler holds it.
    @available(*, noasync)
    private static func withSettlingLock<R>(_ store: Store, waiting: Bool, _ body: () throws -> R) throws -> R? {
        let directory = store.dbs.fillFiles.directory
        try? FileSystem.makeDirectory(directory, mode: 0o700)
        let path = directory + "/.settling"
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        } catch {
            throw CacheError.file(error, path: path, doing: "settling downloaded chunks")
        }
        defer { try? fd.close() }
        if waiting {
            do { try fd.lock(.exclusive) } catch { throw CacheError.file(error, path: path, doing: "settling") }
        } else {
            guard (try? fd.tryLock(.exclusive)) == true else { return nil }
        }
        return try body()
    }

    /// One fill read for settling.
    private struct Candidate: Sendable {
        let manifestID: UInt64
        let index: Int64
        let checksum: UInt64
        let length: Int
        let expected: ChunkDigest?
    }

    /// What became of one candidate outside the transaction.
    private enum Outcome: Sendable {
        case settled(ChunkDigest, encoded: [UInt8]?)
        case mismatched
        case lost
    }

    /// A batch read, checked, named and compressed outside any transaction, ready to commit.
    private struct Batch: Sendable {
        /// In key order.
        let candidates: [Candidate]
        let outcomes: [Outcome]
        /// Where the next batch's listing starts: the key after this batch's last record.
        let next: [UInt8]

        var rawBytes: Int64 { Int64(candidates.reduce(0) { $0 + $1.length }) }
    }

    /// Settles the first fills, up to ``batchBytes(_:)``, in key order. Blocking.
    ///
    /// - Parameter inBackground: Settling behind this process's own work: one pool thread and at most
    ///   ``backgroundBatchBytes``, so a fetch that needs the pool waits for little (a cancelled one must
    ///   return within 100 ms, <doc:FileProviderRules#A16>). An explicit settle takes every core and full batches.
    @available(*, noasync)
    static func settleBatch(_ engine: Engine, inBackground: Bool = false) throws -> SettleResult {
        let store = engine.store
        let width = inBackground ? 1 : BlockingPool.shared.threadCount
        let limit = inBackground ? min(batchBytes(store), backgroundBatchBytes) : batchBytes(store)
        guard let batch = try prepareBatch(store, after: nil, width: width, upTo: limit) else { return SettleResult() }
        return try commit(batch, engine).wait()
    }

    /// Lists the fills after the key `after` (from the first when nil), up to `limit` bytes (``batchBytes(_:)``
    /// when nil), and reads, checks, names and compresses them on `width` threads; nil when no record is left
    /// after `after`.
    @available(*, noasync)
    private static func prepareBatch(_ store: Store, after: [UInt8]?, width: Int, upTo limit: Int? = nil) throws
        -> Batch?
    {
        let dbs = store.dbs
        guard
            let (candidates, next) = try store.environment.read({ txn in
                try listFills(dbs, after: after, upTo: limit ?? batchBytes(store), in: txn)
            })
        else { return nil }
        // Hashing and compressing take the time: every core takes chunks, each with its own buffers.
        let results = Mutex<[Result<Outcome, any Error>?]>(Array(repeating: nil, count: candidates.count))
        SharedWork.forEachIndex(below: candidates.count, threads: width) { claim in
            var buffer = [UInt8](repeating: 0, count: store.layout.chunkSize)
            var encoder = ChunkEncoder(store: store, largest: store.layout.chunkSize)
            while let index = claim() {
                let outcome = Result {
                    try examine(candidates[index], store: store, buffer: &buffer, encoder: &encoder)
                }
                results.withLock { $0[index] = outcome }
            }
        }
        let outcomes = try results.withLock { try $0.map { try $0!.get() } }
        return Batch(candidates: candidates, outcomes: outcomes, next: next)
    }

    /// A batch's commit, started on the writer while the caller prepares the next.
    private final class PendingCommit: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let result = Mutex<Result<SettleResult, any Error>>(.success(SettleResult()))

        /// Waits for the commit (this pool thread waits for the writer, which never waits for the pool).
        func wait() throws -> SettleResult {
            done.wait()
            done.signal()
            return try result.withLock { $0 }.get()
        }

        func finish(_ outcome: Result<SettleResult, any Error>) {
            result.withLock { $0 = outcome }
            done.signal()
        }
    }

    /// Records a batch in one write transaction and then, in a second, frees the fill bytes it settled or
    /// dropped. The bytes stay on disk until the first has committed: a kill before that commit leaves every
    /// fill of the batch as it was, bytes and all, to settle again. A kill between the two leaves bytes no
    /// record names, which go with their file (its version's last fill settled, or at the next open).
    private static func commit(_ batch: Batch, _ engine: Engine) -> PendingCommit {
        let store = engine.store
        let pending = PendingCommit()
        guard !batch.candidates.isEmpty else {
            pending.finish(.success(SettleResult()))
            return pending
        }
        // The chunks take about the room their fills leave, plus their headers and LMDB's pages that readers'
        // snapshots still hold: room is made for that much, so a store at its bound stays within it.
        store.writer.writeLater(
            durability: .deferMeta, reserving: batch.rawBytes / 8, doing: "settling downloaded chunks",
            { txn in try record(batch, in: &txn, engine) },
            completion: { outcome in
                // The fills' bytes were freed right after the commit (``FillRelease``), before this runs.
                if case .success(let result) = outcome { reportMismatches(result, in: store) }
                pending.finish(outcome)
            })
        return pending
    }

    /// Reports fills a committed batch dropped because their bytes did not hash to what the store knew.
    private static func reportMismatches(_ result: SettleResult, in store: Store) {
        guard result.mismatched > 0 else { return }
        store.diagnostics.report(
            "keep \(result.mismatched) downloaded chunk(s) of the store at \(store.path)",
            CacheError(
                .corruptData,
                "their bytes do not hash to what the store knew of them; they were dropped and are downloaded again when read: check the origin"
            ))
    }

    /// Reads a fill, checks it and names it; compresses it when the store lacks a chunk of that name.
    private static func examine(
        _ candidate: Candidate, store: Store, buffer: inout [UInt8], encoder: inout ChunkEncoder
    ) throws -> Outcome {
        let dbs = store.dbs
        return try buffer.withUnsafeMutableBytes { space -> Outcome in
            let target = UnsafeMutableRawBufferPointer(rebasing: space[..<candidate.length])
            guard
                let bytes = dbs.fillFiles.read(
                    manifestID: candidate.manifestID, at: candidate.index << store.layout.shift, into: target,
                    checksum: candidate.checksum)
            else { return .lost }
            let digest = ChunkDigest(hashing: bytes)
            if let expected = candidate.expected, expected != digest { return .mismatched }
            let known = try store.environment.read { txn in
                try digest.withUnsafeBytes { try txn.contains(dbs.refs, key: $0) }
            }
            if known { return .settled(digest, encoded: nil) }
            return .settled(digest, encoded: try encoder.encode(bytes, index: candidate.index, digest: digest).encoded)
        }
    }

    /// The fills after the key `after` (from the first when nil) in key order, up to `limit` bytes, and the key
    /// the next listing starts at; records whose entry is no longer a fill are skipped. Nil when no record is
    /// left.
    private static func listFills(
        _ dbs: Databases, after: [UInt8]?, upTo limit: Int, in txn: borrowing ReadTransaction
    ) throws -> (candidates: [Candidate], next: [UInt8])? {
        var bytes = 0
        var records: [(manifestID: UInt64, index: Int64, length: Int, expected: ChunkDigest?)] = []
        try txn.scan(dbs.fills, prefix: [], from: after) { key, value in
            guard let (manifestID, index) = FillKeys.parse(key), let record = FillKeys.parseRecord(value) else {
                return true
            }
            records.append((manifestID, index, record.length, record.expected))
            bytes += record.length
            return bytes < limit
        }
        guard let last = records.last else { return nil }
        var candidates: [Candidate] = []
        var cursor: ManifestCursor?
        for record in records {
            // One cursor per version: consecutive records of a version share its manifest's pages.
            if cursor?.manifestID != record.manifestID {
                cursor = ManifestCursor(manifestID: record.manifestID, dbs: dbs)
            }
            guard case .filled(let checksum) = try? cursor!.entry(record.index, in: txn) else { continue }
            candidates.append(
                Candidate(
                    manifestID: record.manifestID, index: record.index, checksum: checksum, length: record.length,
                    expected: record.expected))
        }
        return (candidates, FillKeys.fill(last.manifestID, last.index + 1))
    }

    /// Records a batch's outcomes, each only where its entry is still the fill that was read, and returns them;
    /// the fill bytes it forgot are freed after the commit (``FillRelease``). One pass over each version's
    /// manifest pages: candidates are in key order, so a version's are together.
    @available(*, noasync)
    private static func record(_ batch: Batch, in txn: inout WriteTransaction, _ engine: Engine) throws
        -> SettleResult
    {
        let dbs = engine.store.dbs
        var result = SettleResult()
        var start = 0
        while start < batch.candidates.count {
            let manifestID = batch.candidates[start].manifestID
            var end = start
            while end < batch.candidates.count && batch.candidates[end].manifestID == manifestID { end += 1 }
            defer { start = end }
            var cursor = ManifestCursor(manifestID: manifestID, dbs: dbs)
            var indices: [Int64] = []
            var entries: [ManifestEntry] = []
            for position in start..<end {
                let candidate = batch.candidates[position]
                guard case .filled(let checksum) = try? cursor.entry(candidate.index, in: txn),
                    checksum == candidate.checksum,
                    let entry = try settledEntry(candidate, batch.outcomes[position], in: &txn, dbs, &result)
                else { continue }
                indices.append(candidate.index)
                entries.append(entry)
            }
            guard !indices.isEmpty else { continue }
            try txn.rewriteEntries(of: manifestID, at: indices, dbs) { position, _ in entries[position] }
            // Their bytes leave the fill file as soon as this commits (``FillRelease``), settled or dropped: a
            // version being settled must not take its room twice, in the file and in `chunks`, or a bounded store
            // would evict to make room for it. A reader whose snapshot still names a fill reads a hole then,
            // fails the check and plans again.
            for index in indices { try txn.forgetFill(manifestID, index, dbs) }
            try txn.forgetFillFileIfDone(manifestID, dbs)
        }
        if result.mismatched > 0 { try txn.addToCounter(dbs, MetaKey.settleMismatches, Int64(result.mismatched)) }
        // A test's probe (``EngineProbes/beforeBatchCommit``): a throw here undoes the batch, as a kill would.
        try engine.probes.beforeBatchCommit?()
        return result
    }

    /// The entry a candidate's outcome turns its fill into, counted in `result`, after storing its chunk; nil
    /// when it must wait for the next batch (its twin went meanwhile, and it was not compressed).
    @available(*, noasync)
    private static func settledEntry(
        _ candidate: Candidate, _ outcome: Outcome, in txn: inout WriteTransaction, _ dbs: Databases,
        _ result: inout SettleResult
    ) throws -> ManifestEntry? {
        switch outcome {
        case .settled(let digest, let encoded):
            if try !txn.retainChunk(digest, dbs) {
                guard let encoded else { return nil }
                try encoded.withUnsafeBytes {
                    try txn.insertChunk(digest, encoded: $0, rawLength: candidate.length, dbs)
                }
            }
            result.settled += 1
            result.settledBytes += Int64(candidate.length)
            return .stored(digest)
        case .mismatched:
            result.mismatched += 1
            return .absent(candidate.expected)
        case .lost:
            result.lost += 1
            return .absent(candidate.expected)
        }
    }
}
