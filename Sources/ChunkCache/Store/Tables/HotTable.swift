import LMDBKit

// The hot tier's table, `hot`: key `0x01` + digest → ``HotRecord``, and key `0x02` + segment + clock → digest,
// each segment's queue in recency order; its setting and counters are in `meta` (``HotMeta``). What the tier does
// with them is ``HotTier``'s.

extension TransactionReading where Self: ~Copyable {
    func hotRecord(_ digest: ChunkDigest, _ dbs: Databases) throws -> HotRecord? {
        try withValue(dbs.hot, key: HotRecord.key(digest), HotRecord.init(ifIntact:)) ?? nil
    }

    /// What is wrong with the hot tier's records (for `verify`): each hot chunk must be stored `.hot` with its
    /// raw length, `hotBytes` and `hotChunks` must add them up, and each segment's queue must hold one entry
    /// per record of it.
    func hotInconsistencies(_ dbs: Databases) throws -> [String] {
        var found: [String] = []
        var bytes: Int64 = 0
        var records: [HotSegment: Int64] = [.candidate: 0, .hot: 0]
        var recordsKnown = true
        try scan(dbs.hot, prefix: [0x01]) { key, value in
            guard key.count == 33, let record = HotRecord(ifIntact: value) else {
                recordsKnown = false
                return true
            }
            records[record.segment, default: 0] += 1
            guard record.segment == .hot else { return true }
            let digest = ChunkDigest(raw: UnsafeRawBufferPointer(rebasing: key[1...]))
            bytes += Int64(record.rawLength)
            let length = try digest.withUnsafeBytes { k in
                try withValue(dbs.chunks, key: k) { ChunkCodec.encoding(of: $0) == .hot ? $0.count : -1 }
            }
            if length != ChunkCodec.headerSize + Int(record.rawLength) {
                found.append("chunk \(digest) is hot in the hot tier but not stored hot with its raw length")
            }
            return true
        }
        guard recordsKnown else { return found + ["a record of the hot tier fails its check"] }
        var recounts = [(HotMeta.bytes, bytes)]
        for segment in [HotSegment.candidate, .hot] {
            var queued: Int64 = 0
            try scan(dbs.hot, prefix: HotRecord.queuePrefix(segment)) { _, _ in
                queued += 1
                return true
            }
            if queued != records[segment] {
                found.append("the hot tier's \(segment) queue holds \(queued) entries for \(records[segment]!) records")
            }
            recounts.append((segment.counterName, records[segment]!))
        }
        for (name, recounted) in recounts {
            let counted = Int64(bitPattern: try counter(dbs, name))
            if counted != recounted {
                found.append("the counter \(name) is \(counted) but a recount gives \(recounted)")
            }
        }
        return found
    }
}

extension WriteTransaction {
    /// Forgets a chunk's reads and takes it out of the tier's counts: its chunk is being deleted or replaced.
    @available(*, noasync)
    mutating func hotForget(_ digest: ChunkDigest, _ dbs: Databases) throws {
        guard let record = try hotRecord(digest, dbs) else { return }
        try hotUnlink(digest, record, dbs)
        _ = try delete(dbs.hot, key: HotRecord.key(digest))
    }

    /// The least recently read chunk of a segment; queue entries whose record is gone or moved are dropped.
    @available(*, noasync)
    mutating func hotOldest(_ segment: HotSegment, _ dbs: Databases) throws -> (ChunkDigest, HotRecord)? {
        while true {
            var first: ([UInt8], ChunkDigest?)?
            try scan(dbs.hot, prefix: HotRecord.queuePrefix(segment)) { key, value in
                first = (Array(key), value.count == 32 ? ChunkDigest(raw: value) : nil)
                return false
            }
            guard let (queueKey, digest) = first else { return nil }
            if let digest, let record = try hotRecord(digest, dbs), record.segment == segment,
                HotRecord.queueKey(segment, record.position) == queueKey
            {
                return (digest, record)
            }
            _ = try delete(dbs.hot, key: queueKey)  // stale: its record moved or was damaged
            try addToCounter(dbs, segment.counterName, -1)
        }
    }

    /// Writes `record` at the recent end of its segment, counting it (and its bytes when hot); returns it as
    /// written, with its place.
    @available(*, noasync)
    @discardableResult
    mutating func hotLink(_ digest: ChunkDigest, _ record: HotRecord, _ dbs: Databases) throws -> HotRecord {
        var record = record
        let clock = try counter(dbs, HotMeta.clock) + 1
        try setCounter(dbs, HotMeta.clock, clock)
        record.position = clock
        try put(dbs.hot, key: HotRecord.key(digest), value: record.encoded())
        try put(dbs.hot, key: HotRecord.queueKey(record.segment, clock), value: digest.bytes)
        try addToCounter(dbs, record.segment.counterName, 1)
        if record.segment == .hot { try addToCounter(dbs, HotMeta.bytes, Int64(record.rawLength)) }
        return record
    }

    /// Takes `record` out of its segment's queue and counts (its record is rewritten or deleted by the caller).
    @available(*, noasync)
    mutating func hotUnlink(_ digest: ChunkDigest, _ record: HotRecord, _ dbs: Databases) throws {
        guard try delete(dbs.hot, key: HotRecord.queueKey(record.segment, record.position)) else { return }
        try addToCounter(dbs, record.segment.counterName, -1)
        if record.segment == .hot { try addToCounter(dbs, HotMeta.bytes, -Int64(record.rawLength)) }
    }
}
