import LMDBKit

// The hot tier's table, `hot`: key `0x01` + digest → ``HotRecord``, and key `0x02` + segment + clock → digest,
// each segment's queue in recency order; its setting and counters are in `meta` (``HotMeta``). What the tier does
// with them is ``HotTier``'s.

extension TransactionReading where Self: ~Copyable {
    func hotRecord(_ digest: ChunkDigest, _ dbs: Databases) throws -> HotRecord? {
        try withValue(dbs.hot, key: HotRecord.key(digest), HotRecord.init(ifIntact:)) ?? nil
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
