import LMDBKit

/// The named LMDB databases of a store and what each holds. Each one's records, keys, reads and writes are in
/// `Store/Tables/`, a file per database (`meta`'s counters in `MetaTable.swift`, `policy` and `policyQueue` in
/// `PolicyTable.swift`, …).
///
/// - `meta`: settings and counters (`chunkShift`, `maxSize`, `nextManifestID`, `logicalBytes`, …).
/// - `domains`: domain name → ``DomainRecord``.
/// - `items`: (domain, SHA-256 of the item identifier) → ``ItemRecord``. Hashing keeps keys short whatever
///   the identifier's length; the record holds the identifier itself.
/// - `versions`: item key + content version → ``VersionRecord``.
/// - `manifests`: (manifest id, page) → up to ``ManifestPage/entriesPerPage`` entries, so no single value
///   holds a huge file's list.
/// - `chunks`: digest → 16-byte header + payload (zstd frame, raw bytes, or a delta: ``DeltaLayout``). Written
///   once; rewritten only to a new encoding of the same bytes (a delta re-encoded when its base goes).
/// - `refs`: digest → ``ChunkRef`` (reference count and sizes), kept apart from `chunks` so counting a
///   reference does not copy the chunk's pages.
/// - `pending`: manifest id → ``PendingRecord`` of a manifest written but not yet published (an ingest
///   in progress, or one a crash interrupted), rolled back on the next open once its process is gone.
/// - `changes`: (domain, domain version, index) → ``ChangeRecord``: the domain's change log
///   (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>).
/// - `listing`: (domain, container, sort, sort key, item hash) → nothing: the order pages list a container
///   in (``ListingIndex``).
/// - `policy`: (manifest id, chunk index) → ``PolicyRecord``: what the eviction policy knows of a chunk of an
///   origin version (``EvictionPolicy``).
/// - `policyQueue`: (segment, clock) → (manifest id, chunk index): each policy segment in recency order.
/// - `bases`: (base digest, delta digest) → nothing: which delta chunks are made against each base chunk, so
///   that a base is never deleted under a delta (``WriteTransaction/detachDeltas(from:_:)``,
///   <doc:Contract#14-Chunk-encodings>).
/// - `hot`: the hot tier's read counts per chunk digest and its queues (``HotTier``).
/// - `fills`: (manifest id, chunk index) → the SHA-256 the manifest knew for a chunk now waiting as a fill (32
///   bytes), or nothing when it knew none: the settler's work list, in version and chunk order
///   (``FillFiles``, ``Settler``). Key (manifest id, `UInt64.max`) holds the bytes the version's fill file
///   takes (``WriteTransaction/fileBytes(_:_:)``).
package struct Databases: Sendable {
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
    let bases: Database
    let hot: Database
    let fills: Database
    /// The fill files beside `data.mdb`, whose records `fills` and the manifests keep (``FillFiles``).
    let fillFiles: FillFiles
    /// Manifest pages already checked in the snapshot being read (not a database: a memo beside them).
    let checkedManifestPages = CheckedPageMemo()
    /// Whether the write transaction under way logged a change (not a database either: the writer's note).
    let changeMarks = ChangeMarks()

    package static let names = [
        "meta", "domains", "items", "versions", "manifests", "chunks", "refs", "pending", "changes", "listing",
        "policy", "policyQueue", "bases", "hot", "fills",
    ]

    @available(*, noasync)
    static func open(in txn: inout WriteTransaction, storePath: String) throws -> Databases {
        var handles: [Database] = []
        for name in names { handles.append(try txn.openDatabase(name, create: true)) }
        return Databases(
            meta: handles[0], domains: handles[1], items: handles[2], versions: handles[3],
            manifests: handles[4], chunks: handles[5], refs: handles[6], pending: handles[7],
            changes: handles[8], listing: handles[9], policy: handles[10], policyQueue: handles[11],
            bases: handles[12], hot: handles[13], fills: handles[14], fillFiles: FillFiles(storePath: storePath))
    }
}
