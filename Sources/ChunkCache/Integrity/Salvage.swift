import Crypto
import FileIO
import Foundation
import LMDBKit
import ZstdKit

/// Salvages a damaged store into a new one (`chunkcache recover`).
///
/// The old store is read by ``PageFile``, straight from the pages of `data.mdb`, never by LMDB: LMDB trusts
/// its pages, so a damaged one crashes the reading process, and a cursor cannot step past it. Nothing in the
/// old store is written (its data file is opened read-only and LMDB never opens it).
///
/// The new store is written by the engine's own write paths: domains with their origin settings; items
/// through the change log and listing index (``WriteTransaction/commit(_:replacing:in:_:)``); each version
/// under a pending manifest, its chunks stored or retained with reference counts and `stat`'s counters, then
/// published. Every chunk is decoded and re-hashed with SHA-256 before it is taken. A version whose chunk or
/// manifest page is lost is kept for an origin domain, the entry `absent` (its hash kept, so a fetch downloads
/// and checks it again; a lost page's entries are `absent` without a hash), and dropped for a local domain,
/// whose bytes nothing else holds: dropping it lets fetches fall back to another version rather than fail.
///
/// A fill (a downloaded chunk not settled yet, ``FillFiles``) is settled on the way: its bytes are read from the
/// old store's fill file (read-only), checked against the XXH3 its entry holds and the SHA-256 its record in
/// `fills` knew, and stored as a chunk named by its SHA-256, so the new store holds no fill and no fill file. A
/// fill whose bytes are missing or fail a check is lost as a chunk is (`absent` with the hash its manifest
/// knew).
enum Salvage {
    @available(*, noasync)
    static func recover(source: String, into destination: Store) throws -> RecoveryReport {
        let pages = try PageFile(path: source + "/data.mdb")
        var report = RecoveryReport(destination: destination.path)
        report.readEarlierSnapshot = pages.usedOlderMeta
        var damage: [String] = []
        let trees = Dictionary(
            uniqueKeysWithValues: ["meta", "domains", "items", "versions", "manifests", "chunks", "refs", "fills"]
                .compactMap {
                    name in
                    pages.tree(named: name).map { (name, $0) }
                })
        for name in ["domains", "items", "versions", "manifests", "chunks"] where trees[name] == nil {
            damage.append("the database `\(name)` cannot be found: its entry in the main database is damaged")
        }
        let dbs = destination.dbs

        // Domains, with their settings; a new epoch, so anchors of the old store are refused by the new one.
        var origins: [String: Bool] = [:]
        var seen = 0
        if let tree = trees["domains"] {
            var batch: [(String, DomainRecord)] = []
            pages.walk(tree) { key, value in
                seen += 1
                var reader = ByteReader(key)
                guard let name = try? reader.readPrefixedString(), reader.offset == key.count,
                    let old = DomainRecord(ifIntact: value)
                else {
                    damage.append("the record of \(RecordNames.domain(key: key)) fails its check")
                    return true
                }
                var record = DomainRecord(version: old.version, createdAt: old.createdAt)
                record.nonMaterializingProcesses = old.nonMaterializingProcesses
                record.origin = old.origin
                record.headers = old.headers
                record.pipelineDepth = old.pipelineDepth
                record.readAhead = old.readAhead
                record.history = old.history
                batch.append((name, record))
                origins[name] = old.origin != nil
                return true
            }
            try destination.writer.writeAndWait { txn in
                for (name, record) in batch {
                    try txn.saveDomain(record, named: name, dbs)
                }
            }
        }
        report.domains = count(recovered: origins.count, seen: seen, recorded: trees["domains"]?.entries)

        // Items, a batch of one domain per transaction.
        var itemsRecovered = 0
        seen = 0
        if let tree = trees["items"] {
            var batch: [ItemRecord] = []
            var batchDomain = ""
            func flush() throws {
                guard !batch.isEmpty else { return }
                let records = batch
                let name = batchDomain
                try destination.writer.writeAndWait { txn in
                    var changes = try txn.beginChanges(to: name, dbs)
                    for record in records { try txn.commit(record, replacing: nil, in: &changes, dbs) }
                    try txn.finish(changes, dbs)
                }
                itemsRecovered += records.count
                batch.removeAll(keepingCapacity: true)
            }
            try pages.walk(tree) { key, value in
                seen += 1
                let domain = RecordNames.domainName(key: key)
                guard let record = ItemRecord(ifIntact: value),
                    Keys.item(domain: domain, id: record.identifier).elementsEqual(key)
                else {
                    damage.append(
                        "the record of an item of \(RecordNames.domain(domain)) under key \(hexString(key)) fails its check"
                    )
                    return true
                }
                guard origins[domain] != nil else {
                    damage.append(
                        "\(RecordNames.item(record.identifier, domain: domain)) is left out: its domain's record is lost"
                    )
                    return true
                }
                if domain != batchDomain || batch.count >= 512 { try flush() }
                batchDomain = domain
                batch.append(record)
                return true
            }
            try flush()
        }
        report.items = count(recovered: itemsRecovered, seen: seen, recorded: trees["items"]?.entries)

        // Versions, each under a pending manifest of its own, published once its chunks are in.
        seen = 0
        var versionsRecovered = 0
        var recoveredChunks = 0
        var fills = RecoveryReport.Count()
        var failedChunks = Set<ChunkDigest>()
        let token = try destination.writerToken()
        let decompressor = Decompressor()
        if let tree = trees["versions"] {
            try pages.walk(tree) { key, value in
                seen += 1
                guard let parts = Keys.parseVersion(key), let version = VersionRecord(ifIntact: value),
                    version.contentVersion == parts.contentVersion
                else {
                    damage.append("the record of a version under key \(hexString(key)) fails its check")
                    return true
                }
                let itemKey = Array(parts.itemKey)
                let name =
                    "version \"\(String(decoding: parts.contentVersion, as: UTF8.self))\" of an item of \(RecordNames.domain(parts.domain))"
                guard let isOrigin = origins[parts.domain] else { return true }  // reported with its domain
                let item = try destination.environment.read { txn in
                    try txn.withValue(dbs.items, key: itemKey, ItemRecord.init(ifIntact:)) ?? nil
                }
                guard let item, item.kind == .file else {
                    damage.append("\(name) is left out: its item's record is lost")
                    return true
                }
                let itemName = RecordNames.item(item.identifier, domain: parts.domain)
                let outcome = try salvageVersion(
                    version, key: Array(key), of: itemName, domain: parts.domain, origin: isOrigin, pages: pages,
                    trees: trees, source: source, into: destination,
                    token: token, decompressor: decompressor, failed: &failedChunks, fills: &fills)
                switch outcome {
                case .kept(let newChunks, let absent):
                    versionsRecovered += 1
                    recoveredChunks += newChunks
                    if absent { report.versionsWithAbsentChunks += 1 }
                case .dropped(let why):
                    damage.append("\(RecordNames.version(version.contentVersion, of: itemName)) is left out: \(why)")
                }
                return true
            }
        }
        report.fills = fills
        report.versions = count(recovered: versionsRecovered, seen: seen, recorded: trees["versions"]?.entries)
        seen = 0
        if let tree = trees["chunks"] {
            pages.walk(tree, values: false) { _, _ in
                seen += 1
                return true
            }
        }
        report.chunks = count(
            recovered: recoveredChunks, seen: max(seen, recoveredChunks + failedChunks.count),
            recorded: trees["chunks"]?.entries)
        for skipped in pages.damage {
            let from = skipped.fromKey.isEmpty ? "its first key" : "key \(hexString(skipped.fromKey.prefix(40)))"
            damage.append(
                "\(skipped.database): what page \(skipped.page) held (from \(from)) is lost: \(skipped.problem)")
        }
        report.damage = damage.sorted()
        return report
    }

    /// How many of a kind were recovered and lost: lost are those seen but not taken, or, when the tree's own
    /// count is larger (records on pages that could not be read), those it counts but were not taken.
    private static func count(recovered: Int, seen: Int, recorded: UInt64?) -> RecoveryReport.Count {
        let total = max(seen, recorded.map { Int(clamping: $0) } ?? 0)
        return RecoveryReport.Count(recovered: recovered, lost: max(0, total - recovered))
    }

    enum VersionOutcome {
        case kept(newChunks: Int, absentEntries: Bool)
        case dropped(String)
    }

    /// Copies one version: its manifest page by page, each stored chunk checked and taken, into a pending
    /// manifest of `destination`, then publishes it. A local domain's version with any chunk or page lost is
    /// rolled back (``WriteTransaction/dropManifest(_:_:)`` releases what it took).
    @available(*, noasync)
    private static func salvageVersion(
        _ version: VersionRecord, key: [UInt8], of itemName: String, domain: String, origin: Bool, pages: PageFile,
        trees: [String: PageFile.Tree], source: String,
        into destination: Store, token: WriterToken, decompressor: Decompressor, failed: inout Set<ChunkDigest>,
        fills: inout RecoveryReport.Count
    ) throws -> VersionOutcome {
        let dbs = destination.dbs
        let chunkSize = version.layout.chunkSize
        let chunkCount = version.layout.chunkCount(forLength: version.size)
        let manifest = try destination.writer.writeAndWait { txn in
            try txn.beginManifest(dbs, writer: token, now: Date().timeIntervalSince1970)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        let baseRoom = UnsafeMutableRawBufferPointer.allocate(
            byteCount: DeltaLayout.maxBases * chunkSize, alignment: 16)
        defer { baseRoom.deallocate() }
        var newChunks = 0
        var absent = false
        var fillFile = OldFillFile(path: source + "/" + FillFiles.folder + "/" + String(version.manifestID, radix: 16))
        func rollBack(_ why: String) throws -> VersionOutcome {
            try destination.writer.writeAndWait { txn in try txn.dropManifest(manifest, dbs) }
            return .dropped(why)
        }
        var page: Int64 = 0
        while page * ManifestPage.entriesPerPage < chunkCount {
            let first = page * ManifestPage.entriesPerPage
            let slots = Int(min(ManifestPage.entriesPerPage, chunkCount - first))
            var entries: [ManifestEntry] = []
            let raw = trees["manifests"].flatMap {
                pages.get($0, key: Keys.manifestPage(version.manifestID, page: page))
            }
            let stored: [ManifestEntry]? = raw.flatMap { raw in
                raw.withUnsafeBytes { value -> [ManifestEntry]? in
                    guard let body = ManifestPage.entries(ofStored: value) else { return nil }
                    var list: [ManifestEntry] = []
                    for slot in 0..<slots {
                        guard let entry = try? ManifestPage.entry(in: body, at: slot) else { return nil }
                        list.append(entry)
                    }
                    return list
                }
            }
            guard let stored else {
                guard origin else { return try rollBack("page \(page) of its manifest is lost") }
                entries = Array(repeating: .absent(nil), count: slots)
                absent = true
                // no chunks: none new
                _ = try writePage(entries, manifest: manifest, page: page, chunks: [], into: destination)
                page += 1
                continue
            }
            // The page's chunks, checked, then written with the page in one transaction.
            var taken: [TakenChunk] = []
            for (slot, entry) in stored.enumerated() {
                let index = first + Int64(slot)
                if case .filled(let checksum) = entry {
                    let rawLength = Int(min(Int64(chunkSize), version.size - index * Int64(chunkSize)))
                    let expected = trees["fills"].flatMap {
                        pages.get($0, key: FillKeys.fill(version.manifestID, index))
                    }
                    .flatMap { $0.withUnsafeBytes { FillKeys.parseRecord($0)?.expected } }
                    if let chunk = try settled(
                        fillFile.read(
                            at: index << version.layout.shift, into: buffer, length: rawLength, checksum: checksum),
                        expected: expected, in: destination)
                    {
                        taken.append(chunk)
                        entries.append(.stored(chunk.digest))
                        fills.recovered += 1
                        continue
                    }
                    fills.lost += 1
                    guard origin else { return try rollBack("fill \(index) is lost or fails its check") }
                    entries.append(.absent(expected))
                    absent = true
                    continue
                }
                guard case .stored(let digest) = entry else {
                    entries.append(entry)
                    continue
                }
                // A chunk an earlier version already brought over was checked then: count one more reference.
                if try destination.environment.read({ txn in
                    try digest.withUnsafeBytes { try txn.contains(dbs.refs, key: $0) }
                }) {
                    taken.append(TakenChunk(digest: digest, encoded: nil, rawLength: 0))
                    entries.append(entry)
                    continue
                }
                let rawLength = Int(min(Int64(chunkSize), version.size - index * Int64(chunkSize)))
                if !failed.contains(digest),
                    let value = trees["chunks"].flatMap({ pages.get($0, key: digest.bytes) }),
                    let value = try checked(
                        value, digest: digest, rawLength: rawLength,
                        bases: PageBases(pages: pages, tree: trees["chunks"], scratch: baseRoom),
                        decompressor: decompressor, buffer: buffer, codecs: destination.codecs)
                {
                    // A hot chunk comes over cold: the new store has no read counts to keep it hot by.
                    let cold = destination.codecs.withCompressor {
                        ChunkCodec.cooled(value, rawCount: rawLength, compressor: $0)
                    }
                    taken.append(TakenChunk(digest: digest, encoded: cold, rawLength: rawLength))
                    entries.append(entry)
                    continue
                }
                failed.insert(digest)
                guard origin else { return try rollBack("chunk \(digest) (chunk \(index)) is lost or fails its hash") }
                entries.append(.absent(digest))
                absent = true
            }
            newChunks += try writePage(entries, manifest: manifest, page: page, chunks: taken, into: destination)
            page += 1
        }
        var published = version
        published.manifestID = manifest
        try destination.writer.writeAndWait { txn in
            try txn.delete(dbs.pending, key: Keys.manifest(manifest))
            try txn.put(dbs.versions, key: key, value: published.encoded())
            try txn.addToCounter(dbs, MetaKey.logicalBytes, version.size)
            // Keep the domain's version at least the version's sequence, so versions stay newest first.
            let domainKey = Keys.domain(domain)
            if var domain = try txn.withValue(dbs.domains, key: domainKey, DomainRecord.init(ifIntact:)) ?? nil,
                domain.version < version.sequence
            {
                domain.version = version.sequence
                try txn.put(dbs.domains, key: domainKey, value: domain.encoded())
            }
        }
        return .kept(newChunks: newChunks, absentEntries: absent)
    }

    /// A chunk a manifest page takes: its stored value, or nil when the new store holds it already.
    struct TakenChunk {
        let digest: ChunkDigest
        let encoded: [UInt8]?
        let rawLength: Int
        /// A fill settled on the way, not a chunk of the old store: not counted with the chunks.
        var fromFill = false
    }

    /// The chunk a fill's `bytes` make, named by their SHA-256, or nil when they are missing or do not hash to
    /// `expected`.
    private static func settled(_ bytes: UnsafeRawBufferPointer?, expected: ChunkDigest?, in destination: Store)
        throws -> TakenChunk?
    {
        guard let bytes else { return nil }
        let digest = ChunkDigest(hashing: bytes)
        guard expected == nil || expected == digest else { return nil }
        let known = try destination.environment.read { txn in
            try digest.withUnsafeBytes { try txn.contains(destination.dbs.refs, key: $0) }
        }
        return TakenChunk(
            digest: digest, encoded: known ? nil : try encoded(bytes, codecs: destination.codecs),
            rawLength: bytes.count, fromFill: true)
    }

    /// Stores a manifest page and its checked chunks (retaining those already stored) in one transaction;
    /// returns how many chunks of the old store were new.
    @available(*, noasync)
    private static func writePage(
        _ entries: [ManifestEntry], manifest: UInt64, page: Int64, chunks: [TakenChunk],
        into destination: Store
    ) throws -> Int {
        let dbs = destination.dbs
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.count * ManifestPage.entrySize + Seal.size)
        for entry in entries { ManifestPage.append(entry, to: &bytes) }
        return try destination.writer.writeAndWait { txn in
            var inserted = 0
            for chunk in chunks where try !txn.retainChunk(chunk.digest, dbs) {
                let digest = chunk.digest
                // Checked just before, by this process, the only writer of the new store.
                guard let value = chunk.encoded else {
                    throw CacheError(
                        .corruptData,
                        "chunk \(digest) left the new store while it was being recovered; run recover again")
                }
                try value.withUnsafeBytes { try txn.insertChunk(digest, encoded: $0, rawLength: chunk.rawLength, dbs) }
                if !chunk.fromFill { inserted += 1 }
            }
            try ManifestPage.store(&bytes, manifest: manifest, page: page, in: &txn, dbs)
            return inserted
        }
    }

    /// The value to store of a chunk that decodes to `rawLength` bytes hashing to `digest`, or nil when it does not.
    ///
    /// A delta is read against its bases in the old store and kept only when they read back its bytes (CONTRACT
    /// <doc:Contract#14-Chunk-encodings>); it is stored plain in the new store, which then depends on no base recovered
    /// or lost beside it.
    private static func checked(
        _ value: [UInt8], digest: ChunkDigest, rawLength: Int, bases: PageBases, decompressor: Decompressor,
        buffer: UnsafeMutableRawBufferPointer, codecs: CodecPool
    ) throws -> [UInt8]? {
        try value.withUnsafeBytes { stored -> [UInt8]? in
            guard
                let bytes = try? StoredChunkReader.decode(
                    stored, digest: digest, length: rawLength, into: buffer, decompressor: decompressor, bases: bases,
                    checkingName: true)
            else { return nil }
            guard ChunkCodec.isDelta(stored) else { return value }
            return try encoded(bytes, codecs: codecs)
        }
    }

    /// `bytes` encoded as a plain chunk.
    private static func encoded(_ bytes: UnsafeRawBufferPointer, codecs: CodecPool) throws -> [UInt8] {
        var plain = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: bytes.count))
        let length = try plain.withUnsafeMutableBytes { output in
            try codecs.withCompressor { try ChunkCodec.encode(bytes, compressor: $0, into: output) }
        }
        return Array(plain[..<length])
    }
}

/// The fill file of one version of the old store, for ``Salvage``: opened read-only when first read, never
/// written.
private struct OldFillFile: ~Copyable {
    let path: String
    private var descriptor: FileDescriptor?
    private var opened = false

    init(path: String) { self.path = path }

    deinit { try? descriptor?.close() }

    /// The `length` bytes at `offset`, in `buffer`, when they are there and pass `checksum`; else nil.
    mutating func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer, length: Int, checksum: UInt64)
        -> UnsafeRawBufferPointer?
    {
        if !opened {
            opened = true
            descriptor = try? FileDescriptor.open(path, O_RDONLY)
        }
        guard length > 0, length <= buffer.count, let descriptor else { return nil }
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
        guard (try? descriptor.readAll(fromAbsoluteOffset: offset, into: target)) == length else { return nil }
        let bytes = UnsafeRawBufferPointer(target)
        return ChunkCodec.checksum(bytes) == checksum ? bytes : nil
    }
}

/// A delta's bases as the old store's pages hold them, for ``Salvage``.
private struct PageBases: BaseValues {
    let pages: PageFile
    let tree: PageFile.Tree?
    let scratch: UnsafeMutableRawBufferPointer
    var decoded: DecodedBases? { nil }

    func withStoredChunk<R>(_ digest: ChunkDigest, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let tree, let value = pages.get(tree, key: digest.bytes) else { return nil }
        return try value.withUnsafeBytes(body)
    }
}

extension PageFile {
    /// The chunk size recorded in the `meta` database of the store at `path`, when it can be read.
    static func chunkShift(ofStoreAt path: String) -> Int? {
        guard let pages = try? PageFile(path: path + "/data.mdb"), let meta = pages.tree(named: "meta"),
            let raw = pages.get(meta, key: Keys.meta(MetaKey.chunkShift)), raw.count == 8
        else { return nil }
        let shift = Int(raw.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self).littleEndian })
        return ChunkLayout.shifts.contains(shift) ? shift : nil
    }
}
