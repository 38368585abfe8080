import FileIO
import Foundation
import LMDBKit
import ZstdKit

/// One factory per lower layer: how its faults become a ``CacheError``.
extension CacheError {
    /// An LMDB failure on the store at `path`. A full map or disk is `insufficientQuota`, a damaged file
    /// `corruptData`, contention `transient`. An empty `path` (a caller that does not know it) reads "the
    /// store": no message has an empty name.
    static func lmdb(_ error: LMDBError, store path: String, doing what: String) -> CacheError {
        let what = Self.named(what, or: "working")
        let store = path.isEmpty ? "the store" : "the store at \(path)"
        // LMDB turns a short write into EIO ("TODO: Use which error code?" in mdb_page_flush): on a full
        // disk that is what a commit returns. Tell the two apart by the room left.
        if error.isOutOfSpace || (error == .ioError && freeBytes(at: path).map { $0 < Self.fullDiskMargin } == true) {
            return CacheError(
                .insufficientQuota,
                "\(store) is full while \(what) (\(error)); nothing was changed: raise its size with `chunkcache init --max-size`, free disk space, or remove versions",
                underlying: error)
        }
        if error.isCorruption {
            return CacheError(
                .corruptData,
                "\(store) is damaged (\(error)) while \(what); move its data.mdb aside and re-create the store",
                underlying: error)
        }
        if error == .accessDenied || error == .readOnlyFilesystem {
            return CacheError(
                .noPermission,
                "\(store) is not writable (\(error)) while \(what); fix its permissions or pick another --store",
                underlying: error)
        }
        if error == .readersFull || error == .mapResized {
            return CacheError(.transient, "\(store) is busy (\(error)) while \(what); retry", underlying: error)
        }
        return CacheError(.transient, "LMDB failed while \(what) in \(store): \(error); retry", underlying: error)
    }

    /// Below this much free space, an I/O error from a write is taken for a full disk.
    static let fullDiskMargin: Int64 = 64 << 20

    /// The bytes an unprivileged writer may still use on the filesystem holding `path`, `nil` when it
    /// cannot be told.
    static func freeBytes(at path: String) -> Int64? {
        guard let info = try? FileSystem.filesystemStatus(path) else { return nil }
        // Outside figures: a filesystem may report anything, so multiply without trapping.
        let (bytes, overflow) = Int64(clamping: info.f_bavail).multipliedReportingOverflow(
            by: Int64(clamping: info.f_frsize))
        return overflow ? .max : bytes
    }

    /// A system call on `path` failed. An empty `path` (a caller that does not know it) reads "a file": no
    /// message has an empty name.
    // See: man 2 open, man 2 pread, man 2 pwrite, man 2 ftruncate
    static func file(_ error: Errno, path: String, doing what: String) -> CacheError {
        let what = Self.named(what, or: "working")
        let path = Self.named(path, or: "a file")
        if error == .noSuchFile {
            return CacheError(.invalidArgument, "\(path) does not exist (\(what)); check the path", underlying: error)
        }
        if error == .isDirectory {
            return CacheError(
                .invalidArgument, "\(path) is a directory, not a regular file (\(what)); give a file", underlying: error
            )
        }
        if error == .notDirectory {
            return CacheError(
                .invalidArgument, "a component of \(path) is not a directory (\(what)); check the path",
                underlying: error)
        }
        if [Errno.permissionDenied, .notPermitted, .readOnlyFilesystem].contains(error) {
            return CacheError(
                .noPermission, "no permission for \(path) (\(what)): \(error); fix its permissions", underlying: error)
        }
        if error == .noSpace || error == .quotaExceeded {
            return CacheError(
                .insufficientQuota, "no space left for \(path) (\(what)); free disk space", underlying: error)
        }
        if error == .fileExists {
            return CacheError(
                .fileExists, "\(path) already exists (\(what)); remove it or pass --force to replace it",
                underlying: error)
        }
        return CacheError(.transient, "\(what) failed on \(path): \(error); retry", underlying: error)
    }

    /// Anything thrown inside the engine becomes a `CacheError`, keeping one that already is.
    ///
    /// - Parameters:
    ///   - path: The store's path; empty only where the caller cannot know it (then "the store").
    ///   - what: What was being done, naming the thing it was done to ("storing /x/y as d/doc").
    static func wrap(_ error: any Error, store path: String, doing what: String) -> CacheError {
        switch error {
        case let error as CacheError: return error
        case let error as LMDBError: return .lmdb(error, store: path, doing: what)
        case let error as Errno: return .file(error, path: path, doing: what)
        case let error as ZstdError:
            let store = path.isEmpty ? "the store" : "the store at \(path)"
            return CacheError(
                .corruptData,
                "a chunk in \(store) fails its check (\(error)) while \(Self.named(what, or: "reading it")); run `chunkcache verify --repair`",
                underlying: error)
        default:
            return CacheError(.transient, "\(Self.named(what, or: "the request")) failed: \(error); retry")
        }
    }

    /// `name`, or `fallback` when `name` is empty or only spaces: a message never shows an empty name.
    static func named(_ name: String, or fallback: String) -> String {
        name.allSatisfy(\.isWhitespace) ? fallback : name
    }
}
