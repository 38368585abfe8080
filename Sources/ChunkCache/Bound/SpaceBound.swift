import FileIO
import Foundation
import LMDBKit
import Synchronization

/// Keeps the store within its bound (<doc:Contract#12-A-bounded-cache>): `maxSize` of disk for all the files it keeps
/// (the live pages of `data.mdb`, beside a fixed room for the others: ``Store/mapSize(forBound:)``), and `minFree`
/// bytes free on the store's filesystem. When a commit takes the live pages past 90 % of what is allowed, the writer
/// evicts origin chunks the policy chooses (``EvictionPolicy``) down to 80 %, in transactions of its own queued after
/// that commit: never inside a reader's fetch, and between two batches of any long write. Pages eviction frees go
/// on LMDB's free list and are reused before the file grows.
///
/// All of it runs on the writer queue (``Writer``): it reads LMDB's free list and `statvfs` there, after a
/// commit, so a fetch never pays for it.
final class SpaceBound: WriteBound {
    private let environment: Environment
    private let dbs: Databases
    private let path: String
    /// Compresses hot chunks again, which makes room before anything is evicted (``HotTier``).
    private let codecs: CodecPool
    /// Where a failed eviction after a commit is reported.
    private let diagnostics: Diagnostics
    /// The most disk the store's files may take (`init --max-size`); LMDB's map, which no write can pass, is a
    /// little less (``Store/mapSize(forBound:)``).
    let maxSize: Int64
    /// The bytes eviction keeps free on the store's filesystem: `init --min-free`, else the default.
    var minFree: Int64 { minFree(of: try? FileSystem.filesystemStatus(path)) }
    /// What `init --min-free` set; -1 when it never did.
    private let minFreeBytes: Atomic<Int64>
    /// An eviction is queued on the writer: later commits need not queue another.
    private let queued = Atomic<Bool>(false)
    /// Runs a closure on the writer queue after what is queued there.
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// The chunks this process's fetches downloaded and have not read yet, which eviction spares.
    let unreadDownloads = UnreadDownloads()

    /// Eviction starts above this share of the allowed bytes…
    static let highWater = 0.9
    /// …and frees down to this one.
    static let lowWater = 0.8
    /// The free space kept when `init --min-free` never set one: 1 GiB (<doc:Contract#12-A-bounded-cache>), but no more
    /// than 5 % of a filesystem under 20 GiB, as ext4 reserves 5 % for root: a 1 GiB floor would refuse every write
    /// to a store on a small volume that is nowhere near full.
    static func defaultMinFree(of fs: statvfs?) -> Int64 {
        guard let fs else { return 1 << 30 }
        return min(1 << 30, Int64(fs.f_blocks) * Int64(fs.f_frsize) / 20)
    }

    /// What `minFree` is on a filesystem of status `fs` (one `statvfs` serves this and the free space).
    private func minFree(of fs: statvfs?) -> Int64 {
        let set = minFreeBytes.load(ordering: .relaxed)
        return set >= 0 ? set : Self.defaultMinFree(of: fs)
    }
    /// Victims per eviction transaction, so other writes wait for at most one short transaction.
    static let victimsPerTransaction = 2048

    init(
        environment: Environment, dbs: Databases, path: String, maxSize: Int64, minFree: Int64, codecs: CodecPool,
        diagnostics: Diagnostics, enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) {
        self.environment = environment
        self.diagnostics = diagnostics
        self.dbs = dbs
        self.path = path
        self.codecs = codecs
        self.maxSize = maxSize
        self.minFreeBytes = Atomic(minFree)
        self.enqueue = enqueue
    }

    /// Keeps `bytes` free from now on (the caller records it in `meta`).
    func setMinFree(_ bytes: Int64) { minFreeBytes.store(bytes, ordering: .relaxed) }

    /// The live bytes the store may hold now: what the bound leaves `data.mdb` (``Store/mapSize(forBound:)``: the
    /// room for the other files is fixed, so no commit has to list them), and no more than leaves `minFree`
    /// free.
    func allowedBytes() -> Int64 {
        let bound = Store.mapSize(forBound: maxSize)
        guard let fs = try? FileSystem.filesystemStatus(path) else { return bound }
        let keep = minFree(of: fs)
        guard keep > 0, let file = try? FileSystem.status(path + "/data.mdb") else { return max(0, bound) }
        let free = Int64(fs.f_bavail) * Int64(fs.f_frsize)
        return max(0, min(bound, Int64(file.st_blocks) * 512 + free - keep))
    }

    /// Called on the writer queue after each commit: queues an eviction when the live pages are above the
    /// high-water mark. The cheap test (the file's extent) comes first; the free list is read only past it.
    @available(*, noasync)
    func afterCommit() {
        let allowed = Double(allowedBytes())
        let fills = fillBytes()
        guard Double(environment.usedBytes + fills) > Self.highWater * allowed,
            let live = try? environment.liveBytes(), Double(live + fills) > Self.highWater * allowed,
            !queued.exchange(true, ordering: .acquiringAndReleasing)
        else { return }
        enqueue { [self] in
            queued.store(false, ordering: .releasing)
            do {
                _ = try evictToLowWater()
            } catch {
                diagnostics.report("evict to keep the store within its bound", error)
            }
        }
    }

    /// Evicts, one transaction at a time, until the live pages are at the low-water mark or nothing is left
    /// to evict; hot chunks are cooled first (``HotTier``), which keeps content. On the writer queue. Returns
    /// what was evicted.
    @available(*, noasync)
    @discardableResult
    func evictToLowWater(below extra: Int64 = 0) throws -> EvictionResult {
        var total = EvictionResult(versions: 0, bytes: 0, pinnedSkipped: 0)
        while true {
            let target = Int64(Self.lowWater * Double(allowedBytes())) - extra
            let live = Int64(try environment.liveBytes() + fillBytes())
            guard live > target else { break }
            let want = live - target
            let dbs = self.dbs
            if try HotTier.coolColdest(saving: want, environment: environment, codecs: codecs, dbs) > 0 { continue }
            let protection = unreadDownloads.protection
            // Evicted chunks can be downloaded again: a crash that undoes this transaction loses nothing.
            let round = try environment.write(durability: .deferMeta) { txn in
                var round = try txn.evictByPolicy(
                    bytes: want, limit: Self.victimsPerTransaction, sparing: protection, dbs)
                if round.bytes == 0 { round = try txn.evictUntracked(bytes: want, dbs) }
                return round
            }
            guard round.bytes > 0 else { break }
            total.versions += round.versions
            total.bytes += round.bytes
        }
        if total.bytes > 0 {
            // LMDB reuses a page only once a later commit exists than the one that freed it (the previous
            // snapshot stays intact for a crash): this one lets the next write reuse what was just freed.
            let dbs = self.dbs
            try environment.write(durability: .deferMeta) { txn in try txn.addToCounter(dbs, MetaKey.evictionRuns, 1) }
        }
        return total
    }

    /// After LMDB's map filled although the live pages left room (pages freed under readers' older snapshots
    /// are not reusable yet): evicts down to the low-water mark less a tenth of the bound more, so the write
    /// can run once more. Throws `insufficientQuota` as ``makeRoom(for:doing:)`` does.
    @available(*, noasync)
    func makeRoomAfterMapFull(for bytes: Int64, doing what: String) throws {
        _ = try evictToLowWater(below: bytes + allowedBytes() / 10)
        try makeRoom(for: bytes, doing: what)
    }

    /// Whether a write of about `bytes` more fits, making room by eviction first when it would pass the bound
    /// (unless `evicting` is false); on the writer queue. Throws `insufficientQuota`, before anything is
    /// written, when it cannot fit: the store is left as it was.
    @available(*, noasync)
    func makeRoom(for bytes: Int64, doing what: String, evicting: Bool = true) throws {
        let need = Self.pagesNeeded(for: bytes)
        let high = Self.highWater * Double(allowedBytes())
        // The file's extent first (no read of the free list): live pages are never more.
        guard Double(Int64(environment.usedBytes + fillBytes()) + need) > high else { return }
        let live = Int64(((try? environment.liveBytes()) ?? environment.usedBytes) + fillBytes())
        guard Double(live + need) > high else { return }
        if evicting { _ = try evictToLowWater(below: need) }
        let after = Int64(((try? environment.liveBytes()) ?? environment.usedBytes) + fillBytes())
        let allowed = allowedBytes()
        guard after + need > allowed else { return }
        throw refusal(of: bytes, doing: what, allowed: allowed)
    }

    /// Whether a put of about `bytes` could fit once eviction freed everything it may (``HeldChunks``): the
    /// put decides this before it writes, and evicts for its batches only when it could, so a put that cannot
    /// fit leaves the origin domains' cache as it was (<doc:Contract#12-A-bounded-cache>). Counts the evictable chunks
    /// only when the put does not fit beside what is there. Blocking (a read transaction).
    @available(*, noasync)
    func couldFit(_ bytes: Int64) -> Bool {
        let need = Self.pagesNeeded(for: bytes)
        let allowed = allowedBytes()
        // The file's extent first (no read of the free list): live pages are never more.
        guard Int64(environment.usedBytes + fillBytes()) + need > allowed else { return true }
        let live = Int64(((try? environment.liveBytes()) ?? environment.usedBytes) + fillBytes())
        guard live + need > allowed else { return true }
        let dbs = self.dbs
        let evictable = (try? environment.read { txn in try txn.heldChunks(dbs).evictableBytes }) ?? 0
        return live - evictable + need <= allowed
    }

    /// The bytes the fill files take (``FillFiles``), which count toward the bound beside `data.mdb`'s pages.
    private func fillBytes() -> Int {
        let dbs = self.dbs
        return Int((try? environment.read { txn in try txn.counter(dbs, MetaKey.fillBytes) }) ?? 0)
    }

    /// What `bytes` of content take in pages: a chunk of 64 KiB and its header fill 17 pages of 4 KiB, and
    /// the B-trees that index them grow too.
    private static func pagesNeeded(for bytes: Int64) -> Int64 { bytes + bytes / 8 + 256 << 10 }

    /// The `insufficientQuota` of a write of `bytes` that cannot fit in `allowed`.
    private func refusal(of bytes: Int64, doing what: String, allowed: Int64) -> CacheError {
        let limit =
            allowed < Store.mapSize(forBound: maxSize)
            ? "leaves less than --min-free \(minFree) bytes free on its filesystem"
            : "passes its --max-size of \(maxSize) bytes"
        return CacheError(
            .insufficientQuota,
            "the store at \(path) cannot take \(bytes) more bytes while \(what): that \(limit), and nothing more can be evicted (only origin domains' unpinned content is); nothing was changed: free disk space, raise the bound with `chunkcache init --max-size`/`--min-free`, unpin items, or remove versions"
        )
    }
}

extension WriteTransaction {
    /// Evicts the chunks the policy chooses until their stored bytes reach `bytes`: each entry becomes
    /// `absent` with its hash kept, and the chunk loses a reference (freed with its last).
    @available(*, noasync)
    mutating func evictByPolicy(bytes: Int64, limit: Int, sparing protection: PolicyProtection, _ dbs: Databases) throws
        -> EvictionResult
    {
        let victims = try policyChooseVictims(bytes: bytes, limit: limit, sparing: protection, dbs)
        var byPage: [PolicySlot: Set<Int>] = [:]  // keyed by (manifest, page)
        for victim in victims {
            let page = ManifestPage.page(ofChunk: victim.slot.index)
            byPage[PolicySlot(manifestID: victim.slot.manifestID, index: page), default: []]
                .insert(Int(victim.slot.index - page * ManifestPage.entriesPerPage))
        }
        var result = EvictionResult(versions: 0, bytes: 0, pinnedSkipped: 0)
        var manifests = Set<UInt64>()
        for (page, slots) in byPage {
            let bytes = try makeAbsent(manifest: page.manifestID, page: page.index, slots: slots, dbs)
            if bytes > 0 { manifests.insert(page.manifestID) }
            result.bytes += bytes
        }
        result.versions = manifests.count
        try addToCounter(dbs, PolicyMeta.evictedBytes, result.bytes)
        return result
    }

    /// When the policy tracks nothing more (chunks it never saw: versions made by `domain sync` that share
    /// cached chunks, stores from before it), evicts whole cached versions of unpinned origin items, the
    /// least recently used items first, until `bytes` of raw content are evicted.
    @available(*, noasync)
    mutating func evictUntracked(bytes: Int64, _ dbs: Databases) throws -> EvictionResult {
        var origins: [String] = []
        try scan(dbs.domains, prefix: []) { key, value in
            var reader = ByteReader(key)
            if let name = try? reader.readPrefixedString(), let record = DomainRecord(ifIntact: value),
                record.origin != nil
            {
                origins.append(name)
            }
            return true
        }
        var candidates: [(used: Double, item: ItemRecord, domain: String)] = []
        for domain in origins {
            try scan(dbs.items, prefix: Keys.domain(domain)) { _, value in
                if let item = ItemRecord(ifIntact: value), item.kind == .file, !item.flags.contains(.pinned) {
                    candidates.append((item.lastUsedDate ?? 0, item, domain))
                }
                return true
            }
        }
        var result = EvictionResult(versions: 0, bytes: 0, pinnedSkipped: 0)
        for candidate in candidates.sorted(by: { $0.used < $1.used }) where result.bytes < bytes {
            for version in try Records.versions(
                ofItem: candidate.item.identifier, domain: candidate.domain, in: self, dbs)
            {
                let evicted = try evictCachedChunks(of: version, dbs)
                if evicted > 0 { result.versions += 1 }
                result.bytes += evicted
            }
        }
        return result
    }
}
