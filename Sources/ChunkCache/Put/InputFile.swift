import FileIO
import Foundation

/// A file's identity on its filesystem: the device and inode `stat` reports. A bind mount or another path to
/// the same file has the same identity.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ status: stat) {
        device = UInt64(status.st_dev)
        inode = UInt64(status.st_ino)
    }

    /// The identity of what `path` names, not following a final symlink; `nil` when nothing is there.
    /// Uses the `lstat(2)` system call.
    init?(ofPath path: String) {
        guard let status = try? FileSystem.status(path, symlinks: .doNotFollow) else { return nil }
        self.init(status)
    }
}

/// Opens `path` for reading, insisting on a regular file; never blocks, whatever `path` names.
///
/// The file is opened with `O_NONBLOCK` and checked with `fstat` before anything is read: opening a FIFO
/// otherwise waits for a writer for ever (man 7 fifo). The flag is cleared again for reading.
///
/// - Parameters:
///   - path: The file to read; named in every error.
///   - listed: For a file found by a directory walk, its identity then: the path must still name that very
///     file, and a symlink swapped in since is not followed (`O_NOFOLLOW`).
/// - Throws: `invalidArgument` when `path` is not a regular file, or not the file listed; what
///   ``CacheError/file(_:path:doing:)`` says for a failed `open`.
func openRegularFile(_ path: String, listedAs listed: FileIdentity? = nil) throws(CacheError) -> FileDescriptor {
    guard !path.isEmpty else {
        throw CacheError(.invalidArgument, "the path of the file to store is empty; give a file")
    }
    let file: FileDescriptor
    do {
        file = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK | (listed == nil ? 0 : O_NOFOLLOW))
    } catch {
        if listed != nil && error.rawValue == ELOOP {
            throw CacheError(
                .invalidArgument, "\(path) was replaced by a symlink after it was listed; \(changedAdvice)",
                underlying: error)
        }
        if error.rawValue == ENXIO {
            throw CacheError(
                .invalidArgument, "\(path) is a socket or a device, not a regular file; give a regular file",
                underlying: error)
        }
        throw CacheError.file(error, path: path, doing: "opening the file to store")
    }
    do {
        let status = try file.status()
        guard status.st_mode & S_IFMT == S_IFREG else {
            let what = kindDescription(status.st_mode)
            if listed != nil {
                throw CacheError(
                    .invalidArgument, "\(path) was replaced by \(what) after it was listed; \(changedAdvice)")
            }
            throw CacheError(.invalidArgument, "\(path) is \(what), not a regular file; give a regular file")
        }
        if let listed, FileIdentity(status) != listed {
            throw CacheError(
                .invalidArgument, "\(path) was replaced by another file after it was listed; \(changedAdvice)")
        }
        // Reads of a regular file never block anyway; clear the flag so nothing downstream sees EAGAIN.
        do {
            try file.setBlocking(true)
        } catch {
            throw CacheError.file(error, path: path, doing: "preparing the file for reading")
        }
        return file
    } catch {
        try? file.close()
        if let error = error as? CacheError { throw error }
        throw CacheError.file(
            error as? Errno ?? Errno(rawValue: EIO), path: path, doing: "reading the status of the file to store")
    }
}

/// What to do when a file changed between an import's walk and its read.
private let changedAdvice =
    "nothing was imported and the directory was left as it was: import again when nothing changes it"

/// "a directory", "a FIFO"…: what a `st_mode` names, for messages.
func kindDescription(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFDIR: return "a directory"
    case S_IFIFO: return "a FIFO"
    case S_IFSOCK: return "a socket"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFLNK: return "a symlink"
    default: return "not a regular file"
    }
}

/// A file's modification time from its `stat`, in seconds since 1970.
func modificationTime(of status: stat) -> Double {
    Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
}
