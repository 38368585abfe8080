import FileIO
import Foundation
import LMDBKit

/// What opening a store cleans up after crashed processes: unpublished manifests and stale hand-off files.
extension Store {
    /// Rolls back manifests left pending by writers that no longer run, returning how many, and deletes the
    /// lease files of those writers. A writer runs while it holds its lease's lock (``WriterLease``), whatever
    /// its pid looks like from here.
    @available(*, noasync)
    func rollBackAbandonedManifests() throws -> Int {
        try rollBack(pendingManifestsByWriter())
    }

    /// The pending manifests as one read snapshot sees them, by writer.
    @available(*, noasync)
    func pendingManifestsByWriter() throws -> [WriterToken: [UInt64]] {
        try environment.read { txn in
            var byWriter: [WriterToken: [UInt64]] = [:]
            try txn.scan(dbs.pending, prefix: []) { key, value in
                guard key.count == 8 else {
                    throw CacheError(
                        .corruptData,
                        "the store at \(path) lists a pending manifest under a damaged key; run `chunkcache verify`")
                }
                let id = UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
                let record = try PendingRecord(decoding: value, name: RecordNames.pending(id))
                byWriter[record.writer, default: []].append(id)
                return true
            }
            return byWriter
        }
    }

    /// Rolls back the manifests of each writer `seen` with pending manifests whose lease can be claimed.
    ///
    /// `seen` is an earlier snapshot: a writer may have published a manifest since and ended, leaving its lease
    /// free. So the rollback drops only what its own write transaction still finds pending under that writer;
    /// once the lease is claimed, no one can add to it.
    @available(*, noasync)
    func rollBack(_ seen: [WriterToken: [UInt64]]) throws -> Int {
        var rolledBack = 0
        for (token, manifestIDs) in seen {
            guard let lease = try AbandonedLease.claim(token, in: writersPath) else { continue }
            rolledBack += try writer.writeAndWait { txn in
                var dropped = 0
                for id in manifestIDs where try txn.isPending(id, of: token, dbs) {
                    try txn.dropManifest(id, dbs)
                    dropped += 1
                }
                return dropped
            }
            lease.remove()
        }
        removeAbandonedLeases(except: Set(seen.keys))
        return rolledBack
    }

    /// Deletes the lease files of writers that ended with nothing pending: those whose lock is free.
    private func removeAbandonedLeases(except pendingWriters: Set<WriterToken>) {
        // No directory yet: nothing was ever written through a lease.
        var names: [String] = []
        guard (try? FileSystem.forEachEntry(in: writersPath, { names.append($0.name) })) != nil else { return }
        for name in names {
            guard let token = WriterToken(fileName: name), !pendingWriters.contains(token) else { continue }
            diagnostics.attempt("remove the abandoned writer lease \(writersPath)/\(name)") {
                try AbandonedLease.claim(token, in: writersPath)?.remove()
            }
        }
    }

    /// Deletes hand-off files in `tmp/` last modified more than `grace` seconds ago (all of them when nil),
    /// returning how many were removed. Fresh files stay: another process may have just handed them off.
    func sweepHandOffFiles(olderThan grace: TimeInterval?) -> Int {
        var names: [String] = []
        // Best effort: an unreadable tmp/ leaves its files for the next sweep.
        try? FileSystem.forEachEntry(in: tmpPath) { names.append($0.name) }
        let cutoff = Date().timeIntervalSince1970 - (grace ?? -1)
        var removed = 0
        for name in names {
            let file = tmpPath + "/" + name
            guard let st = try? FileSystem.status(file, symlinks: .doNotFollow), FileKind(mode: st.st_mode) == .regular
            else { continue }
            let modified = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
            if grace == nil || modified < cutoff, (try? FileSystem.unlink(file)) != nil { removed += 1 }
        }
        return removed
    }
}
