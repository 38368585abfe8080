import LMDBKit

// The table of learned traces: records of `meta` under `trace/`, one per (domain, leader item), and each
// domain's switch under `traceoff/` (<doc:Contract#15-Learned-prefetch>).

/// What a program read in the first seconds after it opened ``leader``: the items it read, in the order it
/// first read them, and which bytes of each, merged over the runs that taught it (`TraceRun`, `TraceSessions`).
///
/// Stored compactly, since a trace must take far less than the bytes it describes: identifiers share their
/// prefix with the one before, numbers are LEB128 varints.
package struct TraceRecord: StoreRecord, Sendable, Equatable {
    /// One item of a trace and the bytes of it that were read, in the order they were first read.
    package struct Member: Sendable, Equatable {
        package var item: String
        package var extents: [TraceExtent]
        /// Runs in a row that prefetched this item and then never read it: at ``TraceRecord/maxMisses`` it
        /// leaves the trace.
        package var misses: UInt8 = 0
    }

    /// The item whose open starts the trace's prefetch.
    package var leader: String
    package var members: [Member]
    /// Runs merged into the trace.
    package var runs: UInt32 = 1
    /// Prefetches made from it.
    package var uses: UInt32 = 0
    /// When the trace last learned or predicted (seconds since 1970): traces unused for ``maxIdle`` go.
    package var usedAt: Double

    /// Items a trace keeps; the later ones go first.
    static let maxMembers = 4096
    /// Extents an item of a trace keeps: enough for a database's scattered pages (a few bytes each stored);
    /// past it the nearest are joined.
    static let maxExtents = 4096
    /// Runs in a row an item may be prefetched and not read before it leaves its trace.
    static let maxMisses: UInt8 = 2
    /// How long a trace neither learned from nor used is kept.
    static let maxIdle: Double = 30 * 86_400
    /// Traces kept per domain: past it, the least recently used go.
    static let maxPerDomain = 1024

    package static let remedy =
        "remove the domain's traces (`chunkcache trace rm --domain D --all`); they are learned again"

    package func write(to w: inout ByteWriter) {
        w.appendPrefixed(leader)
        w.append(runs)
        w.append(uses)
        w.append(usedAt)
        w.appendVarint(UInt64(members.count))
        var previous: [UInt8] = []
        for member in members {
            let id = Array(member.item.utf8)
            let shared = zip(previous, id).prefix { $0 == $1 }.count
            w.appendVarint(UInt64(shared))
            w.appendVarint(UInt64(id.count - shared))
            w.append(raw: id[shared...])
            w.append(member.misses)
            w.appendVarint(UInt64(member.extents.count))
            for extent in member.extents {
                w.appendVarint(UInt64(extent.offset))
                w.appendVarint(UInt64(extent.length))
            }
            previous = id
        }
    }
}

extension TraceRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        leader = try r.readPrefixedString()
        runs = try r.read()
        uses = try r.read()
        usedAt = try r.readDouble()
        let count = try r.readVarint()
        guard count <= UInt64(Self.maxMembers) else { throw RecordDamage(problem: "lists too many items") }
        var members: [Member] = []
        members.reserveCapacity(Int(count))
        var previous: [UInt8] = []
        for _ in 0..<count {
            let shared = try r.readVarint()
            guard shared <= UInt64(previous.count) else { throw RecordDamage(problem: "names an item badly") }
            let suffix = try r.readVarint()
            guard suffix <= 4096 else { throw RecordDamage(problem: "names an item too long") }
            let id = Array(previous.prefix(Int(shared))) + (try r.readBytes(Int(suffix)))
            let misses: UInt8 = try r.read()
            let extentCount = try r.readVarint()
            guard extentCount <= UInt64(Self.maxExtents) else { throw RecordDamage(problem: "lists too many extents") }
            var extents: [TraceExtent] = []
            for _ in 0..<extentCount {
                let offset = try r.readVarint()
                let length = try r.readVarint()
                guard offset < UInt64(Int64.max), length > 0, length <= UInt64(Int64.max) - offset else {
                    throw RecordDamage(problem: "holds an impossible extent")
                }
                extents.append(TraceExtent(offset: Int64(offset), length: Int64(length)))
            }
            members.append(Member(item: String(decoding: id, as: UTF8.self), extents: extents, misses: misses))
            previous = id
        }
        self.members = members
    }
}

/// A run of bytes of an item, `offset` and `length` both at least 0 and the length above it.
package struct TraceExtent: Sendable, Equatable, Hashable {
    package var offset: Int64
    package var length: Int64
    package var end: Int64 { offset + length }

    package init(offset: Int64, length: Int64) {
        self.offset = offset
        self.length = length
    }
}

extension ByteWriter {
    /// An unsigned LEB128 varint: 7 bits a byte, low first.
    mutating func appendVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }
}

extension ByteReader {
    /// What ``ByteWriter/appendVarint(_:)`` wrote; at most 10 bytes.
    mutating func readVarint() throws(RecordDamage) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte: UInt8 = try read()
            guard shift < 64 else { throw RecordDamage(problem: "holds an overlong number") }
            value |= UInt64(byte & 0x7f) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }
}

extension MetaKey {
    /// Bytes downloaded because a trace predicted them (<doc:Contract#15-Learned-prefetch>).
    static let prefetchedBytes = "prefetchedBytes"
    /// Of those, bytes the run that prefetched them then read.
    static let prefetchHitBytes = "prefetchHitBytes"
}

extension Keys {
    static let tracePrefix = Array("trace/".utf8)

    /// The key in `meta` of the trace of `leader` in `domain`: the leader's hash keeps it short.
    static func trace(_ domain: String, leader: String) -> [UInt8] { traces(of: domain) + itemHash(leader) }

    /// The prefix of every trace of `domain`.
    static func traces(of domain: String) -> [UInt8] { tracePrefix + Keys.domain(domain) }

    /// The key in `meta` that, present, turns learned prefetch off for `domain`.
    static func tracesOff(_ domain: String) -> [UInt8] { Array("traceoff/".utf8) + Keys.domain(domain) }
}

extension TransactionReading where Self: ~Copyable {
    func trace(_ domain: String, leader: String, _ dbs: Databases) throws -> TraceRecord? {
        try withValue(dbs.meta, key: Keys.trace(domain, leader: leader)) {
            try TraceRecord(decoding: $0, name: "the trace of \(leader) in \(RecordNames.domain(domain))")
        }
    }

    /// The traces of `domain`, or of every domain when it is nil, with their stored size in bytes.
    func traces(of domain: String?, _ dbs: Databases) throws -> [(domain: String, trace: TraceRecord, bytes: Int)] {
        var found: [(String, TraceRecord, Int)] = []
        try scan(dbs.meta, prefix: domain.map { Keys.traces(of: $0) } ?? Keys.tracePrefix) { key, value in
            var reader = ByteReader(UnsafeRawBufferPointer(rebasing: key[Keys.tracePrefix.count...]))
            guard let name = try? reader.readPrefixedString() else { return true }
            let trace = try TraceRecord(decoding: value, name: "a trace of \(RecordNames.domain(name))")
            found.append((name, trace, value.count))
            return true
        }
        return found
    }

    /// Whether learned prefetch is on for `domain` (it is unless turned off).
    func tracesEnabled(_ domain: String, _ dbs: Databases) throws -> Bool {
        try withValue(dbs.meta, key: Keys.tracesOff(domain)) { _ in true } == nil
    }
}

extension WriteTransaction {
    @available(*, noasync)
    mutating func saveTrace(_ trace: TraceRecord, in domain: String, _ dbs: Databases) throws {
        try put(dbs.meta, key: Keys.trace(domain, leader: trace.leader), value: trace.encoded())
    }

    @available(*, noasync)
    mutating func deleteTrace(of leader: String, in domain: String, _ dbs: Databases) throws -> Bool {
        try delete(dbs.meta, key: Keys.trace(domain, leader: leader))
    }

    @available(*, noasync)
    mutating func setTracesEnabled(_ enabled: Bool, for domain: String, _ dbs: Databases) throws {
        if enabled {
            _ = try delete(dbs.meta, key: Keys.tracesOff(domain))
        } else {
            try put(dbs.meta, key: Keys.tracesOff(domain), value: [1])
        }
    }

    /// Removes every trace of `domain`; returns how many went. Its switch stays (a domain being removed drops it
    /// with ``setTracesEnabled(_:for:_:)``).
    @available(*, noasync)
    mutating func deleteTraces(of domain: String, _ dbs: Databases) throws -> Int {
        let leaders = try traces(of: domain, dbs).map(\.trace.leader)
        for leader in leaders { _ = try deleteTrace(of: leader, in: domain, dbs) }
        return leaders.count
    }
}
