import FileIO
import Foundation
import Synchronization

/// Where downloaded chunks wait to be settled (<doc:Contract#10-Origins-the-cold-path>, "served as it arrives, stored
/// behind"): their raw bytes at their own offsets in one sparse file per version, `fills/<manifest id>`, beside the
/// store's LMDB files.
///
/// A fill is the cheapest safe form of a chunk. Writing it is a copy into the page cache: no hash, no
/// compression, no flush. Its manifest entry (``ManifestEntry/filled(checksum:)``) holds the XXH3 of its bytes,
/// and every read checks them against it, so a fill a system crash lost (the entry was committed, the file's
/// pages never reached the disk) reads as damaged and is downloaded again, never served wrong. The settler
/// (``Settler``) later names each fill by SHA-256, checks it against the hash its manifest knew, deduplicates
/// and compresses it into `chunks`, and removes the file once the version has no fill left.
///
/// Every write runs inside an LMDB write transaction (whose lock spans processes): fills are written by the
/// transaction that records them, and a file is removed only by one that sees no fill of its version left,
/// so the two never race. Blocking: called on the writer queue, the blocking pool, or a thread that may
/// block (<doc:Concurrency>).
final class FillFiles: Sendable {
    /// The folder, `STORE/fills`.
    let directory: String
    /// Open descriptors by manifest id, so a read costs one `pread`, not an `open` too. A few dozen: versions
    /// being filled or settled at once.
    private let open = Mutex<[UInt64: OpenFill]>([:])
    private static let openLimit = 64

    /// The folder's name in the store directory.
    static let folder = "fills"

    init(storePath: String) {
        directory = storePath + "/" + Self.folder
    }

    /// The path of the fill file of manifest `manifestID`.
    func path(of manifestID: UInt64) -> String {
        directory + "/" + String(manifestID, radix: 16)
    }

    /// Writes a chunk's bytes at `offset` of the version's fill file, creating it (and the folder) when missing.
    func write(_ bytes: UnsafeRawBufferPointer, manifestID: UInt64, at offset: Int64) throws(Errno) {
        try file(of: manifestID, creating: true).descriptor.writeAll(toAbsoluteOffset: offset, bytes)
    }

    /// Reads `buffer.count` bytes at `offset` of the version's fill file and checks them against `checksum`.
    ///
    /// - Returns: The bytes, in `buffer`; nil when the file or the bytes are missing or fail the check (a fill
    ///   lost to a system crash, or settled and removed since the caller's snapshot).
    func read(
        manifestID: UInt64, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer, checksum: UInt64
    ) -> UnsafeRawBufferPointer? {
        // A descriptor opened before another process removed the file reads the old bytes, which are right for
        // the snapshot that named them; when they fail the check, the path is opened again once.
        for attempt in 0..<2 {
            if attempt == 1 { forget(manifestID) }
            guard let file = try? file(of: manifestID, creating: false),
                (try? file.descriptor.readAll(fromAbsoluteOffset: offset, into: buffer)) != nil
            else { continue }
            let bytes = UnsafeRawBufferPointer(buffer)
            if ChunkCodec.checksum(bytes) == checksum { return bytes }
        }
        return nil
    }

    /// Frees the disk of one chunk of a version's fill file (an evicted fill): a hole from then on.
    func punch(manifestID: UInt64, at offset: Int64, length: Int64) {
        guard let file = try? file(of: manifestID, creating: false) else { return }
        try? file.descriptor.punchHole(at: offset, length: length)
    }

    /// Removes the fill file of a version (its last fill settled, or the version was dropped).
    func remove(_ manifestID: UInt64) {
        forget(manifestID)
        try? FileSystem.unlink(path(of: manifestID))
    }

    /// The manifest ids that have a fill file.
    func manifestIDs() -> [UInt64] {
        var ids: [UInt64] = []
        try? FileSystem.forEachEntry(in: directory) { entry in
            if let id = UInt64(entry.name, radix: 16) { ids.append(id) }
        }
        return ids.sorted()
    }

    private func cached(_ manifestID: UInt64) -> OpenFill? { open.withLock { $0[manifestID] } }

    /// Drops the table's hold on the file; its descriptor closes when the last user lets it go.
    private func forget(_ manifestID: UInt64) {
        _ = open.withLock { $0.removeValue(forKey: manifestID) }
    }

    private func file(of manifestID: UInt64, creating: Bool) throws(Errno) -> OpenFill {
        if let file = cached(manifestID) {
            // A writer must not write into a file another process removed: its fills would be lost.
            guard creating, let st = try? file.descriptor.status(), st.st_nlink == 0 else { return file }
            forget(manifestID)
        }
        let path = path(of: manifestID)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, creating ? O_RDWR | O_CREAT : O_RDWR, mode: 0o600)
        } catch  where creating && error == .noSuchFile {
            try? FileSystem.makeDirectory(directory, mode: 0o700)
            fd = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o600)
        }
        let opened = OpenFill(fd)
        return open.withLock { table in
            // Another thread opened it meanwhile: its descriptor is kept, this one closes with `opened`.
            if let existing = table[manifestID] { return existing }
            if table.count >= Self.openLimit, let victim = table.keys.first { table.removeValue(forKey: victim) }
            table[manifestID] = opened
            return opened
        }
    }
}

/// An open fill file, closed when the last holder lets it go: the table may drop it while a read or write
/// still uses it, and a descriptor closed under a write could be reused for another file.
private final class OpenFill: Sendable {
    let descriptor: FileDescriptor

    init(_ descriptor: FileDescriptor) { self.descriptor = descriptor }

    deinit { try? descriptor.close() }
}
