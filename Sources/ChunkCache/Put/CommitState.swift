import Dispatch
import FileIO
import Foundation
import LMDBKit

/// What the writer accumulates across a manifest's batches: the ingest's own state, not a coordination type.
///
/// Who may touch what: ``commit(_:into:store:)`` runs only on the writer queue, one batch after another in the
/// order the ingest queued them, so the counts and the page being filled need no lock (`@unchecked
/// Sendable`); the ingest thread reads ``counts`` only after the last batch's completion signalled it. The
/// first failure, from a commit or its completion, is kept (a ``FirstValue``) and read from any thread: the
/// ingest stops at its next batch, and later batches commit nothing.
final class CommitState: @unchecked Sendable {
    let manifestID: UInt64
    private(set) var counts = IngestCounts()
    /// Entries of the manifest page being filled.
    private var page: [UInt8] = []
    private var pageIndex: Int64 = 0
    private let firstFailure = FirstValue<any Error>()

    init(manifestID: UInt64) { self.manifestID = manifestID }

    var failure: (any Error)? { firstFailure.current }

    func fail(_ error: any Error) { firstFailure.offer(error) }

    /// Writes a batch: new chunks, references to known ones, and every manifest page it completes.
    @available(*, noasync)
    func commit(_ batch: Batch, into txn: inout WriteTransaction, store: Store) throws {
        guard failure == nil else { return }
        let dbs = store.dbs
        var scratch: UnsafeMutableRawBufferPointer?
        defer { scratch?.deallocate() }
        for i in 0..<batch.count {
            counts.chunks += 1
            let entry: ManifestEntry
            if let digest = batch.digests[i] {
                entry = .stored(digest)
                if try !txn.retainChunk(digest, dbs) {
                    var encoded = batch.encodedChunk(i)
                    // A delta whose bases left the store since it was made (an `rm` meanwhile) is made plain.
                    if let layout = batch.deltaLayouts[i], try !Self.basesStand(layout, of: digest, in: txn, dbs) {
                        encoded = UnsafeRawBufferPointer(start: nil, count: 0)
                    }
                    if encoded.isEmpty {
                        // Not compressed ahead: a duplicate within the batch whose first copy was known, or a
                        // chunk deleted since the batch looked. Encode it here.
                        let buffer = scratch ?? .allocate(byteCount: batch.encodedStride, alignment: 64)
                        scratch = buffer
                        let n = try store.codecs.withCompressor {
                            try ChunkCodec.encode(batch.rawChunk(i), compressor: $0, into: buffer)
                        }
                        encoded = UnsafeRawBufferPointer(rebasing: buffer[..<n])
                    }
                    if let layout = batch.deltaLayouts[i], ChunkCodec.isDelta(encoded) {
                        try txn.insertDelta(
                            digest, encoded: encoded, rawLength: batch.rawLengths[i], layout: layout, dbs)
                        counts.deltaChunks += 1
                    } else {
                        try txn.insertChunk(digest, encoded: encoded, rawLength: batch.rawLengths[i], dbs)
                    }
                    counts.newChunks += 1
                    counts.storedBytes += Int64(encoded.count - ChunkCodec.headerSize)
                }
            } else {
                entry = .zero
                counts.zeroChunks += 1
            }
            ManifestPage.append(entry, to: &page)
            if page.count == Int(ManifestPage.entriesPerPage) * ManifestPage.entrySize {
                try ManifestPage.store(&page, manifest: manifestID, page: pageIndex, in: &txn, dbs)
                page.removeAll(keepingCapacity: true)
                pageIndex += 1
            }
        }
        // The page being filled is written too, so the references this batch counted are always listed in
        // the manifest: a rollback (or the crash clean-up at open) releases exactly what was retained.
        if !page.isEmpty {
            try ManifestPage.store(&page, manifest: manifestID, page: pageIndex, in: &txn, dbs)
        }
    }

    /// Whether every base of a delta is still stored plain, and is not the delta's own chunk.
    private static func basesStand(
        _ layout: DeltaLayout, of digest: ChunkDigest, in txn: borrowing WriteTransaction, _ dbs: Databases
    ) throws -> Bool {
        try layout.bases.allSatisfy { base in try base.digest != digest && txn.isPlainChunk(base.digest, dbs) }
    }
}
