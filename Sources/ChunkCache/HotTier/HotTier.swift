import Foundation
import LMDBKit
import ZstdKit

/// The hot tier (<doc:Contract#14-Chunk-encodings>): chunks read often are kept decoded, so a warm fetch copies them
/// out of LMDB's map as it does raw chunks, without a zstd decode; they are compressed again when they cool.
///
/// **The form.** A hot chunk's value is its raw bytes with their XXH3-64 in the header (``ChunkCodec/Encoding/hot``),
/// read exactly as a raw chunk is, in the same `chunks` database: no second copy, no file beside the store, and
/// the fetch path needs no new case (it already serves raw chunks straight from the map). `.hot` differs from
/// `.raw` only in what it promises: a raw chunk is one zstd did not shrink and stays raw; a hot one was zstd
/// and goes back to zstd at the store's level when it cools.
///
/// **Which chunks are hot.** Reads are counted per chunk digest, whatever the domain (local ones too: the
/// eviction policy tracks only origin domains' chunks) and whichever items share the chunk, once per usage
/// flush that saw any fetch read it (``UsageRecorder``, about a second): counting flushes rather than reads
/// keeps a sequential reader that takes a chunk in sixteen 4 KiB reads from counting sixteen. Counts are aged
/// as the eviction policy's are (capped at 15, halved every 10 × tracked chunks counted). A chunk stored as
/// zstd whose count reaches ``promotionFrequency`` (read in two flushes lately) is promoted. When the tier is
/// full (`init --hot-size`), a newcomer takes the place of the least recently read hot chunk only when it was
/// read more often (TinyLFU's admission), so a scan that reads a file twice does not push out what is read
/// all the time; otherwise it waits for a later flush.
///
/// **Cooling.** A hot chunk is compressed again when a newcomer displaces it, when its count ages to 0 (the
/// least recently read few are checked at each flush), when the store needs room (``SpaceBound`` cools hot
/// chunks, least recently read first, before it evicts anything), or when `--hot-size` shrinks.
///
/// **Space.** Promotion grows the store by the raw bytes less the compressed ones. It happens only while the
/// store stays below the bound's low-water mark after it, so hot bytes never cause an eviction, and they count
/// toward the bound as any stored byte does (`storedBytes` and each chunk's stored length are kept exact).
///
/// **When.** Promotion and aging run on the writer, in the flush's transaction, a bounded amount per flush
/// (``promotedBytesPerFlush``); never on a read path. Each re-encode rewrites the chunk's value, its stored
/// length and the counters in one transaction: a crash at any moment leaves the old encoding in place.
///
/// **Records.** The `hot` database holds a ``HotRecord`` per chunk counted (key `0x01` + digest) and a queue
/// per segment in order of last read (key `0x02`, segment, clock → digest). Chunks counted but not hot are
/// *candidates*, at most ``maximumCandidates(budget:chunkSize:)``, the least recently read forgotten. Losing
/// these records loses nothing but counts: a hot chunk is a valid chunk with or without them.
enum HotTier {
    /// Flushes that must have read a chunk (aged) for it to be promoted.
    static let promotionFrequency: UInt8 = 2
    /// Counts saturate here, as the eviction policy's.
    static let maxFrequency: UInt8 = 15
    /// Counted reads between two halvings, per tracked chunk (the eviction policy's W = 10 × C).
    static let samplesPerChunk: UInt64 = 10
    /// The most raw bytes one flush promotes (a decode each), so its transaction stays short.
    static let promotedBytesPerFlush: Int64 = 16 << 20
    /// Hot chunks, least recently read first, whose aged count each flush checks.
    static let agingChecksPerFlush = 32
    /// Chunks cooled per transaction when the bound or a smaller `--hot-size` needs room.
    static let cooledPerTransaction = 256

    /// `init --hot-size` when never set: the smaller of 10 % of the bound and 1 GiB
    /// (<doc:Contract#14-Chunk-encodings>).
    static func defaultSize(forBound maxSize: Int64) -> Int64 { min(maxSize / 10, 1 << 30) }

    /// Candidates kept: four times the chunks the budget holds, and no fewer than 4096.
    static func maximumCandidates(budget: Int64, chunkSize: Int) -> UInt64 {
        max(4096, UInt64(max(0, budget) / Int64(chunkSize)) * 4)
    }
}

extension ChunkCodec {
    /// Writes `raw` as a hot value (header, XXH3, raw bytes) into `output`, exactly `headerSize + raw.count`.
    static func encodeHot(_ raw: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        UnsafeMutableRawBufferPointer(rebasing: output[..<headerSize]).initializeMemory(as: UInt8.self, repeating: 0)
        output[0] = Encoding.hot.rawValue
        output.storeBytes(of: checksum(raw).littleEndian, toByteOffset: 8, as: UInt64.self)
        UnsafeMutableRawBufferPointer(rebasing: output[headerSize..<(headerSize + raw.count)]).copyMemory(from: raw)
    }

    /// The encoding named by a stored value's header, nil when it names none.
    package static func encoding(of stored: UnsafeRawBufferPointer) -> Encoding? {
        stored.count >= headerSize ? Encoding(rawValue: stored[0]) : nil
    }

    /// A hot value's raw bytes when they have `rawCount` bytes and pass their XXH3, else nil.
    static func hotPayload(_ stored: UnsafeRawBufferPointer, rawCount: Int) -> UnsafeRawBufferPointer? {
        guard encoding(of: stored) == .hot, stored.count - headerSize == rawCount else { return nil }
        let payload = UnsafeRawBufferPointer(rebasing: stored[headerSize...])
        let expected = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        return checksum(payload) == expected ? payload : nil
    }

    /// A hot value compressed again (zstd, or raw when zstd no longer pays); any other value as it is.
    /// `recover` stores hot chunks so: the new store has no read counts to keep them hot by.
    package static func cooled(_ value: [UInt8], rawCount: Int, compressor: Compressor) -> [UInt8] {
        value.withUnsafeBytes { stored in
            guard let raw = hotPayload(stored, rawCount: rawCount) else { return value }
            var output = [UInt8](repeating: 0, count: encodedBound(rawCount: rawCount))
            let length = output.withUnsafeMutableBytes { try? encode(raw, compressor: compressor, into: $0) }
            guard let length else { return value }
            return Array(output[..<length])
        }
    }
}

extension TransactionReading where Self: ~Copyable {
    /// The hot tier's size: `init --hot-size` once set, else ``HotTier/defaultSize(forBound:)`` of `maxSize`.
    func hotBudget(_ dbs: Databases, maxSize: Int64) throws -> Int64 {
        try contains(dbs.meta, key: Keys.meta(HotMeta.size))
            ? Int64(try counter(dbs, HotMeta.size)) : HotTier.defaultSize(forBound: maxSize)
    }
}

extension HotTier {
    /// Applies one flush's reads (``UsageNotes/hotReads``) in the flush's transaction: counts each chunk once,
    /// promotes those now hot within the budget and the room the bound leaves, and cools those aged out.
    /// Returns false when the tier is off (`--hot-size 0`): fetches then stop noting reads for it.
    @available(*, noasync)
    static func applyReads(_ slots: Set<PolicySlot>, in txn: inout WriteTransaction, engine: Engine) throws -> Bool {
        let store = engine.store
        let dbs = store.dbs
        let budget = try txn.hotBudget(dbs, maxSize: store.maxSize)
        // Over a size that shrank while its cooling was cut short (a killed `init --hot-size`): back within it.
        if try Int64(txn.counter(dbs, HotMeta.bytes)) > budget { try coolOverBudget(budget, in: &txn, store: store) }
        guard budget > 0 else { return false }
        let generation = UInt32(truncatingIfNeeded: try txn.counter(dbs, HotMeta.generation))
        let digests = try txn.storedDigests(at: slots, dbs)
        var due: [(ChunkDigest, HotRecord)] = []
        for digest in digests {
            guard let ref = try txn.intactChunkRef(digest, dbs) else { continue }
            var record: HotRecord
            if let old = try txn.hotRecord(digest, dbs) {
                try txn.hotUnlink(digest, old, dbs)
                record = old
            } else {
                record = HotRecord(segment: .candidate, frequency: 0, generation: generation, rawLength: ref.rawLength)
            }
            record.frequency = min(maxFrequency, record.frequency(at: generation) + 1)
            record.generation = generation
            record = try txn.hotLink(digest, record, dbs)
            if record.segment == .candidate, record.frequency >= promotionFrequency,
                let encoding = try txn.storedEncoding(of: digest, dbs), encoding == .zstd || encoding == .delta
            {
                due.append((digest, record))
            }
        }
        try txn.hotCountSamples(UInt64(digests.count), dbs)
        try promote(due, budget: budget, in: &txn, engine: engine)
        try coolAged(in: &txn, store: store)
        try txn.trimHotCandidates(
            to: maximumCandidates(budget: budget, chunkSize: store.layout.chunkSize), dbs)
        return true
    }

    /// The bytes promotion may add now: what keeps the store below its low-water mark (``SpaceBound``), so
    /// hot bytes never make it evict. Reads the free list in a read transaction of its own (transactions are
    /// `MDB_NOTLS`), which sees the store as of the last commit.
    @available(*, noasync)
    static func promotionRoom(_ engine: Engine) -> Int64 {
        let store = engine.store
        let allowed = Double(engine.space.allowedBytes())
        let live = Int64((try? store.environment.liveBytes()) ?? store.environment.usedBytes)
        return Int64(SpaceBound.lowWater * allowed) - live
    }

    /// Promotes `due` chunks, most read first, while the flush's share, the room and the budget allow.
    @available(*, noasync)
    private static func promote(
        _ due: [(ChunkDigest, HotRecord)], budget: Int64, in txn: inout WriteTransaction, engine: Engine
    ) throws {
        guard !due.isEmpty else { return }
        let store = engine.store
        let dbs = store.dbs
        var room = promotionRoom(engine)
        guard room > 0 else { return }
        let generation = UInt32(truncatingIfNeeded: try txn.counter(dbs, HotMeta.generation))
        var promoted: Int64 = 0
        try store.codecs.withDecoder { context in
            try store.codecs.withCompressor { compressor in
                for (digest, record) in due.sorted(by: { $0.1.frequency > $1.1.frequency }) {
                    let raw = Int64(record.rawLength)
                    guard promoted == 0 || promoted + raw <= promotedBytesPerFlush else { break }
                    while try Int64(txn.counter(dbs, HotMeta.bytes)) + raw > budget,
                        let (victim, old) = try txn.hotOldest(.hot, dbs),
                        old.frequency(at: generation) < record.frequency
                    {
                        room += try txn.hotCoolOrForget(victim, old, compressor: compressor, dbs)
                    }
                    guard try Int64(txn.counter(dbs, HotMeta.bytes)) + raw <= budget else { continue }
                    guard let growth = try txn.hotPromote(digest, record, context: context, room: room, dbs) else {
                        continue
                    }
                    room -= growth
                    promoted += raw
                }
            }
        }
    }

    /// Cools the least recently read hot chunks until `hotBytes` is within `budget`, at most
    /// ``cooledPerTransaction`` of them; returns how many left the tier.
    @available(*, noasync)
    @discardableResult
    private static func coolOverBudget(_ budget: Int64, in txn: inout WriteTransaction, store: Store) throws -> Int {
        let dbs = store.dbs
        return try store.codecs.withCompressor { compressor in
            var cooled = 0
            while cooled < cooledPerTransaction, try Int64(txn.counter(dbs, HotMeta.bytes)) > budget,
                let (digest, record) = try txn.hotOldest(.hot, dbs)
            {
                cooled += 1
                _ = try txn.hotCoolOrForget(digest, record, compressor: compressor, dbs)
            }
            return cooled
        }
    }

    /// Cools the least recently read hot chunks whose count has aged to 0, among the first few.
    @available(*, noasync)
    private static func coolAged(in txn: inout WriteTransaction, store: Store) throws {
        let dbs = store.dbs
        let generation = UInt32(truncatingIfNeeded: try txn.counter(dbs, HotMeta.generation))
        var aged: [(ChunkDigest, HotRecord)] = []
        var checked = 0
        try txn.scan(dbs.hot, prefix: HotRecord.queuePrefix(.hot)) { _, value in
            checked += 1
            guard value.count == 32 else { return checked < agingChecksPerFlush }
            let digest = ChunkDigest(raw: value)
            if let record = try txn.hotRecord(digest, dbs), record.segment == .hot,
                record.frequency(at: generation) == 0
            {
                aged.append((digest, record))
            }
            return checked < agingChecksPerFlush
        }
        guard !aged.isEmpty else { return }
        try store.codecs.withCompressor { compressor in
            for (digest, record) in aged { _ = try txn.hotCoolOrForget(digest, record, compressor: compressor, dbs) }
        }
    }

    /// Cools hot chunks, least recently read first, until their stored bytes shrank by `bytes`, in one
    /// transaction of at most ``cooledPerTransaction`` chunks; on the writer queue. Returns how many left the
    /// tier.
    @available(*, noasync)
    static func coolColdest(
        saving bytes: Int64, environment: Environment, codecs: CodecPool, _ dbs: Databases
    ) throws -> Int {
        try environment.write(durability: .deferMeta) { txn in
            try codecs.withCompressor { compressor in
                var saved: Int64 = 0
                var cooled = 0
                while saved < bytes, cooled < cooledPerTransaction, let (digest, record) = try txn.hotOldest(.hot, dbs)
                {
                    saved += try txn.hotCoolOrForget(digest, record, compressor: compressor, dbs)
                    cooled += 1
                }
                return cooled
            }
        }
    }

    /// Cools hot chunks until `hotBytes` is within the tier's size (after `--hot-size` shrinks); on the writer
    /// queue.
    @available(*, noasync)
    static func coolToBudget(_ store: Store) throws {
        let dbs = store.dbs
        var cooling = true
        while cooling {
            cooling = try store.environment.write { txn in
                let budget = try txn.hotBudget(dbs, maxSize: store.maxSize)
                return try coolOverBudget(budget, in: &txn, store: store) > 0
            }
        }
    }
}

extension WriteTransaction {
    /// The digests of the stored chunks at `slots` (manifest, chunk index), each once; pages read once each.
    @available(*, noasync)
    fileprivate func storedDigests(at slots: Set<PolicySlot>, _ dbs: Databases) throws -> Set<ChunkDigest> {
        var byPage: [PolicySlot: [Int]] = [:]
        for slot in slots {
            let page = ManifestPage.page(ofChunk: slot.index)
            byPage[PolicySlot(manifestID: slot.manifestID, index: page), default: []]
                .append(Int(slot.index - page * ManifestPage.entriesPerPage))
        }
        var digests = Set<ChunkDigest>()
        for (page, indices) in byPage {
            _ = try withValue(dbs.manifests, key: Keys.manifestPage(page.manifestID, page: page.index)) { raw in
                guard let entries = ManifestPage.entries(ofStored: raw) else { return }
                for index in indices where index < entries.count / ManifestPage.entrySize {
                    if case .stored(let digest)? = try? ManifestPage.entry(in: entries, at: index) {
                        digests.insert(digest)
                    }
                }
            }
        }
        return digests
    }

    /// Rewrites a zstd or delta chunk as `.hot`. Returns the bytes it grew by, or nil when it is neither, fails
    /// its check, or would grow by more than `room` (with the pages that index it). A delta leaves its bases'
    /// links; when it cools it is stored plain (zstd), not as a delta again.
    @available(*, noasync)
    fileprivate mutating func hotPromote(
        _ digest: ChunkDigest, _ record: HotRecord, context: CodecPool.DecodeContext, room: Int64, _ dbs: Databases
    ) throws -> Int64? {
        guard var ref = try intactChunkRef(digest, dbs), Int(ref.rawLength) <= context.buffer.count else { return nil }
        let growth = Int64(ref.rawLength) - Int64(ref.storedLength)
        guard growth + growth / 8 <= room else { return nil }
        var wasDelta: (layout: DeltaLayout, storedCount: Int)?
        let reader = StoredChunkReader(context, dbs)
        let decoded = try digest.withUnsafeBytes { key -> UnsafeRawBufferPointer? in
            guard let stored = try unsafeValue(dbs.chunks, key: key),
                let encoding = ChunkCodec.encoding(of: stored), encoding == .zstd || encoding == .delta
            else {
                return nil
            }
            wasDelta = DeltaLayout(parsing: stored).map { ($0, stored.count) }
            // Into the context's buffer, not the map: the value's pages are replaced below.
            return try? reader.decode(
                stored, digest: digest, length: Int(ref.rawLength), into: context.buffer, in: self)
        }
        guard let raw = decoded else { return nil }
        if let wasDelta { try unlinkDelta(digest, layout: wasDelta.layout, storedCount: wasDelta.storedCount, dbs) }
        try digest.withUnsafeBytes { key in
            try reserve(dbs.chunks, key: key, count: ChunkCodec.headerSize + raw.count) {
                ChunkCodec.encodeHot(raw, into: $0)
            }
        }
        try setStoredLength(of: digest, &ref, UInt32(raw.count), dbs)
        try hotUnlink(digest, record, dbs)
        var hot = record
        hot.segment = .hot
        hot.rawLength = ref.rawLength
        try hotLink(digest, hot, dbs)
        return growth
    }

    /// Compresses a hot chunk again (zstd at the store's level, or raw when zstd no longer pays) and makes it a
    /// candidate. Returns the stored bytes saved, or nil when its value fails its check (left as it is).
    @available(*, noasync)
    fileprivate mutating func hotCool(
        _ digest: ChunkDigest, _ record: HotRecord, compressor: Compressor, _ dbs: Databases
    ) throws -> Int64? {
        var candidate = record
        candidate.segment = .candidate
        guard var ref = try intactChunkRef(digest, dbs) else {
            try hotForget(digest, dbs)  // the chunk is gone or its reference is damaged: nothing to cool
            return 0
        }
        var output = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: Int(ref.rawLength)))
        let encoded = try digest.withUnsafeBytes { key -> Int? in
            guard let stored = try unsafeValue(dbs.chunks, key: key) else { return nil }
            guard ChunkCodec.encoding(of: stored) == .hot else { return 0 }
            guard let raw = ChunkCodec.hotPayload(stored, rawCount: Int(ref.rawLength)) else { return nil }
            return try output.withUnsafeMutableBytes { try ChunkCodec.encode(raw, compressor: compressor, into: $0) }
        }
        guard let encoded else { return nil }
        let before = Int64(ref.storedLength)
        if encoded > 0 {
            try digest.withUnsafeBytes { key in
                try output.withUnsafeBytes {
                    try put(dbs.chunks, key: key, value: UnsafeRawBufferPointer(rebasing: $0[..<encoded]))
                }
            }
            try setStoredLength(of: digest, &ref, UInt32(encoded - ChunkCodec.headerSize), dbs)
        }
        try hotUnlink(digest, record, dbs)
        try hotLink(digest, candidate, dbs)
        return before - Int64(ref.storedLength)
    }

    /// ``hotCool(_:_:compressor:_:)``, or, for a chunk whose value fails its check, takes it out of the tier's
    /// counts (left as it is: `verify` reports it, `--repair` drops it). Returns the stored bytes saved.
    @available(*, noasync)
    fileprivate mutating func hotCoolOrForget(
        _ digest: ChunkDigest, _ record: HotRecord, compressor: Compressor, _ dbs: Databases
    ) throws -> Int64 {
        if let saved = try hotCool(digest, record, compressor: compressor, dbs) { return saved }
        try hotForget(digest, dbs)
        return 0
    }

    /// Forgets the least recently read candidates beyond `limit`.
    @available(*, noasync)
    fileprivate mutating func trimHotCandidates(to limit: UInt64, _ dbs: Databases) throws {
        while try counter(dbs, HotMeta.candidates) > limit, let (digest, _) = try hotOldest(.candidate, dbs) {
            try hotForget(digest, dbs)
        }
    }

    /// Counts chunks towards the next halving of every count, which moves the generation on.
    @available(*, noasync)
    fileprivate mutating func hotCountSamples(_ reads: UInt64, _ dbs: Databases) throws {
        guard reads > 0 else { return }
        let tracked = try counter(dbs, HotMeta.chunks) + counter(dbs, HotMeta.candidates)
        let samples = try counter(dbs, HotMeta.samples) + reads
        if samples >= max(64, tracked) * HotTier.samplesPerChunk {
            try setCounter(dbs, HotMeta.samples, 0)
            try addToCounter(dbs, HotMeta.generation, 1)
        } else {
            try setCounter(dbs, HotMeta.samples, samples)
        }
    }
}

extension StoreStatistics {
    /// Fills `hotSize`, `hotBytes` and `hotChunks`.
    mutating func readHotTier(in txn: borrowing ReadTransaction, _ dbs: Databases, maxSize: Int64) throws {
        hotSize = try txn.hotBudget(dbs, maxSize: maxSize)
        hotBytes = Int64(try txn.counter(dbs, HotMeta.bytes))
        hotChunks = Int64(try txn.counter(dbs, HotMeta.chunks))
    }
}
