import Crypto
import FileIO
import Foundation
import LMDBKit
import Synchronization

/// What settling did (``ChunkCache/ChunkCache/settle()``).
public struct SettleResult: Sendable, Hashable, Codable {
    /// Fills named, checked and stored as chunks.
    public var settled: Int
    /// Their raw bytes.
    public var settledBytes: Int64
    /// Fills dropped because their bytes did not hash to what the manifest knew (the next read downloads them
    /// again).
    public var mismatched: Int
    /// Fills dropped because their bytes were lost (a system crash before the page cache reached the disk).
    public var lost: Int

    public init(settled: Int = 0, settledBytes: Int64 = 0, mismatched: Int = 0, lost: Int = 0) {
        self.settled = settled
        self.settledBytes = settledBytes
        self.mismatched = mismatched
        self.lost = lost
    }

    mutating func add(_ other: SettleResult) {
        settled += other.settled
        settledBytes += other.settledBytes
        mismatched += other.mismatched
        lost += other.lost
    }
}

/// Settles fills (CONTRACT §10, "stored behind"): reads each fill's bytes from its file, names it by SHA-256,
/// checks that against the hash its manifest knew (a mismatch drops it, so the next read downloads it again,
/// and is counted), deduplicates it against the store, compresses it, and records it as a stored chunk;
/// a version's fill file goes once none of its fills is left.
///
/// Work runs in batches of ``batchBytes(_:)``: a read snapshot lists and reads them, the hashing and compression
/// run outside any transaction, and one write transaction records the batch, checking again that each entry
/// is still the fill it read (a fill evicted, refilled or settled by another process meanwhile is left to
/// that). Fills are settled in the background when the process has downloaded nothing for ``idleTime``, one
/// settler per store across processes (`fills/.settling` is locked while one runs).
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
    func fillsArrived(in store: Store) {
        let start = state.withLock { state -> Bool in
            state.lastFill = .now
            guard !state.running, !state.paused else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        Task.detached(priority: .background) { await self.settleInBackground(store) }
    }

    /// Whether this process recorded fills since it opened the store.
    var filledHere: Bool { state.withLock { $0.lastFill != nil } }

    /// Stops or resumes background settling in this process (tests and commands that settle when they choose).
    func setBackground(_ enabled: Bool) { state.withLock { $0.paused = !enabled } }

    private func settleInBackground(_ store: Store) async {
        defer { state.withLock { $0.running = false } }
        while true {
            // Idle first: the cores belong to the readers while downloads arrive.
            while let last = state.withLock({ $0.lastFill }), last.duration(to: .now) < Self.idleTime {
                try? await Task.sleep(for: Self.idleTime)
            }
            if state.withLock({ $0.paused }) { return }
            do {
                let round = try await runBlocking(doing: "settling downloaded chunks", store: store.path) {
                    try Self.withSettlingLock(store, waiting: false) { try Self.settleBatch(store, inBackground: true) }
                }
                guard let round, round.settled + round.mismatched + round.lost > 0 else { return }
            } catch {
                Diagnostics.report("settle downloaded chunks", error)
                return
            }
        }
    }

    /// Settles every fill the store holds, waiting for another settler to finish first, and removes the fill
    /// files no fill is left in; unless `waiting`, does nothing when another settler runs (it settles what
    /// there is). Blocking.
    @available(*, noasync)
    static func settleAll(_ store: Store, waiting: Bool = true) throws -> SettleResult {
        var total = SettleResult()
        try withSettlingLock(store, waiting: waiting) {
            while true {
                let round = try settleBatch(store)
                guard round.settled + round.mismatched + round.lost > 0 else { break }
                total.add(round)
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
            for id in unnamed { try txn.removeFillFileIfDone(id, dbs) }
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

    /// Settles the first fills, up to ``batchBytes(_:)``, in key order. Blocking.
    @available(*, noasync)
    ///
    /// - Parameter inBackground: Settling behind this process's own work: one pool thread and at most
    ///   ``backgroundBatchBytes``, so a fetch that needs the pool waits for little (a cancelled one must
    ///   return within 100 ms, A16). An explicit settle takes every core and full batches.
    static func settleBatch(_ store: Store, inBackground: Bool = false) throws -> SettleResult {
        let dbs = store.dbs
        let limit = inBackground ? min(batchBytes(store), backgroundBatchBytes) : batchBytes(store)
        let candidates = try store.environment.read { txn in try listFills(dbs, upTo: limit, in: txn) }
        guard !candidates.isEmpty else { return SettleResult() }
        // Hashing and compressing take the time: every core takes chunks, each with its own buffers.
        let results = Mutex<[Result<Outcome, any Error>?]>(Array(repeating: nil, count: candidates.count))
        let width = inBackground ? 1 : BlockingPool.shared.threadCount
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
        // A crash that undoes the batch leaves its fills as they were, to settle again, except in the files of
        // versions it left without a fill, which it unlinked before its commit (so their bytes are never on disk
        // twice): those the next settle finds lost and drops, to download again. Its chunks take about
        // the room their fills leave, plus their headers and LMDB's pages that readers' snapshots still hold:
        // room is made for that much, so a store at its bound stays within it.
        let settledBytes = Int64(candidates.reduce(0) { $0 + $1.length })
        let result = try store.writer.writeAndWait(durability: .deferMeta, reserving: settledBytes / 8) { txn in
            try record(candidates, outcomes, in: &txn, dbs)
        }
        if result.mismatched > 0 {
            Diagnostics.report(
                "keep \(result.mismatched) downloaded chunk(s) of the store at \(store.path)",
                CacheError(
                    .corruptData,
                    "their bytes do not hash to what the store knew of them; they were dropped and are downloaded again when read: check the origin"
                ))
        }
        return result
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

    /// The first fills in key order, up to `limit` bytes; records whose entry is no longer a fill are skipped.
    private static func listFills(_ dbs: Databases, upTo limit: Int, in txn: borrowing ReadTransaction) throws
        -> [Candidate]
    {
        var candidates: [Candidate] = []
        var bytes = 0
        var records: [(UInt64, Int64, Int, ChunkDigest?)] = []
        try txn.scan(dbs.fills, prefix: []) { key, value in
            guard let (manifestID, index) = FillKeys.parse(key), let record = FillKeys.parseRecord(value) else {
                return true
            }
            records.append((manifestID, index, record.length, record.expected))
            bytes += record.length
            return bytes < limit
        }
        for (manifestID, index, length, expected) in records {
            var cursor = ManifestCursor(manifestID: manifestID, dbs: dbs)
            guard case .filled(let checksum) = try? cursor.entry(index, in: txn) else { continue }
            candidates.append(
                Candidate(manifestID: manifestID, index: index, checksum: checksum, length: length, expected: expected))
        }
        return candidates
    }

    /// Records a batch's outcomes, each only where its entry is still the fill that was read.
    @available(*, noasync)
    private static func record(
        _ candidates: [Candidate], _ outcomes: [Outcome], in txn: inout WriteTransaction, _ dbs: Databases
    ) throws -> SettleResult {
        var result = SettleResult()
        var manifests = Set<UInt64>()
        for (candidate, outcome) in zip(candidates, outcomes) {
            var cursor = ManifestCursor(manifestID: candidate.manifestID, dbs: dbs)
            guard case .filled(let checksum) = try? cursor.entry(candidate.index, in: txn),
                checksum == candidate.checksum
            else { continue }
            let entry: ManifestEntry
            switch outcome {
            case .settled(let digest, let encoded):
                if try !txn.retainChunk(digest, dbs) {
                    guard let encoded else { continue }  // its twin went meanwhile: the next batch settles it
                    try encoded.withUnsafeBytes {
                        try txn.insertChunk(digest, encoded: $0, rawLength: candidate.length, dbs)
                    }
                }
                entry = .stored(digest)
                result.settled += 1
                result.settledBytes += Int64(candidate.length)
            case .mismatched:
                entry = .absent(candidate.expected)
                result.mismatched += 1
            case .lost:
                entry = .absent(candidate.expected)
                result.lost += 1
            }
            try txn.rewriteEntries(of: candidate.manifestID, at: [candidate.index], dbs) { _, _ in entry }
            // Its bytes leave the fill file at once, settled or dropped: a version being settled must not take
            // its room twice, in the file and in `chunks`, or a bounded store would evict to make room for it.
            // A reader whose snapshot still names the fill reads a hole, fails the check and plans again.
            try txn.forgetFill(candidate.manifestID, candidate.index, punching: true, dbs)
            manifests.insert(candidate.manifestID)
        }
        if result.mismatched > 0 { try txn.addToCounter(dbs, MetaKey.settleMismatches, Int64(result.mismatched)) }
        for manifestID in manifests { try txn.removeFillFileIfDone(manifestID, dbs) }
        return result
    }
}
