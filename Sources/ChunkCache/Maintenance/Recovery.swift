import Foundation
import FileIO
import LMDBKit

/// What opening a store cleans up after crashed processes: unpublished manifests and stale hand-off files.
extension Store {
    /// Rolls back manifests left pending by processes that no longer run, returning how many.
    @available(*, noasync)
    func rollBackAbandonedManifests() throws -> Int {
        let abandoned = try environment.read { txn in
            var ids: [UInt64] = []
            try txn.scan(dbs.pending, prefix: []) { key, value in
                let record = try PendingRecord(decoding: value)
                if !Self.isAlive(record.processID) {
                    ids.append(UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)))
                }
                return true
            }
            return ids
        }
        guard !abandoned.isEmpty else { return 0 }
        try writer.writeAndWait { txn in
            for id in abandoned { try txn.dropManifest(id, dbs) }
        }
        return abandoned.count
    }

    /// Whether a process with this id runs on this machine. Uses `kill(pid, 0)`.
    static func isAlive(_ pid: Int32) -> Bool {
        if pid == getpid() { return true }
        return kill(pid, 0) == 0 || errno == EPERM
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
            guard let st = try? FileSystem.status(file, symlinks: .doNotFollow), FileKind(mode: st.st_mode) == .regular else { continue }
            let modified = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
            if grace == nil || modified < cutoff, (try? FileSystem.unlink(file)) != nil { removed += 1 }
        }
        return removed
    }
}
