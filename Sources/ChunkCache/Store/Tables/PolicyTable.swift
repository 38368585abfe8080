import LMDBKit

// The eviction policy's tables: `policy`, (manifest id, chunk index) → ``PolicyRecord``, and `policyQueue`,
// (segment, clock) → (manifest id, chunk index), each segment in recency order; their counters are in `meta`
// (``PolicyMeta``, ``PolicySegment/counterName``). What the policy does with them is ``EvictionPolicy``'s.

extension WriteTransaction {
    /// Forgets every chunk of a manifest (its version was removed, evicted by hand, or its item pinned).
    @available(*, noasync)
    mutating func policyForget(manifest manifestID: UInt64, _ dbs: Databases) throws {
        var found: [(PolicySlot, PolicyRecord)] = []
        try scan(dbs.policy, prefix: Keys.manifest(manifestID)) { key, value in
            if let slot = PolicySlot(key: key) {
                if let record = PolicyRecord(ifIntact: value) {
                    found.append((slot, record))
                } else {
                    found.append(
                        (
                            slot,
                            PolicyRecord(
                                segment: .ghost, position: .max, frequency: 0, generation: 0, storedBytes: 0,
                                itemKey: [])
                        ))
                }
            }
            return true
        }
        for (slot, record) in found { try policyForget(slot, record, dbs) }
    }

    @available(*, noasync)
    func policyRecord(_ slot: PolicySlot, _ dbs: Databases) throws -> PolicyRecord? {
        try withValue(dbs.policy, key: slot.key, PolicyRecord.init(ifIntact:)) ?? nil
    }

    /// The oldest entry of a segment's queue; queue entries whose record is gone or moved are dropped.
    @available(*, noasync)
    mutating func policyOldest(_ segment: PolicySegment, _ dbs: Databases) throws -> (PolicySlot, PolicyRecord)? {
        while true {
            var first: ([UInt8], PolicySlot?)?
            try scan(dbs.policyQueue, prefix: [segment.rawValue]) { key, value in
                first = (Array(key), PolicySlot(key: value))
                return false
            }
            guard let (queueKey, slot) = first else { return nil }
            if let slot, let record = try policyRecord(slot, dbs), record.segment == segment,
                PolicyRecord.queueKey(segment, record.position) == queueKey
            {
                return (slot, record)
            }
            _ = try delete(dbs.policyQueue, key: queueKey)  // stale: its record moved or was damaged
            try addToCounter(dbs, segment.counterName, -1)
        }
    }

    /// Writes `record` at the recent end of its segment.
    @available(*, noasync)
    mutating func policyLink(_ slot: PolicySlot, _ record: PolicyRecord, _ dbs: Databases) throws {
        var record = record
        let clock = try counter(dbs, PolicyMeta.clock) + 1
        try setCounter(dbs, PolicyMeta.clock, clock)
        record.position = clock
        try put(dbs.policy, key: slot.key, value: record.encoded())
        try put(dbs.policyQueue, key: PolicyRecord.queueKey(record.segment, clock), value: slot.key)
        try addToCounter(dbs, record.segment.counterName, 1)
        try addToCounter(dbs, record.segment.bytesCounterName, Int64(record.storedBytes))
    }

    /// Moves a chunk to the recent end of `segment`.
    @available(*, noasync)
    mutating func policyMove(
        _ slot: PolicySlot, _ record: PolicyRecord, to segment: PolicySegment, _ dbs: Databases
    ) throws {
        try policyUnlink(slot, record, dbs)
        var moved = record
        moved.segment = segment
        try policyLink(slot, moved, dbs)
    }

    /// Takes `record` out of its segment's queue (its record is rewritten or deleted by the caller).
    @available(*, noasync)
    mutating func policyUnlink(_ slot: PolicySlot, _ record: PolicyRecord, _ dbs: Databases) throws {
        if try delete(dbs.policyQueue, key: PolicyRecord.queueKey(record.segment, record.position)) {
            try addToCounter(dbs, record.segment.counterName, -1)
            try addToCounter(dbs, record.segment.bytesCounterName, -Int64(record.storedBytes))
        }
    }

    @available(*, noasync)
    mutating func policyForget(_ slot: PolicySlot, _ record: PolicyRecord, _ dbs: Databases) throws {
        try policyUnlink(slot, record, dbs)
        _ = try delete(dbs.policy, key: slot.key)
    }
}
