import Crypto
import FileIO
import Foundation
import LMDBKit

/// Re-hashes every chunk with SHA-256, checks every record against its seal, and checks every manifest
/// against the chunks and against its version's root hash. It reports all it finds and never stops at
/// the first damaged record.
enum Verifier {
    /// Hears the database and key each walk of `verify` reads, before it reads on from there.
    typealias Observer = (_ database: String, _ key: UnsafeRawBufferPointer) -> Void

    @available(*, noasync)
    static func verify(_ store: Store, repair: Bool, cancellation: CancellationFlag, observer: Observer? = nil) throws
        -> VerifyReport
    {
        let dbs = store.dbs
        var corrupt = Set<ChunkDigest>()
        var checked = 0
        var damagedRecords: [String] = []
        var damagedVersions: [DamagedVersion] = []
        var inconsistencies: [String] = []
        var lengthMismatches: [String] = []
        var fills = FillFindings()
        try store.codecs.withDecoder { context in
            let reader = StoredChunkReader(context, dbs)
            try store.environment.read { txn in
                try txn.scan(dbs.chunks, prefix: []) { key, value in
                    observer?("chunks", key)
                    try cancellation.check()
                    checked += 1
                    guard key.count == 32 else {
                        damagedRecords.append(
                            "the chunk under the \(key.count)-byte key \(hexString(key)), which is no SHA-256")
                        return true
                    }
                    let digest = ChunkDigest(raw: key)
                    guard let intactRef = try txn.withValue(dbs.refs, key: key, ChunkRef.init(ifIntact:)) else {
                        corrupt.insert(digest)
                        return true
                    }
                    guard let ref = intactRef else {
                        damagedRecords.append(RecordNames.chunkReference(digest))
                        corrupt.insert(digest)
                        return true
                    }
                    guard
                        (try? reader.decode(
                            value, digest: digest, length: Int(ref.rawLength), into: context.buffer,
                            checkingName: true, in: txn)) != nil
                    else {
                        corrupt.insert(digest)
                        return true
                    }
                    // An intact chunk's stored length is what `storedBytes` adds up (re-encodes change it).
                    if value.count - ChunkCodec.headerSize != Int(ref.storedLength) {
                        lengthMismatches.append(
                            "chunk \(digest) stores \(value.count - ChunkCodec.headerSize) bytes but its reference says \(ref.storedLength)"
                        )
                    }
                    return true
                }
                try checkRecords(in: txn, dbs, damaged: &damagedRecords, observer: observer)
                try txn.scan(dbs.versions, prefix: []) { key, raw in
                    observer?("versions", key)
                    try cancellation.check()
                    guard let parts = Keys.parseVersion(key) else {
                        damagedRecords.append(RecordNames.version(key: key, in: txn, dbs))
                        return true
                    }
                    let problem: String?
                    if let version = VersionRecord(ifIntact: raw) {
                        problem = try checkManifest(of: version, in: txn, dbs, missing: &corrupt)
                    } else {
                        damagedRecords.append(RecordNames.version(key: key, in: txn, dbs))
                        problem = "its record fails its check"
                    }
                    if let problem {
                        damagedVersions.append(
                            DamagedVersion(
                                domain: parts.domain,
                                item: RecordNames.identifier(ofItemKey: parts.itemKey, in: txn, dbs),
                                contentVersion: String(decoding: parts.contentVersion, as: UTF8.self), problem: problem)
                        )
                    }
                    return true
                }
                fills = try checkFills(in: txn, store, cancellation: cancellation, observer: observer)
                damagedRecords += fills.damagedRecords
                inconsistencies =
                    try checkConsistency(in: txn, dbs, observer: observer) + lengthMismatches
                    + txn.hotInconsistencies(dbs) + fills.inconsistencies
            }
        }
        let sorted = corrupt.sorted()
        var report = VerifyReport(
            chunksChecked: checked, corrupt: sorted, repaired: 0,
            damagedVersions: damagedVersions.sorted(), damagedRecords: damagedRecords.sorted(),
            inconsistencies: inconsistencies.sorted(), fillsChecked: fills.checked, corruptFills: fills.corrupt.sorted()
        )
        guard repair else { return report }
        if fills.needsRepair { report.repaired += try repairFills(fills, in: store) }
        guard !sorted.isEmpty else { return report }
        try store.writer.writeAndWait { txn in
            for digest in sorted {
                try digest.withUnsafeBytes { key in
                    if let ref = try txn.withValue(dbs.refs, key: key, ChunkRef.init(ifIntact:)) ?? nil {
                        try txn.addToCounter(dbs, MetaKey.uniqueBytes, -Int64(ref.rawLength))
                        try txn.addToCounter(dbs, MetaKey.storedBytes, -Int64(ref.storedLength))
                    }
                    try txn.delete(dbs.refs, key: key)
                    try txn.forgetDeltaLinks(of: digest, dbs)
                    try txn.delete(dbs.chunks, key: key)
                    try txn.hotForget(digest, dbs)
                }
            }
            var rewritten: [([UInt8], [UInt8])] = []
            try txn.scan(dbs.manifests, prefix: []) { key, value in
                observer?("manifests", key)
                // A page that fails its check is reported above; rewriting it would seal the damage as valid.
                guard let page = ManifestPage.entries(ofStored: value) else { return true }
                let updated = try ManifestPage.rewrite(page) { entry in
                    if case .stored(let digest) = entry, corrupt.contains(digest) { return .absent(digest) }
                    return nil
                }
                if let updated { rewritten.append((Array(key), updated)) }
                return true
            }
            for (key, page) in rewritten { try txn.put(dbs.manifests, key: key, value: page) }
        }
        report.repaired += sorted.count
        return report
    }

    /// Adds the name of every domain, item, pending manifest and manifest page that fails its check.
    private static func checkRecords(
        in txn: borrowing ReadTransaction, _ dbs: Databases, damaged: inout [String], observer: Observer?
    ) throws {
        try txn.scan(dbs.domains, prefix: []) { key, value in
            observer?("domains", key)
            if DomainRecord(ifIntact: value) == nil { damaged.append(RecordNames.domain(key: key)) }
            return true
        }
        try txn.scan(dbs.items, prefix: []) { key, value in
            observer?("items", key)
            if ItemRecord(ifIntact: value) == nil { damaged.append(RecordNames.item(key: key, in: txn, dbs)) }
            return true
        }
        try checkCatalogue(in: txn, dbs, damaged: &damaged, observer: observer)
        try txn.scan(dbs.pending, prefix: []) { key, value in
            observer?("pending", key)
            if PendingRecord(ifIntact: value) == nil {
                damaged.append(
                    key.count == 8
                        ? RecordNames.pending(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))
                        : "the pending manifest under key \(hexString(key))")
            }
            return true
        }
        try txn.scan(dbs.manifests, prefix: []) { key, value in
            observer?("manifests", key)
            if ManifestPage.entries(ofStored: value) == nil {
                guard let (manifest, page) = Keys.parseManifestPage(key) else {
                    damaged.append("the manifest page under key \(hexString(key))")
                    return true
                }
                damaged.append(RecordNames.manifestPage(manifest, page: page, in: txn, dbs))
            }
            return true
        }
    }

    /// Adds the change records and import jobs that fail their check, and every item whose listing entries
    /// are missing or whose entries name no item (pages and the working set would skip or repeat it).
    private static func checkCatalogue(
        in txn: borrowing ReadTransaction, _ dbs: Databases, damaged: inout [String], observer: Observer?
    ) throws {
        try txn.scan(dbs.changes, prefix: []) { key, value in
            observer?("changes", key)
            if ChangeRecord(ifIntact: value) == nil {
                damaged.append("a change record of \(RecordNames.domain(key: key))")
            }
            return true
        }
        try txn.scan(dbs.meta, prefix: Keys.importJobPrefix) { key, value in
            observer?("meta", key)
            if ImportJobRecord(ifIntact: value) == nil { damaged.append("the import job under key \(hexString(key))") }
            return true
        }
        try txn.scan(dbs.items, prefix: []) { key, value in
            observer?("items", key)
            guard key.count > ListingIndex.hashLength, let item = ItemRecord(ifIntact: value) else { return true }
            let expected = ListingIndex.keys(
                domain: Array(key.dropLast(ListingIndex.hashLength)),
                itemHash: Array(key.suffix(ListingIndex.hashLength)), placement: item.placement)
            for listingKey in expected where try !txn.contains(dbs.listing, key: listingKey) {
                damaged.append(
                    "the listing entries of \(RecordNames.item(item.identifier, domain: RecordNames.domainName(key: key)))"
                )
                break
            }
            return true
        }
        try txn.scan(dbs.listing, prefix: []) { key, _ in
            observer?("listing", key)
            var reader = ByteReader(key)
            guard (try? reader.readPrefixedString()) != nil, key.count >= reader.offset + ListingIndex.hashLength else {
                damaged.append("the listing entry under key \(hexString(key))")
                return true
            }
            let itemKey = Array(key[..<reader.offset]) + Array(key.suffix(ListingIndex.hashLength))
            guard let item = try txn.withValue(dbs.items, key: itemKey, ItemRecord.init(ifIntact:)) ?? nil,
                ListingIndex.keys(
                    domain: Array(key[..<reader.offset]), itemHash: Array(key.suffix(ListingIndex.hashLength)),
                    placement: item.placement
                ).contains(Array(key))
            else {
                damaged.append(
                    "a listing entry of \(RecordNames.domain(key: UnsafeRawBufferPointer(rebasing: key[..<reader.offset]))) that names no item placed so"
                )
                return true
            }
            return true
        }
    }

    /// Recounts, in the snapshot `txn`, what the store keeps counted, and returns each disagreement:
    ///
    /// - every `refs` record has its chunk in `chunks` (the chunks scan already reports a chunk without a
    ///   reference as corrupt);
    /// - every chunk's reference count equals the number of `stored` entries naming it in the manifest pages
    ///   of published versions and pending puts (evicted, `absent` entries hold no reference), and is not 0;
    /// - every manifest page belongs to a version or a pending put (an orphan page would hold references
    ///   nothing can ever release);
    /// - the counters `stat` reports equal their sums: `logicalBytes` the sizes of all versions,
    ///   `uniqueBytes` and `storedBytes` the raw and stored lengths in the reference records (`chunks`,
    ///   `items`, `versions` and `domains` are counted from the databases themselves).
    ///
    /// A figure that a damaged record leaves unknowable (a page, version or reference record failing its
    /// seal, reported as such) is not compared. Holds one count per distinct chunk in memory.
    @available(*, noasync)
    static func checkConsistency(in txn: borrowing ReadTransaction, _ dbs: Databases, observer: Observer? = nil) throws
        -> [String]
    {
        var found: [String] = []
        // Manifest entries naming each chunk, and the manifests that have pages.
        var entries: [ChunkDigest: UInt64] = [:]
        var pagesOfManifest: [UInt64: Int] = [:]
        var entriesKnown = true
        try txn.scan(dbs.manifests, prefix: []) { key, value in
            observer?("manifests", key)
            guard key.count == 16, let page = ManifestPage.entries(ofStored: value) else {
                entriesKnown = false  // reported by checkRecords
                return true
            }
            pagesOfManifest[UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)), default: 0] += 1
            for slot in 0..<(page.count / ManifestPage.entrySize) {
                guard let entry = try? ManifestPage.entry(in: page, at: slot) else {
                    entriesKnown = false
                    continue
                }
                if case .stored(let digest) = entry { entries[digest, default: 0] += 1 }
            }
            return true
        }
        // The owners of manifests, and the logical bytes the versions add up to.
        var owners = Set<UInt64>()
        var ownersKnown = true
        var logicalBytes: Int64 = 0
        try txn.scan(dbs.versions, prefix: []) { key, value in
            observer?("versions", key)
            guard let version = VersionRecord(ifIntact: value) else {
                ownersKnown = false  // reported with the versions
                return true
            }
            owners.insert(version.manifestID)
            logicalBytes += version.size
            return true
        }
        try txn.scan(dbs.pending, prefix: []) { key, _ in
            observer?("pending", key)
            if key.count == 8 {
                owners.insert(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))
            } else {
                ownersKnown = false
            }
            return true
        }
        if ownersKnown {
            for (manifest, pages) in pagesOfManifest where !owners.contains(manifest) {
                found.append("manifest \(manifest) has \(pages) page(s) but no version or pending put owns it")
            }
        }
        // Every reference record against its chunk and the recount.
        var uniqueBytes: Int64 = 0
        var storedBytes: Int64 = 0
        var refsKnown = true
        try txn.scan(dbs.refs, prefix: []) { key, value in
            observer?("refs", key)
            guard key.count == 32 else {
                found.append(
                    "the reference record under the \(key.count)-byte key \(hexString(key)), which is no SHA-256")
                return true
            }
            let digest = ChunkDigest(raw: key)
            if try !txn.contains(dbs.chunks, key: key) {
                found.append("chunk \(digest) has a reference record but is not stored")
            }
            guard let ref = ChunkRef(ifIntact: value) else {
                refsKnown = false  // reported as a damaged record when the chunk is stored
                entries[digest] = nil
                return true
            }
            uniqueBytes += Int64(ref.rawLength)
            storedBytes += Int64(ref.storedLength)
            let named = entries.removeValue(forKey: digest) ?? 0
            if ref.count == 0 {
                found.append("chunk \(digest) has a reference count of 0")
            } else if entriesKnown && ref.count != named {
                found.append(
                    "chunk \(digest) has a reference count of \(ref.count) but \(named) manifest entries name it")
            }
            return true
        }
        if entriesKnown {
            // What is left is named by manifests but has no reference record.
            for (digest, named) in entries {
                found.append("chunk \(digest) is named by \(named) manifest entries but has no reference record")
            }
        }
        let deltas = try checkDeltaLinks(in: txn, dbs, found: &found, observer: observer)
        // The counters stat reports.
        var recounts: [(name: String, value: Int64)] = [
            (MetaKey.deltaChunks, deltas.chunks), (MetaKey.deltaSavedBytes, deltas.savedBytes),
        ]
        if ownersKnown { recounts.append((MetaKey.logicalBytes, logicalBytes)) }
        if refsKnown { recounts += [(MetaKey.uniqueBytes, uniqueBytes), (MetaKey.storedBytes, storedBytes)] }
        for (name, recounted) in recounts {
            let counted = Int64(bitPattern: try txn.counter(dbs, name))
            if counted != recounted {
                found.append("the counter \(name) is \(counted) but a recount gives \(recounted)")
            }
        }
        return found
    }

    /// Checks that every delta's bases are stored plain and linked to it, and every link names a delta that
    /// names its base (<doc:Contract#14-Chunk-encodings>); returns the deltas' count and saving, for their counters.
    private static func checkDeltaLinks(
        in txn: borrowing ReadTransaction, _ dbs: Databases, found: inout [String], observer: Observer?
    ) throws -> (chunks: Int64, savedBytes: Int64) {
        var chunks: Int64 = 0
        var savedBytes: Int64 = 0
        var problems: [String] = []
        try txn.scan(dbs.chunks, prefix: []) { key, value in
            guard key.count == ChunkDigest.byteCount, ChunkCodec.isDelta(value) else { return true }
            let digest = ChunkDigest(raw: key)
            guard let layout = DeltaLayout(parsing: value) else { return true }  // reported as corrupt
            chunks += 1
            savedBytes += Int64(layout.plainLength - value.count + ChunkCodec.headerSize)
            for base in layout.bases {
                if try !txn.contains(dbs.bases, key: WriteTransaction.baseKey(base.digest, digest)) {
                    problems.append("delta chunk \(digest) is not linked to its base \(base.digest)")
                }
                if try !txn.isPlainChunk(base.digest, dbs) {
                    problems.append("delta chunk \(digest) has a base \(base.digest) that is missing or a delta")
                }
            }
            return true
        }
        try txn.scan(dbs.bases, prefix: []) { key, _ in
            observer?("bases", key)
            guard key.count == 2 * ChunkDigest.byteCount else {
                problems.append("the base link under the \(key.count)-byte key \(hexString(key)) is malformed")
                return true
            }
            let base = ChunkDigest(raw: key)
            let delta = ChunkDigest(raw: UnsafeRawBufferPointer(rebasing: key[ChunkDigest.byteCount...]))
            let names =
                try delta.withUnsafeBytes { deltaKey in
                    try txn.withValue(dbs.chunks, key: deltaKey) { value in
                        DeltaLayout(parsing: value)?.bases.contains { $0.digest == base } ?? false
                    }
                } ?? false
            if !names { problems.append("the link of base \(base) to \(delta) names no delta made against it") }
            return true
        }
        found += problems
        return (chunks, savedBytes)
    }

    /// What is wrong with a version's manifest, or nil when it is whole and hashes to the version's root.
    /// Adds to `missing` the stored chunks it names that the store lacks.
    private static func checkManifest(
        of version: VersionRecord, in txn: borrowing ReadTransaction, _ dbs: Databases, missing: inout Set<ChunkDigest>
    ) throws -> String? {
        let chunkCount = version.layout.chunkCount(forLength: version.size)
        var root = RootHasher(length: version.size)
        // An `absent(nil)` entry (a chunk whose hash is not known yet) leaves the root underivable: such a
        // version is checked for whole pages only.
        var rootKnown = true
        var page: Int64 = 0
        while page * ManifestPage.entriesPerPage < chunkCount {
            let first = page * ManifestPage.entriesPerPage
            let pageProblem = try txn.withValue(dbs.manifests, key: Keys.manifestPage(version.manifestID, page: page)) {
                raw -> String? in
                guard let entries = ManifestPage.entries(ofStored: raw) else {
                    return "page \(page) of its manifest fails its check"
                }
                for slot in 0..<Int(min(ManifestPage.entriesPerPage, chunkCount - first)) {
                    let entry: ManifestEntry
                    do {
                        entry = try ManifestPage.entry(in: entries, at: slot)
                    } catch {
                        return "entry \(first + Int64(slot)) of its manifest is short or unknown"
                    }
                    switch entry {
                    case .stored(let digest):
                        if try !digest.withUnsafeBytes({ try txn.contains(dbs.chunks, key: $0) }) {
                            missing.insert(digest)
                        }
                        root.add(digest)
                    case .zero: root.add(nil)
                    case .absent(let digest?): root.add(digest)
                    case .absent(nil): rootKnown = false
                    case .filled:
                        // Named by the hash its manifest knew, if it knew one; else only once settled.
                        let index = first + Int64(slot)
                        let record = try txn.withValue(
                            dbs.fills, key: FillKeys.fill(version.manifestID, index), FillKeys.parseRecord)
                        if let expected = record??.expected { root.add(expected) } else { rootKnown = false }
                    }
                }
                return nil
            }
            switch pageProblem {
            case nil: return "page \(page) of its manifest is missing"
            case let problem??: return problem
            case .some(nil): page += 1
            }
        }
        guard !rootKnown || version.root == VersionRecord.unknownRoot || root.finalize() == version.root else {
            return "its manifest does not hash to its root"
        }
        return nil
    }
}
