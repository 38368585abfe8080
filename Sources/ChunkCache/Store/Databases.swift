import Crypto
import LMDBKit

/// The named LMDB databases of a store and what each holds.
///
/// - `meta`: settings and counters (`chunkShift`, `maxSize`, `nextManifestID`, `logicalBytes`, …).
/// - `domains`: domain name → ``DomainRecord``.
/// - `items`: (domain, SHA-256 of the item identifier) → ``ItemRecord``. Hashing keeps keys short whatever
///   the identifier's length; the record holds the identifier itself.
/// - `versions`: item key + content version → ``VersionRecord``.
/// - `manifests`: (manifest id, page) → up to ``ManifestPage/entriesPerPage`` entries, so no single value
///   holds a huge file's list.
/// - `chunks`: digest → 16-byte header + payload (zstd frame or raw bytes). Written once, never updated.
/// - `refs`: digest → ``ChunkRef`` (reference count and sizes), kept apart from `chunks` so counting a
///   reference does not copy the chunk's pages.
/// - `pending`: manifest id → ``PendingRecord`` of a manifest written but not yet published (an ingest
///   in progress, or one a crash interrupted), rolled back on the next open once its process is gone.
/// - `changes`: (domain, domain version, index) → ``ChangeRecord``: the domain's change log (CONTRACT §11).
/// - `listing`: (domain, container, sort, sort key, item hash) → nothing: the order pages list a container
///   in (``ListingIndex``).
/// - `policy`: (manifest id, chunk index) → ``PolicyRecord``: what the eviction policy knows of a chunk of an
///   origin version (``EvictionPolicy``).
/// - `policyQueue`: (segment, clock) → (manifest id, chunk index): each policy segment in recency order.
struct Databases: Sendable {
    let meta: Database
    let domains: Database
    let items: Database
    let versions: Database
    let manifests: Database
    let chunks: Database
    let refs: Database
    let pending: Database
    let changes: Database
    let listing: Database
    let policy: Database
    let policyQueue: Database
    /// Manifest pages already checked in the snapshot being read (not a database: a memo beside them).
    let checkedManifestPages = CheckedPageMemo()
    /// Whether the write transaction under way logged a change (not a database either: the writer's note).
    let changeMarks = ChangeMarks()

    static let names = ["meta", "domains", "items", "versions", "manifests", "chunks", "refs", "pending", "changes", "listing", "policy", "policyQueue"]

    @available(*, noasync)
    static func open(in txn: inout WriteTransaction) throws -> Databases {
        var handles: [Database] = []
        for name in names { handles.append(try txn.openDatabase(name, create: true)) }
        return Databases(
            meta: handles[0], domains: handles[1], items: handles[2], versions: handles[3],
            manifests: handles[4], chunks: handles[5], refs: handles[6], pending: handles[7],
            changes: handles[8], listing: handles[9], policy: handles[10], policyQueue: handles[11])
    }
}

/// How the store's keys are spelled.
enum Keys {
    static func domain(_ name: String) -> [UInt8] {
        var w = ByteWriter()
        w.appendPrefixed(name)
        return w.bytes
    }

    static func item(domain: String, id: String) -> [UInt8] {
        var w = ByteWriter()
        w.appendPrefixed(domain)
        w.append(raw: itemHash(id))
        return w.bytes
    }

    /// The 16 bytes that end an item's key: its identifier's hash, the same in every domain.
    static func itemHash(_ id: String) -> [UInt8] { Array(SHA256.hash(data: Array(id.utf8)).prefix(16)) }

    static func version(itemKey: [UInt8], contentVersion: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.append(raw: itemKey)
        w.appendPrefixed(contentVersion)
        return w.bytes
    }

    static func manifestPage(_ manifest: UInt64, page: Int64) -> [UInt8] {
        var w = ByteWriter()
        w.appendBigEndian(manifest)
        w.appendBigEndian(UInt64(page))
        return w.bytes
    }

    /// The manifest id and page of a `manifests` key (and of a `policy` key: manifest id and chunk index),
    /// or nil when it is not 16 bytes or its page is negative, which no writer writes (keys carry no seal:
    /// a damaged one must not become a page number that traps when the key is built again).
    static func parseManifestPage(_ key: UnsafeRawBufferPointer) -> (manifest: UInt64, page: Int64)? {
        guard key.count == 16 else { return nil }
        let page = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard page <= UInt64(Int64.max) else { return nil }
        return (UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)), Int64(page))
    }

    static func manifest(_ manifest: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.appendBigEndian(manifest)
        return w.bytes
    }

    static func meta(_ name: String) -> [UInt8] { Array(name.utf8) }

    /// The parts of a key of `versions`, or nil when it is not one.
    static func parseVersion(_ key: UnsafeRawBufferPointer) -> (domain: String, itemKey: UnsafeRawBufferPointer, contentVersion: [UInt8])? {
        var reader = ByteReader(key)
        guard let domain = try? reader.readPrefixedString() else { return nil }
        let itemKeyLength = reader.offset + 16
        reader.offset = itemKeyLength
        guard itemKeyLength <= key.count, let contentVersion = try? reader.readPrefixed() else { return nil }
        return (domain, UnsafeRawBufferPointer(rebasing: key[..<itemKeyLength]), contentVersion)
    }
}

/// A domain: its version counter, who may not materialize its files, and its origin settings (CONTRACT §10).
///
/// The origin settings were appended after `nonMaterializingProcesses`; a record that ends before them is a
/// domain without an origin, with the default settings.
struct DomainRecord: StoreRecord {
    var version: UInt64
    var createdAt: Double
    /// Processes whose fetches get `noPermission` (exact, case-sensitive names).
    var nonMaterializingProcesses: [String] = []
    /// The authoritative remote copy of the domain's items; nil when the store is the only copy.
    var origin: Origin?
    /// Sent with every origin request. The values are credentials: stored here, never printed.
    var headers: [OriginHeader] = []
    var pipelineDepth = DomainInfo.defaultPipelineDepth
    var readAhead = DomainInfo.defaultReadAhead
    /// Tells this domain from an earlier one of the same name: anchors and page tokens carry it, so one of a
    /// removed domain is `syncAnchorExpired` in the next (CONTRACT §11). Random for a new domain; a record
    /// written before the change log reads its creation time here.
    var epoch = UInt64.random(in: 1...UInt64.max)
    /// Change records of versions up to this one are compacted away: an anchor before it has expired.
    var compactedThrough: UInt64 = 0
    /// Change records the log holds.
    var retainedChanges: UInt64 = 0
    /// How much history the change log keeps: records beyond either bound are compacted.
    var history = ChangeHistory.standard
    /// Recent items used before this time have already left the working set (``RecentItems``).
    var recentCheckedThrough: Double = 0
    /// The latest import or reimport of the domain (0: none), and the latest that finished (CONTRACT §8).
    var importEpoch: UInt64 = 0
    var importFinishedEpoch: UInt64 = 0
    /// How many times an import's end was recorded: once per epoch (G4).
    var importsFinished: UInt64 = 0

    static let remedy = "run `chunkcache verify` to list the damage; put the domain's files into a new domain"

    func write(to w: inout ByteWriter) {
        w.append(version)
        w.append(createdAt)
        w.append(UInt16(nonMaterializingProcesses.count))
        for name in nonMaterializingProcesses { w.appendPrefixed(name) }
        w.append(UInt8(origin == nil ? 0 : 1))
        if let origin {
            w.appendPrefixed(origin.url)
            w.appendPrefixed(origin.endpoint ?? "")
            w.appendPrefixed(origin.region ?? "")
        }
        w.append(UInt16(headers.count))
        for header in headers {
            w.appendPrefixed(header.name)
            w.appendPrefixed(header.value)
        }
        w.append(UInt32(pipelineDepth))
        w.append(UInt64(readAhead))
        w.append(epoch)
        w.append(compactedThrough)
        w.append(retainedChanges)
        w.append(history.changes)
        w.append(history.seconds)
        w.append(recentCheckedThrough)
        w.append(importEpoch)
        w.append(importFinishedEpoch)
        w.append(importsFinished)
    }
}

extension DomainRecord {
    init(reading r: inout ByteReader) throws(RecordDamage) {
        version = try r.read()
        createdAt = try r.readDouble()
        var names: [String] = []
        for _ in 0..<(try r.read(UInt16.self)) { names.append(try r.readPrefixedString()) }
        nonMaterializingProcesses = names
        guard r.offset < r.buffer.count else { return }  // written before the origin settings were appended
        if try r.read(UInt8.self) == 1 {
            let url = try r.readPrefixedString(), endpoint = try r.readPrefixedString(), region = try r.readPrefixedString()
            // The settings were checked when they were stored; a record that fails the same check is damaged.
            guard let origin = try? Origin(url, endpoint: endpoint.isEmpty ? nil : endpoint, region: region.isEmpty ? nil : region),
                  origin.url == url else {
                throw RecordDamage(problem: "has an origin that is not a valid URL")
            }
            self.origin = origin
        }
        var headers: [OriginHeader] = []
        for _ in 0..<(try r.read(UInt16.self)) {
            let name = try r.readPrefixedString(), value = try r.readPrefixedString()
            guard let header = try? OriginHeader(name: name, value: value) else { throw RecordDamage(problem: "has a malformed header") }
            headers.append(header)
        }
        self.headers = headers
        let depth = try r.read(UInt32.self), readAhead = try r.read(UInt64.self)
        guard DomainInfo.pipelineDepthRange.contains(Int(depth)), readAhead <= UInt64(DomainInfo.readAheadRange.upperBound) else {
            throw RecordDamage(problem: "has an impossible pipeline depth or read-ahead")
        }
        pipelineDepth = Int(depth)
        self.readAhead = Int64(readAhead)
        // Written before the change log: the epoch follows from the creation time, so it never changes.
        guard r.offset < r.buffer.count else {
            epoch = createdAt.bitPattern
            return
        }
        epoch = try r.read()
        compactedThrough = try r.read()
        retainedChanges = try r.read()
        history = ChangeHistory(changes: try r.read(), seconds: try r.readDouble())
        recentCheckedThrough = try r.readDouble()
        guard r.offset < r.buffer.count else { return }  // written before resumable imports
        importEpoch = try r.read()
        importFinishedEpoch = try r.read()
        importsFinished = try r.read()
    }
}

/// An item's identity and metadata; its contents are in ``VersionRecord``s.
struct ItemRecord: StoreRecord, Sendable, Equatable {
    var identifier: String
    var parent: String
    var filename: String
    var kind: ItemKind
    var metadataVersion: [UInt8]
    var symlinkTarget: String = ""
    var createdAt: Double
    /// The File Provider metadata of CONTRACT §11, appended after `symlinkTarget`.
    var contentModificationDate: Double = 0
    var lastUsedDate: Double?
    /// Empty when the item has no tag.
    var tagData: [UInt8] = []
    var favoriteRank: UInt64?
    var flags: ItemFlags = []

    static let remedy = "run `chunkcache verify` to list the damage; put the file again under a new identifier"

    func write(to w: inout ByteWriter) {
        w.append(kind.rawValue)
        w.append(createdAt)
        w.appendPrefixed(identifier)
        w.appendPrefixed(parent)
        w.appendPrefixed(filename)
        w.appendPrefixed(metadataVersion)
        w.appendPrefixed(symlinkTarget)
        w.append(contentModificationDate)
        w.append(UInt8(lastUsedDate == nil ? 0 : 1))
        w.append(lastUsedDate ?? 0)
        w.appendPrefixed(tagData)
        w.append(UInt8(favoriteRank == nil ? 0 : 1))
        w.append(favoriteRank ?? 0)
        w.append(flags.rawValue)
    }
}

extension ItemRecord {
    init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let kind = ItemKind(rawValue: try r.read()) else { throw RecordDamage(problem: "has an unknown type") }
        self.kind = kind
        createdAt = try r.readDouble()
        identifier = try r.readPrefixedString()
        parent = try r.readPrefixedString()
        filename = try r.readPrefixedString()
        metadataVersion = try r.readPrefixed()
        symlinkTarget = try r.readPrefixedString()
        guard r.offset < r.buffer.count else {  // written before the metadata of §11
            contentModificationDate = createdAt
            return
        }
        contentModificationDate = try r.readDouble()
        let hasLastUse = try r.read(UInt8.self)
        let lastUse = try r.readDouble()
        lastUsedDate = hasLastUse == 1 ? lastUse : nil
        tagData = try r.readPrefixed()
        let hasRank = try r.read(UInt8.self)
        let rank = try r.read(UInt64.self)
        favoriteRank = hasRank == 1 ? rank : nil
        flags = ItemFlags(rawValue: try r.read())
    }
}

/// Flags of an item's metadata.
struct ItemFlags: OptionSet, Sendable, Hashable {
    let rawValue: UInt8
    static let shared = ItemFlags(rawValue: 1)
    static let trashed = ItemFlags(rawValue: 2)
    static let pinned = ItemFlags(rawValue: 4)
    /// A folder above it is trashed: it stays listed in that folder and leaves the working set (F11).
    static let inTrashedFolder = ItemFlags(rawValue: 8)
    /// In the working set as of its last change (``ItemRecord/refreshWorkingSet(now:)``).
    static let inWorkingSet = ItemFlags(rawValue: 16)
}

/// One content version of an item: where its manifest is and what it holds.
struct VersionRecord: StoreRecord, Sendable {
    var contentVersion: [UInt8]
    var manifestID: UInt64
    var size: Int64
    var chunkShift: Int
    /// The domain version that published it: orders versions, newest first.
    var sequence: UInt64
    var createdAt: Double
    /// Hash over the length and chunk digests (``RootHasher``): equal exactly when the bytes are equal.
    var root: ChunkDigest
    /// The modification time of a file last found to hold these bytes although its time differed from the
    /// item's: a reimport matches that time too (G1), so an unchanged file is not read again. Not metadata
    /// the item publishes; appended after `contentVersion`.
    var matchedModificationDate: Double?

    static let remedy = "run `chunkcache verify` to list the damage, then put the file again under a new --version"

    func write(to w: inout ByteWriter) {
        w.append(manifestID)
        w.append(size)
        w.append(UInt8(chunkShift))
        w.append(sequence)
        w.append(createdAt)
        w.append(raw: root.bytes)
        w.appendPrefixed(contentVersion)
        if let matchedModificationDate { w.append(matchedModificationDate) }
    }

    var layout: ChunkLayout { ChunkLayout(uncheckedShift: chunkShift) }
}

extension VersionRecord {
    init(reading r: inout ByteReader) throws(RecordDamage) {
        manifestID = try r.read()
        size = try r.read()
        chunkShift = Int(try r.read(UInt8.self))
        sequence = try r.read()
        createdAt = try r.readDouble()
        guard let root = ChunkDigest(bytes: try r.readBytes(32)) else { throw .truncated }
        self.root = root
        contentVersion = try r.readPrefixed()
        matchedModificationDate = r.offset < r.buffer.count ? try r.readDouble() : nil
        guard ChunkLayout.shifts.contains(chunkShift), (0...ChunkLayout.maxItemLength).contains(size) else {
            throw RecordDamage(problem: "has an impossible size or chunk size")
        }
    }
}

/// A chunk's reference count and sizes.
struct ChunkRef: StoreRecord {
    /// Manifest entries (published or pending) that name the chunk.
    var count: UInt64
    var rawLength: UInt32
    var storedLength: UInt32

    static let remedy = "run `chunkcache verify --repair` to drop the chunk"

    func write(to w: inout ByteWriter) {
        w.append(count)
        w.append(rawLength)
        w.append(storedLength)
    }
}

extension ChunkRef {
    init(reading r: inout ByteReader) throws(RecordDamage) {
        count = try r.read()
        rawLength = try r.read()
        storedLength = try r.read()
    }
}

/// A manifest written but not yet published, and the writer's lease (``WriterLease``) that says whether its
/// process still runs.
struct PendingRecord: StoreRecord {
    var writer: WriterToken
    var startedAt: Double

    static let remedy = "the store cannot tell whether the put that wrote it still runs: move the store aside and create a new one"

    func write(to w: inout ByteWriter) {
        w.append(raw: writer.bytes)
        w.append(startedAt)
    }
}

extension PendingRecord {
    init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let writer = WriterToken(bytes: try r.readBytes(WriterToken.byteCount)) else {
            throw RecordDamage(problem: "names no writer")
        }
        self.writer = writer
        startedAt = try r.readDouble()
    }
}

extension TransactionReading where Self: ~Copyable {
    /// A counter or setting in `meta`, 0 when unset.
    func counter(_ dbs: Databases, _ name: String) throws -> UInt64 {
        try withValue(dbs.meta, key: Keys.meta(name)) { raw in
            raw.count == 8 ? raw.loadUnaligned(as: UInt64.self).littleEndian : 0
        } ?? 0
    }

    /// The reference of chunk `digest`; nil when it has none or the record fails its check.
    func intactChunkRef(_ digest: ChunkDigest, _ dbs: Databases) throws -> ChunkRef? {
        try digest.withUnsafeBytes { key in try withValue(dbs.refs, key: key, ChunkRef.init(ifIntact:)) } ?? nil
    }
}

extension WriteTransaction {
    @available(*, noasync)
    mutating func setCounter(_ dbs: Databases, _ name: String, _ value: UInt64) throws {
        var w = ByteWriter(capacity: 8)
        w.append(value)
        try put(dbs.meta, key: Keys.meta(name), value: w.bytes)
    }

    /// Adds `delta` (which may be negative) to a counter in `meta`.
    @available(*, noasync)
    mutating func addToCounter(_ dbs: Databases, _ name: String, _ delta: Int64) throws {
        guard delta != 0 else { return }
        let current = Int64(bitPattern: try counter(dbs, name))
        try setCounter(dbs, name, UInt64(bitPattern: max(0, current + delta)))
    }
}

/// Names of the counters and settings in `meta`.
enum MetaKey {
    static let format = "format"
    static let chunkShift = "chunkShift"
    static let maxSize = "maxSize"
    static let nextManifestID = "nextManifestID"
    static let logicalBytes = "logicalBytes"
    static let uniqueBytes = "uniqueBytes"
    static let storedBytes = "storedBytes"
    /// 8 random bytes naming this store in anchors and page tokens, set when it is first opened.
    static let storeID = "storeID"
    /// 1 once every item has its ``ListingIndex`` entries (stores made before the change log have none).
    static let catalogueFormat = "catalogueFormat"
    /// The free space eviction keeps on the store's filesystem, in bytes, once set (`init --min-free`).
    static let minFree = "minFree"
    /// Evictions run: its commit after an eviction makes the pages freed reusable at once.
    static let evictionRuns = "evictionRuns"
}
